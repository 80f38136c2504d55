"""``tracejudge report --format json``: the report's numbers as one JSON object.

The same ``Summary`` the text and HTML renderers show, for dashboards and scripts. Rates
are fractions in [0, 1]; an unknown rate (no runs) is ``null``, never NaN (which JSON
cannot carry). Runs that did not pass carry the fields of their verdict line that name
and explain them, with the rule of their primary failure.
"""

from __future__ import annotations

import math
from typing import Any

from tracejudge.report.records import VerdictRecord
from tracejudge.report.stats import Interval, PairedResult
from tracejudge.report.summary import GroupRate, Summary


def summary_dict(summary: Summary, shadow: dict[str, int] | None = None) -> dict[str, Any]:
    """The report as a JSON-able mapping; ``shadow`` adds the shadow runs' counts."""
    out: dict[str, Any] = {
        "runs": summary.overall.trials,
        "passed": summary.overall.successes,
        "pass_rate": _interval(summary.overall),
        "duplicates": summary.duplicates,
        "notes": list(summary.notes),
        "by_variant": [_group(g) for g in summary.by_variant],
        "by_case": [_group(g) for g in summary.by_case],
        "repetitions": [
            {
                "case_id": r.case_id,
                "variant": r.variant,
                "runs": r.n,
                "passed": r.c,
                "pass_at_k": {str(k): _rate(v) for k, v in r.pass_at.items()},
                "pass_hat_k": {str(k): _rate(v) for k, v in r.pass_hat.items()},
            }
            for r in summary.repetitions
        ],
        "comparison": None,
        "failures": [_failure(r) for r in summary.failures],
        "codes": [
            {"code": c.code, "severity": c.severity, "runs": c.runs, "occurrences": c.occurrences}
            for c in summary.codes
        ],
    }
    c = summary.comparison
    if c is not None:
        out["comparison"] = {
            "variant_a": c.variant_a,
            "variant_b": c.variant_b,
            **_paired(c.result),
            "unpaired": c.unpaired,
            "cases": [
                {
                    "case_id": k.case_id,
                    "a_passed": k.a_passed,
                    "a_runs": k.a_runs,
                    "b_passed": k.b_passed,
                    "b_runs": k.b_runs,
                    **_paired(k.result),
                }
                for k in c.cases
            ],
        }
    if shadow is not None:
        out["shadow"] = shadow
    return out


def _rate(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _interval(iv: Interval) -> dict[str, Any]:
    return {"rate": _rate(iv.rate), "low": iv.low, "high": iv.high}


def _group(g: GroupRate) -> dict[str, Any]:
    return {
        "name": g.name,
        "runs": g.interval.trials,
        "passed": g.interval.successes,
        "pass_rate": _interval(g.interval),
        "hard_failures": g.hard_failures,
        "errors": g.errors,
    }


def _paired(res: PairedResult) -> dict[str, Any]:
    return {
        "pairs": res.pairs,
        "a_wins": res.wins,
        "b_wins": res.losses,
        "ties_pass": res.ties_pass,
        "ties_fail": res.ties_fail,
        "p_value": res.p_value,
    }


def _failure(r: VerdictRecord) -> dict[str, Any]:
    finding = r.primary_finding
    return {
        "trace_id": r.trace_id,
        "root_span_id": r.root_span_id,
        "verdict": r.verdict,
        "agent": r.agent,
        "case_id": r.case_id,
        "variant": r.variant,
        "run_id": r.run_id,
        "code": r.primary.code if r.primary is not None else None,
        "rule": finding.rule if finding is not None else None,
        "span_id": r.primary.span_id if r.primary is not None else None,
        "explanation": r.error or (r.primary.explanation if r.primary is not None else None),
    }
