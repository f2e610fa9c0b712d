"""Intervals and tests of the judge's figures: Wilson intervals of rates, a paired interval and the exact
McNemar test of the loop's lift, a sum of two rates, Rogan–Gladen's corrected rate, and a seeded
bootstrap that resamples whole tasks when tasks repeat (runs of one task are not independent).

Every interval is a two-sided 95% one; all of them are exact arithmetic on counts, but the bootstrap,
whose resamples come from a fixed seed (the same records always give the same interval).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""
RESAMPLES = 2000
SEED = 20240601
"""The bootstrap's resamples and the seed of their draws."""

Interval = tuple[float, float]


def wilson(part: int, whole: int) -> Interval | None:
    """The Wilson score interval of ``part/whole`` (sound for small samples and at 0 or 100%)."""
    if not whole:
        return None
    n, p, z2 = whole, part / whole, Z95 * Z95
    center = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def mean_of_two(a: tuple[int, int], b: tuple[int, int]) -> Interval | None:
    """The interval of the mean of two independent rates ``a`` and ``b`` (each ``(part, whole)``), by
    combining their Wilson intervals (Zou and Donner's MOVER, "square and add")."""
    ia, ib = wilson(*a), wilson(*b)
    if ia is None or ib is None:
        return None
    pa, pb = a[0] / a[1], b[0] / b[1]
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
    (l1, u1), (l2, u2) = wilson(both + lost, n), wilson(both + gained, n)
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


def rogan_gladen(apparent: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an ``apparent`` one measured by a test of this sensitivity and specificity
    (Rogan and Gladen, 1978): ``(apparent + specificity - 1) / (sensitivity + specificity - 1)``, kept to
    0..1; None when the test is no better than chance (the denominator is not positive)."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (apparent + specificity - 1) / youden))


Counts = tuple[int, ...]
"""What one task's runs add up to (a statistic's inputs, each a count)."""


def cluster_bootstrap(tasks: Sequence[Counts], statistics: Sequence[Callable[[Counts], float | None]],
                      resamples: int = RESAMPLES, seed: int = SEED) -> list[Interval | None]:
    """Percentile intervals of ``statistics`` (each a function of the summed counts) over resamples of
    whole tasks drawn with replacement: the runs of one task stay together. None for a statistic that
    no resample defines. Tasks with equal counts are drawn together, as one multinomial draw a resample."""
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
    return [_percentiles(found) if found else None for found in values]


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


def _percentiles(values: list[float]) -> Interval:
    values.sort()
    last = len(values) - 1
    return values[round(0.025 * last)], values[round(0.975 * last)]
