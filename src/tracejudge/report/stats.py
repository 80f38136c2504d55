"""Statistics for judged runs: pass-rate intervals, repetition metrics, paired tests.

Agents are non-deterministic, so one pass rate with no error bar says little and two
variants compared on raw percentages mislead. These are pure functions (no I/O, no
SciPy) so they can be checked against hand-computed values and reused by any renderer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


@dataclass(slots=True, frozen=True)
class Interval:
    """A proportion with its confidence interval (all in [0, 1])."""

    successes: int
    trials: int
    rate: float
    low: float
    high: float


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> Interval:
    """The Wilson score interval for ``successes`` out of ``trials``.

    Wilson rather than the normal ("Wald") interval because agent suites are small and
    pass rates sit near 0 or 1, where Wald collapses to zero width. With no trials the
    rate is unknown: the interval is the whole of [0, 1] and ``rate`` is NaN.
    """
    _check_counts(successes, trials)
    if trials == 0:
        return Interval(0, 0, math.nan, 0.0, 1.0)
    p = successes / trials
    z2 = z * z
    denom = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(successes, trials, p, low, high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k runs drawn from n passes.

    ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021), computed with exact integers.
    """
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all of k runs drawn from n pass.

    ``C(c, k) / C(n, k)`` (the tau-bench reliability metric). pass@k rewards an agent
    that sometimes gets it right; pass^k rewards one that always does.
    """
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts.

    Under the null hypothesis each discordant pair is a fair coin, so the p-value is the
    two-sided binomial tail ``min(1, 2 * P[X <= min(b, c)])`` with ``X ~ Bin(b + c, 1/2)``.
    No discordant pairs means no evidence either way: p = 1.
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"discordant counts must be non-negative, got {wins} and {losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / (1 << n))


@dataclass(slots=True, frozen=True)
class PairedResult:
    """A paired comparison of variant A against variant B."""

    wins: int
    """Pairs where A passed and B failed."""
    losses: int
    """Pairs where A failed and B passed."""
    ties_pass: int
    ties_fail: int
    p_value: float

    @property
    def pairs(self) -> int:
        """The number of pairs compared."""
        return self.wins + self.losses + self.ties_pass + self.ties_fail

    @property
    def ties(self) -> int:
        """Pairs where both passed or both failed."""
        return self.ties_pass + self.ties_fail


def paired_comparison(pairs: Sequence[tuple[bool, bool]]) -> PairedResult:
    """Wins, losses, ties and the exact McNemar p-value over ``(a_passed, b_passed)`` pairs.

    Pairing (same case, same repetition) removes case difficulty from the comparison:
    only the discordant pairs carry information about which variant is better.
    """
    wins = sum(1 for a, b in pairs if a and not b)
    losses = sum(1 for a, b in pairs if b and not a)
    both = sum(1 for a, b in pairs if a and b)
    neither = len(pairs) - wins - losses - both
    return PairedResult(wins, losses, both, neither, mcnemar_exact(wins, losses))


def _check_counts(successes: int, trials: int) -> None:
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n)
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n, got k={k} with n={n}")
