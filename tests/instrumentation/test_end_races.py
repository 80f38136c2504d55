"""Ending a model call exactly once when enders race on different threads.

Why it matters: a stream's span can be ended by exhaustion, by ``close()`` and by its
``weakref.finalize`` finaliser, which the garbage collector may run on any thread. Two
enders must never both record the response, end the span twice or count the call twice
in the metrics. Real OTel SDK providers; the stream accumulator in the second test is a
stand-in that blocks inside ``finish`` (the only way to hold a race window open
deterministically), the rest is the production ``StreamState``/``ModelCallTelemetry``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.guards import WAIT_S
from tracejudge import semconv
from tracejudge.instrumentation import ModelCallTelemetry, Runtime
from tracejudge.instrumentation.openai._stream import StreamState


@pytest.fixture
def runtime(
    tracer_provider: TracerProvider, otel_metrics: tuple[MeterProvider, InMemoryMetricReader]
) -> Runtime:
    """A runtime on the test providers; internal errors raise."""
    return Runtime(
        tracer_provider=tracer_provider,
        meter_provider=otel_metrics[0],
        raise_internal_errors=True,
    )


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, to widen any race window."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _duration_count(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    total = 0
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION:
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)
                        total += point.count
    return total


def _call(runtime: Runtime) -> ModelCallTelemetry:
    return ModelCallTelemetry(runtime, "chat", "openai", "gpt-4o-mini", {})


@pytest.mark.usefixtures("fast_switching")
def test_concurrent_enders_end_each_call_once(
    runtime: Runtime,
    span_exporter: InMemorySpanExporter,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    """Four threads released together call ``end``/``abandon``/``fail`` on the same call,
    200 times over: every call yields one span and one duration measurement."""
    rounds = 200
    calls = [_call(runtime) for _ in range(rounds)]
    enders = [
        lambda c: c.end(),
        lambda c: c.abandon(),
        lambda c: c.fail(RuntimeError("x")),
        lambda c: c.end(),
    ]
    barrier = threading.Barrier(len(enders))

    def run(ender: Any) -> None:
        for call in calls:
            barrier.wait()
            ender(call)

    threads = [threading.Thread(target=run, args=(e,)) for e in enders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
    assert len(span_exporter.get_finished_spans()) == rounds
    assert _duration_count(otel_metrics[1]) == rounds
    assert all(c.ended for c in calls)


class _BlockingAccumulator:
    """Blocks in ``finish`` until released, counting how often it was asked to finish."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished: list[bool] = []

    def add(self, item: Any) -> None:
        return None

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        self.finished.append(complete)
        self.entered.set()
        assert self.release.wait(timeout=WAIT_S)
        call.set_response(response_id="chatcmpl-1" if complete else "partial")


def test_finaliser_racing_a_completing_stream_records_nothing(
    runtime: Runtime,
    span_exporter: InMemorySpanExporter,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    """While the consuming thread is recording a completed stream, a finaliser on
    another thread (``abandon``) returns at once: the response is recorded once, as
    complete, and the span ends once."""
    acc = _BlockingAccumulator()
    state = StreamState(runtime, _call(runtime), acc)
    consumer = threading.Thread(target=state.complete)
    consumer.start()
    assert acc.entered.wait(timeout=WAIT_S)
    finaliser = threading.Thread(target=state.abandon)
    finaliser.start()
    finaliser.join(timeout=WAIT_S)
    assert not finaliser.is_alive()  # it did not wait for, or join in, the recording
    acc.release.set()
    consumer.join(timeout=WAIT_S)
    assert acc.finished == [True]
    spans = span_exporter.get_finished_spans()
    assert len(spans) == 1
    assert spans[0].attributes is not None
    assert spans[0].attributes[semconv.GEN_AI_RESPONSE_ID] == "chatcmpl-1"
    assert _duration_count(otel_metrics[1]) == 1
