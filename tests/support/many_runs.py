"""Records of many runs written directly (no run takes place), for reports at scale: sweeps of
multi-task jobs and of jobs of one task."""

from __future__ import annotations

from pathlib import Path

from rubric_runner.records import (
    RESULT_FILE,
    TASKS_DIR,
    AttemptVerification,
    CheckOutcome,
    ConfigSources,
    Criterion,
    Evaluation,
    GraderInfo,
    ModelInfo,
    RubricInfo,
    RunHeader,
    RunRecord,
    Status,
    TaskRecord,
    TaskTally,
    Usage,
    Verification,
    Verifications,
)

ANSWER = "def solve(items):\n    seen = set()\n    return [x for x in items if x in seen or seen.add(x)]\n" * 3


def task_status(job: int, task: int, repeat: int) -> Status:
    """Job 0 misses every 7th task, job 1 every 5th (a failed verdict), both every 35th; a second
    repeat also misses every 3rd task."""
    if task % (7 if job == 0 else 5) == 0:
        return Status.MAX_ITERATIONS_REACHED if job == 0 else Status.FAILED
    return Status.MAX_ITERATIONS_REACHED if repeat == 1 and task % 3 == 0 else Status.SATISFIED


def _task_record(job_dir: Path, job: int, task: int, repeat: int, message: str | None = None) -> TaskRecord:
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
    return TaskRecord(
        status=status, exit_code=int(status.exit_code), iterations=len(evaluations), evaluations=evaluations,
        final_answer=attempts[-1], attempts=attempts, task_id=f"task{task:05d}", repeat=repeat, task=message,
        usage={"worker": Usage(calls=2, input_tokens=900, output_tokens=120, total_tokens=1020),
               "grader": Usage(calls=len(evaluations), input_tokens=1500, output_tokens=80, total_tokens=1580)},
        run_dir=str(job_dir / TASKS_DIR / f"task{task:05d}-r{repeat}"), wall_seconds=1.5,
    )


def write_task_sweep(root: Path, jobs: int, tasks: int, repeats: int = 1) -> None:
    """A sweep dir of ``jobs`` multi-task jobs (workers scripted:w0, w1, ...) of ``tasks`` tasks x ``repeats`` each."""
    for job in range(jobs):
        job_dir = root / str(job)
        header = RunHeader(worker=ModelInfo(model=f"scripted:w{job}"), grader=GraderInfo(model="scripted:judge", max_iterations=3),
                           rubric=RubricInfo(name="code_tasks"), sources=ConfigSources(overrides=[f"worker.model=scripted:w{job}"]))
        keys = [(task, repeat) for task in range(tasks) for repeat in range(repeats)]
        tally = TaskTally(len(keys))
        for index, (task, repeat) in enumerate(keys):
            record = _task_record(job_dir, job, task, repeat)
            task_dir = Path(record.run_dir)
            task_dir.mkdir(parents=True)
            (task_dir / RESULT_FILE).write_text(record.model_dump_json())
            tally.add(index, record)
        parent = RunRecord(run_dir=str(job_dir), header=header)
        tally.fill(parent, repeats=repeats)
        parent.exit_code = int(parent.status.exit_code)
        (job_dir / RESULT_FILE).write_text(parent.model_dump_json())


def write_run_sweep(root: Path, jobs: int, workers: int = 4) -> None:
    """A sweep dir of ``jobs`` single-task jobs, as a Hydra multirun over workers x tasks writes them:
    job ``i`` is worker ``scripted:w<i % workers>`` on task ``i // workers``."""
    for job in range(jobs):
        job_dir = root / str(job)
        worker, task = job % workers, job // workers
        message = f"Write solve() for case {task}."
        header = RunHeader(worker=ModelInfo(model=f"scripted:w{worker}"), grader=GraderInfo(model="scripted:judge", max_iterations=3),
                           rubric=RubricInfo(name="code", task=message),
                           sources=ConfigSources(overrides=[f"worker.model=scripted:w{worker}", f"rubric.task={message}"]))
        task_record = _task_record(job_dir, worker, task, 0, message)
        task_dir = job_dir / TASKS_DIR / "task-r0"  # the rubric's own task: no id
        task_record.task_id, task_record.run_dir = None, str(task_dir)
        task_dir.mkdir(parents=True)
        (task_dir / RESULT_FILE).write_text(task_record.model_dump_json())
        tally = TaskTally(1)
        tally.add(0, task_record)
        record = RunRecord(header=header, exit_code=task_record.exit_code, wall_seconds=task_record.wall_seconds, run_dir=str(job_dir))
        tally.fill(record, repeats=1)
        (job_dir / RESULT_FILE).write_text(record.model_dump_json())


