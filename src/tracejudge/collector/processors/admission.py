"""Admission: the stage the receivers hand their requests to (their ``TraceConsumer``).

The first processor of the graph (issue 20). The receivers ask it for room before parsing
(``check_capacity``), have it split a request by trace on a decoding thread (``split``,
within the per-request limits), and hand it the split on the loop (``admit``, its
``consume``). It refuses a request (``Throttled``: "retry later") before anything of it is
kept, so the limits hold exactly: the hold's ``max_buffered_bytes`` and ``max_traces``, each
forward queue's ``max_queue_bytes``, and the decision side's back-pressure (judging more than
``max_judge_lag`` behind the deadlines, or decisions waiting for room in a forward queue).
An admitted request goes two ways: spans of traces already decided (late spans), and in
passthrough mode every fresh fragment, go straight to the forward queues through the
fan-out; the fresh fragments go to the next consumer as one ``Admitted`` batch (the hold,
``processors/hold.py``), after the fan-out has persisted them (``--queue-dir``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracejudge.collector.clock import Clock
from tracejudge.collector.codec.otlp import (
    RequestLimits,
    SplitResult,
    TraceFragment,
    split_body,
    split_by_trace,
)
from tracejudge.collector.component import Consumer, Lifecycle
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.consumer import IngestResult, Throttled
from tracejudge.collector.exporters.fanout import FanOut
from tracejudge.collector.exporters.payload import Payload
from tracejudge.collector.processors.hold import Admitted
from tracejudge.collector.processors.modes import ForwardMode
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.telemetry.stats import Stats

__all__ = [
    "Admission",
    "AdmissionConfig",
    "AdmissionContext",
    "AdmissionFactory",
    "DecisionBacklog",
    "HoldRoom",
]

KIND = "admission"


class DecisionBacklog(Protocol):
    """The decision side, as admission reads it for back-pressure (the decision stage)."""

    def judge_lag(self) -> float:
        """Seconds the oldest due trace not yet judged is past its deadline."""
        ...

    def decisions_waiting(self) -> bool:
        """True while decisions wait for room in a forward queue."""
        ...

    def waiting_reason(self) -> str:
        """Why they wait (the full forward queue), while they do."""
        ...


class HoldRoom(Protocol):
    """Where admitted traces wait, as admission asks it for room and decisions (the
    ``TraceHold``)."""

    def full(self) -> bool:
        """True when the hold takes nothing more (``max_traces``, ``max_buffered_bytes``)."""
        ...

    def over_bytes(self, incoming: int) -> bool:
        """True when ``incoming`` more bytes would take it past ``max_buffered_bytes``."""
        ...

    def over_traces(self, fresh: Sequence[TraceFragment]) -> bool:
        """True when the new traces of ``fresh`` would take it past ``max_traces``."""
        ...

    def decision(self, trace_id: bytes) -> Decision | None:
        """The decision remembered for ``trace_id`` (None: not decided)."""
        ...


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """The settings admission reads (``CollectorConfig``'s keys of the same names)."""

    max_traces: int
    """``buffer.max_traces``: a request brings at most this many traces."""
    max_traces_per_request: int
    """``receivers.max_traces_per_request``."""
    max_spans_per_trace: int
    """``buffer.max_spans_per_trace``: spans of one trace one request brings."""
    retry_after_hint: float
    """``receivers.retry_after_hint``: the "retry later" a refusal gives."""
    max_judge_lag: float
    """Judging further behind the deadlines than this refuses requests."""

    @property
    def limits(self) -> RequestLimits:
        """What one request may bring (``max_traces_per_request``, at most ``max_traces``;
        ``max_spans_per_trace``)."""
        if self.max_traces_per_request <= self.max_traces:
            return RequestLimits(self.max_traces_per_request, self.max_spans_per_trace)
        return RequestLimits(self.max_traces, self.max_spans_per_trace, "max_traces")


@dataclass(frozen=True, slots=True)
class AdmissionContext:
    """What admission is built with besides its config and next consumer: the graph's
    clock and counters, the hold's room, the fan-out and forward mode of direct payloads,
    and the decision side's backlog."""

    clock: Clock
    stats: Stats
    room: HoldRoom
    fanout: FanOut
    """Where late spans (and passthrough's fresh fragments) go, persisted with the fresh
    fragments first (``FanOut.accept``)."""
    mode: ForwardMode
    """Stamp or passthrough: what goes out on arrival, what late spans carry."""
    backlog: DecisionBacklog


class Admission:
    """The receivers' ``TraceConsumer`` and the graph's first processor: refuses what does
    not fit, sends late spans on, hands fresh fragments to ``next``."""

    kind = KIND

    def __init__(
        self, config: AdmissionConfig, next: Consumer[Admitted], context: AdmissionContext
    ) -> None:
        self.config = config
        self.limits = config.limits
        """What one request may bring (``split`` reads only this, on a decoding thread)."""
        self.next = next
        self.clock = context.clock
        self.stats = context.stats
        self.room = context.room
        self.fanout = context.fanout
        self.mode = context.mode
        self.backlog = context.backlog
        self.state = Lifecycle(KIND)
        self.over_limit: dict[str, int] = {}
        """Spans refused (partial success) by a per-request limit, by the limit's name."""

    def start(self) -> None:
        """Nothing to start: requests come once the receivers listen."""
        self.state.start()

    def shutdown(self) -> None:
        """After the receivers stop: a request admitted now would be left behind."""
        self.state.shutdown()

    def snapshot(self) -> Mapping[str, Any]:
        """Its ``/metrics`` entry: spans refused by the per-request limits, by limit."""
        return {"spans_over_request_limits": dict(self.over_limit)}

    def consume(self, batch: SplitResult) -> None:
        """``admit`` (the processor contract's name for it)."""
        self.admit(batch)

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when the hold or a forward queue is full, or the decision
        side is behind (back-pressure). A cheap test before parsing; ``admit`` checks the
        request's exact size."""
        retry = self.config.retry_after_hint
        if self.room.full():
            raise Throttled("trace buffer full", retry)
        lag = self.backlog.judge_lag()
        if lag > self.config.max_judge_lag:
            raise Throttled(
                f"judging is {lag:.1f}s behind (max_judge_lag {self.config.max_judge_lag:g}s)",
                retry,
            )
        if self.backlog.decisions_waiting():
            raise Throttled(self.backlog.waiting_reason(), retry)
        full = self.fanout.at_cap()
        if full is not None:
            raise Throttled(f"forward queue for {full.target.url} full", retry)

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
        """Admit a split request (on the loop): fresh fragments to ``next``, late spans to
        the forward queues; ``Throttled`` when it does not fit, before anything of it is
        kept (``ComponentStopped`` after ``shutdown``)."""
        self.state.check()
        now = self.clock.now()
        fresh = []
        # What goes straight to the forward queues: late spans, and in passthrough mode
        # every fresh fragment too.
        direct: list[Payload] = []
        decided = self.room.decision
        for frag in split.fragments:
            decision = decided(frag.trace_id)
            if decision is None:
                fresh.append(frag)
            else:
                direct.append(Payload(self.mode.late(frag.data, decision), frag.spans, 1))
        late = sum(p.spans for p in direct)
        for f in fresh:
            now_out = self.mode.on_arrival(f.data)
            if now_out is not None:
                direct.append(Payload(now_out, f.spans, 1))
        self._refuse_over_limits(fresh, direct)
        self.fanout.accept(fresh, direct)
        self.next.consume((tuple(fresh), now))
        self.stats.count("late", late)
        self.stats.count("received", split.accepted)
        self.stats.count("rejected", split.rejected)
        for limit, n in split.over_limit.items():
            self.over_limit[limit] = self.over_limit.get(limit, 0) + n
        return IngestResult(split.accepted, split.rejected, split.error_message)

    def _refuse_over_limits(
        self, fresh: Sequence[TraceFragment], direct: Sequence[Payload]
    ) -> None:
        """Refuse (``Throttled``) a request that would take the hold or a forward queue
        past its limit, before anything of it is kept: the limits hold exactly."""
        retry = self.config.retry_after_hint
        incoming = sum(len(f.data) for f in fresh)
        if incoming and self.room.over_bytes(incoming):
            raise Throttled("trace buffer full", retry)
        if self.room.over_traces(fresh):
            raise Throttled("trace buffer full (max_traces)", retry)
        full = self.fanout.room(sum(len(p.data) for p in direct), True)
        if full is not None:
            raise Throttled(f"forward queue for {full.target.url} full", retry)


class AdmissionFactory:
    """Builds the admission stage in front of the hold."""

    kind = KIND

    def default_config(self) -> AdmissionConfig:
        """The defaults of the keys it reads (``CollectorConfig``'s)."""
        return self.config_for(CollectorConfig())

    def config_for(self, settings: CollectorConfig) -> AdmissionConfig:
        """The collector's request limits, retry hint and judge-lag bound."""
        return AdmissionConfig(
            max_traces=settings.max_traces,
            max_traces_per_request=settings.max_traces_per_request,
            max_spans_per_trace=settings.max_spans_per_trace,
            retry_after_hint=settings.retry_after_hint,
            max_judge_lag=settings.max_judge_lag,
        )

    def create(
        self, config: AdmissionConfig, next: Consumer[Admitted], context: AdmissionContext
    ) -> Admission:
        """The stage, handing admitted fresh fragments to ``next``."""
        return Admission(config, next, context)
