"""Fixtures of the LangChain / LangGraph tests: tracejudge on, LangChain's handler errors fatal.

langchain-core catches what a callback handler raises and logs it ("Error in
TracejudgeCallbackHandler.on_tool_start callback: ..."), so an internal error re-raised
by ``raise_internal_errors`` would not fail a test by itself: ``no_handler_errors`` turns
such a log record into a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import tracejudge


def handler_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What langchain-core logged about tracejudge's handler raising."""
    return [
        r.getMessage()
        for r in caplog.records
        if "TracejudgeCallbackHandler" in r.getMessage() and r.levelno >= logging.WARNING
    ]


@pytest.fixture(autouse=True)
def no_handler_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail a test in which tracejudge's handler raised into langchain-core."""
    caplog.set_level(logging.WARNING, logger="langchain_core")
    yield
    assert handler_errors(caplog) == []


@pytest.fixture
def langchain_instrumented(
    tracer_provider: TracerProvider,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
) -> Iterator[None]:
    """``tracejudge.instrument()`` on the test providers (content on, errors raised)."""
    tracejudge.instrument(
        tracer_provider=tracer_provider,
        meter_provider=otel_metrics[0],
        capture_content="SPAN_ONLY",
        raise_internal_errors=True,
    )
    yield
    tracejudge.uninstrument()
