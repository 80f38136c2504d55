"""``tracejudge validate``'s output: the figures table, the confusion table and the
disagreement list as text, or all of it as one JSON document."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tracejudge.report.stats import Interval
from tracejudge.validate.gates import GateResult
from tracejudge.validate.labels import LABEL_VALUES
from tracejudge.validate.reading import OUTCOMES
from tracejudge.validate.stats import METRICS, AxisFigures, Disagreement


def cell(interval: Interval) -> str:
    """``2/93 2.2% [0.6-7.5%]``: the count, the rate and its 95% Wilson interval."""
    if interval.trials == 0:
        return "0/0 -"
    return (
        f"{interval.successes}/{interval.trials} {interval.rate:.1%} "
        f"[{interval.low:.1%}-{interval.high:.1%}]"
    )


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def figures_table(figures: Sequence[AxisFigures]) -> list[str]:
    """One row per axis and slice: labelled runs, then each rate with its interval."""
    rows = [["axis", "slice", "runs", "false pass", "false fail", "agreement", "undecided"]]
    for f in figures:
        rows.append(
            [
                f.axis,
                f.slice_name,
                str(f.labelled),
                cell(f.metric("false_pass")),
                cell(f.metric("false_fail")),
                cell(f.metric("agreement")),
                str(f.confusion["pass"]["undecided"] + f.confusion["fail"]["undecided"]),
            ]
        )
    return _table(rows)


def confusion_table(figures: Sequence[AxisFigures]) -> list[str]:
    """Label (rows) against reading (columns), per axis and slice."""
    rows = [["axis", "slice", "label", *(f"judged {o}" for o in OUTCOMES)]]
    for f in figures:
        for label in LABEL_VALUES:
            counts = f.confusion[label]
            rows.append([f.axis, f.slice_name, label, *(str(counts[o]) for o in OUTCOMES)])
    return _table(rows)


def disagreement_line(d: Disagreement, axis: str) -> str:
    item = d.item
    who = item.run + (f" ({item.name})" if item.name and item.name != item.run else "")
    parts = [f"  {axis}: labelled {d.label}, judged {d.outcome}: run {who}"]
    if d.run.trace_id != item.run:
        parts.append(f"trace {d.run.trace_id}")
    if d.run.primary:
        parts.append(d.run.primary)
    if item.note:
        parts.append(f"label: {item.note}")
    return "; ".join(parts)


def render_text(
    header: str,
    figures: Sequence[AxisFigures],
    gates: Sequence[GateResult],
    limit: int | None,
) -> str:
    """The whole text report; ``limit`` disagreements per axis (None: all)."""
    lines = [header, "", *figures_table(figures), "", *confusion_table(figures)]
    for f in figures:
        if f.slice_tag is not None or not f.disagreements:
            continue
        shown = f.disagreements if limit is None else f.disagreements[:limit]
        head = f"disagreements on {f.axis} ({len(f.disagreements)}, read from {f.reading})"
        if not shown:
            lines += ["", f"{head}: listed with --disagreements N|all"]
            continue
        lines += ["", f"{head}:"]
        lines += [disagreement_line(d, f.axis) for d in shown]
        if len(shown) < len(f.disagreements):
            lines.append(
                f"  ... and {len(f.disagreements) - len(shown)} more (--disagreements all)"
            )
    if gates:
        lines.append("")
        for g in gates:
            lines.append(f"gate {'pass' if g.passed else 'FAIL'}: {g.gate.text}: {g.detail}")
    return "\n".join(lines)


def _interval(interval: Interval) -> dict[str, Any]:
    return {
        "count": interval.successes,
        "of": interval.trials,
        "rate": None if math.isnan(interval.rate) else interval.rate,
        "low": interval.low,
        "high": interval.high,
    }


def to_json(
    source: dict[str, Any], figures: Sequence[AxisFigures], gates: Sequence[GateResult]
) -> dict[str, Any]:
    """Everything as one JSON document (every disagreement included)."""
    return {
        **source,
        "figures": [
            {
                "axis": f.axis,
                "read_from": f.reading,
                "slice": None if f.slice_tag is None else {f.slice_tag: f.slice_value},
                "runs": f.labelled,
                "confusion": {label: dict(f.confusion[label]) for label in LABEL_VALUES},
                **{m: _interval(f.metric(m)) for m in METRICS},
                "disagreements": [
                    {
                        "run": d.item.run,
                        "name": d.item.name,
                        "trace_id": d.run.trace_id,
                        "label": d.label,
                        "judged": d.outcome,
                        "primary": d.run.primary,
                        "note": d.item.note,
                    }
                    for d in f.disagreements
                ],
            }
            for f in figures
        ],
        "gates": [
            {"gate": g.gate.text, "slice": g.slice_name, "passed": g.passed, "detail": g.detail}
            for g in gates
        ],
    }
