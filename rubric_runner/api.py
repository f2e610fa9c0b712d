"""The public face: a run, a resume, a follow-up turn and a regrade from Python, each one launch.

Each composes its config as the command line does (from overrides, and config dirs searched before the
package's own), claims its run dir, and returns the typed record: ``RunRecord``. Runs may go on at once
in threads: each writes only its own files. A problem the user must fix before the run dir is claimed
raises ``UsageError`` (one line: the key and the fix); anything later ends in the returned record.
Ctrl-C (KeyboardInterrupt) records the run as interrupted, then goes on up.

A run dir is data: a resume, a follow-up turn or a regrade runs the code its record names only when the
caller's own config names it too, or with ``trust_run_dir`` (``config.trust``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .analysis.agreement import Label
from .compat.hydra import combinations, first_sweep
from .config.compose import compose
from .config.trust import check_code, check_config_dirs, trusted_names
from .errors import UsageError, unwritable
from .loop.followup import next_turn, record_dir_of, resumed_turn
from .loop.launch import launch
from .loop.regrade import new_regrade_dir, regraded_dirs, transcript_dirs
from .loop.request import Launch
from .loop.signals import StopRequest
from .records import (
    REGRADES_DIR,
    RESULT_FILE,
    ConfigSources,
    ExitCode,
    RunKind,
    RunRecord,
    collect,
    find_run_dirs,
    read_record,
    read_task_at,
    recorded_sources,
)
from .report import expand, load_prices, ranking_lines, write_all
from .review.figures import LabelTest, agreement_lines, graders_against_labels, label_tests
from .review.golden import golden_threshold
from .review.labels import labels_under
from .review.ratings import ratings_in

RUN_DIR = "RUN_DIR"
AGREEMENT_MD = "agreement.md"


def _dirs(config_dirs: Sequence[str | Path]) -> list[str]:
    return [os.path.abspath(config_dir) for config_dir in config_dirs]


def run(overrides: Sequence[str] = (), run_dir: str | Path | None = None, config_dirs: Sequence[str | Path] = (),
        stop: StopRequest | None = None) -> RunRecord:
    """Run the rubric loop with ``overrides`` (as on the command line) and return its record.

    ``run_dir`` defaults to a new dir under ``outputs/runs/`` (``hydra.run.dir``); ``config_dirs`` are
    searched for config before the package's own (``--config-dir``).
    """
    sources = ConfigSources(overrides=list(overrides), config_dirs=_dirs(config_dirs))
    return launch(Launch(sources, run_dir=Path(run_dir) if run_dir is not None else None, stop=stop))


def _recorded(record_dir: Path, config_dirs: Sequence[str | Path]) -> ConfigSources:
    """The config sources a record dir's run was composed from, with more config dirs after them."""
    sources = recorded_sources(record_dir)
    if sources is None:
        raise UsageError(RUN_DIR, f"{record_dir} holds no record of its config (no result.json header, no .hydra/)",
                         "give the dir of a run, as a run prints after `run dir:`")
    return sources.model_copy(update={"config_dirs": [*sources.config_dirs, *_dirs(config_dirs)]})


def _trusted(run_dir: Path, sources: ConfigSources, config_dirs: Sequence[str | Path], overrides: Sequence[str],
             trust_run_dir: bool) -> None:
    """Refuse ``sources`` (a record's, with the caller's ``config_dirs`` and ``overrides``) when they name code
    the caller's own config does not, unless ``trust_run_dir``."""
    if trust_run_dir:
        return
    trusted = trusted_names(_dirs(config_dirs), list(overrides))
    check_config_dirs(run_dir, sources.config_dirs, trusted)
    check_code(run_dir, compose(sources), trusted)


