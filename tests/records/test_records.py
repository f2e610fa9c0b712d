"""The record schema: the committed JSON Schema is the one the models generate, and the records every
path writes (single and multi-task runs, their tasks, resume, regrade, config errors, interruptions,
crashed jobs, the Python API) validate against it and read back through the one reader."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf
from support.helpers import ROOT, run_json, scripted_overrides, verdict, write_script

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.cli.sweep import SweepSummary
from rubric_runner.loop.signals import StopRequest
from rubric_runner.records import (
    RESULT_FILE,
    ExitCode,
    Status,
    load_record,
    load_task,
    read_record,
    read_task,
)
from rubric_runner.records.schema import SCHEMAS, json_schema

SCHEMA_DIR = ROOT / "schemas"
OK = verdict("satisfied", ("c", True))


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_committed_schema_is_the_generated_one(name):
    assert (SCHEMA_DIR / name).read_text() == json_schema(name), "run: python -m rubric_runner.records.schema schemas"


def _run(tmp_path, name, script, *extra, stop=None):
    overrides = scripted_overrides(script, *extra)
    return rubric_runner.run(overrides, tmp_path / name, stop=stop)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every kind of record, written the way each path writes it: name -> result.json files."""
    tmp = tmp_path_factory.mktemp("records")
    # the second verdict is the regrade's: a regrade with the run's own script continues after the run's turns
    script = write_script(tmp / "s.yaml", worker=[{"content": "x"}], grader=[OK, OK],
                          tasks={"shaky": {"worker": [{"raise": "provider 500"}, {"content": "x"}]}})
    data = tmp / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": i, "task": f"do {i}"}) + "\n" for i in ("good", "shaky")))
    files: dict[str, list] = {}
    assert _run(tmp, "single", script).status is Status.SATISFIED
    files["single run"] = [tmp / "single" / RESULT_FILE]
    assert _run(tmp, "multi", script, f"rubric.dataset={data}").status is Status.ERROR
    files["multi-task run"] = [tmp / "multi" / RESULT_FILE]
    files["task"] = sorted((tmp / "multi" / "tasks").glob(f"*/{RESULT_FILE}")) + [tmp / "single" / "tasks" / "task-r0" / RESULT_FILE]
    assert _run(tmp, "multi", script, f"rubric.dataset={data}", "run.resume=true").status is Status.SATISFIED
    files["resumed run"] = [tmp / "multi" / RESULT_FILE]
    assert _run(tmp, "config_error", script, "grader.max_iterations=0").exit_code == ExitCode.USAGE
    files["config error"] = [tmp / "config_error" / RESULT_FILE]
    stop = StopRequest()
    stop.signal_name = "SIGINT"  # as if Ctrl-C came before the first checkpoint
    assert _run(tmp, "interrupted", script, stop=stop).status is Status.INTERRUPTED
    files["interrupted"] = [tmp / "interrupted" / RESULT_FILE]
    unsupported = verdict("satisfied", ("All tests pass", True))  # never ran the tests; covers half the rubric
    flagged = write_script(tmp / "u.yaml", worker=[{"content": "x"}], grader=[unsupported, unsupported])
    assert _run(tmp, "unsupported", flagged, "rubric=code").status is Status.UNSUPPORTED
    files["unsupported verdict"] = [tmp / "unsupported" / RESULT_FILE]
    chatty = write_script(tmp / "c.yaml", worker=[{"content": "x"}], grader=[{"content": "Looks fine to me."}] * 2)
    assert _run(tmp, "grader_error", chatty, "grader.structured_output=json", "grader.max_model_calls=2").status \
        is Status.GRADER_ERROR
    files["grader error"] = [tmp / "grader_error" / RESULT_FILE]
    api_dir = tmp / "api"
    assert rubric_runner.run([*scripted_overrides(script)], run_dir=api_dir).status is Status.SATISFIED
    files["python api"] = [api_dir / RESULT_FILE]
    assert run_command(["regrade", str(api_dir), f"grader.script={script}"]) == 0
    files["regrade"] = list((api_dir / "regrades").glob(f"*/{RESULT_FILE}"))
    crashed = tmp / "crashed"
    crashed.mkdir()
    config = OmegaConf.create({"hydra": {"runtime": {"output_dir": str(crashed)}}})
    SweepSummary().on_job_end(config, JobReturn(status=JobStatus.FAILED, _return_value=IsADirectoryError("events.jsonl")))
    files["crashed job"] = [crashed / RESULT_FILE]
    return files


@pytest.mark.parametrize("path", ["single run", "multi-task run", "task", "resumed run", "config error", "interrupted",
                                  "unsupported verdict", "grader error", "python api", "regrade", "crashed job"])
def test_every_written_record_validates(written, path):
    schema = _schema("task.schema.json" if path == "task" else "run.schema.json")
    assert written[path], f"no record written by: {path}"
    for file in written[path]:
        data = json.loads(file.read_text())
        assert data["schema_version"] == 3
        jsonschema.validate(data, schema)
        assert (read_task if path == "task" else read_record)(file).model_dump(mode="json") == data
        assert (load_task if path == "task" else load_record)(file.parent).status == data["status"] != "running"


