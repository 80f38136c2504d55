"""Fan-out: where decided data leaves the decision stage.

Every payload goes to every forward queue (one item per payload per queue), through the
``Durability`` that persists it first (``--queue-dir``), and every verdict record to every
verdict sink. ``room`` says whether a commit fits ``max_queue_bytes``; the decision stage decides
what to do when it does not (push back, or hold decisions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.exporters.payload import Payload
from tracejudge.collector.exporters.sinks import VerdictLineSink, VerdictSink
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.storage.durability import Durability, Row
from tracejudge.engine.verdict import Verdict

__all__ = ["FanOut"]


class FanOut:
    """The forward queues and verdict sinks, with the byte cap the queues share."""

    def __init__(
        self,
        queues: Sequence[TargetQueue],
        sinks: Sequence[VerdictSink],
        durability: Durability,
        max_queue_bytes: int,
    ) -> None:
        self.queues = list(queues)
        self.sinks = list(sinks)
        self.line_sinks = [s for s in self.sinks if isinstance(s, VerdictLineSink)]
        """The sinks that show verdicts (``emit_verdicts``): no JSON record is built for them."""
        self.record_sinks = [s for s in self.sinks if not isinstance(s, VerdictLineSink)]
        """The sinks that take the verdicts' JSON records (built only when there is one)."""
        self.durability = durability
        self.max_queue_bytes = max_queue_bytes

    def rows(self, payloads: Sequence[Payload]) -> list[Row]:
        """One queue item per payload per forward queue."""
        return [
            (q, Item(p.data, p.spans, p.traces, p.ready_at)) for q in self.queues for p in payloads
        ]

    def accept(self, fresh: Sequence[TraceFragment], direct: Sequence[Payload]) -> None:
        """Persist a request's fresh fragments with the payloads it sends straight on (late
        spans, passthrough), then queue those payloads."""
        rows = self.rows(direct)
        self.durability.accept(fresh, rows)
        for q, item in rows:
            q.put(item)

    def commit(
        self,
        payloads: list[Payload],
        decided_trace_ids: list[bytes],
        decisions: Sequence[Decision] = (),
    ) -> None:
        """Hand decided payloads to the forward queues, moving their traces from inbox to
        outbox first. When the disk refuses that commit, the payloads travel in memory and
        the inbox rows stay until every target has its copy (a crash before then replays
        and re-judges the traces: duplicates at worst, never a loss)."""
        rows = self.rows(payloads)
        self.durability.commit(rows, decided_trace_ids, decisions)
        for q, item in rows:
            q.put(item)

    def emit(self, records: Sequence[dict[str, Any]], verdicts: Sequence[Verdict] = ()) -> None:
        """Send a chunk's verdict records to the sinks that store them, and its verdicts
        to those that show them."""
        for sink in self.record_sinks:
            sink.emit(records)
        if verdicts:
            for line_sink in self.line_sinks:
                line_sink.emit_verdicts(verdicts)

    def room(self, need: int, alone: bool) -> TargetQueue | None:
        """The first forward queue that cannot take ``need`` more bytes within
        ``max_queue_bytes``, or None. An empty queue takes one trace (or one request's
        direct payloads) ``alone`` whatever its size: a trace larger than the whole cap
        must still go out, and then it is the only thing queued."""
        cap = self.max_queue_bytes
        for q in self.queues:
            if q.nbytes + need > cap and (q.nbytes or not alone):
                return q
        return None

    def at_cap(self) -> TargetQueue | None:
        """The first forward queue already holding ``max_queue_bytes``, or None."""
        for q in self.queues:
            if q.nbytes >= self.max_queue_bytes:
                return q
        return None

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues."""
        return sum(q.spans for q in self.queues)
