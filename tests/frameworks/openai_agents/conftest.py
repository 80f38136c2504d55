"""Fixtures of the OpenAI Agents SDK tests: the SDK's own exporter off, tracejudge on.

The SDK ships a processor that uploads traces to api.openai.com; tests have no network,
so the SDK's processors are replaced with none before ``instrument()`` registers ours
(the order an application would use too: ``instrument()`` re-registers its processor
when the application's ``set_trace_processors`` dropped it).

The SDK catches what a processor raises and logs it ("Error in trace processor"), so an
internal error re-raised by ``raise_internal_errors`` would not fail a test by itself:
``no_processor_errors`` turns such a log record into a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import agents
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import tracejudge


def processor_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the SDK logged about a processor raising (tracejudge's, in these tests)."""
    return [r.getMessage() for r in caplog.records if "Error in trace processor" in r.getMessage()]


@pytest.fixture(autouse=True)
def no_processor_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail a test in which tracejudge's processor raised into the SDK."""
    caplog.set_level(logging.ERROR, logger="openai.agents")
    yield
    assert processor_errors(caplog) == []


@pytest.fixture
def agents_instrumented(
    tracer_provider: TracerProvider,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> Iterator[None]:
    """``tracejudge.instrument()`` on the test providers (content on, errors raised),
    with the SDK's default OpenAI exporter removed."""
    agents.set_trace_processors([])
    tracejudge.instrument(
        tracer_provider=tracer_provider,
        meter_provider=otel_metrics[0],
        capture_content="SPAN_ONLY",
        raise_internal_errors=True,
    )
    yield
    tracejudge.uninstrument()
