"""Chat messages from every instrumentation flavour, in one canonical shape.

Rules compare what the model said and asked for across providers and instrumentations, so
every message becomes the current GenAI form (``gen_ai.input.messages`` JSON schema)::

    {"role": "assistant", "parts": [{"type": "text", "content": "..."},
                                    {"type": "tool_call", "id": "call_1", "name": "refund",
                                     "arguments": {...}}]}
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": ...}]}

Sources read: the GenAI JSON attributes (string or structured), OpenAI-style messages
(``content`` / ``tool_calls`` / ``tool_call_id``: the older event bodies and OpenLLMetry's
indexed ``gen_ai.prompt.N.*`` attributes), and OpenInference's flattened
``llm.*_messages.N.message.*`` attributes. The field names below (``role``, ``parts``,
``content``...) are JSON schema fields of message bodies, not span attribute keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from tracejudge import semconv as sc
from tracejudge.model.spans import EventRecord

__all__ = [
    "INPUT_EVENTS",
    "last_assistant_text",
    "messages_from_events",
    "messages_from_indexed",
    "messages_from_openinference",
    "normalize_messages",
    "parse_json_text",
    "text_of",
    "tool_call_parts",
    "tool_responses",
    "unflatten",
]

# JSON fields of message bodies (GenAI schema and the OpenAI-style bodies it replaced).
ROLE = "role"
PARTS = "parts"
TYPE = "type"
CONTENT = "content"
ID = "id"
NAME = "name"
ARGUMENTS = "arguments"
RESPONSE = "response"
FINISH_REASON = "finish_reason"
TOOL_CALLS = "tool_calls"
TOOL_CALL_ID = "tool_call_id"
FUNCTION = "function"
FUNCTION_CALL = "function_call"
MESSAGE = "message"
INDEX = "index"
TEXT = "text"
PART_TEXT = "text"
PART_TOOL_CALL = "tool_call"
PART_TOOL_CALL_RESPONSE = "tool_call_response"
ROLE_ASSISTANT = "assistant"
ROLE_TOOL = "tool"
ROLE_USER = "user"
ROLE_SYSTEM = "system"


_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19
"""orjson rounds integers past 64 bits to floats; any such literal has a run of 19+ digits."""


def _may_hold_long_integer(text: str) -> bool:
    # bytes.translate + find run in C: about 0.4 us for a typical message list, several
    # times cheaper than a regex or walking the parsed value.
    return _LONG_NUMBER in text.encode("utf-8", "surrogatepass").translate(_DIGITS_ONLY)


def parse_json_text(value: Any) -> tuple[Any, bool]:
    """Parse a JSON string. Returns ``(value, True)`` for parsed or already-structured
    values, ``(raw_text, False)`` when the text is not JSON."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return value, False
    if isinstance(value, str):
        # orjson is about 4x faster than the stdlib, but refuses NaN/Infinity and lone
        # surrogates and rounds integers past 64 bits to floats; those texts (any with a
        # 19-digit run) are parsed by the stdlib, so values are exactly as before.
        if not _may_hold_long_integer(value):
            try:
                return orjson.loads(value), True
            except orjson.JSONDecodeError:
                pass
        try:
            return json.loads(value), True
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            return value, False
    return value, True


def _maybe_json(value: Any) -> Any:
    parsed, ok = parse_json_text(value)
    return parsed if ok else value


def _arguments(value: Any) -> Any:
    """Tool-call arguments: parsed JSON when they are JSON text, else as given."""
    if isinstance(value, str):
        parsed, ok = parse_json_text(value)
        return parsed if ok else value
    return value


def _openai_tool_call(call: Any) -> dict[str, Any] | None:
    if not isinstance(call, Mapping):
        return None
    fn = call.get(FUNCTION)
    source = fn if isinstance(fn, Mapping) else call
    name = source.get(NAME)
    if not isinstance(name, str):
        return None
    part: dict[str, Any] = {TYPE: PART_TOOL_CALL, NAME: name}
    if call.get(ID) is not None:
        part[ID] = str(call[ID])
    if source.get(ARGUMENTS) is not None:
        part[ARGUMENTS] = _arguments(source[ARGUMENTS])
    return part


