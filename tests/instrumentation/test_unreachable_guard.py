"""The exporter ``instrument()`` sets up, against a real OTLP/HTTP receiver and a closed port.

Real parts: the SDK's OTLP/HTTP exporter, a real HTTP receiver decoding the protobuf
bodies (``tests.demo.otlp_sink``), real sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.demo.otlp_sink import OtlpSink
from tests.support.ports import ReservedPort
from tracejudge.instrumentation._endpoint import traces_endpoint
from tracejudge.instrumentation._guard import UnreachableGuard


def _spans(n: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(f"s{i}"):
            pass
    return list(memory.get_finished_spans())


class _Counted(SpanExporter):
    """The real OTLP exporter, counting the batches handed to it (each would start its
    retries, ~10 s of back-off per batch when nothing listens)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.batches = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.batches += 1
        return self.inner.export(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()


def test_nothing_listening_drops_at_once_with_one_warning(
    reserve_port: Callable[[], ReservedPort], caplog: pytest.LogCaptureFixture
) -> None:
    """No retry stall, no line per attempt: one warning for the outage, spans counted. The
    stall is counted, not timed: no batch reaches the exporter that would retry it."""
    url = reserve_port().url
    endpoint = traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    inner = _Counted(OTLPSpanExporter(endpoint=f"{url}/v1/traces"))
    guard = UnreachableGuard(inner, endpoint)
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert guard.export(_spans(2)) is SpanExportResult.FAILURE
    assert inner.batches == 0
    assert guard.dropped == 6
    warnings = [r for r in caplog.records if "nothing listens" in r.getMessage()]
    assert len(warnings) == 1
    assert url in warnings[0].getMessage()
    guard.shutdown()


def test_a_listening_backend_gets_every_span() -> None:
    """Once the endpoint answers, batches go through the real exporter (its retries too)."""
    with OtlpSink() as sink:
        url = sink.url.rstrip("/")
        endpoint = traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": url})
        guard = UnreachableGuard(OTLPSpanExporter(endpoint=f"{url}/v1/traces"), endpoint)
        assert guard.export(_spans(3)) is SpanExportResult.SUCCESS
        assert guard.up
        assert guard.dropped == 0
        assert sorted(s.name for s in sink.spans) == ["s0", "s1", "s2"]
        guard.shutdown()
