"""Gate parameters as people write them (``10m``, ``0.9``), shared by the CLI and
``GET /v1/gate``, so both accept and refuse exactly the same values."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from tracejudge.gate.decision import GatePolicy

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class ParamError(ValueError):
    """A parameter that cannot be used; ``name`` is the parameter, as the caller spelled it."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``10m``, ``2h``, ``1d``, ``500ms``; ValueError otherwise."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"not a duration (e.g. 10m, 90s, 2h): {text!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not seconds > 0:
        raise ValueError(f"a window must be longer than zero: {text!r}")
    return seconds


def _number(name: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParamError(name, f"not a number: {text!r}") from None
    if math.isnan(value) or not low <= value <= high:
        raise ParamError(name, f"must be within [{low:g}, {high:g}], got {text!r}")
    return value


def policy_from_query(query: Mapping[str, str]) -> GatePolicy:
    """A ``GatePolicy`` from ``GET /v1/gate`` parameters (``agent``, ``variant`` required;
    ``baseline``, ``window``, ``min_runs``, ``threshold``, ``margin``, ``shadow`` optional).
    ``ParamError`` names the first bad or missing parameter."""
    known = {"agent", "variant", "baseline", "window", "min_runs", "threshold", "margin"}
    known.add("shadow")
    for key in query:
        if key not in known:
            raise ParamError(key, f"unknown parameter (known: {', '.join(sorted(known))})")
    fields: dict[str, str] = {}
    for key in ("agent", "variant"):
        value = query.get(key, "").strip()
        if not value:
            raise ParamError(key, "required")
        fields[key] = value
    defaults = GatePolicy(fields["agent"], fields["variant"])
    baseline = query.get("baseline", "").strip() or None
    window = None
    if "window" in query:
        try:
            window = parse_duration(query["window"])
        except ValueError as exc:
            raise ParamError("window", str(exc)) from None
    min_runs = defaults.min_runs
    if "min_runs" in query:
        raw = query["min_runs"].strip()
        if not raw.isdigit() or int(raw) < 1:
            raise ParamError("min_runs", f"must be a whole number of at least 1, got {raw!r}")
        min_runs = int(raw)
    threshold = defaults.threshold
    if "threshold" in query:
        threshold = _number("threshold", query["threshold"], 0.0, 1.0)
    margin = defaults.margin
    if "margin" in query:
        margin = _number("margin", query["margin"], 0.0, 1.0)
    shadow = query.get("shadow", "exclude").strip()
    if shadow not in ("include", "exclude"):
        raise ParamError("shadow", f"must be include or exclude, got {shadow!r}")
    if baseline == fields["variant"]:
        raise ParamError("baseline", "must differ from variant")
    return GatePolicy(
        fields["agent"],
        fields["variant"],
        baseline=baseline,
        window=window,
        min_runs=min_runs,
        threshold=threshold,
        margin=margin,
        shadow=shadow == "include",
    )
