"""``rubric-runner compare``: two scripted code_tasks runs that differ in one task's outcome, compared both
ways in real processes; the pairing, the hidden-check basis, the statistics and the gate on cases built
by hand; and the steps of the CI workflow (.github/workflows/eval.yml) run as GitHub Actions runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.helpers import ROOT, SCRIPTED_EVIDENCE, run_cli
from support.many_runs import write_task_job, write_task_sweep

import rubric_runner
from rubric_runner.analysis.compare import (
    CHECKS,
    VERDICT,
    Case,
    Gate,
    compare,
    pair_configs,
)
from rubric_runner.analysis.intervals import cluster_bootstrap, mcnemar, paired_difference
from rubric_runner.errors import UsageError
from rubric_runner.paths import DATA_DIR
from rubric_runner.records import Status

SCRIPT = DATA_DIR / "scripts" / "code_tasks.yaml"
REGRESSED = "fizzbuzz"


def _failing_script(path: Path) -> Path:
    """The code_tasks script with the grader failing fizzbuzz (its answer is unchanged)."""
    script = yaml.safe_load(SCRIPT.read_text())
    last = script["tasks"][REGRESSED]["grader"][-1]["tool_calls"][0]["args"]
    last.update(result="failed", explanation="fizzbuzz must return one string.",
                criteria=[{"name": "All tests pass in run_test_suite", "passed": True},
                          {"name": "The function has the name and signature given in the task", "passed": False,
                           "gap": "returns a list where one string is asked for"}])
    path.write_text(yaml.safe_dump(script))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """BASE: the code_tasks demo, 12/12 satisfied; NEW: the same with fizzbuzz failed by the grader."""
    root = tmp_path_factory.mktemp("compare")
    common = ["worker=scripted", "grader=scripted", "rubric=code_tasks", "run.console=false"]
    base = rubric_runner.run(common, root / "base")
    new = rubric_runner.run([*common, f"grader.script={_failing_script(root / 'failing.yaml')}"], root / "new")
    assert base.aggregate.satisfied == 12 and new.aggregate.satisfied == 11
    return root / "base", root / "new"


def test_a_regression_is_listed_with_its_p_and_fails_the_gate(runs, tmp_path):
    base, new = runs
    proc = run_cli("compare", str(base), str(new), "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    regressed = proc.stdout.split("### Regressed (1)", 1)[1].split("###")[0].split("<details>")[0]
    assert f"| {REGRESSED} | 0 | satisfied | failed | verdict |" in regressed
    assert "**1 regressed**, 0 improved, 11 unchanged (11 passed both, 0 failed both) of 12 cases" in proc.stdout
    assert "exact McNemar p = 1.0 on 1 discordant" in proc.stdout
    assert "| passed | 12/12 (100.0%) | 11/12 (91.7%) | -8.3 pts (95% CI" in proc.stdout
    assert "Gate (any regression, or fewer than 80% of the cases compared): **failed**." in proc.stdout
    assert proc.stdout.rstrip().endswith("gate failed -> exit 4")


def test_the_api_compares_and_gates_as_the_command_does(runs, tmp_path):
    base, new = runs
    done = rubric_runner.compare(base, new, Gate())
    assert (done.comparison.paired.counts, done.failed, done.exit_code) == ((11, 1, 0, 0), True, 4)
    assert done.comparison.pairing.pairs == [(*done.labels[0], *done.labels[1])]  # one configuration a side, paired
    assert (rubric_runner.compare(new, base, Gate()).exit_code, rubric_runner.compare(base, new).failed) == (0, False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no runs under"):
        rubric_runner.compare(base, tmp_path / "empty")


def test_the_same_runs_reversed_pass_the_gate(runs, tmp_path):
    base, new = runs
    proc = run_cli("compare", str(new), str(base), "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "### Regressed" not in proc.stdout
    assert "### Improved (1)" in proc.stdout and f"| {REGRESSED} | 0 | failed | satisfied | verdict |" in proc.stdout
    assert proc.stdout.rstrip().endswith("gate passed -> exit 0")


def test_without_the_gate_a_regression_exits_0_and_the_summary_goes_to_its_file(runs, tmp_path):
    base, new = runs
    prices = tmp_path / "prices.yaml"
    prices.write_text("scripted:demo: {input: 1.0, output: 2.0}\n")
    out = tmp_path / "summary.md"
    proc = run_cli("compare", str(base), str(new), "--markdown", str(out), "--prices", str(prices), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "## rubric-runner compare" not in proc.stdout and str(out) in proc.stdout
    text = out.read_text()
    assert "### Regressed (1)" in text and "<summary>Unchanged (11)</summary>" in text

    def spend(run_dir: Path) -> tuple[int, float]:
        usage = json.loads((run_dir / "result.json").read_text())["aggregate"]["usage"]
        tokens = sum(role["total_tokens"] for role in usage.values())
        return tokens, sum(role["input_tokens"] * 1.0 + role["output_tokens"] * 2.0 for role in usage.values()) / 1e6

    (base_tokens, base_usd), (new_tokens, new_usd) = spend(base), spend(new)
    row = next(line for line in text.splitlines() if line.startswith("| tokens |"))
    assert row.startswith(f"| tokens | {base_tokens:,} | {new_tokens:,} | {new_tokens - base_tokens:+,}")
    row = next(line for line in text.splitlines() if line.startswith("| est. USD |"))
    assert row.startswith(f"| est. USD | {base_usd:.4f} | {new_usd:.4f} |")


def test_tasks_on_one_side_only_are_listed(tmp_path):
    write_task_job(tmp_path / "base", [Status.SATISFIED] * 4)  # t0..t3
    write_task_job(tmp_path / "new", [Status.SATISFIED, Status.SATISFIED, Status.FAILED, Status.SATISFIED], first=1)  # t1..t4
    proc = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new"), "--fail-on-regression", "1",
                   "--min-paired", "0.6", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # one regression (t3) is not more than 1; 3 of 5 cases compared
    assert "### Only in BASE (1)" in proc.stdout and "| t0 | 0 |" in proc.stdout.split("### Only in BASE")[1]
    assert "### Only in NEW (1)" in proc.stdout and "| t4 | 0 |" in proc.stdout.split("### Only in NEW")[1]
    assert "| t3 | 0 | satisfied | failed | verdict |" in proc.stdout
    assert "of 3 cases" in proc.stdout and "1 only in BASE, 1 only in NEW" in proc.stdout


@pytest.mark.parametrize(("args", "says"), [
    (["--fail-on-regression", "often"], "'often' is neither a count nor p=ALPHA"),
    (["--fail-on-regression", "p=2"], "'p=2' is neither a count nor p=ALPHA"),
])
def test_a_bad_threshold_is_one_line(tmp_path, args, says):
    write_task_job(tmp_path / "runs", [Status.SATISFIED])
    proc = run_cli("compare", str(tmp_path / "runs"), str(tmp_path / "runs"), *args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and says in proc.stderr


def test_a_dir_without_runs_is_one_line(tmp_path):
    write_task_job(tmp_path / "runs", [Status.SATISFIED])
    (tmp_path / "empty").mkdir()
    proc = run_cli("compare", str(tmp_path / "runs"), str(tmp_path / "empty"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == f"error: NEW: no runs under {tmp_path / 'empty'} (give a run dir or a sweep dir that holds result.json files)\n"


def test_a_summary_that_cannot_be_written_is_one_line(tmp_path):
    write_task_job(tmp_path / "runs", [Status.SATISFIED])
    (tmp_path / "taken").write_text("a file, not a dir")
    target = tmp_path / "taken" / "compare.md"
    proc = run_cli("compare", str(tmp_path / "runs"), str(tmp_path / "runs"), "--markdown", str(target), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"error: --markdown: cannot write {target}: File exists (give a file in a dir you may write)\n"


def _case(task: str, status: Status = Status.SATISFIED, verified: bool | None = None, config: str = "c", repeat: int = 0) -> Case:
    return Case(config=config, task=task, repeat=repeat, turn=1, status=status, verified=verified, tokens=10, cost=None)


def test_hidden_checks_decide_where_both_answers_were_checked():
    base = [_case("a", verified=False), _case("b", verified=True), _case("c", Status.FAILED, verified=None)]
    new = [_case("a", Status.FAILED, verified=True), _case("b", verified=None), _case("c", verified=True)]
    result = compare(base, new, {"c": {}}, {"c": {}})
    by_task = {pair.base.task: pair for pair in result.cases}
    assert (by_task["a"].basis, by_task["a"].change) == (CHECKS, "improved")  # the grader's failed verdict does not count
    assert (by_task["b"].basis, by_task["b"].change) == (VERDICT, "passed")
    assert (by_task["c"].basis, by_task["c"].change) == (VERDICT, "improved")


def test_the_figures_are_mcnemar_and_newcombe_on_the_cases():
    base = [_case(f"t{i}") for i in range(10)]
    new = [_case(f"t{i}", Status.FAILED if i < 6 else Status.SATISFIED) for i in range(10)]
    result = compare(base, new, {"c": {}}, {"c": {}})
    assert result.paired.counts == (4, 6, 0, 0)
    assert result.paired.p == mcnemar(0, 6) == pytest.approx(2 / 64)
    assert result.paired.interval == paired_difference(4, 6, 0, 0) and result.paired.difference == pytest.approx(-0.6)
    assert Gate(alpha=0.05).failed(result) and not Gate(alpha=0.01).failed(result)
    assert Gate(count=5).failed(result) and not Gate(count=6).failed(result)
    assert not Gate(alpha=0.05).failed(compare(new, base, {"c": {}}, {"c": {}}))  # improvements never fail it


def test_a_comparison_that_paired_nothing_fails_every_gate():
    result = compare([_case("a")], [_case("b")], {"c": {}}, {"c": {}})
    assert not result.cases and len(result.only_base) == len(result.only_new) == 1
    assert Gate().failed(result) and Gate(count=5).failed(result) and Gate(alpha=0.05).failed(result)


def test_compare_of_runs_with_no_task_in_common_fails_the_gate(runs, tmp_path):
    other = tmp_path / "other"
    rubric_runner.run(["worker=scripted", "grader=scripted", "run.console=false", SCRIPTED_EVIDENCE], other)
    proc = run_cli("compare", str(runs[0]), str(other), "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "nothing was compared" in proc.stdout
    assert proc.stdout.rstrip().endswith("gate failed (nothing paired) -> exit 4")


def test_with_repeats_the_p_counts_tasks_not_cases():
    base = [_case(t, repeat=r) for t in ("a", "b") for r in range(3)]
    new = [_case(t, Status.FAILED if t == "a" else Status.SATISFIED, repeat=r) for t in ("a", "b") for r in range(3)]
    result = compare(base, new, {"c": {}}, {"c": {}})
    assert result.paired.counts == (3, 3, 0, 0)
    assert result.paired.p == 1.0 and mcnemar(0, 3) == 0.25  # one task regressed three times: one task moved
    assert not Gate(alpha=0.3).failed(result)


def test_unfinished_cases_are_listed_not_counted():
    result = compare([_case("a"), _case("b")], [_case("a", Status.INTERRUPTED), _case("b", Status.FAILED)], {"c": {}}, {"c": {}})
    assert [pair.base.task for pair in result.unfinished] == ["a"]
    assert result.paired.counts == (0, 1, 0, 0)


def test_configurations_pair_by_fingerprint_the_config_but_the_compared_keys():
    one = pair_configs({"b1": {"worker.model": "a", "p": 1}}, {"n1": {"worker.model": "b", "p": 1}})
    assert (one.pairs, one.compared, one.unpaired) == ([("b1", "n1")], ("worker.model",), [])
    # a sweep over worker.model on each side, the prompt changed between them: model paired with model
    swept = pair_configs({"b1": {"worker.model": "a", "prompt": "old"}, "b2": {"worker.model": "b", "prompt": "old"}},
                         {"n1": {"worker.model": "b", "prompt": "new"}, "n2": {"worker.model": "a", "prompt": "new"}})
    assert (swept.pairs, swept.compared, swept.unpaired) == ([("b1", "n2"), ("b2", "n1")], ("prompt",), [])
    # configurations alike but in a key that varies within a side are not paired, however they are ordered
    apart = pair_configs({"b1": {"m": 1, "w": "a"}, "b2": {"m": 1, "w": "b"}}, {"n1": {"m": 1, "w": "a"}, "n2": {"m": 2, "w": "a"}})
    assert apart.pairs == [("b1", "n1")] and apart.compared == ()
    assert [(u.side, u.config, u.nearest, u.differs) for u in apart.unpaired] == [
        ("BASE", "b2", "n2", (("m", "1", "2"), ("w", "b", "a"))), ("NEW", "n2", "b2", (("m", "2", "1"), ("w", "a", "b")))]
    left = compare([_case("a", config="b2")], [], {"b1": {"m": 1, "w": "a"}, "b2": {"m": 1, "w": "b"}}, {"n1": {"m": 1, "w": "a"}})
    assert [case.task for case in left.only_base] == ["a"]  # a configuration without a partner: its tasks are listed


def _sweep(root: Path, jobs: list[tuple[dict, list[Status]]]) -> Path:
    """A sweep dir of multi-task jobs, each run with its resolved config and the overrides that set it."""
    for index, (config, statuses) in enumerate(jobs):
        overrides = [f"{section}.{key}={value}" for section, keys in config.items() for key, value in keys.items()]
        write_task_job(root / str(index), statuses, config=config, overrides=tuple(overrides))
    return root


def test_configurations_that_differ_in_more_than_the_compared_key_are_not_paired_and_the_gate_says_so(tmp_path):
    failed, satisfied = [Status.FAILED] * 5, [Status.SATISFIED] * 5
    base = _sweep(tmp_path / "base", [({"worker": {"model": "a"}, "grader": {"max_iterations": 1}}, failed),
                                      ({"worker": {"model": "b"}, "grader": {"max_iterations": 1}}, failed)])
    new = _sweep(tmp_path / "new", [({"worker": {"model": "a"}, "grader": {"max_iterations": 1}}, failed),
                                    ({"worker": {"model": "a"}, "grader": {"max_iterations": 2}}, satisfied)])
    proc = run_cli("compare", str(base), str(new), "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "### Improved" not in proc.stdout  # max_iterations 2 of model a is not set against 1 of model b
    assert "of 5 cases" in proc.stdout and "### Configurations (1 paired, 2 not)" in proc.stdout
    assert "- paired: worker.model=a with grader.max_iterations=1" in proc.stdout  # each side's labels: its own keys that vary
    assert ("- **not paired**: BASE worker.model=b: its nearest in NEW, grader.max_iterations=2, differs in "
            "grader.max_iterations 1 vs 2, worker.model b vs a; its runs are listed under Only in BASE") in proc.stdout
    assert "**failed** (5 of 15 cases compared, 33.3%, fewer than --min-paired 0.8)." in proc.stdout
    assert proc.stdout.rstrip().endswith("gate failed (too few compared) -> exit 4")
    assert run_cli("compare", str(base), str(new), "--fail-on-regression", "--min-paired", "0.3", cwd=tmp_path).returncode == 0


def test_sweeps_with_no_configuration_alike_are_refused_in_one_line(tmp_path):
    base = _sweep(tmp_path / "base", [({"grader": {"max_iterations": m}}, [Status.FAILED]) for m in (1, 3)])
    new = _sweep(tmp_path / "new", [({"grader": {"max_iterations": m}}, [Status.SATISFIED]) for m in (2, 4)])
    proc = run_cli("compare", str(base), str(new), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("error: BASE, NEW: no configuration of BASE is alike in every key of NEW: BASE's "
                           "grader.max_iterations=1 and NEW's grader.max_iterations=2 differ in grader.max_iterations 1 vs 2 "
                           "(compare sweeps over the same values, or one configuration against one)\n")


WORKFLOW = ROOT / ".github" / "workflows" / "eval.yml"


def _step(steps: dict, name: str, workspace: Path, env: dict, outputs: dict | None = None) -> subprocess.CompletedProcess:
    """Run a workflow step's script as GitHub Actions does (bash -eo pipefail), its ``${{ steps.* }}`` filled in."""
    script = steps[name]["run"]
    for key, value in (outputs or {}).items():
        script = script.replace(f"${{{{ steps.compare.outputs.{key} }}}}", value)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def _outputs(path: Path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_the_ci_workflow_evaluates_both_sides_compares_and_gates(tmp_path):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["eval"]
    steps = {step["name"]: step for step in job["steps"] if "name" in step}
    workspace, runner = tmp_path / "workspace", tmp_path / "runner"
    workspace.mkdir()
    (workspace / ".venv").symlink_to(ROOT / ".venv")
    base = runner / "base"  # what `git worktree add` leaves: the base branch's own code, here this one's with fizzbuzz failed
    shutil.copytree(ROOT / "rubric_runner", base / "rubric_runner", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "conf", base / "conf")
    _failing_script(base / "rubric_runner" / "data" / "scripts" / "code_tasks.yaml")
    env = {**job["env"], "GITHUB_WORKSPACE": str(workspace), "RUNNER_TEMP": str(runner),
           "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    for name in ("Evaluate the base branch", "Evaluate this change"):
        proc = _step(steps, name, workspace, env)
        assert proc.returncode == 0, proc.stderr
    base_record = json.loads((workspace / "eval" / "base" / "result.json").read_text())
    assert base_record["aggregate"]["satisfied"] == 11  # the base branch's code ran there
    assert json.loads((workspace / "eval" / "new" / "result.json").read_text())["aggregate"]["satisfied"] == 12

    proc = _step(steps, "Compare", workspace, env)
    assert proc.returncode == 0, proc.stderr
    assert _outputs(tmp_path / "output") == {"code": "0"}  # fizzbuzz improved
    assert "### Improved (1)" in (workspace / "eval" / "compare.md").read_text()
    assert (tmp_path / "summary.md").read_text() == (workspace / "eval" / "compare.md").read_text()
    assert _step(steps, "Gate on regression", workspace, env, _outputs(tmp_path / "output")).returncode == 0

    evaluated = workspace / "eval"
    (evaluated / "base").rename(evaluated / "before")
    (evaluated / "new").rename(evaluated / "base")
    (evaluated / "before").rename(evaluated / "new")  # the same two runs the other way round: a regression
    (tmp_path / "output").unlink()
    assert _step(steps, "Compare", workspace, env).returncode == 0
    assert _outputs(tmp_path / "output") == {"code": "4"}
    assert f"| {REGRESSED} | 0 | satisfied | failed | verdict |" in (evaluated / "compare.md").read_text()
    assert _step(steps, "Gate on regression", workspace, env, _outputs(tmp_path / "output")).returncode == 4


def test_the_docs_show_the_workflow_this_repository_runs():
    page = (ROOT / "docs" / "ci-and-integrations.md").read_text()
    block = page.split("```yaml\n# .github/workflows/eval.yml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load(WORKFLOW.read_text())


def test_sweeps_pair_their_configurations_by_label(tmp_path):
    write_task_sweep(tmp_path / "base", jobs=2, tasks=6)
    write_task_sweep(tmp_path / "new", jobs=2, tasks=6)
    (tmp_path / "new" / "0").rename(tmp_path / "new" / "swap")  # the same configurations, in the other order
    (tmp_path / "new" / "1").rename(tmp_path / "new" / "0")
    (tmp_path / "new" / "swap").rename(tmp_path / "new" / "1")
    record_file = tmp_path / "new" / "0" / "tasks" / "task00003-r0" / "result.json"  # worker w1's: satisfied in BASE
    record = json.loads(record_file.read_text())
    record["status"] = "failed"
    record_file.write_text(json.dumps(record))
    proc = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new"), "--max-rows", "4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "configurations paired by fingerprint: alike in every key." in proc.stdout and "of 12 cases" in proc.stdout
    assert "- paired: worker.model=scripted:w0 with worker.model=scripted:w0" in proc.stdout
    unchanged = proc.stdout.split("<summary>Unchanged (11)</summary>", 1)[1].split("</details>")[0]
    assert unchanged.count("| verdict |") == 4 and "... and 7 more (`--max-rows 0` lists them all)" in unchanged
    regressed = proc.stdout.split("### Regressed (1)", 1)[1].split("<details>")[0]
    assert "| task00003 | 0 | worker.model=scripted:w1 | satisfied | failed | verdict |" in regressed


def test_with_repeats_the_interval_is_clustered_by_task_and_the_p_named_the_sign_test():
    few = compare([_case(t, repeat=r) for t in ("a", "b") for r in range(3)],
                  [_case(t, Status.FAILED if t == "a" else Status.SATISFIED, repeat=r) for t in ("a", "b") for r in range(3)],
                  {"c": {}}, {"c": {}})
    assert few.paired.repeated and few.paired.test == "sign test on tasks"
    assert few.paired.interval is None and few.paired.why == "no interval: 2 tasks, fewer than 10"  # Newcombe's on 6 cases would be one
    # twelve tasks, two repeats each: four regressed twice, two once, the rest unchanged
    lost = {f"t{i}": 2 if i < 4 else 1 if i < 6 else 0 for i in range(12)}
    base = [_case(t, repeat=r) for t in lost for r in range(2)]
    new = [_case(t, Status.FAILED if r < lost[t] else Status.SATISFIED, repeat=r) for t in lost for r in range(2)]
    many = compare(base, new, {"c": {}}, {"c": {}})
    assert many.paired.counts == (14, 10, 0, 0) and many.paired.why == ""
    per_task = [(2 - lost[t], lost[t], 0, 0) for t in lost]
    assert many.paired.interval == cluster_bootstrap(per_task, [lambda c: (c[2] - c[1]) / sum(c)])[0]
    assert many.paired.interval != paired_difference(14, 10, 0, 0)  # the cases taken as independent pairs
    assert many.paired.p == mcnemar(0, 6)  # six tasks moved, all one way


def test_a_crashed_case_is_outside_the_rates_counted_beside_them():
    base = [_case("a"), _case("b"), _case("c", Status.FAILED)]
    new = [_case("a", Status.ERROR), _case("b", Status.GRADER_ERROR), _case("c")]
    result = compare(base, new, {"c": {}}, {"c": {}})
    assert [pair.base.task for pair in result.crashed] == ["a", "b"]
    assert result.paired.counts == (0, 0, 1, 0) and result.paired.rates == (0.0, 1.0)  # a crash is no regression: no verdict
    assert result.paired_share == pytest.approx(1 / 3) and Gate().failed(result)


def test_compare_with_repeats_and_a_crash_says_what_it_counted(tmp_path):
    write_task_sweep(tmp_path / "base", jobs=1, tasks=3, repeats=2)  # task00000 missed twice, the others satisfied
    write_task_sweep(tmp_path / "new", jobs=1, tasks=3, repeats=2)
    tasks = tmp_path / "new" / "0" / "tasks"
    for name, status in (("task00001-r0", "failed"), ("task00001-r1", "failed"), ("task00002-r0", "error")):
        record = json.loads((tasks / name / "result.json").read_text())
        record["status"] = status
        (tasks / name / "result.json").write_text(json.dumps(record))
    proc = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| passed | 3/5 (60.0%) | 1/5 (20.0%) | -40.0 pts (no interval: 3 tasks, fewer than 10) |" in proc.stdout
    assert ("of 5 cases; sign test on tasks p = 1.0 on 1 of 3 tasks moved (their repeats are not independent pairs)."
            in proc.stdout) and "McNemar" not in proc.stdout
    assert "1 case crashed on one side or both (error 1): no verdict, outside the rates, listed under Crashed." in proc.stdout
    assert "### Crashed (1)" in proc.stdout and "| task00002 | 0 | satisfied | error | verdict |" in proc.stdout
    assert proc.stdout.rstrip().endswith("compare: 2 regressed, 0 improved of 5 cases; sign test on tasks p = 1.0 -> exit 0")