def _content_text(content: Any) -> str | None:
    """OpenAI-style content: a string, or a list of ``{"type": "text", "text": ...}``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for item in content:
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, Mapping):
                text = item.get(TEXT, item.get(CONTENT))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts) if texts else None
    return None


def _from_openai_style(msg: Mapping[str, Any], default_role: str) -> dict[str, Any]:
    role = msg.get(ROLE)
    role = role if isinstance(role, str) and role else default_role
    parts: list[dict[str, Any]] = []
    content = msg.get(CONTENT)
    tool_call_id = msg.get(TOOL_CALL_ID)
    if tool_call_id is None and role == ROLE_TOOL:
        tool_call_id = msg.get(ID)
    if tool_call_id is not None:
        parts.append(
            {TYPE: PART_TOOL_CALL_RESPONSE, ID: str(tool_call_id), RESPONSE: _maybe_json(content)}
        )
    else:
        text = _content_text(content)
        if text is not None:
            parts.append({TYPE: PART_TEXT, CONTENT: text})
    calls = msg.get(TOOL_CALLS)
    if isinstance(calls, str):
        calls = _maybe_json(calls)
    if isinstance(calls, Mapping):  # indexed attributes with a gap unflatten to a dict
        calls = list(calls.values())
    legacy = msg.get(FUNCTION_CALL)  # OpenAI's pre-tools function calling
    if isinstance(legacy, Mapping):
        calls = [*(calls if isinstance(calls, list) else []), legacy]
    if isinstance(calls, list):
        for call in calls:
            part = _openai_tool_call(call)
            if part is not None:
                parts.append(part)
    out: dict[str, Any] = {ROLE: role, PARTS: parts}
    if isinstance(msg.get(FINISH_REASON), str):
        out[FINISH_REASON] = msg[FINISH_REASON]
    return out


def normalize_messages(value: Any, default_role: str = ROLE_USER) -> list[dict[str, Any]] | None:
    """A GenAI messages attribute (JSON text or structured) -> canonical messages.

    Returns None when there is nothing usable (missing, not JSON, not a list of objects).
    Messages already in the GenAI form are kept; OpenAI-style ones are converted.
    """
    if value is None:
        return None
    parsed, ok = parse_json_text(value)
    if not ok or not isinstance(parsed, list):
        return None
    out: list[dict[str, Any]] = []
    for msg in parsed:
        if not isinstance(msg, Mapping):
            continue
        parts = msg.get(PARTS)
        if isinstance(parts, list):
            clean = dict(msg)
            clean[PARTS] = [dict(p) for p in parts if isinstance(p, Mapping)]
            if not isinstance(clean.get(ROLE), str):
                clean[ROLE] = default_role
            out.append(clean)
        else:
            out.append(_from_openai_style(msg, default_role))
    return out


_MAX_SEGMENTS = 32


def unflatten(attributes: Mapping[str, Any], prefix: str) -> Any:
    """Rebuild ``prefix.0.a.b = v`` style attributes into nested lists/dicts.

    Numeric segments become list positions (sorted by number; gaps are skipped), so
    ``llm.input_messages.1.message.role`` -> ``[..., {"message": {"role": ...}}]``.
    Keys nested deeper than 32 segments are skipped (no instrumentation nests that deep).
    """
    head = prefix + "."
    tree: dict[str, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        node = tree
        segments = key[len(head) :].split(".")
        if len(segments) > _MAX_SEGMENTS:  # no real convention nests this deep
            continue
        for seg in segments[:-1]:
            child = node.get(seg)
            if not isinstance(child, dict):
                child = {}
                node[seg] = child
            node = child
        node[segments[-1]] = value
    return _listify(tree) if tree else None


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(k.isdigit() for k in node):
        return [_listify(node[k]) for k in sorted(node, key=int)]
    return {k: _listify(v) for k, v in node.items()}


def dig(node: Any, dotted: str) -> Any:
    """Follow a dotted attribute suffix (e.g. ``message.role``) through an unflattened tree."""
    for seg in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(seg)
    return node


def messages_from_openinference(
    attributes: Mapping[str, Any], prefix: str, default_role: str
) -> list[dict[str, Any]] | None:
    """OpenInference ``llm.input_messages`` / ``llm.output_messages`` flattened attributes."""
    tree = unflatten(attributes, prefix)
    if not isinstance(tree, list):
        return None
    out: list[dict[str, Any]] = []
    for entry in tree:
        role = dig(entry, sc.FOREIGN_MESSAGE_ROLE)
        body: dict[str, Any] = {ROLE: role if isinstance(role, str) else default_role}
        content = dig(entry, sc.FOREIGN_MESSAGE_CONTENT)
        if content is None:
            contents = dig(entry, sc.FOREIGN_MESSAGE_CONTENTS)
            if isinstance(contents, list):
                texts = [dig(c, sc.FOREIGN_MESSAGE_CONTENT_TEXT) for c in contents]
                content = "\n".join(t for t in texts if isinstance(t, str)) or None
        body[CONTENT] = content
        call_id = dig(entry, sc.FOREIGN_MESSAGE_TOOL_CALL_ID)
        if call_id is not None:
            body[TOOL_CALL_ID] = call_id
        calls = dig(entry, sc.FOREIGN_MESSAGE_TOOL_CALLS)
        if isinstance(calls, list):
            body[TOOL_CALLS] = [
                {
                    ID: dig(c, sc.FOREIGN_TOOL_CALL_ID),
                    NAME: dig(c, sc.FOREIGN_TOOL_CALL_FUNCTION_NAME),
                    ARGUMENTS: dig(c, sc.FOREIGN_TOOL_CALL_FUNCTION_ARGUMENTS),
                }
                for c in calls
            ]
        out.append(_from_openai_style(body, default_role))
    return out


def messages_from_indexed(
    attributes: Mapping[str, Any], prefix: str, default_role: str
) -> list[dict[str, Any]] | None:
    """OpenLLMetry ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` indexed attributes."""
    tree = unflatten(attributes, prefix)
    if not isinstance(tree, list):
        return None
    return [_from_openai_style(m, default_role) for m in tree if isinstance(m, Mapping)]


INPUT_EVENTS: Final[dict[str, str]] = {
    sc.FOREIGN_GEN_AI_SYSTEM_MESSAGE: ROLE_SYSTEM,
    sc.FOREIGN_GEN_AI_USER_MESSAGE: ROLE_USER,
    sc.FOREIGN_GEN_AI_ASSISTANT_MESSAGE: ROLE_ASSISTANT,
    sc.FOREIGN_GEN_AI_TOOL_MESSAGE: ROLE_TOOL,
}
"""The older events carrying one input message each, and the role it has (its body, in
``gen_ai.event.content`` or as the event's attributes, is the message)."""


def _event_body(event: EventRecord) -> dict[str, Any]:
    raw = event.attributes.get(sc.FOREIGN_GEN_AI_EVENT_CONTENT)
    if raw is not None:
        parsed = _maybe_json(raw)
        if isinstance(parsed, Mapping):
            return dict(parsed)
        return {CONTENT: parsed}
    body = dict(event.attributes)
    for key in (TOOL_CALLS, MESSAGE):
        if isinstance(body.get(key), str):
            body[key] = _maybe_json(body[key])
    return body


def messages_from_events(
    events: Sequence[EventRecord],
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """Input and output messages carried by span events (the older event-based form, and
    ``gen_ai.client.inference.operation.details``). ``None`` where the events had none."""
    inputs: list[dict[str, Any]] = []
    outputs: list[tuple[int, dict[str, Any]]] = []
    details_in: list[dict[str, Any]] | None = None
    details_out: list[dict[str, Any]] | None = None
    for event in events:
        name = event.name
        if name == sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS:
            details_in = normalize_messages(event.attributes.get(sc.GEN_AI_INPUT_MESSAGES))
            details_out = normalize_messages(
                event.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES), ROLE_ASSISTANT
            )
        elif name in INPUT_EVENTS:
            inputs.append(_from_openai_style(_event_body(event), INPUT_EVENTS[name]))
        elif name == sc.FOREIGN_GEN_AI_CHOICE:
            body = _event_body(event)
            msg = body.get(MESSAGE)
            message = dict(msg) if isinstance(msg, Mapping) else {}
            if isinstance(body.get(FINISH_REASON), str):
                message.setdefault(FINISH_REASON, body[FINISH_REASON])
            index = body.get(INDEX)
            outputs.append(
                (
                    index if isinstance(index, int) else len(outputs),
                    _from_openai_style(message, ROLE_ASSISTANT),
                )
            )
        elif name == sc.FOREIGN_GEN_AI_CONTENT_PROMPT:
            found = normalize_messages(event.attributes.get(sc.FOREIGN_GEN_AI_PROMPT))
            inputs.extend(found or [])
        elif name == sc.FOREIGN_GEN_AI_CONTENT_COMPLETION:
            found = normalize_messages(
                event.attributes.get(sc.FOREIGN_GEN_AI_COMPLETION), ROLE_ASSISTANT
            )
            outputs.extend((len(outputs), m) for m in found or [])
    final_in = details_in if details_in is not None else (inputs or None)
    ordered_out = [m for _, m in sorted(outputs, key=lambda pair: pair[0])]
    final_out = details_out if details_out is not None else (ordered_out or None)
    return final_in, final_out


def text_of(message: Mapping[str, Any]) -> str | None:
    """The text parts of one canonical message joined by newlines (None if it has none)."""
    texts = [
        p[CONTENT]
        for p in message.get(PARTS, [])
        if p.get(TYPE) == PART_TEXT and isinstance(p.get(CONTENT), str)
    ]
    return "\n".join(texts) if texts else None


def readable_text(text: str) -> str:
    """An assistant text as people read it: a JSON document (some orchestrators answer in
    JSON: ``{"message": "Ship to:\\n12 Elm St"}``) becomes its string values, decoded and
    one per line, so escapes (``\\n``) and the words inside are what checks see. Other
    text is returned as it is."""
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return text
    parsed, ok = parse_json_text(text)
    if not ok or not isinstance(parsed, (dict, list)):
        return text
    out: list[str] = []
    _strings(parsed, out)
    return "\n".join(out) if out else text


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def last_assistant_text(messages: Sequence[Mapping[str, Any]] | None) -> str | None:
    """Text of the last assistant message (the answer the user saw)."""
    for message in reversed(messages or []):
        if message.get(ROLE) == ROLE_ASSISTANT:
            return text_of(message)
    return None


def tool_call_parts(messages: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """All ``tool_call`` parts of the messages, in order."""
    return [
        part
        for message in messages or []
        for part in message.get(PARTS, [])
        if part.get(TYPE) == PART_TOOL_CALL
    ]


def tool_responses(messages: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """``tool_call_response`` parts by tool-call id, in order of appearance.

    Any role counts, not only ``tool``: Anthropic sends tool results inside ``user``
    messages and instrumentations keep that role.
    """
    out: dict[str, Any] = {}
    for message in messages or []:
        for part in message.get(PARTS, []):
            if part.get(TYPE) == PART_TOOL_CALL_RESPONSE and part.get(ID) is not None:
                out.setdefault(str(part[ID]), part.get(RESPONSE))
    return out
