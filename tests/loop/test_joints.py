"""The joints matrix: each way of making a run (rows) x what can follow it (columns), one test per cell.

Rows: a preset rubric (``rubric=code``), a rubric in a user's ``--config-dir`` (the README's
``my_conf``), a task set whose tasks bring their own tool settings and hidden checks (``rubric=code_tasks``
on two of its tasks, each with a hidden check of its own), a workspace task set (``rubric=repo_tasks`` on two
of its repos: the worker edits files, the grader reads and tests them, hidden tests check each attempt's
files), one job of a sweep (basic and joblib launchers), ``rubric_runner.run`` from Python, and a follow-up
turn (``continue`` on a finished run).
Columns: ``resume`` after SIGINT and after SIGKILL, ``regrade``, ``regrade -m``, ``continue``,
``report``, and a second identical run through the same ``run.cache``. Each cell works with the run's
own config and per-task settings, or is refused in one line (exit 2) that says why.

Each row's run is made once and copied whole for each cell (its paths are absolute, so the copy reads the
same scripts and config dirs); the module works from one dir, as a user's shell does, so the README's
relative ``my_conf/...`` paths resolve. Signals go to real processes, forked from a warmed-up server
(``forks.py``).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import readme
from support.forks import Forks
from support.helpers import BUNDLED_PLUGINS, only_task

import rubric_runner
from rubric_runner.cli import run_command
from rubric_runner.environment import API_KEY_ENV
from rubric_runner.paths import DATA_DIR
from rubric_runner.records import RESULT_FILE, TASKS_DIR, read_record, task_records

pytestmark = pytest.mark.slow  # 56 cells, each a run and what follows it: minutes in all

ROWS = ("preset", "config_dir", "dataset", "workspace", "sweep_basic", "sweep_joblib", "api", "follow_up")
TURNS = Path(TASKS_DIR, "task-r0", "turns")
"""Where a run of the rubric's own task keeps its follow-up turns."""
COLUMNS = ("resume_after_sigint", "resume_after_sigkill", "regrade", "regrade_m", "continue", "report", "cache")
SWEEPS = ("sweep_basic", "sweep_joblib")
TASK_SETS = ("config_dir", "dataset", "workspace")
"""Rows whose run is a task set: its tasks, and the one a follow-up turn continues."""
TASKS = {"config_dir": ("count_vowels", "reverse_words"), "dataset": ("chunk", "find_duplicates"),
         "workspace": ("long_log", "refactor_prices")}
CONTINUED = {"config_dir": "reverse_words", "dataset": "find_duplicates", "workspace": "long_log"}
VERIFIED = ("preset", "dataset", "workspace", "sweep_basic", "sweep_joblib", "api", "follow_up")
"""Rows with hidden checks: a regrade -m ranks its graders against them."""

SCRIPTED = ("worker=scripted", "grader=scripted")
CODE = (*SCRIPTED, "rubric=code")
MESSAGE = "Now add a docstring"
LATENCY = 1.5
"""Seconds of the scripted reply a signal arrives in (the signal is sent within a poll, 0.05 s, of the reply's
start). A cell pays it once or twice: SIGINT lets the reply end before the run stops, and the resume replays it."""
HIDDEN = {
    "find_duplicates": {"run_test_suite": {"suite": str(DATA_DIR / "suites" / "find_duplicates_hidden.yaml")}},
    "chunk": {"run_test_suite": {"function": "chunk", "cases": [
        {"name": "test_hidden_sevens", "args": [[1, 2, 3, 4, 5, 6, 7], 3], "expected": [[1, 2, 3], [4, 5, 6], [7]]}]}},
}
"""The dataset row's hidden checks, one per task (the bundled code_tasks has none)."""
STORIES = {
    "preset": {None: ("satisfied", ["needs_revision", "satisfied"], (False, True))},
    "config_dir": {"count_vowels": ("satisfied", ["satisfied"], (None, None)),
                   "reverse_words": ("satisfied", ["needs_revision", "satisfied"], (None, None))},
    "dataset": {"chunk": ("satisfied", ["satisfied"], (True, True)),
                "find_duplicates": ("satisfied", ["needs_revision", "satisfied"], (False, True))},
    "workspace": {"long_log": ("satisfied", ["satisfied"], (True, True)),
                  "refactor_prices": ("satisfied", ["needs_revision", "satisfied"], (False, True))},
    "follow_up": {None: ("satisfied", ["satisfied"], (True, True))},
}
"""What each row's run (a sweep's first job, the follow-up turn) ends with, by task: its status, verdicts and
the hidden verification of its first and final answers; the sweeps and ``api`` run the preset's."""
UNSET = "has neither a suite nor cases configured"
"""What run_test_suite says when it was not given its task's settings."""


