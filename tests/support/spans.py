"""Whole-span snapshots: the exported spans as plain data, compared with one ``== snapshot()``.

Why: a span is what the instrumentation produces, and a judge reads all of it — its parent,
status, events and attributes, not a chosen few. Each test compares the list of spans it
made with one ``inline-snapshot`` literal kept in the test (``pytest --inline-snapshot=fix``
writes or updates it; review the diff like code). The form follows Logfire's
``exported_spans_as_dict``: ids from the counting id generator (trace 1, spans 1, 2, 3...)
and times from the fake clock (1 s per reading) of ``tests/conftest.py``'s ``otel_traces``,
so the same run gives the same literal on every machine.

What varies for reasons outside the code under test is masked, after a check that it has
the expected form: the replay server's ephemeral ``server.port`` and a stream's measured
``gen_ai.response.time_to_first_chunk`` (``<port>``, ``<ttfc>``), and an exception event's
stack trace (``<traceback>``: it names files and lines).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["PORT", "TRACEBACK", "TTFC", "by_name", "only", "span_dicts"]

PORT: Final = "<port>"
TTFC: Final = "<ttfc>"
TRACEBACK: Final = "<traceback>"

_JSON_SUFFIXES: Final = ("messages", "definitions", "arguments", "result", "instructions")
"""Attributes whose value is JSON text by the conventions: compared parsed (structure,
not spacing)."""


def span_dicts(
    spans: InMemorySpanExporter | Iterable[ReadableSpan], *, drop: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The finished spans, in the order they ended, as plain data (``drop``: attribute
    keys left out, for a test that checks them on their own)."""
    if isinstance(spans, InMemorySpanExporter):
        spans = spans.get_finished_spans()
    return [_span(span, drop) for span in spans]


def _span(span: ReadableSpan, drop: Sequence[str]) -> dict[str, Any]:
    context = span.context
    data: dict[str, Any] = {
        "name": span.name,
        "kind": span.kind.name,
        "context": {
            "trace_id": context.trace_id if context is not None else None,
            "span_id": context.span_id if context is not None else None,
        },
        "parent": span.parent.span_id if span.parent is not None else None,
        "start_time": span.start_time,
        "end_time": span.end_time,
        "status": span.status.status_code.name,
    }
    if span.status.description:
        data["status_description"] = span.status.description
    data["attributes"] = _attributes(span.attributes or {}, drop)
    if span.events:
        data["events"] = [_event(event) for event in span.events]
    return data


def _attributes(attributes: Any, drop: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if key in drop:
            continue
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, str) and key.endswith(_JSON_SUFFIXES):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        if key == "server.port":
            assert isinstance(value, int), value
            value = PORT
        elif key == "gen_ai.response.time_to_first_chunk":
            assert isinstance(value, float), value
            assert value >= 0
            value = TTFC
        elif key == "exception.stacktrace":
            assert isinstance(value, str), value
            assert value.startswith("Traceback (most recent call last)"), value
            value = TRACEBACK
        out[key] = value
    return out


def _event(event: Event) -> dict[str, Any]:
    return {
        "name": event.name,
        "timestamp": event.timestamp,
        "attributes": _attributes(event.attributes or {}, ()),
    }


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The spans (``span_dicts`` data) called ``name``, for a test that checks one rule
    across runs rather than a whole run."""
    return [s for s in spans if s["name"] == name]


def only(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The one span called ``name``."""
    [found] = by_name(spans, name)
    return found
