"""Shared helpers for the model tests: real SDK spans, real OTLP encoding, OTLP/JSON form."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from tracejudge import semconv as sc


class Recorder:
    """A real TracerProvider wired to an InMemorySpanExporter."""

    def __init__(self, service: str = "model-tests") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer: Tracer = self.provider.get_tracer("tests.model", "1.0")

    def spans(self) -> list[ReadableSpan]:
        """Finished spans in end order."""
        return list(self.exporter.get_finished_spans())

    def request(self) -> ExportTraceServiceRequest:
        """The finished spans as the real OTLP exporter would send them."""
        return encode_spans(self.spans())


@contextmanager
def recorder() -> Iterator[Recorder]:
    """A Recorder that is shut down afterwards."""
    rec = Recorder()
    try:
        yield rec
    finally:
        rec.provider.shutdown()
