"""The logs side of the pipeline: admit log records, hold them with their trace, forward.

``serve`` receives OTLP logs because some instrumentations put prompts and answers in log
records, not on spans (``model/log_events.py``). A record with the trace id of a trace
still being assembled is held with it in the assembler (``TraceBuffer.add_logs``: the same
byte limit and back-pressure as spans, and the trace's deadline moves as it does for a
span), joined to its span when the trace is decided, and forwarded after the decision to
the logs endpoint (``--forward-logs``). Records with no trace id, or whose trace is
already decided (or being decided), are forwarded at once as they are and counted; with
no logs endpoint they are counted as not kept, never dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from tracejudge.collector.codec.logs import split_logs
from tracejudge.collector.codec.otlp import frame, resource_spans_slices
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.consumer import IngestResult, Throttled
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.exporters.logs_forward import (
    LogContentFilter,
    evaluation_records,
    make_logs_target,
)
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict

log = logging.getLogger("tracejudge.collector")

__all__ = ["LogCounts", "LogsIntake", "logs_intake_for"]


@dataclass(slots=True)
class LogCounts:
    """Log records by what happened to them (``/metrics`` ``logs``)."""

    received: int = 0
    rejected: int = 0
    held: int = 0
    """Held with their trace until its decision (then forwarded)."""
    untraced: int = 0
    """Had no trace id: forwarded at once."""
    late: int = 0
    """Their trace was already decided (or being decided): forwarded at once, not joined."""
    not_kept: int = 0
    """No ``--forward-logs``: used for judging (when held), then not kept."""
    evaluation_records: int = 0
    """``gen_ai.evaluation.result`` records made (``--evaluation-logs``)."""


class LogsIntake:
    """The receivers' ``LogsConsumer``, sharing the pipeline's ``hold``; told of each
    decided trace by the logs join on the decided edge (``logs_join.py``)."""

    def __init__(
        self,
        config: CollectorConfig,
        hold: TraceHold,
        stats: Stats,
        queue: TargetQueue | None,
        content: LogContentFilter,
        *,
        evaluation_logs: bool = False,
    ) -> None:
        self.config = config
        self.hold = hold
        """The pipeline's traces: records are held with theirs, and go out at once for a
        trace decided or being decided."""
        self.stats = stats
        """The pipeline's counters (refused requests)."""
        self.queue = queue
        self.content = content
        self.evaluation_logs = evaluation_logs
        self.counts = LogCounts()

    # --- receivers ---------------------------------------------------------------------

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when the assembler or the logs queue is full."""
        cfg = self.config
        if self.hold.buffer.full():
            raise Throttled("trace buffer full", cfg.retry_after_hint)
        if self.queue is not None and self.queue.nbytes >= cfg.max_queue_bytes:
            raise Throttled(f"forward queue for {self.queue.target.url} full", cfg.retry_after_hint)

    def throttled(self) -> None:
        """Count a refused request (the same counter as refused trace requests)."""
        self.stats.requests_throttled += 1

    def ingest_logs(
        self, request: ExportLogsServiceRequest, decode_rejects: Sequence[str] = ()
    ) -> IngestResult:
        """Admit a logs request: hold each trace's records with it, forward the rest."""
        split = split_logs(request, decode_rejects)
        hold = self.hold
        held = []
        direct: list[bytes] = []
        late = 0
        for frag in split.fragments:
            if hold.decided.get(frag.trace_id) is not None or hold.deciding(frag.trace_id):
                direct.append(frame(frag.data))
                late += frag.records
            else:
                held.append(frag)
        if split.orphans:
            direct.append(split.orphans)
        incoming = sum(len(f.data) for f in held)
        buf = hold.buffer
        cfg = self.config
        used = buf.used_bytes()  # held conversations count like buffered traces
        if incoming and used and used + incoming > buf.max_bytes:
            raise Throttled("trace buffer full", cfg.retry_after_hint)
        out = sum(len(d) for d in direct)
        q = self.queue
        if q is not None and q.nbytes and q.nbytes + out > cfg.max_queue_bytes:
            raise Throttled(f"forward queue for {q.target.url} full", cfg.retry_after_hint)
        now = hold.clock.now()
        conversations = hold.held
        for frag in held:
            if conversations is None or not conversations.add_logs(
                frag.trace_id, frag.data, frag.records, now
            ):
                buf.add_logs(frag.trace_id, frag.data, frag.records, now)
        hold.poke()
        self._send([self._filtered_frame(d) for d in direct], late + split.orphan_records)
        c = self.counts
        c.received += split.accepted
        c.rejected += split.rejected
        c.held += sum(f.records for f in held)
        c.late += late
        c.untraced += split.orphan_records
        return IngestResult(split.accepted, split.rejected, split.error_message)

    # --- decisions ---------------------------------------------------------------------

    def decided(self, trace: PendingTrace, verdicts: Sequence[Verdict]) -> None:
        """Forward a decided trace's log records, and its evaluation records when asked."""
        if trace.logs:
            payload = [frame(self.content.apply(d)) for d in trace.logs]
            self._send(payload, trace.log_records)
        if self.evaluation_logs and verdicts:
            data, n = evaluation_records(verdicts)
            if n:
                self.counts.evaluation_records += n
                self._send([data], n)

    def evaluations(self, verdicts: Sequence[Verdict]) -> None:
        """Send outcomes decided after their trace (the graders') as evaluation records."""
        data, n = evaluation_records(verdicts)
        if n:
            self.counts.evaluation_records += n
            self._send([data], n)

    def _filtered_frame(self, framed: bytes) -> bytes:
        """Filter a framed payload (one or more framed ``ResourceLogs``: field 1 of a logs
        request, framed as a trace request's ``ResourceSpans`` are)."""
        if not self.content.active:
            return framed
        parts = resource_spans_slices(framed) or []
        return b"".join(frame(self.content.apply(bytes(part))) for part in parts)

    def _send(self, payloads: Sequence[bytes], records: int) -> None:
        data = b"".join(payloads)
        if not data:
            return
        if self.queue is None:
            self.counts.not_kept += records
            return
        self.queue.put(Item(data, records, 0, None))

    def snapshot(self) -> dict[str, Any]:
        """The ``logs`` entry of ``/metrics``."""
        out: dict[str, Any] = asdict(self.counts)
        q = self.queue
        if q is not None:
            out["target"] = {
                "url": q.target.url,
                "queued_records": q.spans,
                "queued_bytes": q.nbytes,
                "failures": q.failures,
                "last_error": q.last_error,
                **{k: v for k, v in q.stats.spans.items() if k != "received"},
            }
        return out


def logs_intake_for(
    config: CollectorConfig, hold: TraceHold, stats: Stats, scrubber: Scrubber
) -> LogsIntake:
    """The logs side for ``config``, over the pipeline's ``hold``, ``stats`` and
    ``scrubber``: a queue to ``forward_logs`` (in memory: its records are not in the disk
    queue) with its own counters, or none."""
    queue: TargetQueue | None = None
    if config.forward_logs is not None:
        queue = TargetQueue(
            make_logs_target(
                config.forward_logs,
                config.forward_timeout,
                config.target_options(config.forward_logs),
            ),
            stats=Stats(),  # counts log records, apart from the span counters
            store=None,
            max_batch_bytes=config.max_batch_bytes,
            retry_initial=config.retry_initial,
            retry_max=config.retry_max,
            name="logs",
            scrub=scrubber.text,
        )
    content = LogContentFilter(config.drop_content, config.redact_attributes, scrubber)
    return LogsIntake(config, hold, stats, queue, content, evaluation_logs=config.evaluation_logs)
