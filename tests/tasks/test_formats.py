"""Task sets in the formats people have: CSV, JSONL with other field names (``rubric.fields``), Parquet and
Arrow files, Hugging Face datasets saved to disk and in the local hub cache; all offline, on data written
here. Bad rows are one line naming the file, the row and the field."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from support.helpers import (
    compose_config,
    run_cli,
    scripted_overrides,
    verdict,
    write_script,
)

import rubric_runner
from rubric_runner.config.validate import validate
from rubric_runner.errors import UsageError
from rubric_runner.records import Status
from rubric_runner.tasks.formats import read_rows
from rubric_runner.tasks.sets import load_tasks

datasets = pytest.importorskip("datasets")

OK = verdict("satisfied", ("c", True))
ROWS = [
    {"id": "add", "input": "What is 2 + 3?", "target": "5", "metadata": {"topic": "sums"}},
    {"id": "mul", "input": "What is 4 * 6?", "target": "24", "metadata": {"topic": "products"}},
    {"id": "sub", "input": "What is 9 - 7?", "target": "2", "metadata": {"topic": "differences"}},
]
RUBRIC = "- The answer is about {metadata.topic}\n- The answer is {target}"


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    return write_script(tmp_path_factory.mktemp("script") / "script.yaml", [{"content": "The answer."}], [OK])


def _run(tmp_path: Path, script: Path, *extra: str):
    run_dir = tmp_path / "run"
    return rubric_runner.run(scripted_overrides(script, "+rubric.fields.task=input", *extra), run_dir), run_dir


def _task_records(run_dir: Path) -> dict[str, dict]:
    records = [json.loads(path.read_text()) for path in sorted((run_dir / "tasks").glob("*/result.json"))]
    return {record["task_id"]: record for record in records}


def _check_ran(record, run_dir: Path, ids: list[str]) -> None:
    assert record.status is Status.SATISFIED and record.aggregate.runs == len(ids)
    tasks = _task_records(run_dir)
    assert sorted(tasks) == sorted(ids)
    by_id = {row["id"]: row for row in ROWS}
    for task_id, task in tasks.items():
        assert task["task"] == by_id[task_id]["input"]
        assert task["rubric"] == f"- The answer is about {by_id[task_id]['metadata']['topic']}\n- The answer is {by_id[task_id]['target']}"


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_a_csv_task_set_runs_offline(tmp_path, script):
    rows = [{**row, "metadata": json.dumps(row["metadata"])} for row in ROWS]
    data = _write_csv(tmp_path / "tasks.csv", rows)
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={data}", f"rubric.text='{RUBRIC}'")
    _check_ran(record, run_dir, ["add", "mul", "sub"])


def test_a_hugging_face_dataset_saved_to_disk_runs_offline(tmp_path, script):
    saved = tmp_path / "saved"
    test_rows = ROWS[1:]
    datasets.DatasetDict({
        "train": datasets.Dataset.from_list(ROWS[:1]), "test": datasets.Dataset.from_list(test_rows),
    }).save_to_disk(str(saved))
    record, run_dir = _run(tmp_path, script, f"rubric.dataset={saved}:test", f"rubric.text='{RUBRIC}'")
    _check_ran(record, run_dir, ["mul", "sub"])


def test_a_dataset_in_the_local_hub_cache_runs_offline_in_a_process_of_its_own(tmp_path, script):
    cache = tmp_path / "hub"
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "datasets--rubric-tests--arith"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    snapshot = repo / "snapshots" / revision / "data"
    snapshot.mkdir(parents=True)
    (snapshot / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    proc = run_cli(*scripted_overrides(script, "+rubric.fields.task=input", "rubric.dataset=hf:rubric-tests/arith",
                                       f"rubric.text='{RUBRIC}'", f"hydra.run.dir={tmp_path / 'run'}"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    tasks = _task_records(tmp_path / "run")
    assert sorted(tasks) == ["add", "mul", "sub"] and tasks["add"]["task"] == "What is 2 + 3?"
    missing = run_cli(*scripted_overrides(script, "rubric.dataset=hf:rubric-tests/absent"), cwd=tmp_path, env=env)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "rubric.dataset: rubric-tests/absent is not in the local Hugging Face hub cache" in missing.stderr


def test_parquet_and_arrow_files_are_read_through_datasets(tmp_path):
    table = datasets.Dataset.from_list(ROWS)
    table.to_parquet(str(tmp_path / "tasks.parquet"))
    saved = tmp_path / "arrow"
    table.save_to_disk(str(saved))
    arrow = next(saved.glob("*.arrow"))
    for path in (tmp_path / "tasks.parquet", arrow):
        rows = read_rows(str(path))
        assert [row.item["id"] for row in rows] == ["add", "mul", "sub"] and rows[0].item["metadata"] == {"topic": "sums"}
        assert rows[2].where == f"{path.name} row 2"


def _tasks(*overrides: str):
    return load_tasks(validate(compose_config(list(overrides))))


def test_fields_map_common_names_and_a_row_without_id_is_named_by_its_place(tmp_path):
    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps({"question": row["input"], "answer": row["target"]}) + "\n" for row in ROWS))
    tasks = _tasks(f"rubric.dataset={data}", "+rubric.fields.task=question", "+rubric.fields.target=answer", "rubric.text=- Correct")
    assert [task.id for task in tasks] == ["0", "1", "2"]
    assert tasks[1].message == "What is 4 * 6?" and tasks[1].rubric == "- Correct\n- The answer agrees with the reference answer: 24"
    assert [task.id for task in _tasks(f"rubric.dataset={data}", "+rubric.fields.task=question", "rubric.tasks=[1:]")] == ["1", "2"]


def _error(*overrides: str) -> str:
    with pytest.raises(UsageError) as caught:
        _tasks(*overrides)
    return str(caught.value)


def test_a_bad_row_is_one_line_naming_file_row_and_field(tmp_path):
    data = _write_csv(tmp_path / "tasks.csv", [{"id": "a", "input": "do a", "tools": ""}, {"id": "b", "input": "", "tools": ""},
                                               {"id": "c", "input": "do c", "tools": "{not json"}])
    assert _error(f"rubric.dataset={data}", "+rubric.fields.task=input") == (
        "rubric.dataset[1].task: tasks.csv line 3: is missing or empty (give the task message)")
    data.write_text(data.read_text().replace("b,,", "b,do b,"))
    assert _error(f"rubric.dataset={data}", "+rubric.fields.task=input") == (
        "rubric.dataset[2].tools: tasks.csv line 4: is not JSON (Expecting property name enclosed in double quotes at column 2) "
        """(e.g. {"run_test_suite": {"cases": []}})""")
    assert _error(f"rubric.dataset={data}").startswith(
        "rubric.dataset[0].task: tasks.csv line 2: is missing or empty (give the task message; a column of another name: "
        "+rubric.fields.task=NAME)")
    assert _error(f"rubric.dataset={data}", "+rubric.fields.question=input") == (
        "rubric.fields.question: is not a task field (map one of id, task, rubric, target, metadata, tools, verify, workspace, protected to a column)")


def test_a_bad_row_on_the_command_line_is_one_line_and_exit_2(tmp_path, script):
    data = _write_csv(tmp_path / "tasks.csv", [{"id": "a", "input": "do a"}, {"id": "a", "input": "do a again"}])
    proc = run_cli(*scripted_overrides(script, f"rubric.dataset={data}", "+rubric.fields.task=input"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == ("error: rubric.dataset[1].id: tasks.csv line 3: 'a' is missing, repeated or "
                                           "not a safe name (use letters, digits, _ . -)")


def test_a_split_that_is_not_there_names_those_that_are(tmp_path):
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS), "test": datasets.Dataset.from_list(ROWS)}).save_to_disk(str(saved))
    with pytest.raises(UsageError, match=r"saved has splits train, test \(name one: .*saved:train\)"):
        read_rows(str(saved))
    with pytest.raises(UsageError, match="has splits train, test, not 'dev'"):
        read_rows(f"{saved}:dev")


def test_without_the_datasets_extra_a_parquet_file_names_it(tmp_path, monkeypatch):
    (tmp_path / "tasks.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(UsageError, match=r"needs the datasets extra \(pip install 'rubric_runner\[datasets\]'\)"):
        read_rows(str(tmp_path / "tasks.parquet"))


def test_fields_is_part_of_the_composed_rubric():
    config = compose_config(["+rubric.fields.task=input"])
    assert OmegaConf.to_container(config.rubric.fields) == {"task": "input"}
