"""Does the grader's window cost correct answers? Each grading pass's verdict on a cut or an uncut view
of its transcript (``GraderView.is_cut``), against the hidden checks of the attempt it judged.

A pass counts when its record has a view, its verdict is one (``satisfied``, or a rejection:
``needs_revision``, ``failed``, ``max_iterations_reached``; not ``grader_error`` nor one the library
marked ``unverified``) and its attempt passed or failed its checks. On each kind of view: the false
rejections (rejected of the attempts that passed) and the false satisfied (accepted of those that failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .judge import Rate

REJECTIONS = ("needs_revision", "failed", "max_iterations_reached")


@dataclass(frozen=True)
class Window:
    """One configuration's passes by view, and the grader's two mistakes on each kind of view."""

    viewed: int
    """Passes whose record has a view."""
    cut: int
    """Of them, those graded on a cut view."""
    false_rejection: tuple[Rate, Rate]
    """On cut views, on uncut views."""
    false_satisfied: tuple[Rate, Rate]


Pass = tuple[bool | None, str, bool, bool | None]
"""A pass as this module reads it: its view cut (None: not recorded), verdict, unverified, and its
attempt's hidden checks (None: not checked)."""


def window(passes: Iterable[Pass]) -> Window:
    """The window's figures over ``passes``."""
    viewed = cut = 0
    counts = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}  # rejected & passed, passed, accepted & failed, failed
    for is_cut, verdict, unverified, checked in passes:
        if is_cut is None:
            continue
        viewed += 1
        cut += is_cut
        accepted = True if verdict == "satisfied" else False if verdict in REJECTIONS else None
        if accepted is None or unverified or checked is None:
            continue
        tally = counts[is_cut]
        if checked:
            tally[0] += not accepted
            tally[1] += 1
        else:
            tally[2] += accepted
            tally[3] += 1
    return Window(viewed, cut, (Rate(counts[True][0], counts[True][1]), Rate(counts[False][0], counts[False][1])),
                  (Rate(counts[True][2], counts[True][3]), Rate(counts[False][2], counts[False][3])))
