"""Where an admitted trace waits until it is settled, and the decision timer.

The processor after admission (issue 20): it ``consume``s each request's admitted
fragments (an ``Admitted`` batch), and its timer, on the ``Clock``, hands the traces whose
deadline has passed on to the decision side (``run_timer``, ``hand_due``). A fresh fragment
goes to one of three places (``add``): the spans held for a trace being decided (forwarded
as late once it is), the conversation it belongs to (``--conversation-wait``,
``conversations.py``), or the tail buffer (``buffer.py``). The batch scheduler
(``decision.py``) marks the traces handed to it in flight (``begin``), and either settles
them (``release``) or puts them back (``park``); at shutdown it takes the rest (``drain``).
Decided traces are remembered (``decided``), so later spans get their verdict.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Sequence
from typing import Protocol

from tracejudge.collector.clock import Clock
from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.component import Lifecycle
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.processors.buffer import DecisionCache, PendingTrace, TraceBuffer
from tracejudge.collector.processors.conversations import ConversationBuffer
from tracejudge.collector.processors.stamp import Decision

log = logging.getLogger("tracejudge.collector")

__all__ = ["Admitted", "DueDecisions", "TraceHold"]

KIND = "hold"


Admitted = tuple[tuple[TraceFragment, ...], float]
"""The batch of the admitted edge: one request's fresh fragments (none of a decided trace),
persisted already, and when they were admitted (``now``, read once per request). A plain
tuple, as ``Decided`` is: built once per request on the receivers' path."""


class DueDecisions(Protocol):
    """The decision side, as the hold's timer hands it due traces (the decision stage)."""

    def has_room(self) -> bool:
        """False while decisions wait for room in a forward queue (due traces stay)."""
        ...

    async def consume(self, batch: list[PendingTrace]) -> None:
        """Decide the traces the timer found due (none: only its periodic work); awaited,
        so a tick never overtakes the one before."""
        ...


