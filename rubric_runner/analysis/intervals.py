"""Intervals and tests of the judge's figures: Wilson intervals of rates, a paired interval and the exact
McNemar test of the loop's lift, a sum of two rates, Rogan–Gladen's corrected rate, and a seeded
bootstrap that resamples whole tasks when tasks repeat (runs of one task are not independent).

Every interval is a two-sided 95% one; all of them are exact arithmetic on counts, but the bootstrap,
whose resamples come from a fixed seed (the same records always give the same interval).

The bootstrap's rule: it gives an interval only from at least ``MIN_TASKS`` tasks (or items) whose
resamples do not all agree; fewer tasks, or tasks all alike, give zero-width or meaningless percentiles
(one task resampled is that task every time). Where it gives none, a rate falls back to Wilson's
interval counting each task once (``task_wilson``), and any other figure has no interval, its reason
said (``no_interval``).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""
RESAMPLES = 2000
SEED = 20240601
"""The bootstrap's resamples and the seed of their draws."""
MIN_TASKS = 10
"""The fewest tasks (or items) the bootstrap resamples into an interval."""

Interval = tuple[float, float]


def wilson(part: float, whole: float) -> Interval | None:
    """The Wilson score interval of ``part/whole`` (sound for small samples and at 0 or 100%)."""
    return _wilson(part, whole) if whole else None


def _wilson(part: float, whole: float) -> Interval:
    """``wilson`` of a positive ``whole``."""
    n, p, z2 = whole, part / whole, Z95 * Z95
    center = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def task_wilson(part: int, whole: int, sizes: Iterable[int]) -> Interval | None:
    """Wilson's interval of ``part/whole`` when the runs come from tasks of ``sizes`` runs each, every task
    counted once: n is the tasks' effective number ``(Σm)² / Σm²`` (the number of tasks when they have
    as many runs each), the interval when a task's runs all end alike, the most the clustering can cost."""
    squares = sum(m * m for m in sizes)
    if not whole or not squares:
        return None
    n = whole * whole / squares
    return wilson(part / whole * n, n)


def no_interval(tasks: int, unit: str = "task") -> str:
    """Why the bootstrap gave no interval from ``tasks`` tasks (or items): too few, or all alike."""
    if tasks < MIN_TASKS:
        return f"no interval: {tasks} {unit}{'' if tasks == 1 else 's'}, fewer than {MIN_TASKS}"
    return f"no interval: every {unit} alike"


def mean_of_two(a: tuple[float, Interval | None], b: tuple[float, Interval | None]) -> Interval | None:
    """The interval of the mean of two independent rates ``a`` and ``b`` (each its value and its interval),
    by combining their intervals (Zou and Donner's MOVER, "square and add")."""
    (pa, ia), (pb, ib) = a, b
    if ia is None or ib is None:
        return None
    low = (pa + pb) / 2 - math.hypot(pa - ia[0], pb - ib[0]) / 2
    high = (pa + pb) / 2 + math.hypot(ia[1] - pa, ib[1] - pb) / 2
    return max(0.0, low), min(1.0, high)


def paired_difference(both: int, lost: int, gained: int, neither: int) -> Interval | None:
    """Newcombe's interval (1998, method 10) of the difference of two paired rates, after minus before:
    ``both`` passed twice, ``lost`` passed before only, ``gained`` after only, ``neither`` never."""
    n = both + lost + gained + neither
    if not n:
        return None
    before, after = (both + lost) / n, (both + gained) / n
    (l1, u1), (l2, u2) = _wilson(both + lost, n), _wilson(both + gained, n)
    margins = (both + lost) * (gained + neither) * (both + gained) * (lost + neither)
    cross = both * neither - lost * gained
    corrected = cross - n / 2 if cross > n / 2 else min(cross, 0)
    phi = corrected / math.sqrt(margins) if margins else 0.0
    # before - after has limits d - delta, d + epsilon; after - before is its mirror
    delta = math.sqrt(max(0.0, (before - l1) ** 2 - 2 * phi * (before - l1) * (u2 - after) + (u2 - after) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - before) ** 2 - 2 * phi * (u1 - before) * (after - l2) + (after - l2) ** 2))
    difference = after - before
    return max(-1.0, difference - epsilon), min(1.0, difference + delta)


