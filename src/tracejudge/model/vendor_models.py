"""Model calls that frameworks record in vendor attributes instead of GenAI ones.

Why: Google ADK's model-call span (``call_llm``) has no ``gen_ai.operation.name`` and no
``gen_ai.input.messages``/``output.messages``; the request and response are the Gemini
API's own JSON in ``gcp.vertex.agent.llm_request`` / ``llm_response``. Without reading
them an ADK run has tool executions but no model call: no requested tool calls to join,
no conversation, no final answer. Each ``ModelReader`` row says how to recognise such a
span and where its messages are; the Gemini ``Content`` form (``role`` user/model,
``parts`` of ``text`` / ``function_call`` / ``function_response``, snake_case as ADK dumps
it or camelCase as the REST API writes it) is translated to GenAI messages here, so the
rest of the builder sees one message format.

The LangSmith OTel bridge (LangChain / LangGraph) is a row too: its ``chat`` spans carry
the run's raw inputs/outputs in ``gen_ai.prompt`` / ``gen_ai.completion``, in LangChain's
message shapes (translated by ``langchain_messages``). Each row names its ``format``; the
formats are the only thing told apart here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from tracejudge import semconv as sc
from tracejudge.model.langchain_messages import langchain_inputs, langchain_outputs
from tracejudge.model.messages import (
    ARGUMENTS,
    CONTENT,
    FINISH_REASON,
    ID,
    NAME,
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_CALL_RESPONSE,
    PARTS,
    RESPONSE,
    ROLE,
    ROLE_ASSISTANT,
    ROLE_USER,
    TYPE,
    parse_json_text,
)
from tracejudge.model.spans import SpanRecord

__all__ = [
    "FORMAT_GEMINI",
    "FORMAT_LANGCHAIN",
    "MODEL_READERS",
    "ModelReader",
    "gemini_messages",
    "model_reader_of",
    "read_messages",
]

FORMAT_GEMINI: Final = "gemini"
"""Gemini ``Content`` JSON: ``{"contents": [...]}`` in, ``{"content": {...}}`` out."""
FORMAT_LANGCHAIN: Final = "langchain"
"""LangChain run inputs/outputs: ``{"messages": [[...]]}`` in, an ``LLMResult`` out."""

_CONTENTS: Final = "contents"
_ROLES: Final = {"user": ROLE_USER, "model": ROLE_ASSISTANT}
_CALL_KEYS: Final = ("function_call", "functionCall")
_RESPONSE_KEYS: Final = ("function_response", "functionResponse")
_FINISH_KEYS: Final = ("finish_reason", "finishReason")
_FINISH: Final = {"STOP": "stop", "MAX_TOKENS": "length"}


@dataclass(frozen=True)
class ModelReader:
    """A framework's model-call span without GenAI messages: ``span_name`` (empty: any
    name) and attribute ``when_key`` = ``when_value`` recognise it; ``request_key`` holds
    the request JSON and ``response_key`` the response JSON, both in ``format``
    (``FORMAT_GEMINI``, ``FORMAT_LANGCHAIN``); ``operation`` is the GenAI operation it is
    judged as when the span names none."""

    framework: str
    checked: str
    span_name: str
    when_key: str
    when_value: str
    operation: str
    request_key: str
    response_key: str
    format: str = FORMAT_GEMINI


MODEL_READERS: Final[tuple[ModelReader, ...]] = (
    ModelReader(
        "Google ADK",
        "google-adk 1.4.2 (google/adk/telemetry.py trace_call_llm) and the later "
        "telemetry/tracing.py (indexed at 0798a74): span call_llm, gen_ai.system "
        "gcp.vertex.agent, Gemini JSON request/response",
        "call_llm",
        sc.FOREIGN_GEN_AI_SYSTEM,
        "gcp.vertex.agent",
        sc.GenAiOperationNameValues.GENERATE_CONTENT,
        sc.FOREIGN_GCP_VERTEX_AGENT_LLM_REQUEST,
        sc.FOREIGN_GCP_VERTEX_AGENT_LLM_RESPONSE,
    ),
    ModelReader(
        "LangSmith OTel bridge (LangChain / LangGraph)",
        "langsmith 0.15.1 (langsmith/_internal/otel/_otel_exporter.py: run type llm -> "
        "gen_ai.operation.name chat, langsmith.span.kind llm, inputs/outputs as JSON in "
        "gen_ai.prompt/gen_ai.completion) over langchain-core 1.8.4 (tracers/core.py "
        "_create_chat_model_run / _complete_llm_run)",
        "",
        sc.FOREIGN_LANGSMITH_SPAN_KIND,
        "llm",
        sc.GenAiOperationNameValues.CHAT,
        sc.FOREIGN_GEN_AI_PROMPT,
        sc.FOREIGN_GEN_AI_COMPLETION,
        FORMAT_LANGCHAIN,
    ),
)


def model_reader_of(span: SpanRecord) -> ModelReader | None:
    """The row that reads this span as a model call, if any (the name is tested first:
    this runs for every span no flavour claimed)."""
    for reader in MODEL_READERS:
        if (not reader.span_name or span.name == reader.span_name) and (
            span.attributes.get(reader.when_key) == reader.when_value
        ):
            return reader
    return None


def _first(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None


def _part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    text = part.get(PART_TEXT)
    if isinstance(text, str):
        return {TYPE: PART_TEXT, CONTENT: text}
    call = _first(part, _CALL_KEYS)
    if isinstance(call, Mapping):
        return {
            TYPE: PART_TOOL_CALL,
            ID: call.get(ID),
            NAME: str(call.get(NAME) or ""),
            ARGUMENTS: call.get("args"),
        }
    response = _first(part, _RESPONSE_KEYS)
    if isinstance(response, Mapping):
        return {
            TYPE: PART_TOOL_CALL_RESPONSE,
            ID: response.get(ID),
            RESPONSE: response.get(RESPONSE),
        }
    return None  # inline data, file data, executable code: nothing a rule reads


def _message(content: Any, default_role: str) -> dict[str, Any] | None:
    if not isinstance(content, Mapping):
        return None
    parts = content.get(PARTS)
    if not isinstance(parts, list):
        return None
    role = _ROLES.get(str(content.get(ROLE) or ""), default_role)
    return {ROLE: role, PARTS: [p for p in (_part(x) for x in parts) if p is not None]}


def gemini_messages(value: Any, default_role: str) -> list[dict[str, Any]] | None:
    """GenAI messages from Gemini ``Content`` (one, or a list); None when it is none."""
    items = value if isinstance(value, list) else [value]
    out = [m for m in (_message(c, default_role) for c in items) if m is not None]
    return out or None


def read_messages(
    reader: ModelReader, span: SpanRecord
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """The input and output messages of a span ``reader`` recognised (None: not there)."""
    request, _ = parse_json_text(span.attributes.get(reader.request_key))
    response, _ = parse_json_text(span.attributes.get(reader.response_key))
    if reader.format == FORMAT_LANGCHAIN:
        return langchain_inputs(request), langchain_outputs(response)
    inputs = (
        gemini_messages(request.get(_CONTENTS), ROLE_USER) if isinstance(request, Mapping) else None
    )
    outputs = None
    if isinstance(response, Mapping):
        outputs = gemini_messages(response.get(CONTENT), ROLE_ASSISTANT)
        finish = _first(response, _FINISH_KEYS)
        if outputs and isinstance(finish, str):
            outputs[-1][FINISH_REASON] = _FINISH.get(finish.upper(), finish.lower())
    return inputs, outputs
