"""The ``cohere`` patch: v2 ``chat`` and ``chat_stream`` (``ClientV2``, ``AsyncClientV2``,
``client.v2``) as GenAI ``chat`` spans.

Why on ``V2Client``/``AsyncV2Client``: ``ClientV2`` inherits its v2 methods from them, and
``Client().v2`` is one, so one patch covers every way to reach the v2 Chat API.
``chat_stream`` is a generator function (the async one an async generator function): the
shared generator wrapper (``instrumentation._generator``) observes it.

Cohere's v2 messages and tool definitions have OpenAI's chat shapes (``role``,
``content`` as a string or typed parts, ``tool_calls`` with ``function.arguments`` as
JSON text, ``tool_call_id``), so the request side is the OpenAI chat code's; an assistant
turn's ``tool_plan`` (the model's plan before its tool calls) is a ``reasoning`` part.
The response is Cohere's own: one ``message``, a ``finish_reason`` in capitals, and usage
both billed and counted (the conventions ask for the billed counts when both exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._context import PendingToolCall
from tracejudge.instrumentation._genai import ModelCallTelemetry, message, tool_call_part
from tracejudge.instrumentation._generator import GeneratorMethod, GeneratorMethods
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._provider import Endpoint, ProviderPatcher, ProviderSpec, Target
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get, parse_arguments, url_server
from tracejudge.instrumentation.openai import _chat
from tracejudge.instrumentation.openai._common import _INT, _NUMBER

SUPPORTED: Final = SupportedVersions("5.8", "8")
"""cohere releases tracejudge is tested on (see docs/instrumentation.md)."""

PROVIDER: Final = sc.GenAiProviderNameValues.COHERE

PARAMS: Final[dict[str, tuple[str, int]]] = {
    "max_tokens": (sc.GEN_AI_REQUEST_MAX_TOKENS, _INT),
    "temperature": (sc.GEN_AI_REQUEST_TEMPERATURE, _NUMBER),
    "p": (sc.GEN_AI_REQUEST_TOP_P, _NUMBER),
    "k": (sc.GEN_AI_REQUEST_TOP_K, _INT),
    "frequency_penalty": (sc.GEN_AI_REQUEST_FREQUENCY_PENALTY, _NUMBER),
    "presence_penalty": (sc.GEN_AI_REQUEST_PRESENCE_PENALTY, _NUMBER),
    "seed": (sc.GEN_AI_REQUEST_SEED, _INT),
}

# Cohere's finish reasons → the conventions' (stop | length | content_filter | tool_call |
# error); others pass through lower-cased.
FINISH_REASONS: Final[Mapping[str, str]] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_call",
    "ERROR": "error",
    "TIMEOUT": "error",
}


def server_of(resource: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` of the client's base URL."""
    wrapper = get(resource, "_client_wrapper") or get(
        get(resource, "_raw_client"), "_client_wrapper"
    )
    return url_server(get(wrapper, "_base_url"))


def input_messages(messages: Any) -> list[dict[str, Any]] | None:
    """v2 ``messages`` → convention messages (OpenAI's shapes, plus ``tool_plan``)."""
    out = _chat.input_messages(messages)
    if out is not None and isinstance(messages, (list, tuple)):
        for converted, original in zip(out, messages, strict=True):
            plan = get(original, "tool_plan")
            if isinstance(plan, str) and plan:
                converted["parts"].insert(0, {"type": "reasoning", "content": plan})
    return out


def _start(
    runtime: Runtime, resource: Any, kwargs: Mapping[str, Any], *, stream: bool
) -> ModelCallTelemetry:
    attrs = _chat.chat_request_attributes(kwargs, PARAMS, stop_key="stop_sequences")
    if stream:
        attrs[sc.GEN_AI_REQUEST_STREAM] = True
    address, port = server_of(resource)
    return _chat.open_chat(runtime, PROVIDER, kwargs, attrs, address, port, input_messages)


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span of a v2 ``chat`` call."""
    return _start(runtime, resource, kwargs, stream=False)


def start_stream(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the span of a v2 ``chat_stream`` call."""
    return _start(runtime, resource, kwargs, stream=True)


# --- responses ---------------------------------------------------------------------


def finish_reason(reason: Any) -> str | None:
    """The conventions' finish reason for Cohere's (unknown ones lower-cased, kept)."""
    value = getattr(reason, "value", reason)
    if not isinstance(value, str) or not value:
        return None
    return FINISH_REASONS.get(value, value.lower())


