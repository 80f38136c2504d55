"""What the framework lifecycle tests (LangChain, the OpenAI Agents SDK) read alike: our own
warnings, the names of the finished spans, and the spans of one traced refund-lookup run."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["TRACED", "names", "ours"]


def ours(caplog: pytest.LogCaptureFixture) -> list[str]:
    """tracejudge's warnings (other libraries' log records are not ours to count)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("tracejudge") and r.levelno >= logging.WARNING
    ]


def names(exporter: InMemorySpanExporter) -> list[str]:
    """The finished spans' names, in the order they ended."""
    return [s.name for s in exporter.get_finished_spans()]


TRACED = [
    "chat gpt-4o-mini",
    "execute_tool lookup_order",
    "chat gpt-4o-mini",
    "invoke_agent orders",
]
"""One run of the lookup agent: two model calls around a tool call, inside the agent run."""
