"""A plan's cells: a new run's tasks x repeats, a follow-up turn's one task, a regrade's transcripts, each in
``tasks/<id>-r<k>/`` of the run dir with the thread it goes on."""

from __future__ import annotations

from fixtures import fixture_dirs
from support.helpers import compose_config

from rubric_runner.loop.followup import next_turn
from rubric_runner.loop.plan import prepare
from rubric_runner.loop.request import Regrading
from rubric_runner.records import RunHeader, read_task_at


def _cells(plan):
    return [(cell.task.id, cell.repeat, cell.dir, cell.thread_id, cell.turn, cell.graded) for cell in plan.cells]


def test_a_new_runs_cells_are_its_tasks_times_its_repeats_each_on_a_thread_of_its_own(tmp_path):
    cfg = compose_config(["rubric=code_tasks", "worker=scripted", "grader=scripted", "rubric.tasks=[0:2]",
                          "run.repeats=2", "run.thread_id=t"])
    plan = prepare(cfg, RunHeader(), tmp_path, roles=())
    first, second = (task.id for task in plan.tasks)
    assert _cells(plan) == [(task, k, tmp_path / "tasks" / f"{task}-r{k}", f"t:{task}-r{k}", None, None)
                            for task in (first, second) for k in (0, 1)]
    assert not plan.watched()
    one = prepare(compose_config(["rubric=code", "worker=scripted", "grader=scripted", "run.thread_id=t"]), RunHeader(),
                  tmp_path, roles=())
    assert _cells(one) == [("task", 0, tmp_path / "tasks" / "task-r0", "t", None, None)] and one.watched()


def test_a_follow_up_turns_one_cell_goes_on_its_tasks_thread(tmp_path):
    v2 = fixture_dirs("v2", tmp_path)
    turn = next_turn(v2 / "single_turn", "Now add a docstring")
    out = turn.dir()
    plan = prepare(compose_config(["rubric=code", "worker=scripted", "grader=scripted"]), RunHeader(), out, turn, roles=())
    assert _cells(plan) == [("task", 0, out / "tasks" / "task-r0", read_task_at(v2 / "single_turn").thread_id, turn, None)]
    assert plan.tasks[0].message == "Now add a docstring" and plan.home == v2 / "single_turn"


def test_a_regrades_cells_are_the_transcripts_it_grades_with_their_tasks_and_threads(tmp_path):
    v2 = fixture_dirs("v2", tmp_path)
    out = tmp_path / "regrade"
    cfg = compose_config(["rubric=code_tasks", "worker=scripted", "grader=scripted", "rubric.tasks=[0:3]"])
    plan = prepare(cfg, RunHeader(), out, Regrading(v2 / "tasks"), roles=())
    graded = sorted((v2 / "tasks" / "tasks").iterdir())
    assert _cells(plan) == [(read_task_at(d).task_id, 0, out / "tasks" / d.name, read_task_at(d).thread_id, None, d)
                            for d in graded]
    assert all(cell.ran == read_task_at(cell.graded) for cell in plan.cells)  # read once, graded from it
    single = prepare(compose_config(["rubric=code", "worker=scripted", "grader=scripted"]), RunHeader(), out,
                     Regrading(v2 / "single"), roles=())  # a version 2 run of one task: its transcript is the run dir's
    assert _cells(single) == [("task", 0, out / "tasks" / "task-r0", read_task_at(v2 / "single").thread_id, None, v2 / "single")]
