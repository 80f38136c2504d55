"""Admission: what the receivers hand a request to, and what refuses it when full.

Moved from ``pipeline.py`` unchanged (issue 20); reshaped into a processor next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracejudge.collector.clock import Clock
from tracejudge.collector.codec.otlp import (
    RequestLimits,
    SplitResult,
    TraceFragment,
    split_body,
    split_by_trace,
)
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.consumer import IngestResult, Throttled
from tracejudge.collector.exporters.fanout import FanOut
from tracejudge.collector.exporters.payload import Payload
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.modes import ForwardMode
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.telemetry.stats import Stats

__all__ = ["Admission", "DecisionBacklog"]


class DecisionBacklog(Protocol):
    """The decision side, as admission reads it for back-pressure."""

    def judge_lag(self) -> float: ...

    def decisions_waiting(self) -> bool: ...

    def waiting_reason(self) -> str: ...


class Admission:
    """The receivers' ``TraceConsumer``."""

    def __init__(
        self,
        config: CollectorConfig,
        clock: Clock,
        stats: Stats,
        hold: TraceHold,
        fanout: FanOut,
        mode: ForwardMode,
        backlog: DecisionBacklog,
    ) -> None:
        self.config = config
        self.clock = clock
        self.stats = stats
        self.hold = hold
        self.fanout = fanout
        self.mode = mode
        self.backlog = backlog

    def _now(self) -> float:
        return self.clock.now()

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when the buffer or a forward queue is full (back-pressure).
        A cheap test before parsing; ``ingest`` checks the request's exact size."""
        if self.hold.buffer.full() or self.hold.over_bytes(0):
            raise Throttled("trace buffer full", self.config.retry_after_hint)
        lag = self.backlog.judge_lag()
        if lag > self.config.max_judge_lag:
            raise Throttled(
                f"judging is {lag:.1f}s behind (max_judge_lag {self.config.max_judge_lag:g}s)",
                self.config.retry_after_hint,
            )
        if self.backlog.decisions_waiting():
            raise Throttled(self.backlog.waiting_reason(), self.config.retry_after_hint)
        full = self.fanout.at_cap()
        if full is not None:
            raise Throttled(
                f"forward queue for {full.target.url} full", self.config.retry_after_hint
            )

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
            decision = self.hold.decided.get(frag.trace_id)
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
        self.fanout.accept(fresh, direct)
        for frag in fresh:
            self.hold.add(frag, now)
        self.hold.poke()
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
        if incoming and self.hold.over_bytes(incoming):
            raise Throttled("trace buffer full", self.config.retry_after_hint)
        if self.hold.over_traces(fresh):
            raise Throttled("trace buffer full (max_traces)", self.config.retry_after_hint)
        full = self.fanout.room(sum(len(p.data) for p in direct), True)
        if full is not None:
            raise Throttled(
                f"forward queue for {full.target.url} full", self.config.retry_after_hint
            )

    def _late_payload(self, data: bytes, decision: Decision) -> bytes:
        return self.mode.late(data, decision)
