"""Where each instrumentation puts a tool execution's evidence: one table, one lookup.

Why a table: the conventions say ``gen_ai.tool.call.arguments``/``.result``, but the
frameworks that emit GenAI spans themselves each put a tool's arguments and result
somewhere of their own (a vendor attribute, a span event, a message part inside an
event). A rule that cannot see what a tool was given and returned cannot judge it, so
the run builder must find them wherever they are — and new frameworks must be one more
row here, not one more ``if`` in the builder. Each row (a ``ToolReader``) says which
spans it applies to, where arguments, result and status are, and which versions of
the framework it was checked against (from the framework's own source; the tests in
tests/model/test_framework_readers.py run the real package where it installs here, and
replay span shapes copied from the framework's source where it does not).

The rows are tried in order and the first that finds a value wins, field by field: a
span with the standard attributes is read by the standard row, whatever else it has.

Also here: the tool names that are not executions (ADK's ``(merged tools)`` span
repeats calls that have their own spans) and the agent-span attributes that hold a
run's final answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from tracejudge import semconv as sc
from tracejudge.model.messages import parse_json_text
from tracejudge.model.spans import SPAN_KIND_SERVER, SpanRecord

__all__ = [
    "AGENT_OUTPUT_KEYS",
    "NOT_EXECUTIONS",
    "TOOL_READERS",
    "EventField",
    "ToolEvidence",
    "ToolReader",
    "read_tool_evidence",
    "server_side_of_a_call",
]

_TOOL_CALL: Final = "tool_call"
_TOOL_CALL_RESPONSE: Final = "tool_call_response"
_ARGUMENTS: Final = "arguments"
_RESPONSE: Final = "response"
_PARTS: Final = "parts"
_TYPE: Final = "type"
_ERROR: Final = "error"
_CONTENT: Final = "content"
_STATUS: Final = "status"
_TOOL: Final = "tool"


@dataclass(frozen=True)
class EventField:
    """A value carried by a span event: attribute ``key`` of the event named ``event``.

    With ``part_type``, the attribute is a JSON list of GenAI messages and the value is
    field ``part_field`` of the first part of that type (Strands' latest-conventions
    tool events carry ``[{"role": "tool", "parts": [{"type": "tool_call", ...}]}]``).
    """

    event: str
    key: str
    part_type: str = ""
    part_field: str = ""


@dataclass(frozen=True)
class ToolReader:
    """Where one instrumentation records a tool execution (see the module docstring).

    - ``framework`` / ``checked``: who emits this shape, and the versions and source
      file it was read from (documentation; shown by ``docs/instrumentation.md``).
    - ``when_key`` / ``when_value``: the row applies only to spans whose attribute
      ``when_key`` equals ``when_value`` (empty: to every tool span).
    - ``arguments`` / ``result``: span attributes, first present wins.
    - ``arguments_events`` / ``result_events``: span events, read when no attribute
      of the row had the value.
    - ``status_key`` / ``status_value``: an attribute whose value ``status_value``
      (``"error"`` unless said) marks a failed execution (for instrumentations that say
      so besides, or instead of, the span status).
    - ``result_field``: the result attribute is a JSON object that wraps the result in
      this field (LangChain's tool run outputs: ``{"output": ...}``).
    - ``tool_message``: a result that is a LangChain ``ToolMessage`` (``type`` ``tool``)
      is its ``content``, and its ``status`` ``error`` marks a failed execution.
    - ``kwargs_input``: the arguments are a decorator's ``{"args": [], "kwargs": {...}}``
      (OpenLLMetry); a call with keyword arguments only is judged by its kwargs.
    """

    framework: str
    checked: str
    arguments: tuple[str, ...] = ()
    result: tuple[str, ...] = ()
    arguments_events: tuple[EventField, ...] = ()
    result_events: tuple[EventField, ...] = ()
    when_key: str = ""
    when_value: str = ""
    status_key: str = ""
    status_value: str = _ERROR
    kwargs_input: bool = False
    result_field: str = ""
    tool_message: bool = False

    def applies(self, attrs: Mapping[str, Any]) -> bool:
        """Whether this row reads a span with these attributes."""
        return not self.when_key or attrs.get(self.when_key) == self.when_value


TOOL_READERS: Final[tuple[ToolReader, ...]] = (
    ToolReader(
        "GenAI semantic conventions",
        "semconv-genai @ fe5608e; also the official opentelemetry-instrumentation-genai-"
        "openai-agents 1.3b0 (util-genai ToolInvocation), pydantic-ai >= 1.0 with "
        "instrumentation version >= 3, Microsoft Agent Framework (agent_framework/"
        "observability.py OtelAttr.TOOL_ARGUMENTS/TOOL_RESULT), AG2 0.14.0 (autogen/"
        "opentelemetry/instrumentators/agent_instrumentators/tool.py) and 1.2.1 (ag2/"
        "middleware/builtin/telemetry.py), opentelemetry-instrumentation-genai-llama-index "
        "1.3b0 (util-genai ToolInvocation, _handler.py), MCP spans",
        arguments=(sc.GEN_AI_TOOL_CALL_ARGUMENTS,),
        result=(sc.GEN_AI_TOOL_CALL_RESULT,),
    ),
    ToolReader(
        "OpenInference",
        "openinference-semantic-conventions (TOOL spans: input.value / output.value)",
        arguments=(sc.FOREIGN_INPUT_VALUE,),
        result=(sc.FOREIGN_OUTPUT_VALUE,),
    ),
    ToolReader(
        "OpenLLMetry",
        "traceloop-sdk decorators (traceloop.span.kind = tool)",
        arguments=(sc.FOREIGN_TRACELOOP_ENTITY_INPUT,),
        result=(sc.FOREIGN_TRACELOOP_ENTITY_OUTPUT,),
        when_key=sc.FOREIGN_TRACELOOP_SPAN_KIND,
        when_value="tool",
        kwargs_input=True,
    ),
    ToolReader(
        "pydantic-ai",
        "pydantic-ai-slim 2.68.0, InstrumentationSettings(version=2): 'running tool' spans "
        "(pydantic_ai/_instrumentation.py InstrumentationNames.for_version)",
        arguments=(sc.FOREIGN_TOOL_ARGUMENTS,),
        result=(sc.FOREIGN_TOOL_RESPONSE,),
    ),
    ToolReader(
        "Google ADK",
        "google-adk 1.4.2 (google/adk/telemetry.py) and the later "
        "google/adk/telemetry/tracing.py trace_tool_call (indexed at 0798a74)",
        arguments=(sc.FOREIGN_GCP_VERTEX_AGENT_TOOL_CALL_ARGS,),
        result=(sc.FOREIGN_GCP_VERTEX_AGENT_TOOL_RESPONSE,),
    ),
    ToolReader(
        "Strands Agents",
        "strands-agents v1.40.0 (strands/telemetry/tracer.py start/end_tool_call_span): "
        "default events, and the OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental "
        "operation-details events",
        arguments_events=(
            EventField(sc.FOREIGN_GEN_AI_TOOL_MESSAGE, sc.FOREIGN_CONTENT),
            EventField(
                sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
                sc.GEN_AI_INPUT_MESSAGES,
                _TOOL_CALL,
                _ARGUMENTS,
            ),
        ),
        result_events=(
            EventField(sc.FOREIGN_GEN_AI_CHOICE, sc.FOREIGN_MESSAGE),
            EventField(
                sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
                sc.GEN_AI_OUTPUT_MESSAGES,
                _TOOL_CALL_RESPONSE,
                _RESPONSE,
            ),
        ),
        status_key=sc.FOREIGN_GEN_AI_TOOL_STATUS,
    ),
    ToolReader(
        # The arguments and result are the standard keys (the first row); what is AG2's
        # own is the failure: autogen 0.x marks a tool that returned is_success=False
        # with error.type "ExecutionError" only, no span status, and records no result
        # (so the first row found no result and this row is reached). AG2 1.x sets the
        # span status ERROR itself.
        "AG2",
        "ag2 0.14.0 (autogen/opentelemetry/instrumentators/agent_instrumentators/tool.py "
        "instrument_execute_function); ag2 1.2.1 (ag2/middleware/builtin/telemetry.py "
        "on_tool_execution) records failures in the span status",
        when_key=sc.FOREIGN_AG2_SPAN_TYPE,
        when_value="tool",
        status_key=sc.ERROR_TYPE,
        status_value="ExecutionError",
    ),
    ToolReader(
        "LangSmith OTel bridge (LangChain / LangGraph)",
        "langsmith 0.15.1 (langsmith/_internal/otel/_otel_exporter.py _set_io_attributes: "
        "the run's inputs/outputs as JSON in gen_ai.prompt/gen_ai.completion) over "
        "langchain-core 1.8.4 (tracers/core.py _create_tool_run: inputs = the tool's dict "
        "input; _complete_tool_run: outputs = {'output': the ToolMessage or return value})",
        arguments=(sc.FOREIGN_GEN_AI_PROMPT,),
        result=(sc.FOREIGN_GEN_AI_COMPLETION,),
        when_key=sc.FOREIGN_LANGSMITH_SPAN_KIND,
        when_value="tool",
        result_field="output",
        tool_message=True,
    ),
)
"""Every known shape of tool evidence, tried in order (the standard one first)."""

NOT_EXECUTIONS: Final[frozenset[str]] = frozenset({"(merged tools)"})
"""``gen_ai.tool.name`` values of ``execute_tool`` spans that are not an execution:
Google ADK's ``trace_merged_tool_calls`` span repeats, as one response event, calls
that each have an ``execute_tool`` span of their own (counting it would double them)."""


def server_side_of_a_call(span: SpanRecord) -> bool:
    """Whether a tool span is the server's side of a remote tool call (an MCP server
    span: kind SERVER with ``mcp.method.name``, as the MCP SDK 2.x records each
    ``tools/call``). Below the caller's own tool span it is the same execution, seen
    from the other end, and the run builder does not count it twice."""
    return span.kind == SPAN_KIND_SERVER and sc.MCP_METHOD_NAME in span.attributes


AGENT_OUTPUT_KEYS: Final[tuple[str, ...]] = (
    sc.FOREIGN_OUTPUT_VALUE,  # OpenInference AGENT spans
    sc.FOREIGN_TRACELOOP_ENTITY_OUTPUT,  # OpenLLMetry agent decorators
    sc.FOREIGN_FINAL_RESULT,  # pydantic-ai agent run spans (2.68.0, every version)
)
"""Agent-span attributes holding the run's final answer (after ``gen_ai.output.messages``)."""