def resume(run_dir: str | Path, overrides: Sequence[str] = (), config_dirs: Sequence[str | Path] = (),
           stop: StopRequest | None = None, trust_run_dir: bool = False) -> RunRecord:
    """Continue the run (or follow-up turn) in ``run_dir`` from its checkpoints, with the config it ran with;
    ``overrides`` may change only what leaves its tasks as they were (repeats, concurrency, budgets, console).
    The code the record names runs only when ``overrides`` or ``config_dirs`` name it too, or with
    ``trust_run_dir``."""
    run_dir = Path(run_dir).resolve()
    sources = _recorded(run_dir, config_dirs)
    record = read_record(run_dir / RESULT_FILE)
    follow_up = None
    task = read_task_at(run_dir) if record is not None and record.header.kind is RunKind.TURN else None
    if task is not None:
        follow_up = resumed_turn(run_dir, task)
    sources = sources.model_copy(update={"overrides": [*sources.overrides, *overrides, "run.resume=true"]})
    _trusted(run_dir, sources, config_dirs, overrides, trust_run_dir)
    return launch(Launch(sources, run_dir=run_dir, key=RUN_DIR, resume=True, follow_up=follow_up, stop=stop))


def continue_run(run_dir: str | Path, message: str, overrides: Sequence[str] = (), task: str | None = None,
                 repeat: int = 0, config_dirs: Sequence[str | Path] = (), stop: StopRequest | None = None,
                 trust_run_dir: bool = False) -> RunRecord:
    """Send ``message`` on the thread of a finished run (``task``, ``repeat``: one task of a task set) as a
    follow-up turn, graded against the same rubric or a new one (``rubric.text=...``); its record goes to
    ``turns/<n>/`` below the run's record dir. The code the record names runs as on a ``resume``."""
    run_dir = Path(run_dir).resolve()
    follow_up = next_turn(record_dir_of(run_dir, task, repeat), message)
    before = recorded_sources(follow_up.previous)
    sources = before.model_copy(update={"config_dirs": [*before.config_dirs, *_dirs(config_dirs)]}) if before else \
        _recorded(run_dir, config_dirs)
    sources = sources.model_copy(update={"overrides": [*sources.overrides, *overrides]})
    _trusted(run_dir, sources, config_dirs, overrides, trust_run_dir)
    return launch(Launch(sources, run_dir=follow_up.dir(), key=RUN_DIR, follow_up=follow_up, stop=stop))


@dataclass(frozen=True)
class Regrade:
    """What a regrade did: where it wrote its records, and the records (one per run graded again, per grader);
    the graders ranked against hidden verification, a line each; its ``agreement.md``, when there was agreement
    to measure; and the least agreement with people's labels asked for, with each labelled grader's test
    against it."""

    dir: Path
    records: list[RunRecord]
    ranking: list[str]
    agreement: Path | None
    min_agreement: float | None
    label_tests: list[LabelTest]

    @property
    def exit_code(self) -> int:
        """The records' worst exit code; tested against labels, 4 when a grader agrees with them on too few
        verdicts, else 0 (a right rejection is no failure)."""
        code = max((int(record.exit_code) for record in self.records), default=0)
        if not self.label_tests or code not in (ExitCode.SATISFIED, ExitCode.UNSATISFIED):
            return code
        return int(ExitCode.BELOW_THRESHOLD if any(test.below for test in self.label_tests) else ExitCode.SATISFIED)


