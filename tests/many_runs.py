"""Records of many runs written directly (no run takes place), for reports at scale: sweeps of
multi-task jobs and of single-task jobs."""

from __future__ import annotations

from pathlib import Path

from rubric_runner.records import (
    RESULT_FILE,
    TASKS_DIR,
    Criterion,
    Evaluation,
    GraderInfo,
    ModelInfo,
    RubricInfo,
    RunRecord,
    Status,
    Usage,
)

ANSWER = "def solve(items):\n    seen = set()\n    return [x for x in items if x in seen or seen.add(x)]\n" * 3


def task_status(job: int, task: int, repeat: int) -> Status:
    """Job 0 misses every 7th task, job 1 every 5th (a failed verdict), both every 35th; a second
    repeat also misses every 3rd task."""
    if task % (7 if job == 0 else 5) == 0:
        return Status.MAX_ITERATIONS_REACHED if job == 0 else Status.FAILED
    return Status.MAX_ITERATIONS_REACHED if repeat == 1 and task % 3 == 0 else Status.SATISFIED


def _task_record(job_dir: Path, job: int, task: int, repeat: int, common: dict) -> RunRecord:
    status = task_status(job, task, repeat)
    revised = status is not Status.FAILED and task % 2 == 0
    attempts = [ANSWER, ANSWER.replace("seen", "found")] if revised else [ANSWER]
    results = (["needs_revision", status.value] if revised else [status.value])
    evaluations = [
        Evaluation(iteration=i, result=result, explanation=f"pass {i} of task {task}",
                   criteria=[Criterion(name="All tests pass", passed=result == "satisfied",
                                       gap=None if result == "satisfied" else "test_order fails")])
        for i, result in enumerate(results)
    ]
    return RunRecord(
        status=status, exit_code=int(status.exit_code), iterations=len(evaluations), evaluations=evaluations,
        final_answer=attempts[-1], attempts=attempts, task_id=f"task{task:05d}", repeat=repeat,
        usage={"worker": Usage(calls=2, input_tokens=900, output_tokens=120, total_tokens=1020),
               "grader": Usage(calls=len(evaluations), input_tokens=1500, output_tokens=80, total_tokens=1580)},
        run_dir=str(job_dir / TASKS_DIR / f"task{task:05d}-r{repeat}"), wall_seconds=1.5, **common,
    )


def write_task_sweep(root: Path, jobs: int, tasks: int, repeats: int = 1) -> None:
    """A sweep dir of ``jobs`` multi-task jobs (workers scripted:w0, w1, ...) of ``tasks`` tasks x ``repeats`` each."""
    for job in range(jobs):
        job_dir = root / str(job)
        common = {"worker": ModelInfo(model=f"scripted:w{job}"), "grader": GraderInfo(model="scripted:judge", max_iterations=3),
                  "rubric": RubricInfo(name="code_tasks"), "overrides": [f"worker.model=scripted:w{job}"]}
        records = []
        for task, repeat in ((task, repeat) for task in range(tasks) for repeat in range(repeats)):
            record = _task_record(job_dir, job, task, repeat, common)
            task_dir = Path(record.run_dir)
            task_dir.mkdir(parents=True)
            (task_dir / RESULT_FILE).write_text(record.model_dump_json())
            records.append(record)
        parent = RunRecord(run_dir=str(job_dir), **common)
        parent.aggregate_tasks(records, repeats=repeats)
        parent.exit_code = int(parent.status.exit_code)
        (job_dir / RESULT_FILE).write_text(parent.model_dump_json())


def write_run_sweep(root: Path, jobs: int, workers: int = 4) -> None:
    """A sweep dir of ``jobs`` single-task jobs, as a Hydra multirun over workers x tasks writes them:
    job ``i`` is worker ``scripted:w<i % workers>`` on task ``i // workers``."""
    for job in range(jobs):
        job_dir = root / str(job)
        worker, task = job % workers, job // workers
        common = {"worker": ModelInfo(model=f"scripted:w{worker}"), "grader": GraderInfo(model="scripted:judge", max_iterations=3),
                  "rubric": RubricInfo(name="code", task=f"Write solve() for case {task}."),
                  "overrides": [f"worker.model=scripted:w{worker}", f"rubric.task=Write solve() for case {task}."]}
        record = _task_record(job_dir, worker, task, 0, common)
        record.task_id, record.repeat, record.run_dir = None, None, str(job_dir)
        job_dir.mkdir(parents=True)
        (job_dir / RESULT_FILE).write_text(record.model_dump_json())