class ToolEvidence:
    """What the readers found on one tool span, as recorded (``None``: nowhere).

    ``failed``: a row's status attribute says the execution failed; ``kwargs_input``:
    the arguments came from a row with ``kwargs_input`` set. (One per tool span on the
    collector's path: ``__init__`` written out, see model/run.py.)
    """

    __slots__ = ("arguments", "failed", "kwargs_input", "result")

    def __init__(self, arguments: Any, result: Any, failed: bool, kwargs_input: bool) -> None:
        self.arguments = arguments
        self.result = result
        self.failed = failed
        self.kwargs_input = kwargs_input


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None


def _from_events(span: SpanRecord, fields: tuple[EventField, ...]) -> Any:
    for wanted in fields:
        for event in span.events:
            if event.name != wanted.event:
                continue
            value = event.attributes.get(wanted.key)
            if value is None or value == "":
                continue
            if not wanted.part_type:
                return value
            messages, ok = parse_json_text(value)
            found = _part_field(messages, wanted.part_type, wanted.part_field) if ok else None
            if found is not None:
                return found
    return None


def _part_field(messages: Any, part_type: str, part_field: str) -> Any:
    if not isinstance(messages, list):
        return None
    for message in messages:
        parts = message.get(_PARTS) if isinstance(message, Mapping) else None
        if not isinstance(parts, list):
            continue
        for part in parts:
            if isinstance(part, Mapping) and part.get(_TYPE) == part_type:
                value = part.get(part_field)
                if value is not None:
                    return value
    return None


