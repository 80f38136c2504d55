"""The report's statistics against values computed by hand (no SciPy in the loop)."""

from __future__ import annotations

import math

import pytest

from tracejudge.report.stats import (
    mcnemar_exact,
    paired_comparison,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)


def test_wilson_eight_of_ten() -> None:
    """8/10 gives the textbook Wilson 95% interval [0.4902, 0.9433], not Wald's [0.55, 1.05]."""
    iv = wilson_interval(8, 10)
    assert iv.rate == pytest.approx(0.8)
    assert iv.low == pytest.approx(0.49016, abs=1e-4)
    assert iv.high == pytest.approx(0.94332, abs=1e-4)


def test_wilson_extremes_stay_inside_unit_interval() -> None:
    """0/10 and 10/10 keep a non-zero width (z²/(n+z²) = 0.2775) and end exactly at 0 or 1."""
    zero = wilson_interval(0, 10)
    assert zero.low == 0.0
    assert zero.high == pytest.approx(3.841459 / 13.841459, abs=1e-6)
    full = wilson_interval(10, 10)
    assert full.high == 1.0
    assert full.low == pytest.approx(1 - 3.841459 / 13.841459, abs=1e-6)


def test_wilson_without_trials_is_unknown() -> None:
    """No runs means no estimate: NaN rate and the whole [0, 1] interval, not a fake 0%."""
    iv = wilson_interval(0, 0)
    assert math.isnan(iv.rate)
    assert (iv.low, iv.high) == (0.0, 1.0)


def test_wilson_rejects_impossible_counts() -> None:
    """More successes than trials is a bug upstream and must not produce a number."""
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


def test_pass_at_k_and_pass_hat_k_hand_values() -> None:
    """n=5, c=2: pass@2 = 1 - C(3,2)/C(5,2) = 0.7 and pass^2 = C(2,2)/C(5,2) = 0.1."""
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 4) == 1.0  # any 4 of 5 must include a pass (only 3 failures)
    assert pass_hat_k(5, 2, 3) == 0.0


def test_pass_k_requires_k_within_runs() -> None:
    """k larger than the number of runs has no unbiased estimate and is refused."""
    with pytest.raises(ValueError, match="k"):
        pass_hat_k(3, 3, 4)


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (0, 0, 1.0),
        (1, 5, 14 / 64),  # 2 * (C(6,0) + C(6,1)) / 2^6
        (0, 6, 2 / 64),
        (3, 3, 1.0),  # the doubled tail exceeds 1 and is capped
        (2, 8, 2 * (1 + 10 + 45) / 1024),
    ],
)
def test_mcnemar_exact_small_counts(wins: int, losses: int, expected: float) -> None:
    """The exact McNemar p-value is the two-sided binomial tail on discordant pairs."""
    assert mcnemar_exact(wins, losses) == pytest.approx(expected)
    assert mcnemar_exact(losses, wins) == pytest.approx(expected)


def test_paired_comparison_counts_only_discordant_pairs_in_the_test() -> None:
    """Ties (both pass or both fail) say nothing about which variant is better."""
    pairs = [(True, False)] * 6 + [(True, True)] * 10 + [(False, False)] * 4
    result = paired_comparison(pairs)
    assert (result.wins, result.losses, result.ties_pass, result.ties_fail) == (6, 0, 10, 4)
    assert result.pairs == 20
    assert result.p_value == pytest.approx(2 / 64)
