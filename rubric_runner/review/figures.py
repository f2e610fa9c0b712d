"""The agreement figures as Markdown: each grader with itself over repeats, per criterion, the graders
with each other and their majority-vote panel, each against hidden checks and against people's labels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.agreement import (
    PANEL,
    UNSTABLE_KAPPA,
    AgainstPeople,
    Label,
    Rating,
    Share,
    against_checks,
    against_labels,
    graders_of,
    panel,
    people_against_checks,
    self_agreement,
)
from ..analysis.judge import Judgement


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _table(head: Sequence[str], rows: list[list[object]]) -> list[str]:
    return [_row(*head), _row(*("---" for _ in head)), *(_row(*r) for r in rows), ""]


def _matrix_cells(j: Judgement | None) -> list[object]:
    if j is None:
        return ["-"] * 4
    return [j.balanced_error, j.false_satisfied, j.false_rejection, j.false_discovery]


def graders_against_labels(ratings: list[Rating], labels: dict[str, Label]) -> dict[str, AgainstPeople]:
    """Each grader that rated a labelled transcript, against people's ``labels``."""
    found = {g: against_labels(rs, labels) for g, rs in graders_of(ratings).items()} if labels else {}
    return {g: p for g, p in found.items() if p.verdict.items}


def agreement_lines(ratings: list[Rating], labels: dict[str, Label], people: dict[str, AgainstPeople] | None = None) -> list[str]:
    """The figures of ``ratings`` (and ``labels``, by transcript, with the graders against them: ``people``,
    ``graders_against_labels`` when not given), as Markdown lines; none when there is nothing to compare."""
    graders = graders_of(ratings)
    lines: list[str] = []
    repeated = {g: rs for g, rs in graders.items() if len({r.item for r in rs}) < len(rs)}
    if repeated:
        selves = {g: self_agreement(rs) for g, rs in repeated.items()}
        lines += ["## Each grader against itself", "",
                  "Every transcript graded several times by the same grader: percent agreement and Fleiss' κ over "
                  f"its repeats, 95% intervals from a seeded bootstrap over transcripts; a criterion whose κ is below "
                  f"{UNSTABLE_KAPPA} is unstable. A grading that ended without a verdict (a grader_error) is in no "
                  "figure, counted under without a verdict; n/a where no transcript has two ratings to compare.", ""]
        lines += _table(("grader", "transcripts", "gradings", "verdict agreement", "verdict κ", "changed its verdict on",
                         "unstable criteria", "without a verdict"),
                        [[g, s.verdict.items, s.verdict.ratings, s.verdict.percent, s.verdict.kappa, s.verdict.changed,
                          s.unstable_text, s.dropped]
                         for g, s in selves.items()])
        lines += ["### Per criterion", ""]
        lines += _table(("grader", "criterion", "agreement", "κ", "changed on", "stable"),
                        [[g, name, a.percent, a.kappa, a.changed, s.stable(name)]
                         for g, s in selves.items() for name, a in s.criteria.items()])
    found = panel(ratings)
    if found is not None:
        lines += ["## Graders against each other", "",
                  "Each grader's majority verdict on each transcript (over its repeats): Fleiss' κ and Krippendorff's α "
                  "(nominal) between the graders; the panel is their majority vote, one more grader below.", ""]
        lines += _table(("graders", "transcripts", "verdict agreement", "Fleiss' κ", "Krippendorff's α"),
                        [[", ".join(found.graders), found.verdict.items, found.verdict.percent, found.verdict.kappa,
                          found.alpha]])
        lines += _table(("criterion", "transcripts", "agreement", "Fleiss' κ"),
                        [[name, a.items, a.percent, a.kappa] for name, a in found.criteria.items()])
    rows = [[g, *_matrix_cells(against_checks(rs))] for g, rs in graders.items()]
    if found is not None:
        rows.append([f"{PANEL} of {len(found.graders)}", *_matrix_cells(against_checks(found.votes))])
    if any(cell != "-" for row in rows for cell in row[1:]):
        lines += ["## Graders against hidden checks", ""]
        lines += _table(("grader", "balanced error", "false satisfied", "false rejection", "false discovery"), rows)
    if people is None:
        people = graders_against_labels(ratings, labels)
    lines += human_lines(ratings, labels, people, found.votes if found is not None else [])
    return lines


def human_lines(ratings: list[Rating], labels: dict[str, Label], graders: dict[str, AgainstPeople],
                votes: Sequence[Rating] = ()) -> list[str]:
    """The ``graders`` (and the panel's ``votes``) against people's labels, and people against hidden checks."""
    voted = against_labels(votes, labels) if votes and labels else None
    people = {**graders, **({PANEL: voted} if voted is not None and voted.verdict.items else {})}
    if not people:
        return []
    lines = ["## Grader against people", "",
             "People's labels (labels.json) as the truth: the grader's false-satisfied rate (labelled not satisfied, "
             "graded satisfied), false-rejection rate, percent agreement and Cohen's κ, 95% intervals.", ""]
    lines += _table(("grader", "labelled", "agreement", "Cohen's κ", "false satisfied", "false rejection"),
                    [[g, p.verdict.items, p.verdict.percent, p.verdict.kappa,
                      p.judgement.false_satisfied if p.judgement else "-", p.judgement.false_rejection if p.judgement else "-"]
                     for g, p in people.items()])
    criteria = [[g, name, c.items, c.percent, c.kappa] for g, p in people.items() for name, c in p.criteria.items()]
    if criteria:
        lines += _table(("grader", "criterion", "labelled", "agreement", "Cohen's κ"), criteria)
    checked = {r.item: r.checked for r in ratings}
    both = people_against_checks(labels, checked)
    if both is not None:
        lines += ["### People against hidden checks", ""]
        lines += _table(("", "labelled and checked", "false satisfied", "false rejection", "balanced error"),
                        [["people", both.runs, both.false_satisfied, both.false_rejection, both.balanced_error]])
    return lines


@dataclass(frozen=True)
class LabelTest:
    """A grader's verdicts against people's labels: how many agree, of how many, and whether that share is
    below the least agreement asked for."""

    grader: str
    agreed: int
    verdicts: int
    share: Share
    below: bool


def label_tests(graders: dict[str, AgainstPeople], least: float) -> list[LabelTest]:
    """Each grader against people's labels (``graders_against_labels``), its verdicts tested against the share ``least``."""
    tests = []
    for grader, people in graders.items():
        verdict = people.verdict
        if verdict.items and verdict.percent.value is not None:
            tests.append(LabelTest(grader, verdict.agreed, verdict.items, verdict.percent, verdict.percent.value < least))
    return tests