class TraceHold:
    """The collector's traces from admission to settling: buffered, held with their
    conversation, in flight (being decided), decided."""

    kind = KIND

    def __init__(self, config: CollectorConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.state = Lifecycle(KIND)
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
        self._inflight: dict[bytes, list[TraceFragment]] = {}
        """Traces taken from the buffer but not yet decided (the loop yields between chunks);
        spans arriving for them are held here and forwarded as late after the decision."""
        self.inflight_bytes = 0
        """Bytes of traces taken from the buffer and not yet settled: they still count
        against ``max_buffered_bytes``, so the limit holds while a batch is judged."""
        self.wake = asyncio.Event()
        """Set to run the decision timer now (a trace became due before ``wake_at``)."""
        self.wake_at = math.inf

    def arm_timer(self) -> float:
        """Seconds until the decision timer should run ``tick`` next: the earliest
        decision deadline, at most one ``tick`` away and at least 1 ms. Clears ``wake``;
        ingest sets it when a trace becomes due before ``wake_at``, so the timer never
        sleeps a whole tick past a deadline (traces waited a tick plus the batch before
        them when it did)."""
        now = self.clock.now()
        delay = min(self.config.tick, max(0.001, self.next_deadline() - now))
        self.wake.clear()
        self.wake_at = now + delay
        return delay

    async def hand_due(self, decisions: DueDecisions) -> None:
        """Hand every trace and conversation whose deadline has passed to ``decisions``
        (while it has room: else they stay here, untouched)."""
        if decisions.has_room():
            await decisions.consume(self.due(self.clock.now()))

    async def run_timer(self, decisions: DueDecisions, stopping: Callable[[], bool]) -> None:
        """The decision timer, until ``stopping()``: sleep on the clock until the earliest
        deadline (or ``wake``), then ``hand_due``. A failed hand-over is logged and the
        timer goes on."""
        while not stopping():
            # Wake at the earliest decision deadline, or sooner when a consumed fragment
            # makes a trace due before that (``poke``). The deadline arm_timer read, not a
            # delay from a second reading: a clock moved in between (a test's ManualClock,
            # from its thread) must not push it on.
            self.arm_timer()
            timer = self.clock.call_at(self.wake_at, self.wake.set)
            try:
                await self.wake.wait()
            finally:
                timer.cancel()
            if stopping():
                return
            try:
                await self.hand_due(decisions)
            except Exception:
                log.exception("decision tick failed")

    def next_deadline(self) -> float:
        """The earliest decision deadline, buffered or held (infinity when none)."""
        held = self.held
        first = self.buffer.next_deadline()
        return first if held is None else min(first, held.next_deadline())

    def poke(self) -> None:
        """Wake the timer now when a buffered trace became due before ``wake_at``."""
        if self.buffer.next_deadline() < self.wake_at:
            self.wake.set()

    def start(self) -> None:
        """Nothing to start: the collector runs the timer (``run_timer``) on its loop."""
        self.state.start()

    def shutdown(self) -> None:
        """After the last decision (what is left stays in the disk queue's inbox)."""
        self.state.shutdown()

    def consume(self, batch: Admitted) -> None:
        """Take one request's admitted fragments (``add``), then wake the timer if one of
        them made a trace due before ``wake_at`` (``poke``); ``ComponentStopped`` after
        ``shutdown``."""
        self.state.check()
        fragments, at = batch
        for frag in fragments:
            self.add(frag, at)
        self.poke()

    def add(self, frag: TraceFragment, now: float) -> None:
        """Take an admitted fragment: held for its trace being decided, held with its
        conversation, or buffered."""
        held = self._inflight.get(frag.trace_id)
        if held is not None:
            held.append(frag)  # its trace is being decided: goes out late, once decided
        elif self.held is None or not self.held.add(frag, now):
            self.buffer.add(frag, now)

    def full(self) -> bool:
        """True when the buffer takes nothing more: ``max_traces`` traces, or
        ``max_buffered_bytes`` reached (with the traces being judged)."""
        return self.buffer.full() or self.over_bytes(0)

    def decision(self, trace_id: bytes) -> Decision | None:
        """The decision remembered for ``trace_id`` (None: not decided, or forgotten)."""
        return self.decided.get(trace_id)

    def over_traces(self, fresh: Sequence[TraceFragment]) -> bool:
        """True when the new traces of ``fresh`` would take the buffer past ``max_traces``
        (an empty buffer takes one request: the per-request limit keeps it within)."""
        buffer = self.buffer
        have = len(buffer.traces) + buffer.held_traces
        if not have:
            return False
        known = buffer.traces
        new = {f.trace_id for f in fresh if f.trace_id not in known}
        return have + len(new) > buffer.max_traces

    def over_bytes(self, incoming: int) -> bool:
        """True when ``incoming`` more bytes would take buffered plus in-judging traces past
        ``max_buffered_bytes`` (an empty collector takes one request of any size)."""
        used = self.buffer.used_bytes() + self.inflight_bytes
        return used > 0 and used + incoming > self.buffer.max_bytes

    def due(self, now: float) -> list[PendingTrace]:
        """Take every trace and conversation whose deadline has passed."""
        due = self.buffer.due(now)
        held = self.held
        if held is not None:
            # Traces of a conversation join it (moving its deadline) before its own
            # deadline is read, so a conversation is never judged without a turn that
            # finished in the same tick.
            due = held.take(due, now) if due else due
            due.extend(held.due(now))
        return due

    def drain(self, now: float) -> list[PendingTrace]:
        """Shutdown: take every pending trace, held conversations with their last turns."""
        traces = self.buffer.drain()
        held = self.held
        if held is not None:  # held conversations are judged now, with their last turns
            traces = held.take(traces, now)
            traces.extend(held.drain())
        return traces

    def undecided(self) -> int:
        """Traces left buffered or held (after a shutdown that could not decide them)."""
        return len(self.buffer.traces) + self.buffer.held_traces

    def begin(self, traces: Sequence[PendingTrace]) -> None:
        """Mark ``traces`` in flight: taken from the buffer, being decided."""
        for t in traces:
            for tid in t.trace_ids():
                self._inflight.setdefault(tid, [])
            self.inflight_bytes += t.nbytes

    def late(self, trace: PendingTrace) -> list[TraceFragment]:
        """Spans that arrived for ``trace`` while it was being decided."""
        return [f for tid in trace.trace_ids() for f in self._inflight.get(tid, [])]

    def release(self, trace: PendingTrace) -> list[bytes]:
        """``trace`` is settled: no longer in flight. Returns the trace ids it decided."""
        ids = trace.trace_ids()
        for tid in ids:
            self._inflight.pop(tid, None)
        self.inflight_bytes -= trace.nbytes
        return ids

    def park(self, traces: Sequence[PendingTrace], now: float) -> None:
        """Put undecided traces back in the buffer (with spans that arrived meanwhile)."""
        for t in traces:
            if t.trace_ids()[0] not in self._inflight:
                continue  # settled already
            self.inflight_bytes -= t.nbytes
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

    def deciding(self, trace_id: bytes) -> bool:
        """True while ``trace_id`` is taken from the buffer and not yet decided."""
        return trace_id in self._inflight

    def snapshot(self) -> dict[str, int]:
        """Its ``/metrics`` entries: buffered and held traces, remembered decisions."""
        buffer = self.buffer
        return {
            "buffered_traces": len(buffer.traces) + buffer.held_traces,
            "buffered_spans": buffer.spans + buffer.held_spans,
            "buffered_bytes": buffer.used_bytes(),
            "held_conversations": len(self.held) if self.held is not None else 0,
            "held_traces": buffer.held_traces,
            "decided_cache": len(self.decided),
            "decided_cache_bytes": self.decided.nbytes,
        }
