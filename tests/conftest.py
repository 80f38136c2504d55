"""Shared pytest fixtures: per-test OTel providers, a fake clock, the cassette replay server.

Why here: every suite that checks spans needs the same deterministic set-up; keeping it
in one generic place (no tracejudge specifics beyond ``instrument``) avoids drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import opentelemetry.sdk.trace as sdk_trace
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import FakeClock, make_meter_provider, make_tracer_provider
from tests.support.ports import ReservedPort
from tests.support.replay import ReplayServer
from tests.support.semconv_check import registry
from tracejudge.instrumentation._runtime import SCOPE_NAME


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--expect-compiled``: the run tests the mypyc-compiled wheel (``make pytest-compiled``)."""
    parser.addoption(
        "--expect-compiled",
        action="store_true",
        help="assert that the judging hot path is the mypyc-compiled build",
    )
    parser.addoption(
        "--lb-scale",
        action="store_true",
        help="tests/e2e/test_loadbalancing.py at the issue's full size (200 conversations, "
        "100 shadow pairs) instead of the CI size",
    )


@pytest.fixture
def expect_compiled(request: pytest.FixtureRequest) -> bool:
    """True when this run must exercise the compiled build, False for pure Python."""
    return bool(request.config.getoption("--expect-compiled"))


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Span start/end and event times advance 1 s per reading, from 0 (deterministic
    timestamps for span snapshots: the instrumentation and framework suites use it for
    every test; suites that send spans to real backends keep the real clock)."""
    clock = FakeClock()
    monkeypatch.setattr(sdk_trace, "time_ns", clock)
    return clock


@pytest.fixture
def otel_traces(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A private TracerProvider (sequential ids) exporting to memory:
    ``tests/support/spans.py`` turns what it exported into snapshot data (with the
    ``fake_clock`` for the times).

    Every span tracejudge's instrumentation finishes on it is also checked against the
    pinned convention registry when the test ends (``tests/support/semconv_check.py``): a
    non-conformant span is an error of the test that made it. A test that makes one on
    purpose says so with ``@pytest.mark.semconv_exempt("why")``.
    """
    provider, exporter = make_tracer_provider()
    seen = InMemorySpanExporter()  # a copy the test cannot clear
    provider.add_span_processor(SimpleSpanProcessor(seen))
    yield provider, exporter
    provider.shutdown()
    if request.node.get_closest_marker("semconv_exempt") is not None:
        return
    problems = [
        problem
        for span in seen.get_finished_spans()
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == SCOPE_NAME
        for problem in registry().check_span(span)
    ]
    if problems:
        pytest.fail("spans break the pinned conventions:\n  " + "\n  ".join(problems))


@pytest.fixture
def span_exporter(otel_traces: tuple[TracerProvider, InMemorySpanExporter]) -> InMemorySpanExporter:
    """The in-memory exporter of ``otel_traces``."""
    return otel_traces[1]


@pytest.fixture
def tracer_provider(otel_traces: tuple[TracerProvider, InMemorySpanExporter]) -> TracerProvider:
    """The TracerProvider of ``otel_traces``."""
    return otel_traces[0]


@pytest.fixture
def otel_metrics() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    """A private MeterProvider read on demand."""
    provider, reader = make_meter_provider()
    yield provider, reader
    provider.shutdown()


@pytest.fixture
def replay() -> Iterator[Callable[..., ReplayServer]]:
    """Factory: ``replay("openai/x.yaml", ..., sequential=False)`` -> a started server.

    Servers are stopped after the test.
    """
    servers: list[ReplayServer] = []

    def start(*cassettes: str | Path, sequential: bool = False) -> ReplayServer:
        server = ReplayServer(cassettes, sequential=sequential).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def reserve_port() -> Iterator[Callable[[], ReservedPort]]:
    """Factory: ``reserve_port()`` -> a ``ReservedPort`` (tests/support/ports.py), held until
    the test releases it or ends. Ask for this fixture before the ones whose servers or
    clients use the port, so it is released after they stopped."""
    held: list[ReservedPort] = []

    def reserve() -> ReservedPort:
        port = ReservedPort()
        held.append(port)
        return port

    yield reserve
    for port in held:
        port.release()


@pytest.fixture
def instrumented(
    tracer_provider: TracerProvider,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> Iterator[None]:
    """``tracejudge.instrument()`` on the test providers, content on, errors raised."""
    import tracejudge

    tracejudge.instrument(
        tracer_provider=tracer_provider,
        meter_provider=otel_metrics[0],
        capture_content="SPAN_ONLY",
        raise_internal_errors=True,
    )
    yield
    tracejudge.uninstrument()