def _sections(data: dict) -> list[dict]:
    """A script's sections of turns: its own, and each task's."""
    return [section for section in [data, *(data.get("tasks") or {}).values()] if "worker" in section or "grader" in section]


def derived(source: Path, target: Path, change: Callable[[dict], None]) -> Path:
    """A script made from ``source`` by ``change`` on each of its sections."""
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    for section in _sections(data):
        change(section)
    target.write_text(yaml.safe_dump(data), encoding="utf-8")
    return target


def slowed(answers: int) -> Callable[[dict], None]:
    """The worker's reply after its ``answers``-th answer (its first revision call, or a follow-up turn's)
    takes ``LATENCY`` seconds."""
    def change(section: dict) -> None:
        worker = section.get("worker", [])
        ends = [index for index, turn in enumerate(worker) if "content" in turn]
        if len(ends) >= answers and len(worker) > ends[answers - 1] + 1:
            worker[ends[answers - 1] + 1]["latency"] = LATENCY
    return change


def last_grading_pass(turns: list[dict]) -> list[dict]:
    """A grader section's last grading pass: its turns after the verdict before the last."""
    verdicts = [index for index, turn in enumerate(turns)
                if any(call["name"] == "GraderResponse" for call in turn.get("tool_calls", []))]
    return turns[verdicts[-2] + 1:] if len(verdicts) > 1 else turns


def regrader(result: str) -> Callable[[dict], None]:
    """A grader that makes the section's last pass's tool calls again (its test run; a workspace task's file
    reads), then says ``result`` (``satisfied``: every criterion passed)."""
    def change(section: dict) -> None:
        *tests, verdict = copy.deepcopy(last_grading_pass(section["grader"]))
        args = verdict["tool_calls"][0]["args"]
        args["explanation"] = f"regraded: {result}"
        if result != "satisfied":
            args["result"] = result
            args["criteria"] = [{"name": c["name"], "passed": False, "gap": "not good enough"} for c in args["criteria"]]
        section["grader"] = [*tests, verdict]
    return change


def later_turn(section: dict) -> None:
    """The replies of a turn after those the script told: the earlier worker replies stand in place (a scripted
    worker's place is its number of replies on the thread), then its last answer and grading pass again."""
    section["worker"] = [{"content": "(an earlier turn's reply)"}] * len(section["worker"]) + section["worker"][-1:]
    section["grader"] = last_grading_pass(section["grader"])


@dataclass(frozen=True)
class Made:
    """What a row made: its dir (copied whole for a cell), the ``RUN_DIR`` of what follows (a sweep's dir),
    the record dir of the run it made (a sweep's first job; the follow-up turn), and every record dir it
    made (a sweep's jobs; a run and its turn)."""

    dir: Path
    run_dir: Path
    record_dir: Path
    records: tuple[Path, ...]

    def copy(self, target: Path) -> Made:
        shutil.copytree(self.dir, target)
        moved = [target / path.relative_to(self.dir) for path in (self.run_dir, self.record_dir, *self.records)]
        return Made(target, moved[0], moved[1], tuple(moved[2:]))


