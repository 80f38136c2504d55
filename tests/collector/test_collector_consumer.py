"""The receivers' seam: they talk to a ``TraceConsumer``, not to the pipeline.

The consumer here is a small real implementation of the Protocol (no pipeline, no judge):
what it checks is that the HTTP and gRPC receivers depend on those four methods only and
map their answers to OTLP statuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import grpc.aio
import pytest
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.collector.collector_support import make_request, make_span, new_ids
from tests.support.guards import IO_S, until
from tracejudge.collector.codec.otlp import SplitResult, split_by_trace
from tracejudge.collector.consumer import IngestResult, Throttled, TraceConsumer
from tracejudge.collector.receivers.grpc_receiver import GrpcLimits, start_grpc
from tracejudge.collector.receivers.http_receiver import receiver_app
from tracejudge.collector.receivers.inflight import InflightBytes


class CountingConsumer:
    """Accepts every span but the ones the decoder refused; full when ``full`` is set."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.refused = 0
        self.full = False

    def check_capacity(self) -> None:
        if self.full:
            raise Throttled("test consumer full", 3.0)

    def split(
        self, request: ExportTraceServiceRequest | bytes, decode_rejects: Sequence[str] = ()
    ) -> SplitResult:
        if isinstance(request, bytes):
            request = ExportTraceServiceRequest.FromString(request)
        self.requests.append(request)
        return split_by_trace(request, None, decode_rejects)

    def admit(self, split: SplitResult) -> IngestResult:
        return IngestResult(split.accepted, split.rejected, split.error_message)

    def throttled(self) -> None:
        self.refused += 1


def _request() -> bytes:
    tid, sid = new_ids()
    return make_request([make_span(tid, sid)]).SerializeToString()


LIMITS = GrpcLimits(30.0, 10.0, None, None, 5.0, 5.0)


@contextlib.asynccontextmanager
async def grpc_export(
    consumer: TraceConsumer, budget: InflightBytes | None = None
) -> AsyncIterator[Any]:
    """A real gRPC receiver on a free port in front of ``consumer``, and a client's
    ``Export`` call (raw bytes in and out)."""
    server, port = await start_grpc(consumer, "127.0.0.1", 0, 1 << 20, LIMITS, budget=budget)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel.unary_unary(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export", None, None
            )
    finally:
        await server.stop(0)


def test_http_receiver_needs_only_the_consumer_protocol() -> None:
    """Accepted: 200 with the consumer's partial-success answer; full: 503 + Retry-After
    from ``Throttled.retry_after``, counted through ``throttled()``."""
    consumer = CountingConsumer()
    _typed: TraceConsumer = consumer

    async def go() -> None:
        app = receiver_app(consumer, 1 << 20, lambda: {"spans": {}}, 5.0)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            headers = {"Content-Type": "application/x-protobuf"}
            ok = await client.post("/v1/traces", data=_request(), headers=headers)
            assert ok.status == 200
            answer = ExportTraceServiceResponse.FromString(await ok.read())
            assert answer.partial_success.rejected_spans == 0
            consumer.full = True
            busy = await client.post("/v1/traces", data=_request(), headers=headers)
            assert busy.status == 503
            assert busy.headers["Retry-After"] == "3"

    asyncio.run(go())
    assert len(consumer.requests) == 1
    assert consumer.refused == 1


def test_grpc_receiver_needs_only_the_consumer_protocol() -> None:
    """The gRPC receiver: OK with the consumer's answer, UNAVAILABLE when it is full."""
    consumer = CountingConsumer()

    async def go() -> None:
        async with grpc_export(consumer) as export:
            await export(_request(), timeout=IO_S)
            consumer.full = True
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await export(_request(), timeout=IO_S)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

    asyncio.run(go())
    assert len(consumer.requests) == 1
    assert consumer.refused == 1


class _Marker:
    """Something weakly referable that lives in ``ingest``'s frame."""


class RefusingConsumer(CountingConsumer):
    """Admits every call, then refuses each request once parsed (the exact-size check)."""

    def __init__(self) -> None:
        super().__init__()
        self.markers: list[weakref.ref[_Marker]] = []

    def admit(self, split: SplitResult) -> IngestResult:
        marker = _Marker()  # held by this frame, as the split request is
        self.markers.append(weakref.ref(marker))
        raise Throttled("trace buffer full", 1.0)


def test_a_refused_grpc_request_is_freed_at_once_not_by_the_cyclic_gc() -> None:
    """A request refused after parsing must not outlive its call.

    The refusal used to be raised (``context.abort``) inside the frames that held the
    message and its parsed request; grpc kept that exception in a reference cycle, so each
    refused request stayed in memory until the cyclic GC ran, and a burst of large
    requests over gRPC took the collector to 850 MiB (``bench/bench_memory.py``). With the
    GC off, nothing of a refused call's frames may be left once it is answered."""
    consumer = RefusingConsumer()

    async def go() -> None:
        async with grpc_export(consumer) as export:
            for _ in range(3):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await export(_request(), timeout=IO_S)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

    gc.collect()
    gc.disable()
    try:
        asyncio.run(go())
        assert len(consumer.markers) == 3
        assert [m() for m in consumer.markers] == [None, None, None]
    finally:
        gc.enable()
    assert consumer.refused == 3


def test_grpc_calls_share_the_inflight_budget_with_http() -> None:
    """A gRPC call reserves ``max_request_bytes`` of the in-flight budget before its
    message is read: while the budget is taken (here by a request that holds it), the call
    waits, then gets UNAVAILABLE with the reason; once given back, calls go through."""
    consumer = CountingConsumer()
    budget = InflightBytes(2 << 20)

    async def go() -> None:
        async with grpc_export(consumer, budget) as export:
            assert budget.reserve(2 << 20)  # an HTTP body being read takes it all
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await export(_request(), timeout=IO_S)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "max_inflight_request_bytes" in (refused.value.details() or "")
            waiting = asyncio.ensure_future(export(_request(), timeout=IO_S))
            await until(lambda: budget.waiting == 1, "the call waiting for room")
            assert not waiting.done()  # waits for room rather than being refused
            budget.release(2 << 20)
            await waiting
            assert budget.nbytes == 0  # the call gave its reservation back

    asyncio.run(go())
    assert len(consumer.requests) == 1
    assert budget.refused == 1
