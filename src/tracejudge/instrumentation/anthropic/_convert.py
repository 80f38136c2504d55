"""Anthropic Messages API shapes → GenAI semantic-convention attributes and message JSON.

Why a module of pure functions: the same conversion serves a parsed ``Message``, a
Message rebuilt from stream events, the keyword arguments of ``messages.create`` and
of ``messages.stream`` and every SDK major we claim (0.x typed dicts, 2.x pydantic
models). Keeping it free of I/O and of the SDK's classes makes it testable on plain
dicts and immune to the SDK moving its types around. Nothing here raises on odd
input: an unknown block becomes a generic part carrying its ``type``, never a crash
and never a silent drop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._shapes import get as get  # re-exported for the provider

# Anthropic stop_reason → the finish-reason values of the GenAI output-message schema
# (stop | length | content_filter | tool_call | error). Values the schema has no word
# for (``pause_turn``) pass through unchanged, as the schema allows any string.
FINISH_REASONS: Final[Mapping[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}

# Request keyword → (attribute, python type it must have). Read from the call's kwargs
# and ``extra_body`` (SDK 2.x dropped temperature/top_p/top_k as keywords; users pass
# them through extra_body, and the 0.x SDK still has them as keywords).
_REQUEST_PARAMS: Final[tuple[tuple[str, str, type | tuple[type, ...]], ...]] = (
    ("model", sc.GEN_AI_REQUEST_MODEL, str),
    ("max_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS, int),
    ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE, (int, float)),
    ("top_p", sc.GEN_AI_REQUEST_TOP_P, (int, float)),
    ("top_k", sc.GEN_AI_REQUEST_TOP_K, int),
)


def _given(value: Any) -> bool:
    """False for ``None`` and the SDK's ``NOT_GIVEN``/``omit`` sentinels (falsy, typed)."""
    if value is None:
        return False
    cls = type(value).__name__
    return cls not in ("NotGiven", "Omit")


