"""Aggregation of verdict records: the numbers the report prints."""

from __future__ import annotations

import pytest

from tests.report.report_builders import make_record
from tracejudge.report.summary import NO_CASE, summarize


def test_pass_rates_per_case_and_variant_with_wilson() -> None:
    """8 of 10 runs passing in one variant gives the Wilson interval for 8/10."""
    records = [make_record(i, verdict="pass" if i < 8 else "fail") for i in range(10)]
    summary = summarize(records)
    (variant,) = summary.by_variant
    assert (variant.name, variant.interval.successes, variant.interval.trials) == ("A", 8, 10)
    assert variant.interval.low == pytest.approx(0.4902, abs=1e-4)
    assert variant.hard_failures == 2


def test_warn_counts_as_pass_and_error_as_failure() -> None:
    """Soft checks must not sink a pass rate; an unjudgeable run must not raise it."""
    records = [make_record(1, verdict="warn"), make_record(2, verdict="error")]
    summary = summarize(records)
    assert summary.overall.successes == 1
    assert summary.by_case[0].errors == 1


def test_repetitions_give_unbiased_pass_at_k_and_pass_hat_k() -> None:
    """5 repetitions with 2 passes: pass@2 = 0.7, pass^2 = 0.1, k beyond n is unknown."""
    records = [make_record(i, verdict="pass" if i < 2 else "fail") for i in range(5)]
    (rep,) = summarize(records, ks=(2, 6)).repetitions
    assert rep.pass_at[2] == pytest.approx(0.7)
    assert rep.pass_hat[2] == pytest.approx(0.1)
    assert rep.pass_at[6] is None


def test_paired_comparison_pairs_by_case_and_repetition() -> None:
    """Repetition i of a case under A meets repetition i under B; extras are unpaired."""
    records = [
        make_record(1, case="c1", variant="A", verdict="pass"),
        make_record(2, case="c1", variant="B", verdict="fail"),
        make_record(3, case="c2", variant="A", verdict="pass"),
        make_record(4, case="c2", variant="B", verdict="pass"),
        make_record(5, case="c2", variant="B", verdict="fail"),
    ]
    comparison = summarize(records, variants=("A", "B")).comparison
    assert comparison is not None
    assert (comparison.result.wins, comparison.result.losses, comparison.result.ties) == (1, 0, 1)
    assert comparison.unpaired == 1
    assert comparison.result.p_value == 1.0


def test_two_variants_are_compared_without_asking_and_unknown_ones_are_noted() -> None:
    """Exactly two variants are compared by default; naming a missing one leaves a note."""
    records = [make_record(1, variant="x"), make_record(2, variant="y")]
    assert summarize(records).comparison is not None
    missing = summarize(records, variants=("x", "nope"))
    assert missing.comparison is None
    assert any("nope" in n for n in missing.notes)


def test_hard_gate_failures_come_first_and_codes_by_frequency() -> None:
    """Readers act on hard failures first; the most frequent failure code leads."""
    records = [
        make_record(1, verdict="warn", codes=("SLOW",), severity="warn"),
        make_record(2, verdict="fail", codes=("NO_REFUND", "NO_REFUND")),
        make_record(3, verdict="fail", codes=("NO_REFUND",)),
        make_record(4, verdict="error"),
        make_record(5, case=None),
    ]
    summary = summarize(records)
    assert [r.verdict for r in summary.failures] == ["fail", "fail", "error", "warn"]
    assert [(c.code, c.runs, c.occurrences) for c in summary.codes] == [
        ("NO_REFUND", 2, 3),
        ("SLOW", 1, 1),
    ]
    assert NO_CASE in {g.name for g in summary.by_case}


def test_a_run_judged_twice_counts_once() -> None:
    """The same file given twice (or a late re-judgement) must not inflate n."""
    summary = summarize([make_record(1, verdict="fail"), make_record(1, verdict="pass")])
    assert summary.overall.trials == 1
    assert summary.overall.successes == 1
    assert summary.duplicates == 1