def write_task_job(job_dir: Path, statuses: list[Status], config: dict | None = None, overrides: tuple[str, ...] = (),
                   status: Status | None = None, iterations: list[int] | None = None, first: int = 0) -> RunRecord:
    """A multi-task job in ``job_dir`` whose tasks (``t<first>``, ``t<first + 1>``, ... one repeat each) ended as ``statuses``,
    run with the resolved ``config`` and ``overrides``; ``status``: the job's own (``running`` while it runs:
    then it has no aggregate yet), else the worst of its tasks'."""
    header = RunHeader(worker=ModelInfo(model="scripted:w"), grader=GraderInfo(model="scripted:judge", max_iterations=3),
                       rubric=RubricInfo(name="code_tasks"), config=config or {},
                       sources=ConfigSources(overrides=list(overrides)))
    tally = TaskTally(len(statuses))
    for index, task_status in enumerate(statuses):
        passes = (iterations or [1] * len(statuses))[index] if task_status is not Status.NOT_RUN else 0
        record = TaskRecord(
            status=task_status, exit_code=int(task_status.exit_code), iterations=passes, task_id=f"t{first + index}", repeat=0,
            evaluations=[Evaluation(iteration=i, result="satisfied" if task_status is Status.SATISFIED else "needs_revision")
                         for i in range(passes)],
            usage={"worker": Usage(calls=passes, input_tokens=900, output_tokens=120, total_tokens=1020 * bool(passes)),
                   "grader": Usage(calls=passes, input_tokens=1500, output_tokens=80, total_tokens=1580 * passes)},
            run_dir=str(job_dir / TASKS_DIR / f"t{first + index}-r0"), wall_seconds=1.5 * bool(passes),
            started_at="2026-12-01T10:00:00.000+00:00", ended_at="2026-12-01T10:00:02.000+00:00",
        )
        Path(record.run_dir).mkdir(parents=True)
        (Path(record.run_dir) / RESULT_FILE).write_text(record.model_dump_json())
        tally.add(index, record)
    record = RunRecord(run_dir=str(job_dir), header=header, started_at="2026-12-01T10:00:00.000+00:00")
    if status is Status.RUNNING:
        record.status = status
    else:
        tally.fill(record, repeats=1)
        record.status = status or record.status
        record.exit_code, record.ended_at = int(record.status.exit_code), "2026-12-01T10:00:03.000+00:00"
    (job_dir / RESULT_FILE).write_text(record.model_dump_json())
    return record


def write_verified_job(job_dir: Path, tasks: int) -> RunRecord:
    """A multi-task job of ``tasks`` tasks whose every attempt was verified, each pass's spend recorded:
    task i takes 1 + i % 3 passes (grader.max_iterations=3), its attempts passing their checks in turn
    (so some revisions break a passing answer) and one more criterion passed each pass but every 4th task."""
    header = RunHeader(worker=ModelInfo(model="scripted:w"), grader=GraderInfo(model="scripted:judge", max_iterations=3),
                       rubric=RubricInfo(name="code_tasks"), config={"grader": {"max_iterations": 3}, "loop": {"arm": "rubric"}})
    tally = TaskTally(tasks)
    for index in range(tasks):
        passes = 1 + index % 3
        results = ["needs_revision"] * (passes - 1) + ["satisfied" if index % 2 else "max_iterations_reached"]
        evaluations, attempts = [], []
        for k, result in enumerate(results):
            gained = k if index % 4 else 0
            criteria = [Criterion(name=f"criterion {c}", passed=c <= gained or result == "satisfied", gap=None) for c in range(3)]
            spent = {"worker": Usage(calls=k + 1, input_tokens=900 * (k + 1), output_tokens=120 * (k + 1), total_tokens=1020 * (k + 1)),
                     "grader": Usage(calls=k + 1, input_tokens=1500 * (k + 1), output_tokens=80 * (k + 1), total_tokens=1580 * (k + 1))}
            evaluations.append(Evaluation(iteration=k, result=result, criteria=criteria, spent=spent))
            passed = (index + k) % 2 == 0
            attempts.append(AttemptVerification(attempt=k + 1, verdict=result, criteria={c.name: c.passed for c in criteria},
                                                verification=Verification(outcome=CheckOutcome.PASSED if passed else CheckOutcome.FAILED,
                                                                          passed=passed)))
        status = Status.SATISFIED if results[-1] == "satisfied" else Status.MAX_ITERATIONS_REACHED
        record = TaskRecord(
            status=status, exit_code=int(status.exit_code), iterations=passes, task_id=f"t{index:05d}", repeat=0,
            evaluations=evaluations, attempts=[ANSWER] * passes, final_answer=ANSWER, verified_attempts=attempts,
            verification=Verifications(first=attempts[0].verification, final=attempts[-1].verification),
            usage={role: usage.model_copy() for role, usage in evaluations[-1].spent.items()},
            run_dir=str(job_dir / TASKS_DIR / f"t{index:05d}-r0"), wall_seconds=1.5,
        )
        Path(record.run_dir).mkdir(parents=True)
        (Path(record.run_dir) / RESULT_FILE).write_text(record.model_dump_json())
        tally.add(index, record)
    record = RunRecord(run_dir=str(job_dir), header=header)
    tally.fill(record, repeats=1)
    record.exit_code = int(record.status.exit_code)
    (job_dir / RESULT_FILE).write_text(record.model_dump_json())
    return record
