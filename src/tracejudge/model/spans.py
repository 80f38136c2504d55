"""A neutral, decoded span: what the engine and collector work on.

Spans reach tracejudge in three shapes (OTLP protobuf, OTLP/JSON, the SDK's
``ReadableSpan``). Each decoder turns its shape into ``SpanRecord`` once, so the run builder
and every rule see one representation with lowercase-hex ids and plain Python values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

AttrValue: TypeAlias = Any
"""str | bool | int | float | bytes | list of those | dict (OTLP kvlist) | None."""

# OTLP enum values (opentelemetry/proto/trace/v1/trace.proto).
SPAN_KIND_UNSPECIFIED = 0
SPAN_KIND_INTERNAL = 1
SPAN_KIND_SERVER = 2
SPAN_KIND_CLIENT = 3
SPAN_KIND_PRODUCER = 4
SPAN_KIND_CONSUMER = 5
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@dataclass(slots=True)
class EventRecord:
    """A span event (name, time, attributes)."""

    name: str
    time_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True)
class SpanRecord:
    """One decoded span. Ids are lowercase hex; a root span has ``parent_span_id`` None.

    Not frozen: one is built per span on the collector's hot path, and a frozen
    dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
    (4x the cost in the compiled build: docs/performance.md). Treat it as read-only:
    a changed one is made with ``dataclasses.replace``.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int = SPAN_KIND_INTERNAL
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)
    resource: dict[str, AttrValue] = field(default_factory=dict)
    scope: str = ""
