"""Bounded label values for the verdict metrics.

Every label of ``tracejudge.runs`` / ``tracejudge.findings`` / ``tracejudge.hard_gate.failures``
comes from span attributes the instrumented application sets, so nothing upstream bounds
them: one buggy deploy stamping a build id into ``gen_ai.agent.version``, or a case id per
production request, would create a new Prometheus series per run until the TSDB (and every
dashboard) drowns. The bounds, per label:

- **case slice**, not case id: case ids are grouped into the slices named in
  ``metrics_case_slices`` (shell globs, first matching slice in file order wins); a case id
  that no slice matches is ``other``, a run with no case id has an empty slice (Prometheus
  treats an empty label as absent). With no slices configured the label is always empty.
- **agent, variant, agent version, failure code**: at most ``max_values`` distinct values
  each for the collector's lifetime, first come first kept; later new values are counted
  under ``_overflow`` (so totals stay right and the overflow is visible on the dashboard).
  Values are cut to ``max_len`` characters.

So the series count is at most ``max_values**3 x (slices + 2) x 4 verdicts`` for runs, and in
practice the product of the values really used, which is small.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence

OVERFLOW = "_overflow"
"""The value of a label once ``max_values`` distinct values have been seen."""
NO_SLICE = "other"
"""The case slice of a case id that no configured slice matches."""
DEFAULT_MAX_VALUES = 100
DEFAULT_MAX_LEN = 128
_SLICE_CACHE = 4096


class LabelBound:
    """One label's admitted values: the first ``max_values`` seen, then ``OVERFLOW``."""

    __slots__ = ("_seen", "max_len", "max_values")

    def __init__(self, max_values: int, max_len: int) -> None:
        self.max_values = max_values
        self.max_len = max_len
        self._seen: set[str] = set()

    def __call__(self, value: str | None) -> str:
        seen = self._seen
        if value in seen:  # the common case first: a value seen before
            return value  # (None is never in seen)
        if not value:
            return ""
        if len(value) > self.max_len:
            value = value[: self.max_len]
            if value in seen:
                return value
        if len(seen) >= self.max_values:
            return OVERFLOW
        seen.add(value)
        return value


class MetricLabels:
    """Turns a verdict's identity into bounded label values (agent, variant, version, slice)."""

    def __init__(
        self,
        case_slices: Mapping[str, Sequence[str]] | None = None,
        max_values: int = DEFAULT_MAX_VALUES,
        max_len: int = DEFAULT_MAX_LEN,
    ) -> None:
        if max_values < 1:
            raise ValueError(f"max_values must be at least 1, got {max_values}")
        self.agent = LabelBound(max_values, max_len)
        self.variant = LabelBound(max_values, max_len)
        self.version = LabelBound(max_values, max_len)
        self.code = LabelBound(max_values, max_len)
        self._slices: list[tuple[str, re.Pattern[str]]] = [
            (name, re.compile("|".join(fnmatch.translate(p) for p in patterns)))
            for name, patterns in (case_slices or {}).items()
            if patterns
        ]
        self._slice_of: dict[str, str] = {}
        self._memo: dict[tuple[str | None, ...], tuple[str, str, str, str]] = {}

    def case_slice(self, case_id: str | None) -> str:
        """The slice of ``case_id`` (cached: the same few ids recur)."""
        if not case_id or not self._slices:
            return ""
        cached = self._slice_of.get(case_id)
        if cached is not None:
            return cached
        name = next((n for n, rx in self._slices if rx.match(case_id)), NO_SLICE)
        if len(self._slice_of) >= _SLICE_CACHE:
            self._slice_of.clear()  # ids are unbounded; the slices are not
        self._slice_of[case_id] = name
        return name

    def identity(
        self,
        agent: str | None,
        variant: str | None,
        version: str | None,
        case_id: str | None,
    ) -> tuple[str, str, str, str]:
        """(agent, variant, agent version, case slice), each bounded. Memoised (one dict
        lookup per verdict on the decision path): an admitted value stays admitted and an
        overflowed one stays overflowed, so a remembered answer never goes stale."""
        key = (agent, variant, version, case_id)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = (
            self.agent(agent),
            self.variant(variant),
            self.version(version),
            self.case_slice(case_id),
        )
        if len(self._memo) >= _SLICE_CACHE:
            self._memo.clear()
        self._memo[key] = out
        return out
