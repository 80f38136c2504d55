"""Bedrock Converse shapes → GenAI semantic-convention attributes and message JSON.

Why pure functions: ``converse`` and ``converse_stream`` share one request shape (boto3
hands the call's keyword arguments over as plain dicts) and, once a stream's events are
folded back, one response shape; nothing here imports boto3 or raises on odd input (an
unknown content block is kept whole as JSON, never dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._shapes import get

# Converse stopReason → the output-message schema's finish reasons; others pass through.
FINISH_REASONS: Final[Mapping[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def request_attributes(params: Mapping[str, Any], *, stream: bool) -> dict[str, AttributeValue]:
    """Span-start attributes of a Converse request: ``inferenceConfig``, the guardrail."""
    attrs: dict[str, AttributeValue] = {}
    config = params.get("inferenceConfig")
    if config is not None:  # (absent on many calls: its four reads skipped)
        _inference_attributes(config, attrs)
    output = params.get("outputConfig")
    if output is not None and get(output, "textFormat") is not None:
        attrs[sc.GEN_AI_OUTPUT_TYPE] = sc.GenAiOutputTypeValues.JSON
    guardrail = params.get("guardrailConfig")
    guardrail = get(guardrail, "guardrailIdentifier") if guardrail is not None else None
    if isinstance(guardrail, str) and guardrail:
        attrs[sc.AWS_BEDROCK_GUARDRAIL_ID] = guardrail
    if stream:
        attrs[sc.GEN_AI_REQUEST_STREAM] = True
    return attrs


def _inference_attributes(config: Any, attrs: dict[str, AttributeValue]) -> None:
    """The ``inferenceConfig`` part of ``request_attributes``."""
    max_tokens = _int(get(config, "maxTokens"))
    if max_tokens is not None:
        attrs[sc.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
    for key, attr in (
        ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE),
        ("topP", sc.GEN_AI_REQUEST_TOP_P),
    ):
        value = get(config, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attr] = float(value)
    stops = get(config, "stopSequences")
    if isinstance(stops, (list, tuple)) and stops and all(isinstance(s, str) for s in stops):
        attrs[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = list(stops)


def finish_reason(stop_reason: Any) -> str | None:
    """The convention's finish reason for a Converse ``stopReason``."""
    if not isinstance(stop_reason, str) or not stop_reason:
        return None
    return FINISH_REASONS.get(stop_reason, stop_reason)


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """Token counts in convention terms: Bedrock's ``inputTokens`` leaves the cached
    tokens out, the convention's input total counts them (input + cache read + write)."""
    input_tokens, output_tokens, attrs = usage_counts(usage)
    if input_tokens is not None:
        # (the input total first, as the attributes were always ordered)
        attrs = {sc.GEN_AI_USAGE_INPUT_TOKENS: input_tokens, **attrs}
    if output_tokens is not None:
        attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
    return attrs


def usage_counts(usage: Any) -> tuple[int | None, int | None, dict[str, AttributeValue]]:
    """``usage_attributes`` in the parts a response records: the input total, the output
    tokens, and the cache attributes (read, creation)."""
    attrs: dict[str, AttributeValue] = {}
    if usage is None:
        return None, None, attrs
    read_usage: Callable[[str], Any] = usage.get if type(usage) is dict else partial(get, usage)
    base = _int(read_usage("inputTokens"))
    read = _int(read_usage("cacheReadInputTokens"))
    written = _int(read_usage("cacheWriteInputTokens"))
    if read is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = read
    if written is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = written
    total = base + (read or 0) + (written or 0) if base is not None else None
    return total, _int(read_usage("outputTokens")), attrs


# --- content blocks ----------------------------------------------------------------


def _tool_result(result: Any) -> Any:
    """A toolResult's content: text blocks joined, a lone json block as its data."""
    content = get(result, "content")
    if not isinstance(content, list):
        return to_jsonable(content)
    if content and all(isinstance(get(b, "text"), str) for b in content):
        return "".join(get(b, "text") for b in content)
    if len(content) == 1 and get(content[0], "json") is not None:
        return to_jsonable(get(content[0], "json"))
    return to_jsonable(content)


def _media(kind: str, block: Any) -> dict[str, Any]:
    fmt = get(block, "format")
    source = get(block, "source")
    part: dict[str, Any]
    data = get(source, "bytes")
    if data is not None:
        part = {"type": "blob", "modality": kind, "content": to_jsonable(data)}
    else:
        uri = get(get(source, "s3Location"), "uri")
        part = {"type": "uri", "modality": kind, "uri": uri}
    if isinstance(fmt, str):
        part["mime_type"] = f"{'application' if kind == 'document' else kind}/{fmt}"
    return part


