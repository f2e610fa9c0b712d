"""The agreement figures as Markdown: each grader with itself over repeats, per criterion, the graders
with each other and their majority-vote panel, each against hidden checks and against people's labels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.agreement import (
    PANEL,
    UNSTABLE_KAPPA,
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


def agreement_lines(ratings: list[Rating], labels: dict[str, Label]) -> list[str]:
    """The figures of ``ratings`` (and ``labels``, by transcript), as Markdown lines; none when there is
    nothing to compare."""
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
    lines += human_lines(ratings, labels, found.votes if found is not None else [])
    return lines


def human_lines(ratings: list[Rating], labels: dict[str, Label], votes: Sequence[Rating] = ()) -> list[str]:
    """The graders (and the panel's ``votes``) against people's labels, and people against hidden checks."""
    if not labels:
        return []
    graders = {**graders_of(ratings), **({PANEL: list(votes)} if votes else {})}
    people = {g: against_labels(rs, labels) for g, rs in graders.items()}
    people = {g: p for g, p in people.items() if p.verdict.items}
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


def label_tests(ratings: list[Rating], labels: dict[str, Label], least: float) -> list[LabelTest]:
    """Each grader that rated a labelled transcript, its verdicts tested against the share ``least``."""
    tests = []
    for grader, own in graders_of(ratings).items():
        people = against_labels(own, labels).verdict
        if people.items and people.percent.value is not None:
            tests.append(LabelTest(grader, people.agreed, people.items, people.percent, people.percent.value < least))
    return tests

