"""The Messages endpoint's translation: request → span, Message → attributes and parts.

Why these functions (and no lifecycle of their own): the span's lifecycle — current
while the SDK sends, ended once by a response, a stream's end, an error or
abandonment — is the shared template's (``instrumentation._provider`` and
``_stream``); this module says only what the Anthropic client and its shapes mean:
which provider the client talks to (Anthropic, Bedrock or Vertex AI), the conversation
id the application gave the SDK, the request attributes, the recorded Message, and the
``error.type`` of an error event inside a stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._context import PendingToolCall
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import server_of
from tracejudge.instrumentation.anthropic import _convert as cv

_RESPONSE_KEYS = frozenset(
    {
        sc.GEN_AI_RESPONSE_ID,
        sc.GEN_AI_RESPONSE_MODEL,
        sc.GEN_AI_RESPONSE_FINISH_REASONS,
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    }
)


def provider_of(resource: Any) -> str:
    """``gen_ai.provider.name`` for the client behind ``resource``.

    The same Messages resource serves Anthropic's API, Bedrock and Vertex AI; the
    conventions name the provider the client talks to. 2.x clients declare it
    (``_gen_ai_provider_name``); older ones are told apart by their class.
    """
    client = getattr(resource, "_client", None)
    declared = getattr(client, "_gen_ai_provider_name", None)
    if isinstance(declared, str) and declared:
        return declared
    name = type(client).__name__
    if "Bedrock" in name:
        return sc.GenAiProviderNameValues.AWS_BEDROCK
    if "Vertex" in name:
        return sc.GenAiProviderNameValues.GCP_VERTEX_AI
    return sc.GenAiProviderNameValues.ANTHROPIC


def conversation_of(resource: Any) -> str | None:
    """The conversation id the application gave the SDK (2.x ``open_telemetry=
    {"conversation_id": ...}``): ours replaces the SDK's span, so it must carry the id
    the SDK's would have. Never synthesised, as the conventions require."""
    options = getattr(getattr(resource, "_client", None), "open_telemetry", None)
    conversation = options.get("conversation_id") if isinstance(options, Mapping) else None
    return conversation if isinstance(conversation, str) and conversation else None


def tool_calls_of(message: Any) -> list[PendingToolCall]:
    """The client tool calls (``tool_use`` blocks) a Message asks for, for the ledger."""
    calls: list[PendingToolCall] = []
    content = cv.get(message, "content")
    if not isinstance(content, list):
        return calls
    for block in content:
        if cv.get(block, "type") != "tool_use":
            continue
        call_id, name = cv.get(block, "id"), cv.get(block, "name")
        if isinstance(call_id, str) and isinstance(name, str):
            calls.append(PendingToolCall(call_id, name, to_jsonable(cv.get(block, "input"))))
    return calls


def stream_error_type(error: BaseException) -> str | None:
    """``error.type`` of an ``error`` event inside a 200 stream: the API's error type.

    The SDK raises it as an ``APIStatusError`` carrying the stream's status (200), which
    as an ``error.type`` would read as success; the envelope's ``overloaded_error`` &
    co. are the low-cardinality, provider-defined class the conventions ask for.
    """
    status = getattr(error, "status_code", None)
    if not isinstance(status, int) or status >= 400:
        return None
    kind = cv.get(cv.get(getattr(error, "body", None), "error"), "type")
    return kind if isinstance(kind, str) and kind else None


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span of a ``messages.create``/``parse``/``stream`` call."""
    params = cv.request_params(kwargs)
    address, port = server_of(resource)
    model = params.get("model")
    attributes = cv.request_attributes(params, stream=kwargs.get("stream") is True)
    conversation = conversation_of(resource)
    if conversation is not None:
        attributes[sc.GEN_AI_CONVERSATION_ID] = conversation
    call = ModelCallTelemetry(
        runtime,
        sc.GenAiOperationNameValues.CHAT,
        provider_of(resource),
        model if isinstance(model, str) else None,
        attributes,
        server_address=address,
        server_port=port,
        offered_tools=(tools := params.get("tools")),
    )
    if runtime.capture_any:  # nothing is recorded in NO_CONTENT: skip converting
        with runtime.guard:  # the span exists now: odd content must not orphan it
            call.set_input(
                cv.input_messages(params.get("messages")),
                cv.system_instructions(params.get("system")),
                runtime.encode_static(tools, cv.tool_definitions, call.stats)
                if isinstance(tools, (list, tuple))
                else cv.tool_definitions(tools),  # other iterables: converted each time
            )
    return call


def finish(call: ModelCallTelemetry, message: Any) -> None:
    """Record a complete Message (a parsed response)."""
    record(call, message, complete=True)


def record(call: ModelCallTelemetry, message: Any, *, complete: bool) -> None:
    """Record a Message, complete or as far as a stream got (``complete`` False: the
    requested tool calls are not handed to the ledger, and empty output is left out)."""
    attrs = cv.response_attributes(message)
    extra: dict[str, AttributeValue] = {k: v for k, v in attrs.items() if k not in _RESPONSE_KEYS}
    reasons = attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS)
    in_tok, out_tok = (
        attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
        attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    )
    rid, rmodel = attrs.get(sc.GEN_AI_RESPONSE_ID), attrs.get(sc.GEN_AI_RESPONSE_MODEL)
    call.set_response(
        response_id=rid if isinstance(rid, str) else None,
        response_model=rmodel if isinstance(rmodel, str) else None,
        finish_reasons=list(reasons) if isinstance(reasons, (list, tuple)) else None,
        input_tokens=in_tok if isinstance(in_tok, int) else None,
        output_tokens=out_tok if isinstance(out_tok, int) else None,
        extra=extra,
    )
    output = cv.output_messages(message)
    if complete or output[0]["parts"]:
        call.set_output(
            output, tool_calls_of(message) if complete else (), record_tool_calls=complete
        )
