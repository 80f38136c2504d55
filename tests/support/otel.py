"""OpenTelemetry test helpers: deterministic ids and clock, in-memory exporters, snapshots.

Why: snapshot-style assertions of whole spans need stable span ids and timestamps; these
helpers give every test its own SDK TracerProvider/MeterProvider (never the global ones)
and a compact, comparable view of finished spans.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator


class CountingIdGenerator(IdGenerator):
    """Sequential trace and span ids (1, 2, 3...): stable across runs."""

    def __init__(self) -> None:
        self._spans: Iterator[int] = itertools.count(1)
        self._traces: Iterator[int] = itertools.count(1)

    def generate_span_id(self) -> int:
        return next(self._spans)

    def generate_trace_id(self) -> int:
        return next(self._traces)


class FakeClock:
    """A ``time_ns`` replacement that advances 1 s per reading (the first reads 1 s), as
    Logfire's test clock does: snapshots show times as small round numbers."""

    def __init__(self, start_ns: int = 0, step_ns: int = 1_000_000_000) -> None:
        self._now = start_ns
        self._step = step_ns

    def __call__(self) -> int:
        self._now += self._step
        return self._now


def make_tracer_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider with deterministic ids that exports synchronously to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=CountingIdGenerator())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def make_meter_provider() -> tuple[MeterProvider, InMemoryMetricReader]:
    """A meter provider read on demand."""
    reader = InMemoryMetricReader()
    return MeterProvider(metric_readers=[reader]), reader


def snapshot(span: ReadableSpan, *, drop: Sequence[str] = ()) -> dict[str, Any]:
    """Name, kind, status, parent and attributes of a span as plain data.

    JSON-string attributes whose key ends in ``messages``/``definitions``/``arguments``/
    ``result``/``instructions`` are parsed so snapshots compare structure, not spacing.
    """
    attrs: dict[str, Any] = {}
    for key, value in (span.attributes or {}).items():
        if key in drop:
            continue
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, str) and key.endswith(
            ("messages", "definitions", "arguments", "result", "instructions")
        ):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        attrs[key] = value
    return {
        "name": span.name,
        "kind": span.kind.name,
        "status": span.status.status_code.name,
        "attributes": attrs,
    }


def histogram_points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    """All histogram data points recorded under metric ``name``."""
    data = reader.get_metrics_data()
    points: list[HistogramDataPoint] = []
    if data is None:
        return points
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == name:
                    points.extend(
                        p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                    )
    return points


PORT_MASK = "<port>"
TTFC_MASK = "<ttfc>"


def snap(span: ReadableSpan) -> dict[str, Any]:
    """``snapshot`` with volatile values masked: the replay server's ephemeral
    ``server.port`` and the measured ``gen_ai.response.time_to_first_chunk`` (checked to
    be a non-negative float first)."""
    data = snapshot(span)
    attrs = data["attributes"]
    if "server.port" in attrs:
        assert isinstance(attrs["server.port"], int)
        attrs["server.port"] = PORT_MASK
    ttfc = attrs.get("gen_ai.response.time_to_first_chunk")
    if ttfc is not None:
        assert isinstance(ttfc, float)
        assert ttfc >= 0
        attrs["gen_ai.response.time_to_first_chunk"] = TTFC_MASK
    return data
