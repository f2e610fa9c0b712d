"""LangSmith tracing: each task's trace under a name, tags and metadata that find it.

With ``LANGSMITH_TRACING=true`` LangChain sends every run of the agent to LangSmith. Each task gets
a trace of its own (``task_trace``), named after the rubric and the task, whose tags and metadata say
what ran where; the agent's runs inside it carry the same tags and metadata (``trace_labels``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..records import RunHeader, TaskRecord, task_key


def tracing_on() -> bool:
    """Whether LangSmith tracing is on (``LANGSMITH_TRACING=true``)."""
    from langsmith.utils import tracing_is_enabled

    return bool(tracing_is_enabled())


def _sweep_job() -> dict[str, str]:
    """The sweep dir and job number of a Hydra multirun job; nothing for a single run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return {}
    hydra = HydraConfig.get()
    return {"sweep_dir": str(hydra.sweep.dir), "sweep_job": str(hydra.job.num)}


def trace_labels(header: RunHeader, record: TaskRecord, task_id: str, repeat: int) -> dict[str, Any]:
    """The ``tags`` and ``metadata`` of every run in a task's trace, for its runnable config (none while
    tracing is off, so the runs' callbacks carry nothing more than before)."""
    if not tracing_on():
        return {}
    turn = header.turn
    tags = [f"worker:{header.worker.model}", f"grader:{header.grader.model}", f"rubric:{header.rubric.name}",
            f"task:{task_id}", f"repeat:{repeat}", *([f"turn:{turn}"] if turn else []), *header.tags]
    metadata = {"run_dir": record.run_dir, "thread_id": record.thread_id, "task_id": task_id, "repeat": repeat,
                **({"turn": turn} if turn else {}), **_sweep_job()}
    return {"tags": tags, "metadata": metadata}


@contextlib.contextmanager
def task_trace(header: RunHeader, record: TaskRecord, task_id: str, repeat: int) -> Iterator[None]:
    """While tracing is on, one trace for a task, named ``rubric_runner <rubric> <task>-r<k>``, with its
    labels and the task message; when it ends, the grading run, status and final answer the record holds."""
    if not tracing_on():
        yield
        return
    import langsmith

    turn = f" turn {header.turn}" if header.turn else ""
    name = f"rubric_runner {header.rubric.name} {task_key(task_id, repeat)}{turn}"
    labels = trace_labels(header, record, task_id, repeat)
    with langsmith.trace(name, "chain", inputs={"task": record.task}, tags=labels["tags"], metadata=labels["metadata"]) as run:
        try:
            yield
        finally:
            run.add_metadata({"grading_run_id": record.grading_run_id})
            run.end(outputs={"status": str(record.status), "iterations": record.iterations,
                             "final_answer": record.final_answer})


def flush() -> None:
    """Send what the tracer holds before the run's process may end."""
    if tracing_on():
        from langchain_core.tracers.langchain import wait_for_all_tracers

        wait_for_all_tracers()