def mcnemar(gained: int, lost: int) -> float:
    """The exact two-sided McNemar p-value of ``gained`` against ``lost`` discordant pairs: twice the
    binomial(gained + lost, 1/2) tail of the smaller count, at most 1."""
    n = gained + lost
    tail = sum(math.comb(n, i) for i in range(min(gained, lost) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def sign_test(differences: Iterable[float]) -> float:
    """The exact two-sided sign test of per-task differences: McNemar's p on the tasks that moved one
    way against those that moved the other (ties left out). With repeats, a task's runs are not
    independent pairs, so the task is the unit."""
    moved = [difference for difference in differences if difference]
    return mcnemar(sum(difference > 0 for difference in moved), sum(difference < 0 for difference in moved))


def holm(ps: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values, in their order (None: no test, outside the
    family): the i-th smallest of m times (m - i + 1), never below the adjusted p before it, at most 1. An
    adjusted p under 0.05 keeps the chance of any false finding in the family under 5%."""
    order = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    adjusted: list[float | None] = [None] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        adjusted[i] = running
    return adjusted


def rogan_gladen(apparent: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an ``apparent`` one measured by a test of this sensitivity and specificity
    (Rogan and Gladen, 1978): ``(apparent + specificity - 1) / (sensitivity + specificity - 1)``, kept to
    0..1; None when the test is no better than chance (the denominator is not positive)."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (apparent + specificity - 1) / youden))


N = TypeVar("N", int, float)
"""What one task's runs add up to (a statistic's inputs): counts, or sums of fractions too (Fleiss' κ)."""


def cluster_bootstrap(tasks: Sequence[tuple[N, ...]], statistics: Sequence[Callable[[tuple[N, ...]], float | None]],
                      resamples: int = RESAMPLES, seed: int = SEED) -> list[Interval | None]:
    """Percentile intervals of ``statistics`` (each a function of the summed counts) over resamples of
    whole tasks drawn with replacement: the runs of one task stay together. None for every statistic
    with fewer than ``MIN_TASKS`` tasks, and for one that no resample defines or whose interval has no
    width (its tasks all alike). Tasks with equal counts are drawn together, as one multinomial draw a
    resample."""
    if len(tasks) < MIN_TASKS:
        return [None for _ in statistics]
    kinds = Counter(tasks)
    vectors, weights = list(kinds), list(kinds.values())
    rng = random.Random(seed)
    values: list[list[float]] = [[] for _ in statistics]
    for _ in range(resamples):
        drawn = _multinomial(rng, len(tasks), weights)
        summed = tuple(sum(times * vector[i] for times, vector in zip(drawn, vectors)) for i in range(len(vectors[0])))
        for found, statistic in zip(values, statistics):
            value = statistic(summed)
            if value is not None:
                found.append(value)
    return [percentiles(found) for found in values]


def _multinomial(rng: random.Random, n: int, weights: list[int]) -> list[int]:
    """How many of ``n`` draws fall on each kind, drawn with chances in proportion to ``weights``."""
    drawn, left = [], sum(weights)
    for weight in weights:
        times = _binomial(rng, n, weight / left) if weight < left else n
        drawn.append(times)
        n, left = n - times, left - weight
    return drawn


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A binomial(n, p) draw, exact, in about log n steps (Knuth, TAOCP 3.4.1 F): the i-th smallest of n
    uniforms is a beta(i, n + 1 - i) draw, and below ``p`` it leaves at least i successes."""
    count = 0
    while n > 16:
        if not 0 < p < 1:
            return count + (n if p >= 1 else 0)
        i = 1 + n // 2
        x = rng.betavariate(i, n + 1 - i)
        if x <= p:
            count, n, p = count + i, n - i, (p - x) / (1 - x)
        else:
            n, p = i - 1, p / x
    return count + sum(rng.random() < p for _ in range(n))


def percentiles(values: list[float]) -> Interval | None:
    """The 2.5th and 97.5th percentiles of ``values``; None when there are none, or they are one value."""
    if not values:
        return None
    values.sort()
    last = len(values) - 1
    low, high = values[round(0.025 * last)], values[round(0.975 * last)]
    return (low, high) if high - low > 1e-9 else None
