"""``--gate`` thresholds on validation figures: ``AXIS[@SLICE].METRIC OP LIMIT``.

- ``AXIS``: an axis of the labels (``policy``);
- ``@SLICE`` (optional): ``@TAG=VALUE`` for the runs tagged so, or ``@TAG`` for every value
  of the tag, each on its own; without it, every labelled run;
- ``METRIC``: ``false_pass``, ``false_fail``, ``agreement``, ``undecided``,
  ``not_evaluated``; add ``_high`` or ``_low`` for the bound of its 95% Wilson interval
  (``policy.false_pass_high<=0.1``: even the pessimistic estimate lets at most 10% through);
- ``OP``: ``<=``, ``<``, ``>=``, ``>``, ``==``; ``LIMIT``: a number (``0.05``) or a
  percentage (``5%``).

A gate whose figure has no runs to count (no run labelled ``fail`` for ``false_pass``)
fails, saying so: nothing measured is not a pass.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tracejudge.report.stats import Interval
from tracejudge.validate.labels import Labelled
from tracejudge.validate.reading import AxisReading, JudgedRun
from tracejudge.validate.stats import METRICS, AxisFigures, measure, slice_figures

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
_GATE = re.compile(r"^\s*(?P<target>.+?)\s*(?P<op><=|>=|==|<|>)\s*(?P<limit>[^<>=]+?)\s*$")
_BOUNDS = ("_high", "_low")


class GateError(ValueError):
    """A ``--gate`` that cannot be read or names what the labels do not have."""


@dataclass(slots=True, frozen=True)
class Gate:
    """One parsed ``--gate``."""

    text: str
    axis: str
    tag: str | None
    value: str | None
    metric: str
    bound: str
    """``""`` (the rate), ``"high"`` or ``"low"``."""
    op: str
    limit: float


@dataclass(slots=True, frozen=True)
class GateResult:
    """A gate checked on one slice."""

    gate: Gate
    slice_name: str
    passed: bool
    detail: str


def parse_gate(text: str) -> Gate:
    """Parse ``AXIS[@SLICE].METRIC OP LIMIT``; ``GateError`` says what is wrong."""
    m = _GATE.match(text)
    if m is None:
        raise GateError(f"--gate {text!r}: expected AXIS[@SLICE].METRIC OP LIMIT")
    target, dot, name = m["target"].rpartition(".")
    if not dot or not target:
        raise GateError(f"--gate {text!r}: expected AXIS[@SLICE].METRIC before {m['op']}")
    axis, at, where = target.partition("@")
    if not axis or (at and not where):
        raise GateError(f"--gate {text!r}: an axis, then optionally @TAG or @TAG=VALUE")
    tag, eq, value = where.partition("=")
    bound = ""
    metric = name
    for suffix in _BOUNDS:
        if name.endswith(suffix):
            metric, bound = name[: -len(suffix)], suffix[1:]
    if metric not in METRICS:
        raise GateError(
            f"--gate {text!r}: unknown metric {name!r} (one of {', '.join(METRICS)}, "
            "optionally with _high or _low)"
        )
    raw = m["limit"].strip()
    try:
        limit = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise GateError(f"--gate {text!r}: the limit {raw!r} is not a number") from None
    if not math.isfinite(limit):
        raise GateError(f"--gate {text!r}: the limit must be finite")
    return Gate(text, axis, tag or None, value if eq else None, metric, bound, m["op"], limit)


def check_gates(
    gates: Sequence[Gate],
    pairs: Sequence[tuple[Labelled, JudgedRun]],
    readings: dict[str, AxisReading],
    axes: Sequence[str],
    tags: frozenset[str],
) -> list[GateResult]:
    """Every gate on its slices. ``GateError`` for a gate naming an axis or tag that no
    labelled run has (a typo must not pass as an empty slice)."""
    results: list[GateResult] = []
    for gate in gates:
        if gate.axis not in axes:
            raise GateError(
                f"--gate {gate.text!r}: no run is labelled on axis {gate.axis!r} "
                f"(axes: {', '.join(axes) or 'none'})"
            )
        reading = readings[gate.axis]
        if gate.tag is None:
            figures = measure(pairs, {gate.axis: reading}, [gate.axis])
        elif gate.tag not in tags:
            raise GateError(
                f"--gate {gate.text!r}: no labelled run has tag {gate.tag!r} "
                f"(tags: {', '.join(sorted(tags)) or 'none'})"
            )
        elif gate.value is None:
            figures = measure(pairs, {gate.axis: reading}, [gate.axis], gate.tag)[1:]
        else:
            figures = [slice_figures(pairs, reading, gate.axis, gate.tag, gate.value)]
        results.extend(_check(gate, f) for f in figures)
    return results


def _check(gate: Gate, figures: AxisFigures) -> GateResult:
    interval = figures.metric(gate.metric)
    name = gate.metric + (f"_{gate.bound}" if gate.bound else "")
    if interval.trials == 0:
        whom = {"false_pass": "labelled fail", "false_fail": "labelled pass"}.get(
            gate.metric, "labelled"
        )
        return GateResult(
            gate,
            figures.slice_name,
            False,
            f"no run {whom} on {gate.axis} ({figures.slice_name}): nothing to measure",
        )
    value = _value(interval, gate.bound)
    ok = _OPS[gate.op](value, gate.limit)
    detail = (
        f"{gate.axis} ({figures.slice_name}) {name} = {value:.4g} "
        f"({interval.successes}/{interval.trials}; 95% CI {interval.low:.3f}-{interval.high:.3f})"
        f" {'meets' if ok else 'breaks'} {gate.op} {gate.limit:g}"
    )
    return GateResult(gate, figures.slice_name, ok, detail)


def _value(interval: Interval, bound: str) -> float:
    if bound == "high":
        return interval.high
    if bound == "low":
        return interval.low
    return interval.rate