class Matrix:
    """The module's dir, its scripts, the fork server, and each row's run (made when a cell first needs it)."""

    def __init__(self, root: Path, forks: Forks) -> None:
        self.root, self.forks = root, forks
        self.made: dict[str, Made] = {}
        scripts = root / "scripts"
        scripts.mkdir()
        named = {"dataset": "code_tasks.yaml", "workspace": "repo_tasks.yaml"}
        self.scripts = {row: root / "my_conf" / "strings_script.yaml" if row == "config_dir" else
                        DATA_DIR / "scripts" / named.get(row, "code.yaml") for row in ROWS}
        """The script each row's scripted models replay."""
        self.slow = {row: derived(source, scripts / f"{row}-slow.yaml", slowed(2 if row == "follow_up" else 1))
                     for row, source in self.scripts.items()}
        """Its worker slowed down where a signal comes: the revision (the follow-up turn's answer)."""
        self.graders = {row: tuple(derived(source, scripts / f"{row}-{result}.yaml", regrader(result))
                                   for result in ("satisfied", "failed")) for row, source in self.scripts.items()}
        """Two graders for a regrade: one satisfied, one strict."""
        self.later = {row: derived(source, scripts / f"{row}-later.yaml", later_turn) for row, source in self.scripts.items()}
        """Replies for a turn after those the script tells."""
        chosen = [json.loads(line) for line in (DATA_DIR / "datasets" / "code_tasks.jsonl").read_text().splitlines()]
        (root / "tasks.jsonl").write_text("".join(json.dumps({**task, "verify": HIDDEN[task["id"]]}) + "\n"
                                                  for task in chosen if task["id"] in HIDDEN))

    def args(self, row: str) -> list[str]:
        """The row's command line (or, for ``api``, its overrides), without where its run goes."""
        return {
            "config_dir": ["--config-dir", "my_conf", "rubric=strings", *SCRIPTED, "worker.script=my_conf/strings_script.yaml",
                           "grader.script=my_conf/strings_script.yaml"],
            "dataset": [*SCRIPTED, "rubric=code_tasks", f"rubric.dataset={self.root / 'tasks.jsonl'}"],
            "workspace": [*SCRIPTED, "rubric=repo_tasks", f"rubric.tasks=[{','.join(TASKS['workspace'])}]", "run.concurrency=1"],
            "sweep_basic": ["-m", *CODE, "grader.max_iterations=2,3"],
            "sweep_joblib": ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=1", *CODE, "grader.max_iterations=2,3"],
        }.get(row, list(CODE))

    def make(self, row: str, where: Path, *extra: str) -> Made:
        """The row's run in ``where``, with ``extra`` overrides."""
        run_dir = where / "run"
        if row in SWEEPS:
            sweep_dir = where / "sweep"
            child = self.forks.start([*self.args(row), *extra, f"hydra.sweep.dir={sweep_dir}"], self.root)
            code, out, err = self.forks.wait(child)
            assert code == 0, (out, err)
            return Made(where, sweep_dir, sweep_dir / "0", (sweep_dir / "0", sweep_dir / "1"))
        if row == "api":
            record = rubric_runner.run([*self.args(row), *extra], run_dir)
            assert record.exit_code == 0, record.error
            return Made(where, run_dir, run_dir, (run_dir,))
        assert run_command([*self.args(row), *extra, f"hydra.run.dir={run_dir}"]) == 0
        if row != "follow_up":
            return Made(where, run_dir, run_dir, (run_dir,))
        assert run_command(["continue", str(run_dir), MESSAGE]) == 0
        return Made(where, run_dir, run_dir / TURNS / "2", (run_dir, run_dir / TURNS / "2"))

    def base(self, row: str) -> Made:
        """The row's run, made the first time a cell asks: it tells its script's story."""
        if row not in self.made:
            made = self.made[row] = self.make(row, self.root / "rows" / row)
            told = {task: (ending["status"], [result for result, _ in ending["verdicts"]], ending["verified"])
                    for task, ending in endings(made.record_dir).items()}
            assert told == STORIES.get(row, STORIES["preset"]), told
            assert all(read_record(path / RESULT_FILE).status == "satisfied" for path in made.records)
        return self.made[row]

    def signalled(self, row: str, where: Path, signum: int) -> tuple[Path, int, str]:
        """The row's run made again with a slow worker reply, and ``signum`` sent (to its process group, as
        Ctrl-C on a terminal does) while the reply is awaited: the record dir, exit code and stderr."""
        slow = f"worker.script={self.slow[row]}"
        run_dir = where / "run"
        if row in SWEEPS:
            launcher = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=1"] if row == "sweep_joblib" else []
            argv, record_dir = ["-m", *launcher, *CODE, slow, "grader.max_iterations=2", f"hydra.sweep.dir={where / 'sweep'}"], where / "sweep" / "0"
        elif row == "follow_up":
            assert run_command([*CODE, f"hydra.run.dir={run_dir}"]) == 0
            argv, record_dir = ["continue", str(run_dir), MESSAGE, slow], run_dir / TURNS / "2"
        elif row == "api":
            argv, record_dir = [str(run_dir), *CODE, slow], run_dir
        else:
            argv, record_dir = [*self.args(row), slow, f"hydra.run.dir={run_dir}"], run_dir
        child = self.forks.start(argv, self.root, api=row == "api")
        others = max(len(TASKS.get(row, ())) - 1, 0)
        deadline = time.monotonic() + 60
        while not in_slow_reply(events(record_dir), row == "follow_up", others):
            assert time.monotonic() < deadline, f"no slow reply in {record_dir}: {child.err.read_text()}"
            time.sleep(0.05)
        self.forks.signal(child, signum)
        code, _, err = self.forks.wait(child)
        return record_dir, code, err


