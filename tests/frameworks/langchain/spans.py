"""Span views shared by the LangChain tests: each span's snapshot with its parent's name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tests.support.otel import snap


def tree(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Each finished span as ``snap`` data plus its parent's name (None for a root), in
    the order the spans ended."""
    names = {s.context.span_id: s.name for s in spans if s.context is not None}
    out = []
    for span in spans:
        data = snap(span)
        data["parent"] = names.get(span.parent.span_id) if span.parent is not None else None
        out.append(data)
    return out


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The spans called ``name``."""
    return [s for s in spans if s["name"] == name]


def only(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The one span called ``name``."""
    [found] = by_name(spans, name)
    return found


def shape(spans: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(name, parent name) of each span, in end order."""
    return [(s["name"], s["parent"]) for s in spans]