def test_what_a_grading_pass_noted_is_in_the_record(written):
    unsupported = run_json(written["unsupported verdict"][0].parent)
    assert unsupported["header"]["grader"]["strategy"] == "tool" and "probe" not in unsupported["header"]["grader"]
    assert unsupported["task"]["evaluations"][-1]["unsupported"] == {"missing": ["run_test_suite"]}
    assert unsupported["task"]["evaluations"][-1]["coverage"]["uncovered"] == [
        "The function is named `find_duplicates` and accepts a single list argument"]
    grader_error = run_json(written["grader error"][0].parent)["task"]["evaluations"][-1]
    assert grader_error["grader_said"] == "Looks fine to me." and "unsupported" not in grader_error


def test_a_record_that_breaks_the_schema_is_read_as_unreadable(tmp_path):
    (tmp_path / RESULT_FILE).write_text(json.dumps({"status": "finished"}))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"status": "finished"}, _schema("run.schema.json"))
    record = load_record(tmp_path)
    assert (record.status, record.error.type) == ("error", "BadRecord")


def test_the_aggregate_rates_are_over_the_finished_runs():
    """An interrupted run's aggregate said ``satisfied_rate 0.3333`` for 4 satisfied of 12, 8 never finished:
    unfinished runs are counted beside the rates (``finished``), never in them."""
    from rubric_runner.records import RunRecord, TaskRecord, TaskTally

    statuses = [Status.SATISFIED, Status.SATISFIED, Status.FAILED, Status.INTERRUPTED, Status.NOT_RUN, Status.SATISFIED]
    tally = TaskTally(len(statuses))
    for index, (task_id, status) in enumerate(zip("aabbcd", statuses)):
        tally.add(index, TaskRecord(status=status, task_id=task_id))
    run = RunRecord()
    tally.fill(run, repeats=2)
    aggregate = run.aggregate
    assert (aggregate.tasks, aggregate.runs, aggregate.finished, aggregate.satisfied) == (4, 6, 4, 3)
    assert aggregate.satisfied_rate == 0.75  # 3 of the 4 finished runs
    assert (aggregate.pass_at_k, aggregate.pass_hat_k) == (round(2 / 3, 4), round(2 / 3, 4))  # a, b, d finished; c did not


def test_an_aggregate_with_no_decided_run_has_no_rates():
    """Issue 44, case 6: a task set stopped before any task finished wrote ``satisfied_rate 0.0``,
    ``pass_at_k 0.0``: nothing was measured, so they are null, and the console says n/a."""
    from rubric_runner.observe.console import Console
    from rubric_runner.records import RunRecord, TaskRecord, TaskTally

    tally = TaskTally(3)
    for index, status in enumerate([Status.NOT_RUN, Status.INTERRUPTED, Status.ERROR]):
        tally.add(index, TaskRecord(status=status, task_id=f"t{index}"))
    run = RunRecord()
    tally.fill(run, repeats=1)
    dumped = json.loads(run.model_dump_json())["aggregate"]
    assert {key: dumped[key] for key in ("runs", "finished", "decided", "satisfied_rate", "k", "pass_at_k", "pass_hat_k")} == {
        "runs": 3, "finished": 1, "decided": 0, "satisfied_rate": None, "k": None, "pass_at_k": None, "pass_hat_k": None}
    shown = io.StringIO()
    Console(stream=shown).summary(dumped)
    assert shown.getvalue().splitlines() == ["tasks 3 x repeats 1: satisfied n/a: no run decided (partial: 1 of 3 runs finished), 1 crashed (error 1);"
                     " reused 0, re-run 1, cache hits 0"]


def test_rerun_counts_the_tasks_a_run_worked_on(tmp_path):
    """Finding 2: ``aggregate.rerun`` said 10 when 3 ran: tasks interrupted before they began count as none."""
    from rubric_runner.records import RunRecord, TaskRecord, TaskTally, Usage

    def task(status: Status, calls: int) -> TaskRecord:
        return TaskRecord(status=status, task_id="t", usage={"worker": Usage(calls=calls), "grader": Usage()})

    tally = TaskTally(10)
    for index, record in enumerate([task(Status.SATISFIED, 2), task(Status.SATISFIED, 2), task(Status.INTERRUPTED, 1),
                                    *(task(Status.INTERRUPTED, 0) for _ in range(7))]):
        tally.add(index, record)
    run = RunRecord()
    tally.fill(run, repeats=1)
    assert (run.aggregate.runs, run.aggregate.reused, run.aggregate.rerun) == (10, 0, 3)

    script = write_script(tmp_path / "s.yaml", worker=[{"content": "x"}], grader=[OK])
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": i, "task": f"do {i}"}) + "\n" for i in ("a", "b", "c")))
    stop = StopRequest()
    stop.signal_name = "SIGINT"  # Ctrl-C before any task began
    record = _run(tmp_path, "run", script, f"rubric.dataset={data}", "run.concurrency=1", stop=stop)
    assert (record.status, record.aggregate.statuses, record.aggregate.rerun) == (Status.INTERRUPTED, {"interrupted": 3}, 0)
