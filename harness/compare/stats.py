"""Statistics for comparing configurations: the Wilson score interval of a rate, and
Fisher's exact test of two rates."""
from __future__ import annotations

import math
from typing import Sequence

Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of successes/trials; (0, 1) with no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact(table: Sequence[Sequence[int]]) -> float:
    """The two-sided p-value of Fisher's exact test of the 2x2 table [[a, b], [c, d]]
    (rows: the two samples; columns: successes, failures).

    With the margins fixed, the count in the top-left cell follows the hypergeometric
    law; the p-value is the total probability of every table with those margins that is
    no more probable than the one observed. Probabilities are compared as exact integers
    (each is comb(a + b, x) * comb(c + d, a + c - x) over comb(n, a + c)), so tables of
    equal probability always count and the result is the same under swapping the rows
    or the columns. A table with an empty row or column (all-zero included) has only
    itself for its margins: p = 1.
    """
    (a, b), (c, d) = ((int(x) for x in row) for row in table)
    if min(a, b, c, d) < 0:
        raise ValueError(f"fisher_exact: counts must not be negative: {[[a, b], [c, d]]}")
    row1, row2, col1 = a + b, c + d, a + c
    n = row1 + row2

    def weight(x: int) -> int:  # the probability of top-left count x, times comb(n, col1)
        return math.comb(row1, x) * math.comb(row2, col1 - x)

    observed = weight(a)
    tail = sum(w for w in map(weight, range(max(0, col1 - row2), min(row1, col1) + 1)) if w <= observed)
    return min(1.0, tail / math.comb(n, col1))


def two_rates_p(hits1: int, trials1: int, hits2: int, trials2: int) -> float:
    """Fisher's exact two-sided p-value that hits1/trials1 and hits2/trials2 come from one
    rate (`fisher_exact` of [[hits1, trials1 - hits1], [hits2, trials2 - hits2]])."""
    if not (0 <= hits1 <= trials1 and 0 <= hits2 <= trials2):
        raise ValueError(f"two_rates_p: hits must lie within 0..trials: {hits1}/{trials1}, {hits2}/{trials2}")
    return fisher_exact([[hits1, trials1 - hits1], [hits2, trials2 - hits2]])
