"""Shared helpers for the collector tests: an event loop thread, a real OTLP sink backend,
a stand-in judge, and span builders.

The sink backend is a real grpc.aio + aiohttp OTLP receiver that records what reaches it; it
stands in for Jaeger in the fast tests (the e2e tests use real Jaeger).
"""

from __future__ import annotations

import asyncio
import http.client
import os
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
import grpc.aio
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

from tests.support.guards import IO_S, WAIT_S, eventually
from tests.support.guards import wait_for as wait_for  # the one poll loop, re-exported
from tests.support.ports import ReservedPort
from tracejudge import semconv as sc
from tracejudge.collector import Collector, CollectorConfig
from tracejudge.collector.clock import Clock, ManualClock
from tracejudge.collector.codec.otlp import status_bytes
from tracejudge.collector.component import Consumer, Discard
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.exporters.sinks import VerdictObserver, VerdictSink
from tracejudge.collector.processors.decided import Decided
from tracejudge.collector.processors.decision import (
    DecisionContext,
    DecisionFactory,
    DecisionStage,
    scrubber_for,
)
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.modes import forward_mode
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.shadow import ShadowPairs
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Finding, RuleOutcome, Verdict
from tracejudge.model.spans import STATUS_ERROR, SpanRecord

T = TypeVar("T")


class LoopThread:
    """An asyncio loop in a background thread; the test thread stays synchronous."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = WAIT_S) -> T:
        """Run a coroutine on the loop and wait for its result (``timeout``: a deadlock
        guard, tests/support/guards.py)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and join the thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(WAIT_S)


class StandInJudge:
    """A stand-in judge for pipeline tests that must not depend on rule semantics.

    Each root span is a run; the run fails when any span has status ERROR, citing that span
    with code ``F-TEST-ERROR``. The real engine is exercised in test_collector_engine.py and
    the e2e tests.
    """

    def __init__(self) -> None:
        self.calls: list[int] = []

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        """One verdict per root span."""
        self.calls.append(len(spans))
        out = []
        errors = [s for s in spans if s.status_code == STATUS_ERROR]
        for root in (s for s in spans if s.parent_span_id is None):
            findings = [
                Finding("F-TEST-ERROR", "fail", "outcome", "no-errors", (e.span_id,), "span failed")
                for e in errors
            ]
            out.append(
                Verdict(
                    trace_id=root.trace_id,
                    root_span_id=root.span_id,
                    verdict="fail" if findings else "pass",
                    layers={
                        "outcome": "fail" if findings else "pass",
                        "trajectory": "pass",
                        "policy": "not_applicable",
                        "budget": "pass",
                    },
                    agent=str(root.attributes.get(sc.GEN_AI_AGENT_NAME, "")) or None,
                    primary=findings[0] if findings else None,
                    findings=findings,
                    outcomes=[
                        RuleOutcome(
                            "no-errors",
                            "outcome",
                            "fail" if findings else "pass",
                            errors[0].span_id if errors else root.span_id,
                            0.0 if findings else 1.0,
                            "a span failed" if findings else "",
                        )
                    ],
                    metrics={"spans": float(len(spans))},
                    rules_version="test-1",
                )
            )
        return out