def events(record_dir: Path) -> list[dict[str, Any]]:
    """The record dir's events (a line still being written left out)."""
    path = record_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] if path.is_file() else []


def in_slow_reply(seen: list[dict[str, Any]], first_call: bool, others: int) -> bool:
    """Whether the worker's slow reply is awaited (``first_call``: the turn's first call; else the revision
    after the first ``needs_revision``, in that task) and ``others`` tasks have ended."""
    start = 0 if first_call else next((i for i, e in enumerate(seen) if e.get("result") == "needs_revision"), None)
    if start is None or not seen:
        return False
    task = seen[start].get("task_id")
    calls = [e for e in seen[start:] if e["event"] == "model_call_start" and e["agent"] == "worker" and e.get("task_id") == task]
    return bool(calls) and sum(e["event"] == "task_end" for e in seen) >= others


def endings(record_dir: Path) -> dict[str | None, dict[str, Any]]:
    """Each task's ending in a record dir: status, verdicts, answers, hidden verification, and its live and
    cached calls and tokens by role."""
    record = read_record(record_dir / RESULT_FILE)
    assert record is not None, record_dir
    record.run_dir = str(record_dir)
    tasks = task_records(record)
    return {task.task_id: {
        "status": task.status.value, "verdicts": [(e.result, e.explanation) for e in task.evaluations],
        "final": task.final_answer, "attempts": task.attempts, "verified": (task.verified("first"), task.verified("final")),
        "usage": {role: (u.calls, u.cached_calls, u.total_tokens) for role, u in task.usage.items()},
    } for task in tasks}


def without_usage(ending: dict[str | None, dict[str, Any]]) -> dict[str | None, dict[str, Any]]:
    """``endings`` without the calls and tokens."""
    return {task: {key: value for key, value in fields.items() if key != "usage"} for task, fields in ending.items()}


def tool_outputs(record_dir: Path, last_pass: bool = False) -> dict[str | None, list[str]]:
    """What the grader's tool calls returned, by task, in order; with
    ``last_pass``, those of each task's last grading pass."""
    outputs: dict[str | None, list[str]] = {}
    for event in events(record_dir):
        if last_pass and event["event"] == "rubric_evaluation_start":
            outputs[event.get("task_id")] = []
        if event["event"] == "tool_call_end" and event["agent"] == "grader":
            outputs.setdefault(event.get("task_id"), []).append(event["output"])
    return outputs