def request_params(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The effective request body fields we read: kwargs overlaid with ``extra_body``."""
    params = {k: v for k, v in kwargs.items() if _given(v)}
    extra = kwargs.get("extra_body")
    if isinstance(extra, Mapping):
        params.update({str(k): v for k, v in extra.items() if _given(v)})
    return params


def request_attributes(params: Mapping[str, Any], *, stream: bool) -> dict[str, AttributeValue]:
    """Span-start attributes read from the request; operation, provider and server
    are added by ``ModelCallTelemetry`` (the provider depends on the client)."""
    attrs: dict[str, AttributeValue] = {}
    for key, attr, typ in _REQUEST_PARAMS:
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, typ):
            continue
        if isinstance(value, (int, float)) and typ == (int, float):
            attrs[attr] = float(value)  # doubles in the conventions, even when sent as 1
        elif isinstance(value, (str, int)):
            attrs[attr] = value
    stops = params.get("stop_sequences")
    if isinstance(stops, (list, tuple)) and all(isinstance(s, str) for s in stops):
        attrs[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = list(stops)
    effort = get(params.get("output_config"), "effort")
    if isinstance(effort, str):
        attrs[sc.GEN_AI_REQUEST_REASONING_LEVEL] = effort
    formats = (get(params.get("output_config"), "format"), params.get("output_format"))
    if any(get(f, "type") == "json_schema" for f in formats):
        attrs[sc.GEN_AI_OUTPUT_TYPE] = sc.GenAiOutputTypeValues.JSON
    if stream:
        attrs[sc.GEN_AI_REQUEST_STREAM] = True
    return attrs


def span_name(params: Mapping[str, Any]) -> str:
    """``chat {model}``, or ``chat`` when the model is missing or not a string."""
    model = params.get("model")
    op = sc.GenAiOperationNameValues.CHAT
    return f"{op} {model}" if isinstance(model, str) and model else op


def finish_reason(stop_reason: Any) -> str | None:
    """The convention's finish reason for an Anthropic ``stop_reason`` (None if absent)."""
    if not isinstance(stop_reason, str):
        return None
    return FINISH_REASONS.get(stop_reason, stop_reason)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def response_attributes(message: Any) -> dict[str, AttributeValue]:
    """id, model, finish reasons and usage of a Message (parsed or rebuilt from events).

    Anthropic's ``input_tokens`` excludes cached tokens; the convention's input count is
    ``input + cache_read + cache_creation`` (docs/gen-ai/anthropic.md, note 19).
    """
    attrs: dict[str, AttributeValue] = {}
    msg_id = get(message, "id")
    if isinstance(msg_id, str):
        attrs[sc.GEN_AI_RESPONSE_ID] = msg_id
    model = get(message, "model")
    if isinstance(model, str):
        attrs[sc.GEN_AI_RESPONSE_MODEL] = model
    reason = finish_reason(get(message, "stop_reason"))
    if reason is not None:
        attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = [reason]
    attrs.update(usage_attributes(get(message, "usage")))
    return attrs


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """Token counts of an Anthropic ``usage`` object, in convention terms."""
    attrs: dict[str, AttributeValue] = {}
    if usage is None:
        return attrs
    base = _int(get(usage, "input_tokens"))
    read = _int(get(usage, "cache_read_input_tokens"))
    created = _int(get(usage, "cache_creation_input_tokens"))
    if base is not None:
        attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = base + (read or 0) + (created or 0)
    if read is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = read
    if created is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = created
    output = _int(get(usage, "output_tokens"))
    if output is not None:
        attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = output
    thinking = _int(get(get(usage, "output_tokens_details"), "thinking_tokens"))
    if thinking is not None:
        attrs[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thinking
    return attrs


# --- content parts ---------------------------------------------------------------

_MODALITY: Final[Mapping[str, str]] = {"image": "image", "document": "document"}


def _media_part(block: Any, kind: str) -> dict[str, Any]:
    """An image/document block → blob, uri or file part (by its ``source.type``)."""
    source = get(block, "source")
    src_type = get(source, "type")
    modality = _MODALITY.get(kind, kind)
    mime = get(source, "media_type")
    part: dict[str, Any]
    if src_type == "base64":
        part = {"type": "blob", "modality": modality, "content": get(source, "data")}
    elif src_type == "url":
        part = {"type": "uri", "modality": modality, "uri": get(source, "url")}
    elif src_type == "file":
        part = {"type": "file", "modality": modality, "file_id": get(source, "file_id")}
    elif src_type == "text":
        return {"type": "text", "content": get(source, "data")}
    else:
        return generic_part(block)
    if isinstance(mime, str):
        part["mime_type"] = mime
    return part


def generic_part(block: Any) -> dict[str, Any]:
    """A block we have no convention part for: kept whole as JSON, typed by its ``type``."""
    data = to_jsonable(block)
    if not isinstance(data, dict):
        return {"type": "unknown", "content": data}
    data.setdefault("type", "unknown")
    return data


def _tool_result_response(content: Any) -> Any:
    """A tool_result's content: a string as is, text-only block lists joined, else JSON."""
    if isinstance(content, str) or content is None:
        return content if content is not None else ""
    if isinstance(content, Iterable):
        blocks = list(content)
        if all(get(b, "type") == "text" for b in blocks):
            return "".join(str(get(b, "text") or "") for b in blocks)
        return to_jsonable(blocks)
    return to_jsonable(content)


def block_part(block: Any) -> dict[str, Any]:
    """One Anthropic content block (request or response side) → one convention part."""
    kind = get(block, "type")
    if kind == "text":
        return {"type": "text", "content": get(block, "text") or ""}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": get(block, "id"),
            "name": get(block, "name"),
            "arguments": to_jsonable(get(block, "input")),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": get(block, "tool_use_id"),
            "response": _tool_result_response(get(block, "content")),
        }
    if kind == "thinking":
        return {"type": "reasoning", "content": get(block, "thinking") or ""}
    if kind in ("image", "document"):
        return _media_part(block, kind)
    if kind == "server_tool_use":
        name = get(block, "name")
        return {
            "type": "server_tool_call",
            "id": get(block, "id"),
            "name": name,
            "server_tool_call": {"type": name, "input": to_jsonable(get(block, "input"))},
        }
    if isinstance(kind, str) and kind.endswith("_tool_result"):
        return {
            "type": "server_tool_call_response",
            "id": get(block, "tool_use_id"),
            "server_tool_call_response": {
                "type": kind,
                "content": to_jsonable(get(block, "content")),
            },
        }
    return generic_part(block)


def content_parts(content: Any) -> list[dict[str, Any]]:
    """A message's ``content`` (a string or a list of blocks) → parts."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if content is None:
        return []
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        return [block_part(b) for b in content]
    return [block_part(content)]


def input_messages(messages: Any) -> list[dict[str, Any]]:
    """The request's ``messages`` in order, as convention ChatMessages.

    A user turn that carries only tool_result blocks is reported with role ``tool``:
    in Anthropic's API tool results ride on user turns, while the conventions (and
    every consumer joining tool_call ids to results) expect the ``tool`` role.
    """
    out: list[dict[str, Any]] = []
    if not isinstance(messages, Iterable) or isinstance(messages, (str, bytes, Mapping)):
        return out
    for msg in messages:
        role = get(msg, "role")
        parts = content_parts(get(msg, "content"))
        if role == "user" and parts and all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        out.append({"role": role if isinstance(role, str) else "user", "parts": parts})
    return out


def system_instructions(system: Any) -> list[dict[str, Any]]:
    """``system`` (a string or text blocks) → the system-instructions part list."""
    return content_parts(system) if _given(system) else []


def output_messages(message: Any) -> list[dict[str, Any]]:
    """The one assistant choice of a Message as a convention OutputMessage list."""
    out: dict[str, Any] = {
        "role": get(message, "role") or "assistant",
        "parts": content_parts(get(message, "content")),
    }
    reason = finish_reason(get(message, "stop_reason"))
    if reason is not None:
        out["finish_reason"] = reason
    return [out]


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """The request's ``tools`` as convention tool definitions.

    Client tools (with ``input_schema``) are ``function`` definitions; Anthropic's
    server tools (``web_search_…``, ``bash_…``) keep their own ``type``.
    """
    out: list[dict[str, Any]] = []
    if not isinstance(tools, Iterable) or isinstance(tools, (str, bytes, Mapping)):
        return out
    for tool in tools:
        name = get(tool, "name")
        kind = get(tool, "type")
        if get(tool, "input_schema") is not None or kind in (None, "custom"):
            entry: dict[str, Any] = {"type": "function", "name": name}
            desc = get(tool, "description")
            if isinstance(desc, str):
                entry["description"] = desc
            schema = get(tool, "input_schema")
            if schema is not None:
                entry["parameters"] = to_jsonable(schema)
        else:
            entry = {"type": kind, "name": name}
        out.append(entry)
    return out
