"""Content placed where the run model reads it, for the content-policy tests.

``telemetry(place)`` builds an agent trace (and log records) carrying ``SECRET`` at one
``tracejudge.model.places.ContentPlace``, in the shape its reader parses;
``carry(...)`` adds one place's span (and record) to a trace being built, so a collector
test can send every place at once. ``SECRET`` is a value the default redactor replaces
(``password=...``) and that the run model keeps as it is.
"""

from __future__ import annotations

import json

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tracejudge import semconv as sc
from tracejudge.model.places import ContentPlace

WORD = "Tr0ub4dorXYZ"
SECRET = f"password={WORD}"
"""A value the default redactor replaces (``password=...``) and the run model keeps."""

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
ROOT = bytes.fromhex("b7ad6b7169203331")
CHILD = bytes.fromhex("00f067aa0ba902b7")
T0 = 1_700_000_000_000_000_000


def sample_values(place: ContentPlace) -> dict[str, str]:
    """The attributes (key -> string) that put ``SECRET`` at ``place`` in its shape."""
    key, shape = place.key, place.shape
    if shape == "text":
        return {key: f"lookup {SECRET}"}
    if shape == "messages":
        role = "assistant" if key == sc.GEN_AI_OUTPUT_MESSAGES else "user"
        msg = {"role": role, "parts": [{"type": "text", "content": SECRET}]}
        return {key: json.dumps([msg])}
    if shape == "openai_messages":
        return {key: json.dumps([{"role": "user", "content": SECRET}])}
    if shape == "openinference":
        return {f"{key}.0.message.role": "user", f"{key}.0.message.content": SECRET}
    if shape == "indexed":
        return {f"{key}.0.role": "user", f"{key}.0.content": SECRET}
    if shape == "gemini_request":
        return {key: json.dumps({"contents": [{"role": "user", "parts": [{"text": SECRET}]}]})}
    if shape == "gemini_response":
        return {key: json.dumps({"content": {"role": "model", "parts": [{"text": SECRET}]}})}
    if shape == "langchain_request":
        return {key: json.dumps({"messages": [[{"type": "human", "content": SECRET}]]})}
    if shape == "langchain_response":
        return {key: json.dumps({"generations": [[{"text": SECRET}]]})}
    if shape == "parts":
        part = {"type": place.part_type, "id": "c1", "name": "lookup", place.part_field: SECRET}
        return {key: json.dumps([{"role": "tool", "parts": [part]}])}
    assert shape == "choice"
    message = {"role": "assistant", "content": SECRET}
    if key == sc.FOREIGN_MESSAGE:
        return {key: json.dumps(message)}
    return {key: json.dumps({"index": 0, "finish_reason": "stop", "message": message})}


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def kv(key: str, value: str) -> KeyValue:
    """A string attribute."""
    return KeyValue(key=key, value=AnyValue(string_value=value))


def agent_root(ss: ScopeSpans, trace: bytes = TRACE, span_id: bytes = ROOT) -> Span:
    """The ``invoke_agent`` root span of a trace."""
    root = ss.spans.add(
        trace_id=trace,
        span_id=span_id,
        name="invoke_agent a",
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 10_000,
    )
    root.attributes.append(kv(sc.GEN_AI_OPERATION_NAME, "invoke_agent"))
    root.attributes.append(kv(sc.GEN_AI_AGENT_NAME, "a"))
    return root


def carry(
    place: ContentPlace, ss: ScopeSpans, sl: ScopeLogs, root: Span, child_id: bytes | None
) -> None:
    """Put ``SECRET`` at ``place``: on ``root`` when ``child_id`` is None (an agent
    place), else on a new child span of ``root`` with the attributes its reader needs;
    a log place adds its record to ``sl``."""
    target = root
    if child_id is not None:
        target = ss.spans.add(
            trace_id=root.trace_id,
            span_id=child_id,
            parent_span_id=root.span_id,
            name=place.span_name or "step",
            start_time_unix_nano=T0 + 1000,
            end_time_unix_nano=T0 + 2000,
        )
        target.attributes.extend(kv(k, v) for k, v in place.span_attributes.items())
    values = sample_values(place)
    if place.carrier == "span attribute":
        target.attributes.extend(kv(k, v) for k, v in values.items())
    elif place.carrier == "span event":
        event = target.events.add(name=place.event, time_unix_nano=T0 + 1500)
        event.attributes.extend(kv(k, v) for k, v in values.items())
    else:
        record = sl.log_records.add(
            time_unix_nano=T0 + 1500,
            trace_id=root.trace_id,
            span_id=target.span_id,
            event_name=place.event,
        )
        if place.carrier == "log attribute":
            record.attributes.extend(kv(k, v) for k, v in values.items())
        else:
            record.body.kvlist_value.values.extend(kv(k, v) for k, v in values.items())


def telemetry(place: ContentPlace) -> tuple[ResourceSpans, ResourceLogs]:
    """An agent trace (the root and, unless the place is the root's, one child) and the
    log records that carry ``SECRET`` at ``place``."""
    rs = ResourceSpans()
    ss = rs.scope_spans.add()
    rl = ResourceLogs()
    root = agent_root(ss)
    carry(place, ss, rl.scope_logs.add(), root, None if place.role == "agent" else CHILD)
    return rs, rl