def cli(capsys, *argv: Any) -> tuple[int, str, str]:
    """``rubric-runner ARGV`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    try:
        code = run_command([str(arg) for arg in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """The module's ``Matrix``, in a dir of its own (the working dir while the module runs), with the README's
    ``my_conf`` and the environment of every test (``conftest.offline_env``)."""
    root = tmp_path_factory.mktemp("joints")
    with pytest.MonkeyPatch.context() as patch:
        for names in API_KEY_ENV.values():
            for name in names:
                patch.delenv(name, raising=False)
        patch.setenv("RUBRIC_RUNNER_PLUGINS", BUNDLED_PLUGINS)
        patch.chdir(root)
        for path, text in readme.files("Writing a rubric").items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        (root / "logs").mkdir()
        forks = Forks(dict(os.environ), root / "logs")
        try:
            yield Matrix(root, forks)
        finally:
            forks.close()


@dataclass
class Cell:
    """One cell: its row, the matrix, its own tmp dir, and the captured output."""

    row: str
    matrix: Matrix
    tmp: Path
    capsys: Any

    @property
    def base(self) -> Made:
        return self.matrix.base(self.row)

    def copy(self) -> Made:
        return self.base.copy(self.tmp / "copy")

    def cli(self, *argv: Any) -> tuple[int, str, str]:
        return cli(self.capsys, *argv)


def _resume(cell: Cell, signum: int) -> None:
    """The interrupted or killed run resumed ends as the uninterrupted run did, the same tests run for each task."""
    record_dir, code, err = cell.matrix.signalled(cell.row, cell.tmp, signum)
    stopped = read_record(record_dir / RESULT_FILE)
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL and stopped.status == "running", err  # no record of the end
    else:
        assert code == (-signal.SIGINT if cell.row == "api" else 130), err  # from Python, KeyboardInterrupt goes on up
        assert stopped.status == "interrupted", err
    resumed_code, out, err = cell.cli("resume", record_dir)
    assert resumed_code == 0, (out, err)
    assert "has no reply left" not in out + err
    assert read_record(record_dir / RESULT_FILE).resumed == 1
    assert endings(record_dir) == endings(cell.base.record_dir)
    assert tool_outputs(record_dir) == tool_outputs(cell.base.record_dir)


def resume_after_sigint(cell: Cell) -> None:
    _resume(cell, signal.SIGINT)


def resume_after_sigkill(cell: Cell) -> None:
    _resume(cell, signal.SIGKILL)


def _regraded(made: Made, out_dir: Path) -> list[tuple[Path, Path]]:
    """Each record dir of a made run, and where a regrade into ``out_dir`` recorded it again."""
    return [(source, out_dir / source.relative_to(made.run_dir)) for source in made.records]


def _check_regraded(source: Path, target: Path, result: str) -> None:
    """The regrade of ``source`` in ``target``: one pass with the regrade's grader, which ran the task's own
    test on the final answer (and read a workspace task's saved files) as the run's last pass did; the answers
    and their verification are the run's."""
    before, after = endings(source), endings(target)
    assert after.keys() == before.keys()
    for task, ending in after.items():
        assert ending["status"] == result and ending["verdicts"] == [(result, f"regraded: {result}")]
        assert (ending["final"], ending["verified"]) == (before[task]["final"], before[task]["verified"])
    outputs = tool_outputs(target)
    assert outputs == tool_outputs(source, last_pass=True)
    assert not any(UNSET in output for runs in outputs.values() for output in runs)


def regrade(cell: Cell) -> None:
    """Every record of the run (each job of a sweep, each turn) graded again with its task's own tool settings."""
    made = cell.copy()
    satisfied, _ = cell.matrix.graders[cell.row]
    code, out, err = cell.cli("regrade", made.run_dir, f"grader.script={satisfied}")
    assert code == 0, (out, err)
    (out_dir,) = (made.run_dir / "regrades").iterdir()
    for source, target in _regraded(made, out_dir):
        _check_regraded(source, target, "satisfied")


def regrade_m(cell: Cell) -> None:
    """Each grader of the list regrades every record into its numbered dir, with the reports of them all; with
    hidden checks, the graders are ranked against them."""
    made = cell.copy()
    graders = cell.matrix.graders[cell.row]
    code, out, err = cell.cli("regrade", made.run_dir, "-m", f"grader.script={graders[0]},{graders[1]}")
    assert code == 1, (out, err)  # the strict grader's verdicts are not satisfied
    (out_dir,) = (made.run_dir / "regrades").iterdir()
    for number, result in enumerate(("satisfied", "failed")):
        for source, target in _regraded(made, out_dir / str(number)):
            _check_regraded(source, target, result)
    assert (out_dir / "report.md").is_file() and (out_dir / "summary.jsonl").is_file()
    ranking = out.partition("graders ranked")[2]  # its wording is the report's; each grader has its line
    if cell.row in VERIFIED:
        assert all(f"grader.script={grader}: " in ranking for grader in graders), out
    else:
        assert not ranking, out


def _turn(turn_dir: Path, number: int, task: str | None = None, calls: int = 1) -> dict[str, Any]:
    """A follow-up turn's record: satisfied, with the hidden checks of its task, after ``calls`` grader tool
    calls, the last a test of the task's own."""
    record = read_record(turn_dir / RESULT_FILE)
    assert (record.status, record.header.turn) == ("satisfied", number), record.error
    assert only_task(turn_dir).task_id == task
    outputs = tool_outputs(turn_dir)[task]
    output = outputs[-1]  # run_test_suite's JSON, or run_tests' header line
    assert len(outputs) == calls
    assert ('"ok": true' in output or output.startswith("ok: true (exit code 0;")) and UNSET not in output
    return endings(turn_dir)[task]


def continue_(cell: Cell) -> None:
    """A single-task run (a sweep's job, a turn) goes on with a turn; a task set needs ``--task ID``, and a
    sweep dir one of its jobs: each is refused in one line that says which to give."""
    made, row, later = cell.copy(), cell.row, cell.matrix.later[cell.row]
    later_scripts = (f"worker.script={later}", f"grader.script={later}")
    if row in TASK_SETS:
        code, out, err = cell.cli("continue", made.run_dir, MESSAGE)
        assert code == 2 and err == (f"error: --task: {made.run_dir} ran {len(TASKS[row])} tasks (name the task to continue, "
                                     f"one of: {', '.join(f'{task}-r0' for task in TASKS[row])})\n"), err
        task = CONTINUED[row]
        code, out, err = cell.cli("continue", "--task", task, made.run_dir, MESSAGE, *later_scripts)
        assert code == 0, (out, err)
        # long_log's grader reads the offloaded test run, then runs the tests
        ending = _turn(made.run_dir / TASKS_DIR / f"{task}-r0" / "turns" / "2", 2, task, 3 if row == "workspace" else 1)
        assert ending["verified"] == ((None, None) if row == "config_dir" else (True, True))
        return
    if row in SWEEPS:
        code, out, err = cell.cli("continue", made.run_dir, MESSAGE)
        assert code == 2 and err.count("\n") == 1 and "holds no .hydra/overrides.yaml" in err, err
    if row == "follow_up":  # the turn after the latest one, with replies for it
        code, out, err = cell.cli("continue", made.run_dir, "And keep it short", *later_scripts)
        turn_dir, number = made.run_dir / TURNS / "3", 3
    else:
        code, out, err = cell.cli("continue", made.record_dir, MESSAGE)
        turn_dir, number = made.record_dir / TURNS / "2", 2
    assert code == 0, (out, err)
    ending = _turn(turn_dir, number)
    assert ending["verified"] == (True, True) and ending["verdicts"][-1][0] == "satisfied"


def report(cell: Cell) -> None:
    """The report lists every run of the dir (tasks, jobs, turns) as their records say."""
    made = cell.copy()
    code, out, err = cell.cli("report", made.run_dir)
    assert code == 0 and out.startswith("report: "), (out, err)
    rows = [json.loads(line) for line in (made.run_dir / "summary_tasks.jsonl").read_text().splitlines()]
    seen = [(row["job"], row["turn"], row["task_id"] or "", row["status"], row["verified_first"], row["verified_final"])
            for row in rows]
    expected = []
    for record_dir in made.records:
        job = record_dir.relative_to(made.run_dir).as_posix()
        turn = read_record(record_dir / RESULT_FILE).header.turn or 1
        expected += [(job, turn, task or "", ending["status"], *ending["verified"]) for task, ending in endings(record_dir).items()]
    assert sorted(seen) == sorted(expected)
    assert {status for *_, status, _, _ in seen} == {"satisfied"}


def cache(cell: Cell) -> None:
    """A second identical run with the same ``run.cache`` makes no live model call and ends the same, its
    tools run again with the same settings. (In the first run, a call identical to one made before, as in a
    sweep's second job, is already answered from the cache.)"""
    matrix, cache_file = cell.matrix, cell.tmp / "cache.sqlite"
    first = matrix.make(cell.row, cell.tmp / "first", f"run.cache={cache_file}")
    second = matrix.make(cell.row, cell.tmp / "second", f"run.cache={cache_file}")
    assert all(cached == 0 for ending in endings(first.records[0]).values() for _, cached, _ in ending["usage"].values())
    for one, two in zip(first.records, second.records, strict=True):
        made, replayed = endings(one), endings(two)
        assert without_usage(replayed) == without_usage(made)
        for task, ending in replayed.items():
            for role, (calls, cached, tokens) in ending["usage"].items():
                live_calls, cached_before, _ = made[task]["usage"][role]
                assert (calls, tokens, cached) == (0, 0, live_calls + cached_before) and cached > 0, (task, role)
        assert tool_outputs(two) == tool_outputs(one)
    hits = {path.relative_to(second.run_dir).as_posix(): sum(cached for ending in endings(path).values()
                                                             for _, cached, _ in ending["usage"].values())
            for path in second.records}
    if cell.row in TASK_SETS:
        assert read_record(second.run_dir / RESULT_FILE).aggregate.cache_hits == hits["."]
    if cell.row in SWEEPS:
        rows = [json.loads(line) for line in (second.run_dir / "summary.jsonl").read_text().splitlines()]
        assert {row["job"]: row["cache_hits"] for row in rows} == hits


COLUMN_CHECKS = {"resume_after_sigint": resume_after_sigint, "resume_after_sigkill": resume_after_sigkill,
                 "regrade": regrade, "regrade_m": regrade_m, "continue": continue_, "report": report, "cache": cache}
CELLS = [(row, column) for row in ROWS for column in COLUMNS]


@pytest.mark.parametrize(("row", "column"), CELLS, ids=[f"{row}-{column}" for row, column in CELLS])
def test_joint(row, column, matrix, tmp_path, capsys):
    COLUMN_CHECKS[column](Cell(row, matrix, tmp_path, capsys))