def _unwrap_result(reader: ToolReader, value: Any) -> tuple[Any, bool]:
    """The result inside a ``result_field`` envelope (the value as found when it is
    none), and whether a ``tool_message`` result says it failed."""
    parsed, ok = parse_json_text(value)
    if not ok or not isinstance(parsed, Mapping) or reader.result_field not in parsed:
        return value, False
    inner = parsed[reader.result_field]
    if reader.tool_message and isinstance(inner, Mapping) and inner.get(_TYPE) == _TOOL:
        return inner.get(_CONTENT), inner.get(_STATUS) == _ERROR
    return inner, False


def read_tool_evidence(span: SpanRecord) -> ToolEvidence:
    """The arguments, result and failure flag of a tool span, from the first row of
    ``TOOL_READERS`` that has each (attributes before events)."""
    attrs = span.attributes
    arguments: Any = None
    result: Any = None
    failed = False
    kwargs_input = False
    for reader in TOOL_READERS:
        if not reader.applies(attrs):
            continue
        if arguments is None:
            arguments = _first(attrs, reader.arguments)
            if arguments is None and reader.arguments_events and span.events:
                arguments = _from_events(span, reader.arguments_events)
            kwargs_input = arguments is not None and reader.kwargs_input
        if result is None:
            result = _first(attrs, reader.result)
            if result is not None and reader.result_field:
                result, failed_here = _unwrap_result(reader, result)
                failed = failed or failed_here
            if result is None and reader.result_events and span.events:
                result = _from_events(span, reader.result_events)
        if reader.status_key and attrs.get(reader.status_key) == reader.status_value:
            failed = True
        if arguments is not None and result is not None:
            break
    return ToolEvidence(arguments, result, failed, kwargs_input)
