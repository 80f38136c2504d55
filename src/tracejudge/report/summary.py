"""Aggregate judged runs into the numbers a report shows.

One pure step between verdict records and any renderer (text or HTML): pass rates per
case and per variant with Wilson intervals, pass@k / pass^k across repetitions, a paired
comparison of two variants, failing runs (hard gates first) and failure codes by frequency.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tracejudge.report.records import VerdictRecord
from tracejudge.report.stats import (
    Interval,
    PairedResult,
    paired_comparison,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

NO_CASE = "(no case)"
NO_VARIANT = "(no variant)"
DEFAULT_KS: tuple[int, ...] = (1, 3, 5)


@dataclass(slots=True, frozen=True)
class GroupRate:
    """The pass rate of one group of runs (a case, a variant)."""

    name: str
    interval: Interval
    hard_failures: int
    errors: int


@dataclass(slots=True, frozen=True)
class Repetitions:
    """pass@k and pass^k for one case under one variant; None where k exceeds the runs."""

    case_id: str
    variant: str
    n: int
    c: int
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]


@dataclass(slots=True, frozen=True)
class CaseComparison:
    """One case in a paired comparison."""

    case_id: str
    a_passed: int
    a_runs: int
    b_passed: int
    b_runs: int
    result: PairedResult


@dataclass(slots=True, frozen=True)
class Comparison:
    """Variant A against variant B, paired by case and repetition."""

    variant_a: str
    variant_b: str
    result: PairedResult
    cases: list[CaseComparison]
    unpaired: int
    """Runs with no partner (a case run more times under one variant, or under only one)."""


@dataclass(slots=True, frozen=True)
class CodeCount:
    """How often a failure code appeared."""

    code: str
    severity: str
    runs: int
    """Runs with at least one finding of this code."""
    occurrences: int


@dataclass(slots=True)
class Summary:
    """Everything a report shows, computed once."""

    records: list[VerdictRecord]
    overall: Interval
    by_case: list[GroupRate]
    by_variant: list[GroupRate]
    repetitions: list[Repetitions]
    comparison: Comparison | None
    failures: list[VerdictRecord]
    """Runs that did not pass cleanly: hard-gate failures, then errors, then warnings."""
    codes: list[CodeCount]
    duplicates: int = 0
    """Records replaced by a later record of the same run (trace id + root span id)."""
    ks: tuple[int, ...] = DEFAULT_KS
    notes: list[str] = field(default_factory=list)


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int | str, ...], str]:
    """Sort key that reads runs of digits as numbers: ``case 2`` before ``case 10``,
    ``tau-airline-4`` before ``tau-airline-12``. Letters compare without case; the text
    itself breaks ties, so the order is total and stable across runs."""
    parts = _DIGITS.split(text)  # text, digits, text, digits, ...: types alternate
    return tuple(int(p) if i % 2 else p.casefold() for i, p in enumerate(parts)), text


def case_of(record: VerdictRecord) -> str:
    """The case label of a run (runs without a case id are grouped together)."""
    return record.case_id if record.case_id is not None else NO_CASE


def variant_of(record: VerdictRecord) -> str:
    """The variant label of a run."""
    return record.variant if record.variant is not None else NO_VARIANT


def summarize(
    records: Iterable[VerdictRecord],
    *,
    variants: tuple[str, str] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
) -> Summary:
    """Compute a report's numbers.

    A run judged twice (the same file given twice, or a collector verdict updated by
    late spans) is counted once: the later record wins and ``duplicates`` says how many
    were replaced. Without ``variants`` a comparison is made only when exactly two
    variants are present (in sorted order).
    """
    unique: dict[tuple[str, str], VerdictRecord] = {}
    duplicates = 0
    for record in records:
        if record.key in unique:
            duplicates += 1
            del unique[record.key]
        unique[record.key] = record
    runs = list(unique.values())
    notes: list[str] = []
    overall = wilson_interval(sum(r.passed for r in runs), len(runs))
    by_case = _rates(runs, case_of)
    by_variant = _rates(runs, variant_of)
    present = sorted({variant_of(r) for r in runs})
    comparison = None
    if variants is not None:
        missing = [v for v in variants if v not in present]
        if missing:
            notes.append(f"no runs for variant(s) {', '.join(missing)}: no comparison made")
        else:
            comparison = compare(runs, variants[0], variants[1])
    elif len(present) == 2:
        comparison = compare(runs, present[0], present[1])
    order = {"fail": 0, "error": 1, "warn": 2}
    failures = sorted(
        (r for r in runs if r.verdict in order),
        key=lambda r: (order[r.verdict], natural_key(case_of(r)), natural_key(variant_of(r))),
    )
    return Summary(
        records=runs,
        overall=overall,
        by_case=by_case,
        by_variant=by_variant,
        repetitions=_repetitions(runs, tuple(ks)),
        comparison=comparison,
        failures=failures,
        codes=_codes(runs),
        duplicates=duplicates,
        ks=tuple(ks),
        notes=notes,
    )


def compare(runs: Sequence[VerdictRecord], variant_a: str, variant_b: str) -> Comparison:
    """Pair the i-th run of a case under A with the i-th run of that case under B.

    Runs keep their input order, so repetition i of both variants (e.g. the same seed)
    meet. Cases run under only one variant contribute unpaired runs, reported as such.
    """
    per_case: dict[str, tuple[list[bool], list[bool]]] = {}
    for r in runs:
        v = variant_of(r)
        if v == variant_a:
            per_case.setdefault(case_of(r), ([], []))[0].append(r.passed)
        elif v == variant_b:
            per_case.setdefault(case_of(r), ([], []))[1].append(r.passed)
    all_pairs: list[tuple[bool, bool]] = []
    cases: list[CaseComparison] = []
    unpaired = 0
    for case_id in sorted(per_case, key=natural_key):
        a, b = per_case[case_id]
        pairs = list(zip(a, b, strict=False))
        unpaired += abs(len(a) - len(b))
        all_pairs.extend(pairs)
        cases.append(
            CaseComparison(case_id, sum(a), len(a), sum(b), len(b), paired_comparison(pairs))
        )
    return Comparison(variant_a, variant_b, paired_comparison(all_pairs), cases, unpaired)


def _rates(runs: Sequence[VerdictRecord], label: Callable[[VerdictRecord], str]) -> list[GroupRate]:
    groups: dict[str, list[VerdictRecord]] = {}
    for r in runs:
        groups.setdefault(label(r), []).append(r)
    return [
        GroupRate(
            name,
            wilson_interval(sum(r.passed for r in group), len(group)),
            sum(r.hard_failed for r in group),
            sum(r.verdict == "error" for r in group),
        )
        for name, group in sorted(groups.items(), key=lambda kv: natural_key(kv[0]))
    ]


def _repetitions(runs: Sequence[VerdictRecord], ks: tuple[int, ...]) -> list[Repetitions]:
    groups: dict[tuple[str, str], list[bool]] = {}
    for r in runs:
        groups.setdefault((case_of(r), variant_of(r)), []).append(r.passed)
    out: list[Repetitions] = []
    for (case_id, variant), results in sorted(
        groups.items(), key=lambda kv: (natural_key(kv[0][0]), natural_key(kv[0][1]))
    ):
        n, c = len(results), sum(results)
        out.append(
            Repetitions(
                case_id,
                variant,
                n,
                c,
                {k: pass_at_k(n, c, k) if k <= n else None for k in ks},
                {k: pass_hat_k(n, c, k) if k <= n else None for k in ks},
            )
        )
    return out


def _codes(runs: Sequence[VerdictRecord]) -> list[CodeCount]:
    run_counts: Counter[str] = Counter()
    occurrences: Counter[str] = Counter()
    severity: dict[str, str] = {}
    for r in runs:
        seen: set[str] = set()
        for f in r.findings:
            occurrences[f.code] += 1
            seen.add(f.code)
            if severity.get(f.code) != "fail":
                severity[f.code] = f.severity
        run_counts.update(seen)
    return sorted(
        (
            CodeCount(code, severity[code], run_counts[code], occurrences[code])
            for code in occurrences
        ),
        key=lambda c: (c.severity != "fail", -c.runs, -c.occurrences, c.code),
    )
