"""The public face: a run, a resume, a follow-up turn and a regrade from Python, each one launch; and the
comparison of two sets of runs and the replay of loop policies over a run's records, with no launch.

Each launch composes its config as the command line does (from overrides, and config dirs searched before the
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
from .analysis.compare import Case, Comparison, Gate, Part
from .analysis.compare import compare as compare_cases
from .analysis.policies import Beside, Replayed
from .compat.hydra import combinations, first_sweep
from .config.compose import compose
from .config.trust import check_code, check_config_dirs, trusted_names
from .errors import UsageError, unwritable
from .loop.followup import next_turn, record_dir_of, resumed_turn
from .loop.launch import launch
from .loop.request import Launch, Regrading
from .loop.signals import StopRequest
from .records import (
    RESULT_FILE,
    ConfigSources,
    ExitCode,
    RunHeader,
    RunKind,
    RunRecord,
    collect,
    find_run_dirs,
    new_regrade_dir,
    read_record,
    read_task_at,
    recorded_sources,
    run_and_turns,
    transcript_dirs,
)
from .report import configs, expand, load_prices, ranking_lines, write_all
from .report.columns import Table, policy_tables
from .report.ratings import ratings_of
from .report.stats import by_group
from .review.figures import LabelTest, agreement_lines, graders_against_labels, label_tests
from .review.golden import golden_threshold
from .review.labels import labels_under

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
    return launch(Launch(sources, run_dir=run_dir, key=RUN_DIR, resume=True, work=follow_up, stop=stop))


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
    return launch(Launch(sources, run_dir=follow_up.dir(), key=RUN_DIR, work=follow_up, stop=stop))


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
        for source in (record_dir for run in find_run_dirs(root) for record_dir in run_and_turns(run)):
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
        out_dir = new_regrade_dir(root)
    except OSError as exc:
        raise unwritable(exc, RUN_DIR, "copy the run dir to a place you may write, and regrade the copy") from None
    records = []
    for grader, source, composed, cfg in launches:
        base = out_dir / str(graders.index(grader)) if multirun else out_dir
        before = None
        for repeat in range(repeats):
            at = base / f"repeat-{repeat}" if repeats > 1 else base
            target = at if source == root else at / source.relative_to(root)
            records.append(launch(Launch(composed, run_dir=target, key=RUN_DIR, work=Regrading(source, tuple(grader), before),
                                         composed=cfg, stop=stop)))
            before = target
    return _findings(out_dir, records, labels, least, several=multirun or repeats > 1)


def _findings(out_dir: Path, records: list[RunRecord], labels: dict[str, Label], least: float | None,
              several: bool) -> Regrade:
    """The regrade in ``out_dir`` ranked and measured: its reports (``several`` gradings), its agreement.md."""
    jobs = collect(out_dir)
    prices = records[0].header.config.get("sweep", {}).get("prices")
    runs = expand(jobs)
    ranking = ranking_lines(runs, load_prices(prices))
    if several:
        write_all(out_dir, jobs, runs, prices=prices)
    ratings = ratings_of(runs)
    people = graders_against_labels(ratings, labels)
    lines = agreement_lines(ratings, labels, people)
    agreement = out_dir / AGREEMENT_MD if lines else None
    if agreement is not None:
        agreement.write_text("\n".join(["# Grader agreement", "", *lines]), encoding="utf-8")
    tests = label_tests(people, least) if least is not None else []
    return Regrade(out_dir, records, ranking, agreement, least, tests)


@dataclass(frozen=True)
class Compared:
    """What ``compare`` found: the comparison, the labels of BASE's and of NEW's configurations, and whether
    the gate (when one was asked for) failed."""

    comparison: Comparison
    labels: tuple[dict[str, str], dict[str, str]]
    failed: bool

    @property
    def exit_code(self) -> int:
        """4 when the gate failed, else 0."""
        return int(ExitCode.BELOW_THRESHOLD if self.failed else ExitCode.SATISFIED)


def _side(root: Path, name: str, prices: dict[str, dict[str, float]]) -> tuple[list[Case], dict[str, str], dict[str, Part]]:
    """The cases under ``root``, and the labels and parts of their configurations, in order of first run."""
    if not root.is_dir():
        raise UsageError(name, f"{root} is not a directory", "give a run dir or a sweep dir")
    runs = expand(collect(root))
    if not runs:
        raise UsageError(name, f"no runs under {root}", "give a run dir or a sweep dir that holds result.json files")
    headers: dict[str, RunHeader] = {}
    for run in runs:
        headers.setdefault(run.group, run.job.record.header)
    cases = [Case(config=run.group, task=run.task, repeat=run.repeat or 0, turn=run.turn, status=run.status,
                  verified=run.verified_final, tokens=run.worker_tokens + run.grader_tokens, cost=run.cost(prices))
             for run in runs]
    named = configs.group_labels(headers.items())
    parts = {key: {**configs.configuration(h), "kind": h.kind.value, "turn": h.turn or 1} for key, h in headers.items()}
    return cases, {key: named[key] for key in headers}, parts


def compare(base: str | Path, new: str | Path, gate: Gate | None = None,
            prices: dict[str, dict[str, float]] | None = None) -> Compared:
    """The runs under ``base`` and ``new`` (run dirs or sweep dirs) compared case by case, configurations
    paired by fingerprint (``analysis.compare``), and tested against ``gate``; ``prices`` by default
    conf/prices.yaml's. Raises ``UsageError`` when a side holds no runs, or no configuration of BASE pairs
    with one of NEW."""
    prices = load_prices() if prices is None else prices
    before, before_labels, before_parts = _side(Path(base), "BASE", prices)
    after, after_labels, after_parts = _side(Path(new), "NEW", prices)
    found = compare_cases(before, after, before_parts, after_parts)
    pairing = found.pairing
    if not pairing.pairs:
        first = pairing.unpaired[0]
        assert first.nearest is not None  # each side has configurations and none was paired
        mine, theirs = (before_labels, after_labels) if first.side == "BASE" else (after_labels, before_labels)
        other = "NEW" if first.side == "BASE" else "BASE"
        raise UsageError("BASE, NEW", f"no configuration of BASE is {pairing.clause.replace('`', '')} of NEW: "
                         f"{first.side}'s {mine[first.config]} and {other}'s {theirs[first.nearest]} differ in "
                         f"{first.differences}", "compare sweeps over the same values, or one configuration against one")
    return Compared(found, (before_labels, after_labels), gate is not None and gate.failed(found))


@dataclass(frozen=True)
class Replays:
    """What ``policies`` found: the runs replayed, what their outcomes rest on (``loop_value.CHECKS`` or
    ``VERDICTS``), each policy replayed per configuration, the replays beside real runs, and the tables of
    report.md's "Which loop policy?"."""

    runs: int
    on: str
    replayed: list[Replayed]
    beside: list[Beside]
    tables: dict[str, Table]


def policies(run_dir: str | Path, returns: str = "last", up_to: int | None = None,
             prices: dict[str, dict[str, float]] | None = None) -> Replays | None:
    """Other loop policies replayed over the grading passes recorded under ``run_dir`` (a run dir or a sweep
    dir), with no model call (``analysis.policies``); the stop rules and caps return ``returns``, caps 1..``up_to``
    (default each configuration's own). None when no run took more than one grading pass."""
    root = Path(run_dir)
    if not root.is_dir():
        raise UsageError("RUN_OR_SWEEP_DIR", f"{root} is not a directory", "give a run dir or a sweep dir")
    runs = expand(collect(root))
    if not runs:
        raise UsageError("RUN_OR_SWEEP_DIR", f"no runs under {root}", "give a run dir or a sweep dir that holds result.json files")
    prices = load_prices() if prices is None else prices
    found = policy_tables(runs, by_group(runs, prices), prices, returns, up_to)
    if found is None:
        return None
    on, tables, replayed, beside = found
    return Replays(len(runs), on, replayed, beside, tables)


__all__ = ["Compared", "Regrade", "Replays", "UsageError", "compare", "continue_run", "policies", "regrade", "resume", "run"]