@dataclass
class Sink:
    """A real OTLP receiver (gRPC + HTTP) that records every request it accepts."""

    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    fail_http: list[int] = field(default_factory=list)
    """Status codes to answer (one per request) before accepting."""
    fail_body: bytes = b""
    """Body of those answers (a backend's error text may quote what it was sent)."""
    fail_grpc: list[grpc.StatusCode] = field(default_factory=list)
    fail_details: str = "test failure"
    """The status message of those answers (a backend's text may quote secrets too)."""
    retry_after: str = "0"
    """The Retry-After header of the ``fail_http`` answers."""
    grpc_retry_delay: float | None = None
    """When set, the ``fail_grpc`` answers carry ``RetryInfo`` with this delay (seconds)."""
    attempt_times: list[float] = field(default_factory=list)
    """``time.monotonic()`` of every request, accepted or not."""
    delay: float = 0.0
    """Seconds each accepted request takes (a slow backend, on the sink's own loop)."""
    hold: threading.Event | None = None
    """When set, each accepted request waits until the event is set (a stalled backend
    the test releases: slowness without depending on this machine's speed)."""
    grpc_port: int = 0
    http_port: int = 0
    attempts: int = 0
    _server: Any = None
    _runner: web.AppRunner | None = None

    async def start(self, grpc_port: int = 0, http_port: int | ReservedPort = 0) -> None:
        """Bind both servers (0 = a port the kernel picks; read ``grpc_port`` and
        ``http_port`` after). A ``ReservedPort`` for HTTP (a backend that was down, back on
        its address) is released immediately before the HTTP server binds it."""

        async def export(data: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            self.attempts += 1
            self.attempt_times.append(time.monotonic())
            if self.fail_grpc:
                code = self.fail_grpc.pop(0)
                trailing: tuple[tuple[str, bytes], ...] = ()
                if self.grpc_retry_delay is not None:
                    number = int(code.value[0])
                    details = status_bytes(number, self.fail_details, self.grpc_retry_delay)
                    trailing = (("grpc-status-details-bin", details),)
                await context.abort(code, self.fail_details, trailing)
            await self._slow()
            self.requests.append(ExportTraceServiceRequest.FromString(data))
            out: bytes = ExportTraceServiceResponse().SerializeToString()
            return out

        self._server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},
        )
        self._server.add_generic_rpc_handlers((handler,))
        self.grpc_port = self._server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await self._server.start()

        async def post(request: web.Request) -> web.Response:
            self.attempts += 1
            self.attempt_times.append(time.monotonic())
            body = await request.read()
            if self.fail_http:
                status = self.fail_http.pop(0)
                return web.Response(
                    status=status, body=self.fail_body, headers={"Retry-After": self.retry_after}
                )
            await self._slow()
            self.requests.append(ExportTraceServiceRequest.FromString(body))
            return web.Response(
                body=ExportTraceServiceResponse().SerializeToString(),
                content_type="application/x-protobuf",
            )

        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_post("/v1/traces", post)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        if isinstance(http_port, ReservedPort):
            site = web.TCPSite(self._runner, "127.0.0.1", http_port.port)
            http_port.release()
        else:
            site = web.TCPSite(self._runner, "127.0.0.1", http_port)
        await site.start()
        self.http_port = int(self._runner.addresses[0][1])

    async def _slow(self) -> None:
        await asyncio.sleep(self.delay)
        if self.hold is not None:
            await asyncio.to_thread(self.hold.wait, WAIT_S)

    async def stop(self) -> None:
        """Shut both servers down."""
        if self._server is not None:
            await self._server.stop(0)
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def http_url(self) -> str:
        """Forward URL for OTLP/HTTP."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """Forward URL for OTLP/gRPC."""
        return f"grpc://127.0.0.1:{self.grpc_port}"

    def spans(self) -> list[Span]:
        """Every span received so far."""
        return [
            s
            for r in list(self.requests)
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]


def attrs(span: Span) -> dict[str, Any]:
    """A span's attributes as plain values (arrays as lists)."""
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [x.string_value for x in v.array_value.values]
        else:
            out[kv.key] = getattr(v, kind) if kind else None
    return out


def new_ids() -> tuple[bytes, bytes]:
    """A random (trace id, span id)."""
    return os.urandom(16), os.urandom(8)


def make_span(
    trace_id: bytes,
    span_id: bytes | None = None,
    parent: bytes = b"",
    name: str = "step",
    error: bool = False,
    attributes: dict[str, str] | None = None,
) -> Span:
    """A protobuf span with timestamps and optional string attributes."""
    now = time.time_ns()
    span = Span(
        trace_id=trace_id,
        span_id=span_id or os.urandom(8),
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=now,
        end_time_unix_nano=now + 1000,
    )
    if error:
        span.status.code = Status.STATUS_CODE_ERROR
    for k, v in (attributes or {}).items():
        span.attributes.append(KeyValue(key=k, value=AnyValue(string_value=v)))
    return span


def make_request(spans: Sequence[Span], service: str = "agent-svc") -> ExportTraceServiceRequest:
    """One request holding ``spans`` under one resource and scope."""
    rs = ResourceSpans()
    rs.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=service))
    )
    ss = rs.scope_spans.add()
    ss.scope.name = "test"
    ss.spans.extend(spans)
    return ExportTraceServiceRequest(resource_spans=[rs])