def block_part(block: Any) -> dict[str, Any]:
    """One Converse content block → one convention part."""
    # a plain dict (what boto3 is given and returns) is read with its own ``get``: the
    # same reads as ``_shapes.get``, without a Python call per key
    read: Callable[[str], Any] = block.get if type(block) is dict else partial(get, block)
    text = read("text")
    if isinstance(text, str):
        return {"type": "text", "content": text}
    use = read("toolUse")
    if use is not None:
        part: dict[str, Any] = {"type": "tool_call", "name": get(use, "name")}
        call_id = get(use, "toolUseId")
        if isinstance(call_id, str):
            part["id"] = call_id
        part["arguments"] = to_jsonable(get(use, "input"))
        return part
    result = read("toolResult")
    if result is not None:
        out: dict[str, Any] = {"type": "tool_call_response", "response": _tool_result(result)}
        call_id = get(result, "toolUseId")
        if isinstance(call_id, str):
            out["id"] = call_id
        return out
    guarded = get(get(read("guardContent"), "text"), "text")
    if isinstance(guarded, str):  # text a guardrail assesses: content like any other
        return {"type": "text", "content": guarded}
    reasoning = read("reasoningContent")
    if reasoning is not None:
        return {"type": "reasoning", "content": get(get(reasoning, "reasoningText"), "text") or ""}
    for kind in ("image", "document", "video"):
        media = read(kind)
        if media is not None:
            return _media(kind, media)
    data = to_jsonable(block)
    if isinstance(data, dict):
        data = dict(data)
        data.setdefault("type", next(iter(data), "unknown") if len(data) == 1 else "unknown")
        return data
    return {"type": "unknown", "content": data}


def _sequence(value: Any) -> bool:
    """Whether ``value`` is read as a list of blocks or messages: a list (checked first by
    exact type: the ABC checks cost more than the rest of a short message), or any other
    iterable that is not text or a mapping."""
    if type(value) is list:
        return True
    return (
        value is not None
        and isinstance(value, Iterable)
        and not isinstance(value, (str, bytes, Mapping))
    )


def content_parts(content: Any) -> list[dict[str, Any]]:
    """A message's ``content`` list → parts."""
    if not _sequence(content):
        return []
    return [block_part(b) for b in content]


def input_messages(messages: Any) -> list[dict[str, Any]]:
    """``messages`` → convention ChatMessages; a user turn of only toolResult blocks is
    the ``tool`` role (where the conventions, and the tool-call id join, expect results)."""
    out: list[dict[str, Any]] = []
    if not _sequence(messages):
        return out
    for msg in messages:
        if type(msg) is dict:
            role, content = msg.get("role"), msg.get("content")
        else:
            role, content = get(msg, "role"), get(msg, "content")
        parts = content_parts(content)
        if role == "user" and parts and all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        out.append({"role": role if isinstance(role, str) else "user", "parts": parts})
    return out


def system_instructions(system: Any) -> list[dict[str, Any]]:
    """``system`` (a list of text / guard / cache-point blocks) → parts (cache points, which
    carry no content, are left out)."""
    if not _sequence(system):
        return []
    return [block_part(b) for b in system if get(b, "cachePoint") is None]


def output_messages(response: Any) -> list[dict[str, Any]]:
    """The response's one assistant message as a convention OutputMessage list."""
    message = get(get(response, "output"), "message")
    out: dict[str, Any] = {
        "role": get(message, "role") or "assistant",
        "parts": content_parts(get(message, "content")),
    }
    reason = finish_reason(get(response, "stopReason"))
    if reason is not None:
        out["finish_reason"] = reason
    return [out]


def tool_definitions(tool_config: Any) -> list[dict[str, Any]]:
    """``toolConfig.tools`` → convention function definitions (cache points left out)."""
    out: list[dict[str, Any]] = []
    tools = get(tool_config, "tools")
    if not isinstance(tools, Iterable) or isinstance(tools, (str, bytes, Mapping)):
        return out
    for tool in tools:
        spec = get(tool, "toolSpec")
        if spec is None:
            continue
        entry: dict[str, Any] = {"type": "function", "name": get(spec, "name")}
        desc = get(spec, "description")
        if isinstance(desc, str):
            entry["description"] = desc
        schema = get(get(spec, "inputSchema"), "json")
        if schema is not None:
            entry["parameters"] = to_jsonable(schema)
        out.append(entry)
    return out