def _count(value: Any) -> int | None:
    """A token count (the SDK types them as floats)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value == int(value) else None


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """Token counts in convention terms: the billed counts where Cohere reports them,
    else the counted ones; ``cached_tokens`` as the cache read."""
    attrs: dict[str, AttributeValue] = {}
    billed, counted = get(usage, "billed_units"), get(usage, "tokens")
    for key, attr in (
        ("input_tokens", sc.GEN_AI_USAGE_INPUT_TOKENS),
        ("output_tokens", sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    ):
        value = _count(get(billed, key))
        if value is None:
            value = _count(get(counted, key))
        if value is not None:
            attrs[attr] = value
    cached = _count(get(usage, "cached_tokens"))
    if cached is not None:
        attrs[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cached
    return attrs


def tool_calls_of(msg: Any) -> list[PendingToolCall]:
    """The tool calls a response message asks for (arguments parsed when they are JSON)."""
    calls: list[PendingToolCall] = []
    for tc in get(msg, "tool_calls") or ():
        fn = get(tc, "function")
        name = get(fn, "name")
        if isinstance(name, str):
            call_id = get(tc, "id")
            calls.append(
                PendingToolCall(
                    call_id if isinstance(call_id, str) else "",
                    name,
                    parse_arguments(get(fn, "arguments")),
                )
            )
    return calls


def record(call: ModelCallTelemetry, response: Any, *, complete: bool) -> None:
    """Record a v2 ``ChatResponse``, complete or as far as a stream got."""
    usage = usage_attributes(get(response, "usage"))
    reason = finish_reason(get(response, "finish_reason"))
    rid = get(response, "id")
    in_tok = usage.pop(sc.GEN_AI_USAGE_INPUT_TOKENS, None)
    out_tok = usage.pop(sc.GEN_AI_USAGE_OUTPUT_TOKENS, None)
    call.set_response(
        response_id=rid if isinstance(rid, str) else None,
        finish_reasons=[reason] if reason is not None else None,
        input_tokens=in_tok if isinstance(in_tok, int) else None,
        output_tokens=out_tok if isinstance(out_tok, int) else None,
        extra=usage,
    )
    msg = get(response, "message")
    calls = tool_calls_of(msg)
    parts: list[dict[str, Any]] = []
    plan = get(msg, "tool_plan")
    if isinstance(plan, str) and plan:
        parts.append({"type": "reasoning", "content": plan})
    parts.extend(_chat.content_parts(get(msg, "content")))
    parts.extend(tool_call_part(c.call_id or None, c.name, c.arguments) for c in calls)
    if complete or parts:
        call.set_output([message("assistant", parts, reason)], calls, record_tool_calls=complete)


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a complete v2 ``ChatResponse``."""
    record(call, response, complete=True)


class EventAccumulator:
    """Folds ``chat_stream`` events (``message-start``, ``content-*``, ``tool-plan-delta``,
    ``tool-call-*``, ``message-end``) back into a ``ChatResponse``."""

    __slots__ = ("calls", "content", "plan", "response", "started")

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.content: dict[int, dict[str, str]] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.plan: list[str] = []
        self.started = False

    def add(self, event: Any) -> None:
        """Fold one event in (citations and unknown events carry nothing recorded)."""
        self.started = True
        kind = get(event, "type")
        index = get(event, "index")
        slot = index if isinstance(index, int) else 0
        delta_message = get(get(event, "delta"), "message")
        if kind == "content-delta" or kind == "content-start":
            content = get(delta_message, "content")
            part = self.content.setdefault(slot, {"type": "text"})
            if get(content, "type") == "thinking" or get(content, "thinking") is not None:
                part["type"] = "thinking"
            for key in ("text", "thinking"):
                piece = get(content, key)
                if isinstance(piece, str):
                    part[key] = part.get(key, "") + piece
        elif kind == "tool-plan-delta":
            piece = get(delta_message, "tool_plan")
            if isinstance(piece, str):
                self.plan.append(piece)
        elif kind == "tool-call-start" or kind == "tool-call-delta":
            self._tool_call(slot, get(delta_message, "tool_calls"))
        elif kind == "message-start":
            self.response["id"] = get(event, "id")
        elif kind == "message-end":
            delta = get(event, "delta")
            self.response["finish_reason"] = get(delta, "finish_reason")
            self.response["usage"] = get(delta, "usage")

    def _tool_call(self, slot: int, tool_call: Any) -> None:
        entry = self.calls.setdefault(slot, {"function": {"arguments": ""}})
        call_id = get(tool_call, "id")
        if isinstance(call_id, str):
            entry["id"] = call_id
        fn = get(tool_call, "function")
        name = get(fn, "name")
        if isinstance(name, str):
            entry["function"]["name"] = name
        arguments = get(fn, "arguments")
        if isinstance(arguments, str):
            entry["function"]["arguments"] += arguments

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record the rebuilt response: complete when ``message-end`` arrived."""
        if not self.started:
            return
        response = {
            **self.response,
            "message": {
                "tool_plan": "".join(self.plan),
                "content": [self.content[i] for i in sorted(self.content)],
                "tool_calls": [self.calls[i] for i in sorted(self.calls)],
            },
        }
        record(call, response, complete=complete and "finish_reason" in self.response)


CHAT: Final = Endpoint(start, finish)
CHAT_STREAM: Final = Endpoint(start_stream, finish, EventAccumulator)

SPEC: Final = ProviderSpec(
    name="cohere",
    sdk_module="cohere",
    targets=(Target("cohere.v2.client", "V2Client", "AsyncV2Client", CHAT, ("chat",)),),
    # chat never returns a stream: the generator types never match its result
    stream_classes=("types.GeneratorType", "types.AsyncGeneratorType"),
    extension=lambda: GeneratorMethods(
        GeneratorMethod("cohere.v2.client", "V2Client", "chat_stream", CHAT_STREAM, "sync"),
        GeneratorMethod(
            "cohere.v2.client", "AsyncV2Client", "chat_stream", CHAT_STREAM, "async_generator"
        ),
    ),
    distribution="cohere",
    supported=SUPPORTED,
)


class CoherePatcher(ProviderPatcher):
    """The ``Patcher`` for the ``cohere`` SDK's v2 Chat API."""

    def __init__(self) -> None:
        super().__init__(SPEC)


__all__ = ["SPEC", "SUPPORTED", "CoherePatcher"]
