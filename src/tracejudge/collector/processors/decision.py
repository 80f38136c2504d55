"""The decision stage: take due traces from the hold, judge, stamp and enqueue them.

A processor of the graph (issue 20), built by ``DecisionFactory`` from its own
``DecisionConfig`` and what the graph shares (``DecisionContext``), with the first
processor of the decided edge as its ``next``. Everything here runs on the collector's one
event loop except the CPU-bound part of a decision (decode, build the run, judge, scrub,
stamp: ``decide``), which runs on one worker thread a chunk of traces at a time, so an
expensive rules file never stalls the receivers or ``/healthz`` (the loop only waits for the
chunk's outcomes, then counts, remembers and enqueues them in deadline order). When judging
falls more than ``max_judge_lag`` behind the traces' deadlines, admission
(``processors/admission.py``, in front of the hold) has the receivers push back ("retry
later") instead of buffering more.

Its ``consume`` is a coroutine, unlike the contract's (``component.Processor``): a batch of
due traces is decided by awaiting the judging thread chunk by chunk, in deadline order,
while the loop goes on serving the receivers, and the hold's timer (``TraceHold.hand_due``)
awaits it so that the next tick never overtakes this one. A synchronous ``consume`` could
only block the loop or fire and forget the decisions (traces lost at shutdown), so the
stage is a processor in every other respect (kind, factory, lifecycle, snapshot, ``next``)
but is awaited: it meets ``DueDecisions`` (``processors/hold.py``), not ``Processor``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracejudge.collector.clock import Clock
from tracejudge.collector.component import ComponentStopped, Consumer, Lifecycle
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.fanout import FanOut
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.exporters.payload import Payload, Piece
from tracejudge.collector.exporters.sinks import VerdictObserver, VerdictSink
from tracejudge.collector.processors.buffer import DecisionCache, PendingTrace, TraceBuffer
from tracejudge.collector.processors.conversations import ConversationBuffer, conversation_trace_ids
from tracejudge.collector.processors.cost import CostWatch, RuleCost
from tracejudge.collector.processors.decide import Decider, Outcome, payloads_for
from tracejudge.collector.processors.decided import Decided, DecidedTrace
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.modes import ForwardMode
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.shadow import ShadowPairs
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.processors.worker import AdaptiveJudging, BatchJob
from tracejudge.collector.storage import replay
from tracejudge.collector.storage.durability import durability_for
from tracejudge.collector.storage.store import DecidedRow, DiskStore
from tracejudge.collector.telemetry.snapshot import judging_entry
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict

log = logging.getLogger("tracejudge.collector")

__all__ = [
    "DecisionConfig",
    "DecisionContext",
    "DecisionFactory",
    "DecisionStage",
    "Outcome",
    "Payload",
    "Piece",
    "scrubber_for",
]

KIND = "decision"

_CHUNK = 8
"""Traces the worker hands over at once, settled and enqueued to forwarders in one commit."""
_LEAD = 32
"""Chunks the worker may judge ahead of the loop settling them."""
LOOP_JUDGING_LIMIT = 0.005
"""A trace judged slower than this (5 ms) moves judging off the loop (``AdaptiveJudging``)."""
CHEAP_JUDGING = 0.0025
"""Traces judged in under this (2.5 ms of CPU), 64 in a row, move judging onto the loop."""


def scrubber_for(config: CollectorConfig) -> Scrubber:
    """The one scrubber of a collector: verdicts, log lines, backend answers, log records."""
    return Scrubber(config.redact_patterns, drop_quoted=config.drop_content)


@dataclass(frozen=True, slots=True)
class DecisionConfig:
    """The settings the decision stage reads (``CollectorConfig``'s keys of the same names)."""

    max_judge_time: float | None
    """``judge.max_time``: CPU time judging one trace may take (None or 0: off)."""
    max_rule_cost: float | None
    """``judge.max_rule_cost``: the per-run judging budget live runs are checked against."""
    max_judge_lag: float
    """``judge.max_lag``: the judge lag ``/metrics`` reports as the bound (``max_lag_s``)."""
    max_batch_bytes: int
    """``exporters.max_batch_bytes``: the largest payload a decided trace is framed into."""
    max_queue_bytes: int
    """``exporters.max_queue_bytes``: decisions wait while a forward queue has no room."""
    retry_after_hint: float
    """``receivers.retry_after_hint``: the "retry later" a full disk queue gives."""


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """What the decision stage is built with besides its config and next consumer: the
    graph's clock and counters, the judge, the hold it shares with admission and the logs
    intake, the scrubber and forward mode every stage applies, where decided data goes
    (forward queues, verdict sinks, the disk queue) and who is told of each verdict."""

    clock: Clock
    stats: Stats
    judge: Judge
    hold: TraceHold
    """Where admitted traces wait until settled: buffered, held with their conversation, in
    flight, decided (``processors/hold.py``); the decision timer's wake too."""
    scrubber: Scrubber
    mode: ForwardMode
    """Stamp or passthrough, with the content filter: every branch on those flags."""
    queues: Sequence[TargetQueue]
    sinks: Sequence[VerdictSink]
    store: DiskStore | None
    """The disk queue (``--queue-dir``), or None: in memory only."""
    observers: Sequence[VerdictObserver] = ()
    """Given each decided verdict object (the gate's window of recent runs, shadow
    pairing), as the assembly registered them: the stage adds none."""
    shadow: ShadowPairs | None = None
    """Shadow runs waiting for their stable run; when given, one of ``observers``."""
    rules_version: str = ""
    rule_cost: RuleCost | None = None
    """What the rules cost on the synthetic run (measured by the collector; None for a
    judge that is not the engine): ``/metrics`` ``judging.rule_cost_ms``."""


class DecisionStage:
    """Decisions over the hold's due traces, and fan-out of what they decide to the target
    queues and verdict sinks; the decision side admission reads (``DecisionBacklog``)."""

    kind = KIND

    def __init__(
        self, config: DecisionConfig, next: Consumer[Decided], context: DecisionContext
    ) -> None:
        """``next`` is the first processor of the decided edge (``processors/registry.py``:
        the logs join, the graders; ``Discard`` when there is none), handed each settled
        chunk after its payloads are enqueued, so nothing there holds a deterministic
        verdict. ``context.shadow``, when given, must be one of ``context.observers``
        (``ValueError``): it is registered with them."""
        self.config = config
        self.next = next
        self.clock = context.clock
        self.judge = context.judge
        self.stats = context.stats
        self.durability = durability_for(context.store, config.retry_after_hint)
        """In memory only, or the disk queue: every branch on ``--queue-dir``."""
        self.hold = context.hold
        """Where admitted traces wait until settled (``processors/hold.py``)."""
        self.fanout = FanOut(context.queues, context.sinks, self.durability, config.max_queue_bytes)
        """The forward queues and verdict sinks decided data goes to (``exporters/fanout.py``)."""
        self.scrubber = context.scrubber
        self.mode = context.mode
        """Stamp or passthrough, with the content filter: every branch on those flags."""
        self.observers = tuple(context.observers)
        """Given each decided verdict object, as the assembly registered them."""
        self.shadow = context.shadow
        """Shadow runs waiting for their stable run (one of ``observers``): the timer reports
        those that waited too long, shutdown the rest (``collector/processors/shadow.py``)."""
        if self.shadow is not None and not any(o is self.shadow for o in self.observers):
            raise ValueError("shadow pairing is given verdicts as one of the observers")
        self.decider = Decider(
            context.judge,
            self.scrubber,
            self.mode,
            self.durability,
            context.stats,
            config.max_judge_time,
            rules_version=context.rules_version,
        )
        """Decides one trace (on the judging thread); ``rules_version`` lives there."""
        self.state = Lifecycle(KIND)
        self._blocked_need = 0
        """Bytes the next trace to decide needs in every forward queue; while they do not
        fit, decisions wait (traces stay buffered) and receivers push back, so
        ``max_queue_bytes`` holds exactly. 0 when decisions are not blocked."""
        self._blocked_reason = ""
        self.worker = AdaptiveJudging(CHEAP_JUDGING, LOOP_JUDGING_LIMIT)
        """The judging thread (see ``worker``), started with the first batch it judges."""
        self._judging_since = math.inf
        """Deadline of the oldest due trace not yet judged (infinity when none)."""
        self.cost = CostWatch(config.max_rule_cost)
        """Judging time per run against the rule-cost budget."""
        self.rule_cost = context.rule_cost
        """What the rules cost on the synthetic run: ``/metrics`` ``judging.rule_cost_ms``."""

    @property
    def buffer(self) -> TraceBuffer:
        """The tail buffer (the hold's)."""
        return self.hold.buffer

    @property
    def held(self) -> ConversationBuffer | None:
        """Conversations held until they end (``--conversation-wait``; None: off)."""
        return self.hold.held

    @property
    def decided(self) -> DecisionCache:
        """Decisions remembered for late spans (the hold's)."""
        return self.hold.decided

    @property
    def queues(self) -> list[TargetQueue]:
        """The forward queues (the fan-out's)."""
        return self.fanout.queues

    @property
    def sinks(self) -> list[VerdictSink]:
        """The verdict sinks (the fan-out's)."""
        return self.fanout.sinks

    @property
    def wake(self) -> asyncio.Event:
        """Set to run the decision timer now (a trace became due before ``wake_at``)."""
        return self.hold.wake

    @property
    def wake_at(self) -> float:
        """When the decision timer runs next (``arm_timer``)."""
        return self.hold.wake_at

    def _now(self) -> float:
        return self.clock.now()

    def arm_timer(self) -> float:
        """Seconds until the decision timer should run ``tick`` next (``TraceHold.arm_timer``)."""
        return self.hold.arm_timer()

    def judge_lag(self) -> float:
        """Seconds the oldest due trace not yet judged is past its deadline (0 when none)."""
        return max(0.0, self.clock.now() - self._judging_since)

    def _late_payload(self, data: bytes, decision: Decision) -> bytes:
        return self.mode.late(data, decision)

    def restore_decisions(self, rows: Sequence[DecidedRow]) -> None:
        """Load decisions remembered by the disk queue (``storage/replay.py``)."""
        replay.restore_decisions(self.hold.decided, rows)

    def replay_inbox(self, rows: Sequence[tuple[int, bytes]]) -> int:
        """Re-buffer fragments persisted before a restart, quarantining those that cannot
        be replayed (``storage/replay.py``); returns how many were quarantined."""
        return replay.replay_inbox(rows, self.hold.buffer, self._now(), self.durability, self.stats)

    def start(self) -> None:
        """Nothing to start: the judging thread starts with the first batch it judges."""
        self.state.start()

    def shutdown(self) -> None:
        """Stop the judging thread (after the last decision: ``decide_all``); a batch after
        this raises ``ComponentStopped``."""
        if self.state.shutdown():
            self.worker.close()

    def settle(self, trace: PendingTrace, outcome: Outcome) -> list[dict[str, Any]]:
        """Count a decided trace, remember its decision; returns its verdict records."""
        records = self._record(trace, outcome.verdicts)
        self.cost.check(trace.trace_id, outcome.seconds, len(outcome.verdicts))
        self.worker.observe(outcome.seconds, trace.spans)
        if outcome.timed_out:
            self.stats.judge_timeouts += 1
            log.warning(
                "judging trace %s ran out of max_judge_time (%gs); forwarded with verdict "
                "error (%d spans)",
                trace.trace_id.hex(),
                self.config.max_judge_time,
                trace.spans,
            )
        ids = trace.trace_ids()
        for tid in ids:
            self.hold.decided.put(tid, outcome.decision)
        self.stats.traces_decided += len(ids)
        if trace.members:
            self.stats.conversations_decided += 1
        if trace.truncated:
            self.stats.traces_truncated += 1
        return records

    def _record(self, trace: PendingTrace, verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
        """Count the verdicts and build their JSON records (only when a sink wants them)."""
        records: list[dict[str, Any]] = []
        decided_at = round(self.clock.wall(), 3)
        for v in verdicts:
            self.stats.verdict(v)
            for o in self.observers:
                o.add(v, decided_at)
            if not self.fanout.record_sinks:
                continue  # the JSON form is only for the sinks that store it
            rec = v.to_dict()
            rec["decided_at"] = decided_at  # the gate's window (``tracejudge gate --window``)
            if trace.members:
                traces = conversation_trace_ids(trace, v)
                if traces is not None:
                    rec["trace_ids"] = traces  # the conversation's traces, in arrival order
            if trace.truncated:
                rec["note"] = (
                    f"judged at the span limit ({trace.spans} spans); later spans were "
                    "forwarded as late with this verdict"
                )
            records.append(rec)
        return records

    async def decide_batch(
        self, traces: list[PendingTrace], ready: dict[bytes, float], *, limited: bool = True
    ) -> None:
        """Decide traces (oldest deadline first): judged on the worker thread, settled here
        a chunk at a time as their outcomes arrive, while the loop serves the receivers.

        ``limited``: a trace whose payloads do not fit a forward queue within
        ``max_queue_bytes`` is put back in the buffer with the ones after it, and
        decisions wait until the queues have room (``_blocked_need``). Cancelled (the
        collector stopping) or parked, the traces not yet settled go back to the buffer:
        an accepted trace is never left behind in a batch."""
        if not traces:
            return
        self.hold.begin(traces)
        job = BatchJob(self.decider.decide_safely, traces, _CHUNK, _LEAD)
        self.worker.start(job, max(t.spans for t in traces))
        start = 0
        try:
            while start < len(traces):
                self._judging_since = traces[start].deadline  # due() hands them oldest first
                outcomes = await job.next()
                if self._decide_chunk(traces, start, ready, limited, outcomes):
                    break
                start += len(outcomes)
        finally:
            job.stop()
            self._judging_since = math.inf
            self.hold.park(
                traces[start:], self._now()
            )  # settled ones are skipped: none left unless parked

    def _decide_chunk(
        self,
        traces: list[PendingTrace],
        start: int,
        ready: dict[bytes, float],
        limited: bool,
        outcomes: Sequence[Outcome | Exception],
    ) -> bool:
        """Settle ``traces[start:]`` from their judged ``outcomes`` (one per leading trace)
        and enqueue them in one commit; True when a trace did not fit (the caller parks it
        and the rest) or the worker stopped early (an empty ``outcomes``)."""
        payloads: list[Payload] = []
        records: list[dict[str, Any]] = []
        decided: list[bytes] = []
        decisions: list[Decision] = []
        settled: list[DecidedTrace] = []
        size = 0
        parked = False
        if not outcomes:
            return True
        max_batch = self.config.max_batch_bytes
        for n, t in enumerate(traces[start : start + len(outcomes)]):
            if limited and self._blocked(size + max(t.nbytes, t.needed), not size):
                parked = True
            else:
                ready_at = ready.get(t.trace_id, t.deadline)
                judged = outcomes[n]
                outcome = judged if isinstance(judged, Outcome) else self.decider.failed(t, judged)
                items = payloads_for(outcome.pieces, ready_at, max_batch)
                held = self.hold.late(t)
                if held:
                    items.extend(
                        Payload(self._late_payload(f.data, outcome.decision), f.spans, 0)
                        for f in held
                    )
                need = 0
                for p in items:
                    need += len(p.data)
                if limited and self._blocked(size + need, not size):
                    t.needed = need
                    parked = True
            if parked:
                break
            size += need
            ids = self.hold.release(t)
            records.extend(self.settle(t, outcome))
            settled.append(DecidedTrace(t, outcome.verdicts))
            payloads.extend(items)
            if held:
                self.stats.count("late", sum(f.spans for f in held))
            decided.extend(ids)
            for _ in ids:
                decisions.append(outcome.decision)
        self.fanout.commit(payloads, decided, decisions)
        self.fanout.emit(records, self._shown(settled))
        if settled:
            self.next.consume(tuple(settled))
        return parked

    def _shown(self, settled: Sequence[DecidedTrace]) -> list[Verdict]:
        """The chunk's verdicts for the sinks that show them (none without such a sink)."""
        if not self.fanout.line_sinks:
            return []
        return [v for d in settled for v in d.verdicts]

    def _blocked(self, need: int, alone: bool) -> bool:
        """True (and decisions wait) when ``need`` more bytes do not fit a forward queue;
        ``alone``: nothing else is on its way to the queues in this commit."""
        full = self.fanout.room(need, alone)
        if full is None:
            self._blocked_need = 0
            return False
        self._blocked_need = need
        self._blocked_reason = f"forward queue for {full.target.url} full"
        return True

    async def tick(self) -> None:
        """Decide every trace whose deadline has passed (while the forward queues have
        room for them): what the hold's timer does when it wakes (``TraceHold.hand_due``)."""
        await self.hold.hand_due(self)

    def has_room(self) -> bool:
        """False while decisions wait for room in a forward queue (asked again now)."""
        return not (self._blocked_need and self._blocked(self._blocked_need, True))

    async def consume(self, batch: list[PendingTrace]) -> None:
        """Decide the traces the hold's timer found due (its ``DueDecisions``), then report
        shadows that waited too long for their stable run. Awaited: see the module's
        docstring. After ``shutdown`` the traces go back to the hold and ``ComponentStopped``
        is raised: refused, not lost."""
        try:
            self.state.check()
        except ComponentStopped:
            self.hold.begin(batch)  # in flight, then parked: back where the timer took them
            self.hold.park(batch, self._now())
            raise
        if batch:
            await self.decide_batch(batch, {})
        if self.shadow is not None:
            self.shadow.expire(self.clock.wall())

    async def decide_all(self) -> None:
        """Shutdown: decide every pending trace now. With a disk queue the queue limits
        still hold (what does not fit stays in the inbox for the next start); without one,
        everything is decided, since it is delivered now or lost anyway. ``ComponentStopped``
        after ``shutdown``."""
        self.state.check()
        now = self._now()
        traces = self.hold.drain(now)
        await self.decide_batch(
            traces, {t.trace_id: now for t in traces}, limited=self.durability.durable
        )
        if self.shadow is not None:
            self.shadow.close(self.clock.wall())
        left = self.hold.undecided()
        if left:
            log.warning(
                "shutdown: %d traces left undecided in the disk queue (forward queues full)",
                left,
            )

    def deciding(self, trace_id: bytes) -> bool:
        """True while ``trace_id`` is taken from the buffer and not yet decided."""
        return self.hold.deciding(trace_id)

    def decisions_waiting(self) -> bool:
        """True while decisions wait for room in a forward queue."""
        return self._blocked_need > 0

    def waiting_reason(self) -> str:
        """Why decisions wait (the full forward queue); meaningful while they do."""
        return self._blocked_reason

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues."""
        return self.fanout.queue_depth()

    def snapshot(self) -> Mapping[str, Any]:
        """Its ``/metrics`` entries: what waits in the hold, the judging side, whether
        decisions wait for room, and each forward target by URL."""
        return {
            **self.hold.snapshot(),
            "judging": judging_entry(self.config, self.rule_cost, self),
            "decisions_waiting": self.decisions_waiting(),
            "targets": {q.target.url: q.snapshot() for q in self.fanout.queues},
        }


class DecisionFactory:
    """Builds the decision stage over the hold, in front of the decided edge."""

    kind = KIND

    def default_config(self) -> DecisionConfig:
        """The defaults of the keys it reads (``CollectorConfig``'s)."""
        return self.config_for(CollectorConfig())

    def config_for(self, settings: CollectorConfig) -> DecisionConfig:
        """The collector's judging limits, payload and queue sizes and retry hint."""
        return DecisionConfig(
            max_judge_time=settings.max_judge_time,
            max_rule_cost=settings.max_rule_cost,
            max_judge_lag=settings.max_judge_lag,
            max_batch_bytes=settings.max_batch_bytes,
            max_queue_bytes=settings.max_queue_bytes,
            retry_after_hint=settings.retry_after_hint,
        )

    def create(
        self, config: DecisionConfig, next: Consumer[Decided], context: DecisionContext
    ) -> DecisionStage:
        """The stage, handing each settled chunk to ``next``."""
        return DecisionStage(config, next, context)
