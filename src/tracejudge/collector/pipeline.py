"""The processor: admit spans, assemble traces, and at decision judge, stamp and enqueue.

Everything here runs on the collector's one event loop except the CPU-bound part of a
decision (decode, build the run, judge, scrub, stamp: ``decide``), which runs on one worker
thread a chunk of traces at a time, so an expensive rules file never stalls the receivers
or ``/healthz`` (the loop only waits for the chunk's outcomes, then counts, remembers and
enqueues them in deadline order). When judging falls more than ``max_judge_lag`` behind
the traces' deadlines, the receivers push back ("retry later") instead of buffering more.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracejudge.collector.clock import Clock, SystemClock
from tracejudge.collector.codec.otlp import (
    RequestLimits,
    SplitResult,
    TraceFragment,
    fragment_info,
    split_body,
    split_by_trace,
)
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.consumer import IngestResult, Throttled
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.exporters.payload import Payload, Piece
from tracejudge.collector.exporters.sinks import VerdictObserver, VerdictSink
from tracejudge.collector.processors.buffer import DecisionCache, PendingTrace, TraceBuffer
from tracejudge.collector.processors.conversations import ConversationBuffer, conversation_trace_ids
from tracejudge.collector.processors.cost import CostWatch
from tracejudge.collector.processors.decide import Decider, Outcome, payloads_for
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.modes import forward_mode
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.shadow import ShadowPairs
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.processors.worker import AdaptiveJudging, BatchJob
from tracejudge.collector.storage.durability import decision_from_json, durability_for
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict

log = logging.getLogger("tracejudge.collector")

__all__ = ["IngestResult", "Outcome", "Payload", "Piece", "Pipeline", "Throttled"]

_CHUNK = 8
"""Traces the worker hands over at once, settled and enqueued to forwarders in one commit."""
_LEAD = 32
"""Chunks the worker may judge ahead of the loop settling them."""
LOOP_JUDGING_LIMIT = 0.005
"""A trace judged slower than this (5 ms) moves judging off the loop (``AdaptiveJudging``)."""
CHEAP_JUDGING = 0.0025
"""Traces judged in under this (2.5 ms of CPU), 64 in a row, move judging onto the loop."""


class DecidedHook(Protocol):
    """Told of each settled trace (``logs_intake.LogsIntake``: forwards the trace's log
    records and, with ``--evaluation-logs``, one evaluation record per rule outcome)."""

    def decided(self, trace: PendingTrace, verdicts: Sequence[Verdict]) -> None:
        """``trace`` was decided with ``verdicts`` (already scrubbed)."""
        ...


class Pipeline:
    """Buffer + decisions + fan-out to the target queues and verdict sinks; the
    receivers' ``TraceConsumer``."""

    def __init__(
        self,
        config: CollectorConfig,
        judge: Judge,
        queues: Sequence[TargetQueue],
        sinks: Sequence[VerdictSink],
        stats: Stats,
        store: DiskStore | None,
        clock: Clock | None = None,
        observers: Sequence[VerdictObserver] = (),
    ) -> None:
        self.config = config
        self.clock: Clock = SystemClock() if clock is None else clock
        self.judge = judge
        self.queues = list(queues)
        self.sinks = list(sinks)
        self.stats = stats
        self.durability = durability_for(store, config.retry_after_hint)
        """In memory only, or the disk queue: every branch on ``--queue-dir``."""
        self.buffer = TraceBuffer(
            wait_after_root=config.decision_wait_after_root,
            wait=config.decision_wait,
            max_traces=config.max_traces,
            max_bytes=config.max_buffered_bytes,
            max_spans_per_trace=config.max_spans_per_trace,
        )
        self.held: ConversationBuffer | None = None
        """Conversations held until they end (``--conversation-wait``; None: off)."""
        if config.conversation_wait > 0:
            self.held = ConversationBuffer(
                self.buffer, config.conversation_wait, config.conversation_max_hold
            )
        self.decided = DecisionCache(config.decided_cache_size, config.decided_cache_bytes)
        self.scrubber = Scrubber(config.redact_patterns, drop_quoted=config.drop_content)
        self.mode = forward_mode(config, self.scrubber)
        """Stamp or passthrough, with the content filter: every branch on those flags."""
        self._inflight: dict[bytes, list[TraceFragment]] = {}
        """Traces taken from the buffer but not yet decided (the loop yields between chunks);
        spans arriving for them are held here and forwarded as late after the decision."""
        self.observers = list(observers)
        """Given each decided verdict object (the gate's window of recent runs)."""
        self.shadow: ShadowPairs | None = None
        """Shadow runs waiting for their stable run (also an observer): the timer reports
        those that waited too long, shutdown the rest (``collector/processors/shadow.py``)."""
        self.decider = Decider(
            judge, self.scrubber, self.mode, self.durability, stats, config.max_judge_time
        )
        """Decides one trace (on the judging thread); ``rules_version`` lives there."""
        self.wake = asyncio.Event()
        """Set to run the decision timer now (a trace became due before ``wake_at``)."""
        self.wake_at = math.inf
        self._blocked_need = 0
        """Bytes the next trace to decide needs in every forward queue; while they do not
        fit, decisions wait (traces stay buffered) and receivers push back, so
        ``max_queue_bytes`` holds exactly. 0 when decisions are not blocked."""
        self._blocked_reason = ""
        self.on_decided: DecidedHook | None = None
        self.graders: DecidedHook | None = None
        """Grader rules (``processors/graders.py``): told of each settled trace after its
        payloads are enqueued, so grading never holds a deterministic verdict."""
        """The logs side (``logs_intake.py``), when ``serve`` receives logs."""
        self.worker = AdaptiveJudging(CHEAP_JUDGING, LOOP_JUDGING_LIMIT)
        """The judging thread (see ``worker``)."""
        self._inflight_bytes = 0
        """Bytes of traces taken from the buffer and not yet settled: they still count
        against ``max_buffered_bytes``, so the limit holds while a batch is judged."""
        self._judging_since = math.inf
        """Deadline of the oldest due trace not yet judged (infinity when none)."""
        self.cost = CostWatch(config.max_rule_cost)
        """Judging time per run against the rule-cost budget."""

    def _now(self) -> float:
        return self.clock.now()

    def arm_timer(self) -> float:
        """Seconds until the decision timer should run ``tick`` next: the earliest
        decision deadline, at most one ``tick`` away and at least 1 ms. Clears ``wake``;
        ingest sets it when a trace becomes due before ``wake_at``, so the timer never
        sleeps a whole tick past a deadline (traces waited a tick plus the batch before
        them when it did)."""
        now = self.clock.now()
        delay = min(self.config.tick, max(0.001, self._next_deadline() - now))
        self.wake.clear()
        self.wake_at = now + delay
        return delay

    def _next_deadline(self) -> float:
        held = self.held
        first = self.buffer.next_deadline()
        return first if held is None else min(first, held.next_deadline())

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when the buffer or a forward queue is full (back-pressure).
        A cheap test before parsing; ``ingest`` checks the request's exact size."""
        if self.buffer.full() or self._over_bytes(0):
            raise Throttled("trace buffer full", self.config.retry_after_hint)
        lag = self.judge_lag()
        if lag > self.config.max_judge_lag:
            raise Throttled(
                f"judging is {lag:.1f}s behind (max_judge_lag {self.config.max_judge_lag:g}s)",
                self.config.retry_after_hint,
            )
        if self._blocked_need:
            raise Throttled(self._blocked_reason, self.config.retry_after_hint)
        for q in self.queues:
            if q.nbytes >= self.config.max_queue_bytes:
                raise Throttled(
                    f"forward queue for {q.target.url} full", self.config.retry_after_hint
                )

    def _room(self, need: int, alone: bool) -> TargetQueue | None:
        """The first forward queue that cannot take ``need`` more bytes within
        ``max_queue_bytes``, or None. An empty queue takes one trace (or one request's
        direct payloads) ``alone`` whatever its size: a trace larger than the whole cap
        must still go out, and then it is the only thing queued."""
        cap = self.config.max_queue_bytes
        for q in self.queues:
            if q.nbytes + need > cap and (q.nbytes or not alone):
                return q
        return None

    def throttled(self) -> None:
        """Count a refused request (refused before parsing, so its spans are not counted)."""
        self.stats.requests_throttled += 1

    def ingest(
        self,
        request: ExportTraceServiceRequest,
        raw: bytes | None = None,
        decode_rejects: Sequence[str] = (),
    ) -> IngestResult:
        """Admit a parsed request: ``admit(split(request, decode_rejects))`` in one call
        on the loop (the receivers split off it). ``raw`` (the protobuf body ``request`` was
        parsed from) saves re-serializing; ``decode_rejects`` are spans the decoder
        already refused (reported, counted)."""
        return self.admit(split_by_trace(request, raw, decode_rejects, self.limits))

    @property
    def limits(self) -> RequestLimits:
        """What one request may bring (``max_traces_per_request``, at most ``max_traces``;
        ``max_spans_per_trace``)."""
        cfg = self.config
        if cfg.max_traces_per_request <= cfg.max_traces:
            return RequestLimits(cfg.max_traces_per_request, cfg.max_spans_per_trace)
        return RequestLimits(cfg.max_traces, cfg.max_spans_per_trace, "max_traces")

    def split(
        self, request: ExportTraceServiceRequest | bytes, decode_rejects: Sequence[str] = ()
    ) -> SplitResult:
        """Validate and split a request (a protobuf body, or a request parsed from
        OTLP/JSON) per trace, within the per-request limits. Reads only the config, so
        the receivers run it on a decoding thread: a large request never holds the loop.
        Raises ``ValueError`` for an undecodable body."""
        if isinstance(request, bytes):
            return split_body(request, self.limits)
        return split_by_trace(request, None, decode_rejects, self.limits)

    def admit(self, split: SplitResult) -> IngestResult:
        """Admit a split request (on the loop): buffer each trace, forward late spans;
        ``Throttled`` when it does not fit, before anything of it is kept."""
        now = self._now()
        fresh = []
        # What goes straight to the forward queues: late spans, and in passthrough mode
        # every fresh fragment too.
        direct: list[Payload] = []
        for frag in split.fragments:
            decision = self.decided.get(frag.trace_id)
            if decision is None:
                fresh.append(frag)
            else:
                direct.append(Payload(self._late_payload(frag.data, decision), frag.spans, 1))
        late = sum(p.spans for p in direct)
        for f in fresh:
            now_out = self.mode.on_arrival(f.data)
            if now_out is not None:
                direct.append(Payload(now_out, f.spans, 1))
        self._admit(fresh, direct)
        rows = self._rows(direct)
        self.durability.accept(fresh, rows)
        for q, item in rows:
            q.put(item)
        for frag in fresh:
            held = self._inflight.get(frag.trace_id)
            if held is not None:
                held.append(frag)  # its trace is being decided: goes out late, once decided
            elif self.held is None or not self.held.add(frag, now):
                self.buffer.add(frag, now)
        if self.buffer.next_deadline() < self.wake_at:
            self.wake.set()
        self.stats.count("late", late)
        self.stats.count("received", split.accepted)
        self.stats.count("rejected", split.rejected)
        for limit, n in split.over_limit.items():
            self.stats.over_limit[limit] = self.stats.over_limit.get(limit, 0) + n
        return IngestResult(split.accepted, split.rejected, split.error_message)

    def _admit(self, fresh: Sequence[TraceFragment], direct: Sequence[Payload]) -> None:
        """Refuse (``Throttled``) a request that would take the buffer or a forward queue
        past its limit, before anything of it is kept: the limits hold exactly."""
        incoming = sum(len(f.data) for f in fresh)
        if incoming and self._over_bytes(incoming):
            raise Throttled("trace buffer full", self.config.retry_after_hint)
        if self._over_traces(fresh):
            raise Throttled("trace buffer full (max_traces)", self.config.retry_after_hint)
        full = self._room(sum(len(p.data) for p in direct), True)
        if full is not None:
            raise Throttled(
                f"forward queue for {full.target.url} full", self.config.retry_after_hint
            )

    def _over_traces(self, fresh: Sequence[TraceFragment]) -> bool:
        """True when the new traces of ``fresh`` would take the buffer past ``max_traces``
        (an empty buffer takes one request: the per-request limit keeps it within)."""
        buffer = self.buffer
        have = len(buffer.traces) + buffer.held_traces
        if not have:
            return False
        known = buffer.traces
        new = {f.trace_id for f in fresh if f.trace_id not in known}
        return have + len(new) > buffer.max_traces

    def _over_bytes(self, incoming: int) -> bool:
        """True when ``incoming`` more bytes would take buffered plus in-judging traces past
        ``max_buffered_bytes`` (an empty collector takes one request of any size)."""
        used = self.buffer.used_bytes() + self._inflight_bytes
        return used > 0 and used + incoming > self.buffer.max_bytes

    def judge_lag(self) -> float:
        """Seconds the oldest due trace not yet judged is past its deadline (0 when none)."""
        return max(0.0, self.clock.now() - self._judging_since)

    def _rows(self, payloads: Sequence[Payload]) -> list[tuple[TargetQueue, Item]]:
        """One queue item per payload per forward queue."""
        return [
            (q, Item(p.data, p.spans, p.traces, p.ready_at)) for q in self.queues for p in payloads
        ]

    def _late_payload(self, data: bytes, decision: Decision) -> bytes:
        return self.mode.late(data, decision)

    def restore_decisions(self, rows: Sequence[tuple[bytes, str, str]]) -> None:
        """Load decisions remembered by the disk queue (oldest first), so spans arriving
        after a restart for a trace judged before it get that verdict, not a second one."""
        for tid, verdict, codes in rows:
            try:
                self.decided.put(tid, decision_from_json(verdict, codes))
            except ValueError:
                log.warning("disk queue: skipping an unreadable decision for %s", tid.hex())

    def replay_inbox(self, rows: Sequence[tuple[int, bytes]]) -> int:
        """Re-buffer fragments persisted before a restart (their timers start now).

        A fragment that cannot be parsed or has no valid trace id (written by an older
        version that acknowledged it unchecked) would fail every decision and every start;
        it is moved to a quarantine file with a log line instead, and start-up goes on.
        Returns how many were quarantined.
        """
        now = self._now()
        quarantined = 0
        for row_id, data in rows:
            frag: TraceFragment | None = None
            try:
                frag = fragment_info(data)
            except Exception as exc:  # DecodeError, depth limits: whatever parsing raises
                reason = f"unparseable fragment ({type(exc).__name__}: {exc})"
            else:
                reason = "" if _valid_trace_id(frag.trace_id) else "invalid trace id"
            if frag is None or reason:
                quarantined += 1
                self._quarantine(row_id, data, reason)
                continue
            if frag.spans:
                self.buffer.add(frag, now)
        return quarantined

    def _quarantine(self, row_id: int, data: bytes, reason: str) -> None:
        try:
            path = self.durability.quarantine_inbox(row_id, data, reason)
        except Exception:
            log.exception("disk queue: could not quarantine inbox row %d (%s)", row_id, reason)
            return
        self.stats.quarantined += 1
        log.error(
            "disk queue: inbox row %d cannot be replayed (%s); moved to %s", row_id, reason, path
        )

    def _enqueue(
        self,
        payloads: list[Payload],
        decided_trace_ids: list[bytes],
        decisions: Sequence[Decision] = (),
    ) -> None:
        """Hand decided payloads to the forward queues, moving their traces from inbox to
        outbox first. When the disk refuses that commit, the payloads travel in memory and
        the inbox rows stay until every target has its copy (a crash before then replays
        and re-judges the traces: duplicates at worst, never a loss)."""
        rows = self._rows(payloads)
        self.durability.commit(rows, decided_trace_ids, decisions)
        for q, item in rows:
            q.put(item)

    def close(self) -> None:
        """Stop the judging thread (after the last decision)."""
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
            self.decided.put(tid, outcome.decision)
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
            if not self.sinks:
                continue  # the JSON form is only for verdict sinks
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
        for t in traces:
            for tid in t.trace_ids():
                self._inflight.setdefault(tid, [])
            self._inflight_bytes += t.nbytes
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
            self._park(traces[start:])  # settled ones are skipped: none left unless parked

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
        graded: list[tuple[PendingTrace, list[Verdict]]] = []
        size = 0
        parked = False
        if not outcomes:
            return True
        for n, t in enumerate(traces[start : start + len(outcomes)]):
            if limited and self._blocked(size + max(t.nbytes, t.needed), not size):
                parked = True
            else:
                ready_at = ready.get(t.trace_id, t.deadline)
                judged = outcomes[n]
                outcome = judged if isinstance(judged, Outcome) else self.decider.failed(t, judged)
                items = payloads_for(outcome.pieces, ready_at, self.config.max_batch_bytes)
                held = [f for tid in t.trace_ids() for f in self._inflight.get(tid, [])]
                items.extend(
                    Payload(self._late_payload(f.data, outcome.decision), f.spans, 0) for f in held
                )
                need = sum(len(p.data) for p in items)
                if limited and self._blocked(size + need, not size):
                    t.needed = need
                    parked = True
            if parked:
                break
            size += need
            ids = t.trace_ids()
            for tid in ids:
                self._inflight.pop(tid, None)
            self._inflight_bytes -= t.nbytes
            records.extend(self.settle(t, outcome))
            if self.on_decided is not None:
                self.on_decided.decided(t, outcome.verdicts)
            graded.append((t, outcome.verdicts))
            payloads.extend(items)
            self.stats.count("late", sum(f.spans for f in held))
            decided.extend(ids)
            decisions.extend([outcome.decision] * len(ids))
        self._enqueue(payloads, decided, decisions)
        for sink in self.sinks:
            sink.emit(records)
        if self.graders is not None:
            for t, verdicts in graded:
                self.graders.decided(t, verdicts)
        return parked

    def _blocked(self, need: int, alone: bool) -> bool:
        """True (and decisions wait) when ``need`` more bytes do not fit a forward queue;
        ``alone``: nothing else is on its way to the queues in this commit."""
        full = self._room(need, alone)
        if full is None:
            self._blocked_need = 0
            return False
        self._blocked_need = need
        self._blocked_reason = f"forward queue for {full.target.url} full"
        return True

    def _park(self, traces: Sequence[PendingTrace]) -> None:
        """Put undecided traces back in the buffer (with spans that arrived meanwhile)."""
        now = self._now()
        for t in traces:
            if t.trace_ids()[0] not in self._inflight:
                continue  # settled already
            self._inflight_bytes -= t.nbytes
            if t.members and self.held is not None:
                self.held.put_back(t)
                for tid in t.members:
                    for frag in self._inflight.pop(tid, []):
                        self.held.add(frag, now)
                continue
            held = self._inflight.pop(t.trace_id, [])
            self.buffer.put_back(t)
            for frag in held:
                self.buffer.add(frag, now)

    async def tick(self) -> None:
        """Decide every trace whose deadline has passed (while the forward queues have
        room for them)."""
        if self._blocked_need and self._blocked(self._blocked_need, True):
            return  # still no room: leave the due traces in the buffer, untouched
        now = self._now()
        due = self.buffer.due(now)
        held = self.held
        if held is not None:
            # Traces of a conversation join it (moving its deadline) before its own
            # deadline is read, so a conversation is never judged without a turn that
            # finished in the same tick.
            due = held.take(due, now) if due else due
            due.extend(held.due(now))
        if due:
            await self.decide_batch(due, {})
        if self.shadow is not None:
            self.shadow.expire(self.clock.wall())

    async def decide_all(self) -> None:
        """Shutdown: decide every pending trace now. With a disk queue the queue limits
        still hold (what does not fit stays in the inbox for the next start); without one,
        everything is decided, since it is delivered now or lost anyway."""
        traces = self.buffer.drain()
        now = self._now()
        held = self.held
        if held is not None:  # held conversations are judged now, with their last turns
            traces = held.take(traces, now)
            traces.extend(held.drain())
        await self.decide_batch(
            traces, {t.trace_id: now for t in traces}, limited=self.durability.durable
        )
        if self.shadow is not None:
            self.shadow.close(self.clock.wall())
        left = len(self.buffer.traces) + self.buffer.held_traces
        if left:
            log.warning(
                "shutdown: %d traces left undecided in the disk queue (forward queues full)",
                left,
            )

    def deciding(self, trace_id: bytes) -> bool:
        """True while ``trace_id`` is taken from the buffer and not yet decided."""
        return trace_id in self._inflight

    def decisions_waiting(self) -> bool:
        """True while decisions wait for room in a forward queue."""
        return self._blocked_need > 0

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues."""
        return sum(q.spans for q in self.queues)


def _valid_trace_id(tid: bytes) -> bool:
    return len(tid) == 16 and tid != bytes(16)
