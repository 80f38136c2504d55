"""Gemini (``google-genai``) shapes → GenAI semantic-convention attributes and message JSON.

Why pure functions: the same conversion serves a ``GenerateContentResponse``, one rebuilt
from stream chunks, and the keyword arguments of ``generate_content`` in every form the SDK
accepts — ``contents`` as a string, a list of strings or parts, ``Content`` objects or
dicts; ``config`` as a ``GenerateContentConfig`` or a dict. Reading goes through ``get``
(dicts and pydantic models alike), so nothing here depends on the SDK's classes and
nothing raises on odd input: an unknown part is kept whole as JSON, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._shapes import get

# Gemini FinishReason → the output-message schema's finish reasons (stop | length |
# content_filter | tool_call | error); other values pass through lower-cased.
FINISH_REASONS: Final[Mapping[str, str]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
}

# config field → (attribute, accepted python types)
_CONFIG_PARAMS: Final[tuple[tuple[str, str, type | tuple[type, ...]], ...]] = (
    ("max_output_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS, int),
    ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE, (int, float)),
    ("top_p", sc.GEN_AI_REQUEST_TOP_P, (int, float)),
    ("top_k", sc.GEN_AI_REQUEST_TOP_K, (int, float)),
    ("seed", sc.GEN_AI_REQUEST_SEED, int),
    ("presence_penalty", sc.GEN_AI_REQUEST_PRESENCE_PENALTY, (int, float)),
    ("frequency_penalty", sc.GEN_AI_REQUEST_FREQUENCY_PENALTY, (int, float)),
)
_DOUBLES: Final = frozenset(
    {
        sc.GEN_AI_REQUEST_TEMPERATURE,
        sc.GEN_AI_REQUEST_TOP_P,
        sc.GEN_AI_REQUEST_PRESENCE_PENALTY,
        sc.GEN_AI_REQUEST_FREQUENCY_PENALTY,
    }
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_name(model: Any) -> str | None:
    """The model id without the ``models/`` resource prefix the SDK also accepts."""
    if not isinstance(model, str) or not model:
        return None
    return model.removeprefix("models/")


def request_attributes(config: Any, *, stream: bool) -> dict[str, AttributeValue]:
    """Span-start attributes read from ``config`` (operation, provider, model and server
    are added by ``ModelCallTelemetry``)."""
    attrs: dict[str, AttributeValue] = {}
    for key, attr, typ in _CONFIG_PARAMS:
        value = get(config, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not isinstance(value, typ):
            continue
        if attr in _DOUBLES:
            attrs[attr] = float(value)
        elif attr == sc.GEN_AI_REQUEST_TOP_K:
            attrs[attr] = int(value)  # a float in Gemini's schema, an int in the conventions
        elif isinstance(value, int):
            attrs[attr] = value
    stops = get(config, "stop_sequences")
    if isinstance(stops, (list, tuple)) and stops and all(isinstance(s, str) for s in stops):
        attrs[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = list(stops)
    count = _int(get(config, "candidate_count"))
    if count is not None and count != 1:
        attrs[sc.GEN_AI_REQUEST_CHOICE_COUNT] = count
    mime = get(config, "response_mime_type")
    if mime == "application/json" or get(config, "response_schema") is not None:
        attrs[sc.GEN_AI_OUTPUT_TYPE] = sc.GenAiOutputTypeValues.JSON
    elif isinstance(mime, str) and mime == "text/plain":
        attrs[sc.GEN_AI_OUTPUT_TYPE] = sc.GenAiOutputTypeValues.TEXT
    if stream:
        attrs[sc.GEN_AI_REQUEST_STREAM] = True
    return attrs


def finish_reason(reason: Any) -> str | None:
    """The convention's finish reason for a Gemini ``FinishReason`` (enum or string)."""
    value = getattr(reason, "value", reason)
    if not isinstance(value, str) or not value or value == "FINISH_REASON_UNSPECIFIED":
        return None
    return FINISH_REASONS.get(value, value.lower())


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """Token counts of ``usage_metadata`` in convention terms.

    Gemini's prompt count already includes the cached tokens (the convention's input);
    its thinking tokens are counted apart from the candidates', while the convention's
    output total includes reasoning: output = candidates + thoughts.
    """
    attrs: dict[str, AttributeValue] = {}
    if usage is None:
        return attrs
    prompt = _int(get(usage, "prompt_token_count"))
    if prompt is not None:
        attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = prompt
    cached = _int(get(usage, "cached_content_token_count"))
    if cached is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cached
    candidates = _int(get(usage, "candidates_token_count"))
    thoughts = _int(get(usage, "thoughts_token_count"))
    if candidates is not None or thoughts is not None:
        attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = (candidates or 0) + (thoughts or 0)
    if thoughts is not None:
        attrs[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thoughts
    return attrs


# --- content parts ---------------------------------------------------------------


def _blob_part(blob: Any) -> dict[str, Any]:
    mime = get(blob, "mime_type")
    modality = mime.split("/", 1)[0] if isinstance(mime, str) and "/" in mime else "unknown"
    data = get(blob, "data")
    part: dict[str, Any] = {
        "type": "blob",
        "modality": modality,
        "content": data if isinstance(data, str) else to_jsonable(data),
    }
    if isinstance(mime, str):
        part["mime_type"] = mime
    return part


def part_of(part: Any) -> dict[str, Any]:
    """One Gemini ``Part`` (request or response side) → one convention part."""
    if isinstance(part, str):
        return {"type": "text", "content": part}
    text = get(part, "text")
    if isinstance(text, str):
        if get(part, "thought") is True:
            return {"type": "reasoning", "content": text}
        return {"type": "text", "content": text}
    call = get(part, "function_call")
    if call is not None:
        out: dict[str, Any] = {"type": "tool_call", "name": get(call, "name")}
        call_id = get(call, "id")
        if isinstance(call_id, str) and call_id:
            out["id"] = call_id
        out["arguments"] = to_jsonable(get(call, "args"))
        return out
    response = get(part, "function_response")
    if response is not None:
        result: dict[str, Any] = {
            "type": "tool_call_response",
            "response": to_jsonable(get(response, "response")),
        }
        call_id = get(response, "id")
        if isinstance(call_id, str) and call_id:
            result["id"] = call_id
        return result
    inline = get(part, "inline_data")
    if inline is not None:
        return _blob_part(inline)
    file_data = get(part, "file_data")
    if file_data is not None:
        mime = get(file_data, "mime_type")
        uri_part: dict[str, Any] = {
            "type": "uri",
            "modality": mime.split("/", 1)[0] if isinstance(mime, str) else "unknown",
            "uri": get(file_data, "file_uri"),
        }
        if isinstance(mime, str):
            uri_part["mime_type"] = mime
        return uri_part
    data = to_jsonable(part)
    if isinstance(data, dict):
        kept = {k: v for k, v in data.items() if v is not None}
        kept.setdefault("type", "unknown")
        return kept
    return {"type": "unknown", "content": data}


def _is_content(value: Any) -> bool:
    """A ``Content`` (a turn: role and parts) rather than a part or a string."""
    return get(value, "parts") is not None or isinstance(get(value, "role"), str)


def _parts(value: Any) -> list[dict[str, Any]]:
    parts = get(value, "parts")
    if not isinstance(parts, Iterable) or isinstance(parts, (str, bytes, Mapping)):
        return []
    return [part_of(p) for p in parts]


def _role(role: Any, parts: list[dict[str, Any]]) -> str:
    """Gemini's ``model`` role is the conventions' ``assistant``; a user turn of only
    function responses is the ``tool`` role (the conventions' home of tool results)."""
    if role == "model":
        return "assistant"
    if parts and all(p["type"] == "tool_call_response" for p in parts):
        return "tool"
    return role if isinstance(role, str) and role else "user"


def input_messages(contents: Any) -> list[dict[str, Any]]:
    """``contents`` in each form the SDK accepts → convention ChatMessages, in order.

    Loose parts (strings, ``Part``s) between turns gather into one user turn, as the SDK
    itself does when it builds the request.
    """
    if contents is None:
        return []
    items: list[Any]
    if isinstance(contents, (str, Mapping)) or not isinstance(contents, Iterable):
        items = [contents]
    else:
        items = list(contents)
    out: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    for item in items:
        if _is_content(item):
            if loose:
                out.append({"role": _role("user", loose), "parts": loose})
                loose = []
            parts = _parts(item)
            out.append({"role": _role(get(item, "role"), parts), "parts": parts})
        else:
            loose.append(part_of(item))
    if loose:
        out.append({"role": _role("user", loose), "parts": loose})
    return out


def system_instructions(instruction: Any) -> list[dict[str, Any]]:
    """``config.system_instruction`` (a string, parts or a ``Content``) → parts."""
    if instruction is None:
        return []
    if isinstance(instruction, str):
        return [{"type": "text", "content": instruction}]
    if _is_content(instruction):
        return _parts(instruction)
    if isinstance(instruction, Iterable) and not isinstance(instruction, (bytes, Mapping)):
        return [part_of(p) for p in instruction]
    return [part_of(instruction)]


def output_messages(response: Any) -> list[dict[str, Any]]:
    """Each candidate of a response as a convention OutputMessage."""
    out: list[dict[str, Any]] = []
    for candidate in get(response, "candidates") or ():
        content = get(candidate, "content")
        message: dict[str, Any] = {
            "role": "assistant",
            "parts": _parts(content) if content is not None else [],
        }
        reason = finish_reason(get(candidate, "finish_reason"))
        if reason is not None:
            message["finish_reason"] = reason
        out.append(message)
    return out


def _declaration(decl: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "function", "name": get(decl, "name")}
    desc = get(decl, "description")
    if isinstance(desc, str):
        entry["description"] = desc
    schema = get(decl, "parameters_json_schema")
    if schema is None:
        schema = get(decl, "parameters")
    if schema is not None:
        entry["parameters"] = to_jsonable(schema)
    return entry


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """``config.tools`` → convention tool definitions: each function declaration, a Python
    function the SDK calls automatically (its name and docstring), and Gemini's built-in
    tools (``google_search``, ``code_execution``...) by their key."""
    out: list[dict[str, Any]] = []
    if not isinstance(tools, Iterable) or isinstance(tools, (str, bytes, Mapping)):
        return out
    for tool in tools:
        if callable(tool) and not hasattr(tool, "function_declarations"):
            entry: dict[str, Any] = {"type": "function", "name": getattr(tool, "__name__", None)}
            doc = getattr(tool, "__doc__", None)
            if isinstance(doc, str) and doc.strip():
                entry["description"] = doc.strip()
            out.append(entry)
            continue
        declarations = get(tool, "function_declarations")
        if declarations:
            out.extend(_declaration(d) for d in declarations)
            continue
        data = to_jsonable(tool)
        if isinstance(data, dict):
            out.extend({"type": key, "name": key} for key, v in data.items() if v is not None)
    return out