def post(
    port: int,
    body: bytes,
    content_type: str = "application/x-protobuf",
    headers: dict[str, str] | None = None,
    method: str = "POST",
    path: str = "/v1/traces",
) -> tuple[int, dict[str, str], bytes]:
    """A raw HTTP request to the collector (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_S)
    try:
        hdrs = {"Content-Type": content_type, **(headers or {})}
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def post_until_accepted(port: int, body: bytes, what: str = "the request accepted") -> int:
    """Post an OTLP/HTTP protobuf body as an OTLP client does: a 503 ("retry later": the
    collector pushing back, which a busy machine makes happen at any point) is sent again
    until the collector answers otherwise; returns that answer's status."""

    def attempt() -> int | None:
        status = post(port, body)[0]
        return None if status == 503 else status

    return eventually(attempt, what)


def config(sink: Sink, tmp: Path | None = None, **overrides: Any) -> CollectorConfig:
    """A test config: free ports, short waits, forwarding to the sink over HTTP."""
    base: dict[str, Any] = {
        "forward": [sink.http_url],
        "grpc_port": 0,
        "http_port": 0,
        "decision_wait_after_root": 0.2,
        "decision_wait": 1.0,
        "tick": 0.02,
        "retry_initial": 0.05,
        "retry_max": 0.5,
        "shutdown_timeout": 3.0,
    }
    if tmp is not None:
        base["verdicts_jsonl"] = str(tmp / "verdicts.jsonl")
    base.update(overrides)
    return CollectorConfig(**base).validate()


def start_collector(
    lt: LoopThread, cfg: CollectorConfig, judge: Any = None, clock: Clock | None = None
) -> Collector:
    """Build and start a Collector on the loop thread (on ``clock`` when given: a
    ``ManualClock`` the test moves, see ``settle``)."""

    async def go() -> Collector:
        c = Collector(cfg, judge if judge is not None else StandInJudge(), clock)
        await c.start()
        return c

    return lt.run(go())


def timer_settled(c: Collector, clock: ManualClock) -> bool | None:
    """Whether the decision timer of ``c`` (started on ``clock``) is done at the clock's
    reading: True when it has re-armed past ``clock.now()`` (it does only after its tick;
    a trace ingest found due sets ``wake`` until that tick ran) with nothing left due;
    None when it waits for the clock although a trace is due (one became due while the
    tick ran: the timer takes it a millisecond later, of the clock's time); False while
    it is still at work."""
    p = c.decision
    if p is None:
        return False
    now = clock.now()
    if p.wake_at <= now or p.wake.is_set():
        return False
    due = p.buffer.next_deadline() <= now or (p.held is not None and p.held.next_deadline() <= now)
    return None if due else True


def advance(c: Collector, clock: ManualClock, seconds: float) -> None:
    """Move ``clock`` on by ``seconds`` and wait until the collector's timer has decided
    everything due by then (decisions made; their forwarding may still be under way). A
    trace that became due while a tick ran is taken by the next tick, a millisecond of the
    clock's time on, as on the real clock: so the clock may end up a few ms further."""
    clock.advance(seconds)

    def step() -> bool | None:
        settled = timer_settled(c, clock)
        if settled is None:
            clock.advance(0.001)
            return None
        return True if settled else None

    eventually(step, f"the decision timer at +{seconds}s")


def decision_stage(
    cfg: CollectorConfig,
    judge: Judge,
    queues: Sequence[TargetQueue],
    sinks: Sequence[VerdictSink],
    stats: Stats,
    store: DiskStore | None,
    clock: Clock,
    observers: Sequence[VerdictObserver] = (),
    *,
    hold: TraceHold | None = None,
    scrubber: Scrubber | None = None,
    shadow: ShadowPairs | None = None,
    next: Consumer[Decided] | None = None,
) -> DecisionStage:
    """A decision stage built through its factory as ``assembly.build_stages`` builds it,
    for tests that drive it directly: its own hold and scrubber from ``cfg`` unless given
    (shared ones, as the collector shares them), nothing after it unless ``next``."""
    scrubber = scrubber_for(cfg) if scrubber is None else scrubber
    context = DecisionContext(
        clock,
        stats,
        judge,
        TraceHold(cfg, clock) if hold is None else hold,
        scrubber,
        forward_mode(cfg, scrubber),
        queues,
        sinks,
        store,
        observers,
        shadow,
    )
    factory = DecisionFactory()
    edge: Consumer[Decided] = Discard[Decided]() if next is None else next
    return factory.create(factory.config_for(cfg), edge, context)