def regrade(run_dir: str | Path, overrides: Sequence[str] = (), multirun: bool = False,
            config_dirs: Sequence[str | Path] = (), stop: StopRequest | None = None, repeats: int = 1,
            trust_run_dir: bool = False, min_agreement: float | None = None) -> Regrade:
    """Grade the transcripts saved under ``run_dir`` (a run dir, or a sweep dir: each of its runs, and their
    follow-up turns) again, one grading pass each, with ``overrides`` on each run's own config; the records go
    to ``run_dir/regrades/<time>/``. With ``multirun``, once per combination of the overrides' values
    (``grader=haiku,gpt``), each in a numbered dir. With ``repeats`` above 1, every grader grades every
    transcript that many times, each time in a dir ``repeat-<k>/`` of its own. The code a graded run's record
    names runs as on a ``resume``.

    Then the graders are ranked, the reports of several gradings written, and their agreement with
    themselves, each other and people's labels written to ``agreement.md``. Each grader's verdicts on
    labelled transcripts are tested against ``min_agreement`` (a share, 0 to 1; a golden dir's own by
    default)."""
    if repeats < 1:
        raise UsageError("--repeats", f"{repeats} is no number of gradings", "give --repeats 1 or more")
    if min_agreement is not None and not 0 <= min_agreement <= 1:
        raise UsageError("--min-agreement", f"{min_agreement:g} is no share of verdicts", "give a number from 0 to 1")
    root = Path(run_dir).resolve()
    swept = first_sweep(list(overrides))
    if swept is not None and not multirun:
        raise UsageError(swept[0], "several values are a regrade with each, which needs -m", f"rubric-runner regrade RUN_DIR -m {swept[1]}")
    graders = combinations(list(overrides)) if multirun else [list(overrides)]
    launches = []
    trusted = None if trust_run_dir else trusted_names(_dirs(config_dirs), list(overrides))
    for grader in graders:  # every config composes before any regrade starts
        for source in (record_dir for run in find_run_dirs(root) for record_dir in regraded_dirs(run)):
            recorded = _recorded(source, config_dirs)  # the graded run's configuration, not its console
            kept = [o for o in recorded.overrides if not o.lstrip("+~").startswith("run.console")]
            composed = recorded.model_copy(update={"overrides": [*kept, *grader]})
            if trusted is not None:
                check_config_dirs(source, composed.config_dirs, trusted)
            cfg = compose(composed)
            if trusted is not None:
                check_code(source, cfg, trusted)
            launches.append((grader, source, composed, cfg))
    launches = [planned for planned in launches if transcript_dirs(planned[1])]
    if not launches:
        raise UsageError(RUN_DIR, f"{root} holds no saved transcript", "give the dir of a run or sweep that has run")
    least = min_agreement if min_agreement is not None else golden_threshold(root)
    labels = labels_under(root)
    if repeats > 1 and any(cfg.run.cache for *_, cfg in launches):
        raise UsageError("run.cache", "a response cache gives every repeat the first grading's replies",
                         "regrade with run.cache=null")
    try:
        out_dir = new_regrade_dir(root / REGRADES_DIR)
    except OSError as exc:
        raise unwritable(exc, RUN_DIR, "copy the run dir to a place you may write, and regrade the copy") from None
    records = []
    for grader, source, composed, cfg in launches:
        base = out_dir / str(graders.index(grader)) if multirun else out_dir
        before = None
        for repeat in range(repeats):
            at = base / f"repeat-{repeat}" if repeats > 1 else base
            target = at if source == root else at / source.relative_to(root)
            records.append(launch(Launch(composed, run_dir=target, key=RUN_DIR, regraded_from=source,
                                         regraded_with=tuple(grader), regraded_after=before, composed=cfg, stop=stop)))
            before = target
    return _findings(out_dir, records, labels, least, several=multirun or repeats > 1)


def _findings(out_dir: Path, records: list[RunRecord], labels: dict[str, Label], least: float | None,
              several: bool) -> Regrade:
    """The regrade in ``out_dir`` ranked and measured: its reports (``several`` gradings), its agreement.md."""
    jobs = collect(out_dir)
    prices = records[0].header.config.get("sweep", {}).get("prices")
    ranking = ranking_lines(expand(jobs), load_prices(prices))
    if several:
        write_all(out_dir, jobs, prices=prices)
    ratings = ratings_in(out_dir)
    people = graders_against_labels(ratings, labels)
    lines = agreement_lines(ratings, labels, people)
    agreement = out_dir / AGREEMENT_MD if lines else None
    if agreement is not None:
        agreement.write_text("\n".join(["# Grader agreement", "", *lines]), encoding="utf-8")
    tests = label_tests(people, least) if least is not None else []
    return Regrade(out_dir, records, ranking, agreement, least, tests)


__all__ = ["Regrade", "UsageError", "continue_run", "regrade", "resume", "run"]
