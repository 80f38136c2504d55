"""A neutral, decoded span: what the engine and collector work on.

Spans reach tracejudge in three shapes (OTLP protobuf, OTLP/JSON, the SDK's
``ReadableSpan``). Each decoder turns its shape into ``SpanRecord`` once, so the run builder
and every rule see one representation with lowercase-hex ids and plain Python values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
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


def reduce_by_fields(obj: Any) -> tuple[Any, tuple[Any, ...]]:
    """``__reduce__`` for a dataclass with a written-out ``__init__``: rebuild it from its
    fields, so ``copy`` and ``pickle`` work in the compiled build too (a compiled class
    cannot be created empty and filled in afterwards, which is what they do by default)."""
    return type(obj), tuple(getattr(obj, f.name) for f in fields(obj))


@dataclass(slots=True)
class EventRecord:
    """A span event (name, time, attributes)."""

    name: str
    time_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True, init=False)
class SpanRecord:
    """One decoded span. Ids are lowercase hex; a root span has ``parent_span_id`` None.

    ``__init__`` is written out (``init=False``) because the compiled build makes a written
    one native code, ~5x cheaper than the one ``dataclass`` generates, and one is built per
    span on the collector's hot path. Its parameters are the fields, in order, with the
    same defaults (``None`` stands for a fresh empty dict/list); a test holds them equal.
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

    def __init__(
        self,
        trace_id: str,
        span_id: str,
        parent_span_id: str | None,
        name: str,
        kind: int = SPAN_KIND_INTERNAL,
        start_ns: int = 0,
        end_ns: int = 0,
        status_code: int = STATUS_UNSET,
        status_message: str = "",
        attributes: dict[str, AttrValue] | None = None,
        events: list[EventRecord] | None = None,
        resource: dict[str, AttrValue] | None = None,
        scope: str = "",
    ) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.name = name
        self.kind = kind
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.status_code = status_code
        self.status_message = status_message
        self.attributes = {} if attributes is None else attributes
        self.events = [] if events is None else events
        self.resource = {} if resource is None else resource
        self.scope = scope

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return reduce_by_fields(self)
