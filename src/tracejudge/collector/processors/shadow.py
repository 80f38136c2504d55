"""Pairing shadow runs with their stable runs as the collector decides them.

A shadow run and the stable run of the same request arrive as separate traces, often from
separate deployments, and are decided whenever each trace is finished, in either order.
``ShadowPairs`` is a verdict observer: it keeps each decided shadow until the stable run of
its request is decided (and each decided stable run that names a request id until a shadow
of it may arrive), for at most ``shadow_wait`` seconds. Then:

- both decided: the shadow is compared with the stable run (``engine.shadow.compare``, the
  baseline diff) and reported ``paired`` or ``diverged``;
- the wait passed without a partner, or the table is full, or the collector stops: the
  shadow is reported ``unpaired`` with the reason (never silence);
- a shadow without a request id is reported ``unpaired`` at once.

Each report is one JSON line to the verdict sinks (``record: "shadow"``) and one count in
``tracejudge.shadow.pairs``. What is kept is the verdict with its trajectory (successful
calls and their arguments, in memory only), bounded by ``max_pending`` per side.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.sinks import VerdictSink
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.rules import RuleSet
from tracejudge.engine.shadow import (
    ShadowReport,
    compare,
    no_request,
    shadow_arguments,
    unpaired,
)
from tracejudge.engine.trajectory import ArgRule
from tracejudge.engine.verdict import Verdict
from tracejudge.gate.recent import RecentVerdicts

log = logging.getLogger("tracejudge.collector")

DEFAULT_MAX_PENDING = 10_000


class ShadowPairs:
    """Decided shadows and stable runs waiting for their partner, by request id."""

    def __init__(
        self,
        wait: float,
        stats: Stats,
        sinks: Sequence[VerdictSink],
        arguments: Mapping[str, Mapping[str, ArgRule]] | None = None,
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        scrub: Callable[[str], str] | None = None,
        gate: RecentVerdicts | None = None,
    ) -> None:
        self.wait = wait
        self.stats = stats
        self.sinks = list(sinks)
        self.arguments: Mapping[str, Mapping[str, ArgRule]] = arguments or {}
        self.max_pending = max_pending
        self.scrub = scrub
        """Applied to the explanations of shadow findings (they quote arguments), as the
        decision stage scrubs verdicts: its scrubber's ``text``."""
        self.gate = gate
        """The gate's window, given paired shadows (used with ``/v1/gate?shadow=include``)."""
        self._shadows: OrderedDict[str, list[tuple[Verdict, float]]] = OrderedDict()
        """Request id -> decided shadows of it waiting for the stable run (oldest first)."""
        self._stable: OrderedDict[str, tuple[Verdict, float]] = OrderedDict()
        """Request id -> the first decided stable run of it, kept for shadows decided later."""

    def pending(self) -> int:
        """Shadows waiting for their stable run (``/metrics`` ``shadow.pending``, read
        through the collector's ``Gauges``)."""
        return sum(len(v) for v in self._shadows.values())

    def add(self, v: Verdict, time: float) -> None:
        """Take one decided verdict (a ``VerdictObserver``); never raises into the decision
        stage."""
        try:
            self._add(v, time)
        except Exception:  # pairing is a report about the traffic: it must not stop it
            log.exception("shadow pairing failed for trace %s", v.trace_id)

    def _add(self, v: Verdict, time: float) -> None:
        self.expire(time)
        rid = v.request_id
        if v.shadow:
            if rid is None:
                self._report(no_request(v), time)
                return
            stable = self._stable.get(rid)
            if stable is not None:
                self._report(compare(v, stable[0], self.arguments), time)
                return
            if len(self._shadows) >= self.max_pending:
                _, oldest = self._shadows.popitem(last=False)
                for s, _t in oldest:
                    self._report(unpaired(s, _FULL.format(n=self.max_pending)), time)
            self._shadows.setdefault(rid, []).append((v, time))
            return
        if rid is None:
            return  # ordinary traffic: nothing to pair
        for s, _t in self._shadows.pop(rid, ()):
            self._report(compare(s, v, self.arguments), time)
        if rid not in self._stable:  # the first stable run of a request is its partner
            if len(self._stable) >= self.max_pending:
                self._stable.popitem(last=False)
            self._stable[rid] = (v, time)

    def expire(self, now: float) -> None:
        """Report shadows that waited ``wait`` seconds as unpaired; forget stable runs as
        old (a shadow decided later than that is unpaired too)."""
        cutoff = now - self.wait
        while self._stable:
            rid, (_v, t) = next(iter(self._stable.items()))
            if t > cutoff:
                break
            del self._stable[rid]
        while self._shadows:
            rid, waiting = next(iter(self._shadows.items()))
            if waiting[0][1] > cutoff:
                break
            del self._shadows[rid]
            for s, _t in waiting:
                reason = f"no stable run of request {rid} within {_secs(self.wait)}"
                self._report(unpaired(s, reason), now)

    def close(self, now: float) -> None:
        """At shutdown: every waiting shadow is reported unpaired (the collector stops
        before its partner could arrive)."""
        shadows, self._shadows = self._shadows, OrderedDict()
        for rid, waiting in shadows.items():
            for s, _t in waiting:
                reason = f"collector stopped before a stable run of request {rid} was decided"
                self._report(unpaired(s, reason), now)
        self._stable.clear()

    def _report(self, report: ShadowReport, now: float) -> None:
        scrub = self.scrub
        if scrub is not None:
            findings = report.findings
            report.findings = [replace(f, explanation=scrub(f.explanation)) for f in findings]
            report.reason = scrub(report.reason)
        self.stats.shadow_pair(report.shadow, report.outcome)
        if self.gate is not None and report.outcome != "unpaired":
            hard = any(f.severity == "fail" for f in report.findings)
            self.gate.add_shadow(report.shadow, hard, now)
        if not self.sinks:
            return
        record = report.to_dict()
        record["decided_at"] = round(now, 3)
        for sink in self.sinks:
            sink.emit([record])


def shadow_pairs_for(
    config: CollectorConfig,
    stats: Stats,
    sinks: Sequence[VerdictSink],
    scrubber: Scrubber,
    ruleset: RuleSet | None,
    gate: RecentVerdicts | None = None,
) -> ShadowPairs:
    """Pairing for a decision stage's shadow runs, registered as one of its observers when the
    graph is built (``assembly.build_stages``) and given as ``DecisionContext.shadow``:
    reporting to its ``sinks`` and ``stats``, expired by its timer (``DecisionStage.tick``)
    and closed at shutdown (``DecisionStage.decide_all``); findings scrubbed
    by its ``scrubber``, like verdicts (they quote arguments). The argument allowances are
    those of the rule set's ``baseline`` rule, if any; paired shadows go to ``gate`` as
    evidence the gate reads only when asked (``shadow=include``)."""
    return ShadowPairs(
        config.shadow_wait,
        stats,
        sinks,
        shadow_arguments(ruleset),
        max_pending=config.shadow_max_pending,
        scrub=scrubber.text,
        gate=gate,
    )


_FULL = "the shadow pairing table was full ({n} requests waiting); the oldest gave way"


def _secs(seconds: float) -> str:
    return f"{seconds:g}s"
