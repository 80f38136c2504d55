"""The reader table against the span shapes of frameworks too heavy to install here.

Google ADK (google-adk pulls google-genai, google-cloud-* and more) and Strands Agents
(boto3 and the Bedrock stack) do not run in the dev environment, so their spans are
*replayed*, not produced by the frameworks: each fixture below emits, with the real OTel
SDK, the span names, attributes and events the framework's own telemetry code writes —
copied from its source, cited in the fixture's docstring — and the spans then take the
real path: SDK ``ReadableSpan`` -> OTLP protobuf -> decoder -> run builder -> engine.
This is a fake of the framework only (said so here); pydantic-ai, which installs, is
tested for real in tests/frameworks/pydantic_ai/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind, StatusCode

from tests.model.model_helpers import Recorder, recorder
from tracejudge.model import build_runs
from tracejudge.model.readers import TOOL_READERS
from tracejudge.model.run import ModelCall, Run, ToolCall
from tracejudge.model.vendor_models import MODEL_READERS, gemini_messages
from tracejudge.otlp.records import spans_from_proto_request

ARGS = {"order_id": "A-1001"}
ORDER = {"order_id": "A-1001", "status": "charged twice"}
USER_TURN = {"role": "user", "parts": [{"text": "Was A-1001 charged twice?"}]}
ANSWER = "Yes: order A-1001 was charged twice."


@pytest.fixture
def rec() -> Iterator[Recorder]:
    with recorder() as r:
        yield r


def runs_of(rec: Recorder) -> list[Run]:
    """The recorded spans over the wire format the collector receives, then built."""
    request = encode_spans(rec.exporter.get_finished_spans())
    wire = ExportTraceServiceRequest.FromString(request.SerializeToString())
    return build_runs(spans_from_proto_request(wire))


def tools_of(run: Run) -> list[ToolCall]:
    return [s for s in run.steps if isinstance(s, ToolCall)]


def adk_agent_with_tools(rec: Recorder, *, merged: bool) -> None:
    """Google ADK's spans for one agent calling ``lookup_order`` (twice, in parallel,
    when ``merged``).

    Shapes from google/adk-python: ``src/google/adk/telemetry/tracing.py`` (indexed at
    0798a74; the same keys as google-adk 1.4.2's ``src/google/adk/telemetry.py``):
    ``trace_agent_invocation`` (``invoke_agent {name}``), ``trace_tool_call`` (span
    ``execute_tool {tool.name}`` opened in ``flows/llm_flows/functions.py``; arguments
    in ``gcp.vertex.agent.tool_call_args``, the response — a dict, a non-dict wrapped
    as ``{"result": ...}`` — in ``gcp.vertex.agent.tool_response``, JSON text each) and
    ``trace_merged_tool_calls`` (``execute_tool (merged tools)``, tool call args
    ``N/A``, the merged response event as JSON).
    """
    t = rec.tracer
    calls = ("adk-1", "adk-2") if merged else ("adk-1",)
    with t.start_as_current_span("invoke_agent refund_agent") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "refund_agent")
        agent.set_attribute("gen_ai.conversation.id", "session-1")
        asked = [{"function_call": {"id": c, "args": ARGS, "name": "lookup_order"}} for c in calls]
        adk_call_llm(rec, [USER_TURN], {"role": "model", "parts": asked})
        for call_id in calls:
            with t.start_as_current_span("execute_tool lookup_order") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.description", "Look up an order.")
                tool.set_attribute("gen_ai.tool.name", "lookup_order")
                tool.set_attribute("gen_ai.tool.type", "FunctionTool")
                tool.set_attribute("gcp.vertex.agent.llm_request", "{}")
                tool.set_attribute("gcp.vertex.agent.llm_response", "{}")
                tool.set_attribute("gcp.vertex.agent.tool_call_args", json.dumps(ARGS))
                tool.set_attribute("gen_ai.tool.call.id", call_id)
                tool.set_attribute("gcp.vertex.agent.event_id", "ev-" + call_id)
                tool.set_attribute("gcp.vertex.agent.tool_response", json.dumps(ORDER))
        if merged:
            with t.start_as_current_span("execute_tool (merged tools)") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "(merged tools)")
                tool.set_attribute("gen_ai.tool.description", "(merged tools)")
                tool.set_attribute("gen_ai.tool.call.id", "ev-merged")
                tool.set_attribute("gcp.vertex.agent.tool_call_args", "N/A")
                tool.set_attribute("gcp.vertex.agent.event_id", "ev-merged")
                tool.set_attribute("gcp.vertex.agent.tool_response", json.dumps({"parts": []}))
        answered = [
            {"function_response": {"id": c, "name": "lookup_order", "response": ORDER}}
            for c in calls
        ]
        history = [
            USER_TURN,
            {"role": "model", "parts": asked},
            {"role": "user", "parts": answered},
        ]
        adk_call_llm(rec, history, {"role": "model", "parts": [{"text": ANSWER}]})


def adk_call_llm(rec: Recorder, contents: list[Any], content: dict[str, Any]) -> None:
    """ADK's model-call span (``trace_call_llm`` in the same files): ``call_llm`` with
    ``gen_ai.system`` ``gcp.vertex.agent`` and no ``gen_ai.operation.name``; the request
    (``_build_llm_request_for_trace``: model, config, ``Content.model_dump`` of each
    content, snake_case) and the ``LlmResponse.model_dump_json`` as JSON text."""
    with rec.tracer.start_as_current_span("call_llm") as llm:
        llm.set_attribute("gen_ai.system", "gcp.vertex.agent")
        llm.set_attribute("gen_ai.request.model", "gemini-2.0-flash")
        llm.set_attribute("gcp.vertex.agent.invocation_id", "e-1")
        llm.set_attribute("gcp.vertex.agent.session_id", "session-1")
        llm.set_attribute("gcp.vertex.agent.event_id", "ev")
        request = {"model": "gemini-2.0-flash", "config": {}, "contents": contents}
        llm.set_attribute("gcp.vertex.agent.llm_request", json.dumps(request))
        response = {"content": content, "finish_reason": "STOP"}
        llm.set_attribute("gcp.vertex.agent.llm_response", json.dumps(response))
        llm.set_attribute("gen_ai.usage.input_tokens", 50)
        llm.set_attribute("gen_ai.usage.output_tokens", 10)
        llm.set_attribute("gen_ai.response.finish_reasons", ["stop"])


def test_adk_tool_arguments_and_response_are_read(rec: Recorder) -> None:
    """ADK's vendor attributes are the tool's arguments and result."""
    adk_agent_with_tools(rec, merged=False)
    [run] = runs_of(rec)
    assert run.agent_name == "refund_agent"
    [tool] = tools_of(run)
    assert (tool.name, tool.call_id, tool.arguments, tool.result) == (
        "lookup_order",
        "adk-1",
        ARGS,
        ORDER,
    )
    assert tool.arguments_is_json
    assert tool.status == "unset"


def test_adk_model_calls_are_read_from_the_gemini_json(rec: Recorder) -> None:
    """ADK's ``call_llm`` spans are model calls: the requested tool call joins the
    execution by id, the conversation and the final answer come from the Gemini JSON."""
    adk_agent_with_tools(rec, merged=False)
    [run] = runs_of(rec)
    assert [type(s).__name__ for s in run.steps] == ["ModelCall", "ToolCall", "ModelCall"]
    first, tool, last = run.steps
    assert isinstance(first, ModelCall)
    assert isinstance(last, ModelCall)
    assert isinstance(tool, ToolCall)
    assert (first.operation, first.provider, first.input_tokens) == (
        "generate_content",
        "gcp.vertex.agent",
        50,
    )
    assert [(r.call_id, r.name, r.arguments) for r in first.requested_tool_calls] == [
        ("adk-1", "lookup_order", ARGS)
    ]
    assert first.input_messages == [
        {"role": "user", "parts": [{"type": "text", "content": "Was A-1001 charged twice?"}]}
    ]
    assert run.final_answer == ANSWER
    assert not [n for n in run.notes if n.code in ("not_executed", "inferred_call")]


def test_gemini_rest_form_is_read_too() -> None:
    """The Gemini REST form (camelCase ``functionCall``/``functionResponse``) reads the same."""
    messages = gemini_messages(
        [
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "response": {"ok": 1}}}]},
        ],
        "user",
    )
    assert messages == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}],
        },
        {
            "role": "user",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": {"ok": 1}}],
        },
    ]


def test_adk_merged_tools_span_is_not_a_second_execution(rec: Recorder) -> None:
    """Two parallel calls are two executions: ADK's ``(merged tools)`` span, which
    repeats them as one response, is no third step."""
    adk_agent_with_tools(rec, merged=True)
    [run] = runs_of(rec)
    assert [(t.name, t.call_id) for t in tools_of(run)] == [
        ("lookup_order", "adk-1"),
        ("lookup_order", "adk-2"),
    ]


def strands_tool(rec: Recorder, *, latest: bool, status: str = "success") -> None:
    """Strands Agents' spans for one agent calling ``lookup_order``.

    Shapes from strands-agents/sdk-python v1.40.0 ``src/strands/telemetry/tracer.py``:
    ``start_agent_span`` (``invoke_agent {name}``), ``start_tool_call_span`` and
    ``end_tool_call_span`` (``execute_tool {name}``, INTERNAL; the input as event
    ``gen_ai.tool.message`` {role, content: JSON, id} and the result content blocks as
    event ``gen_ai.choice`` {message: JSON, id}; with
    ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` both as
    ``gen_ai.client.inference.operation.details`` events holding
    ``gen_ai.input.messages``/``gen_ai.output.messages`` with a ``tool_call`` /
    ``tool_call_response`` part; ``gen_ai.tool.status`` at the end, and status ERROR
    with the first text block when the tool reported ``error``).
    """
    t = rec.tracer
    system = (
        {"gen_ai.provider.name": "strands-agents"}
        if latest
        else {"gen_ai.system": "strands-agents"}
    )
    content: list[dict[str, Any]] = [{"text": json.dumps(ORDER)}]
    with t.start_as_current_span("invoke_agent Strands Agents") as agent:
        agent.set_attributes({"gen_ai.operation.name": "invoke_agent", **system})
        agent.set_attribute("gen_ai.agent.name", "Strands Agents")
        tool = t.start_span(
            "execute_tool lookup_order",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                **system,
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": "tooluse_1",
            },
        )
        if latest:
            call = {
                "type": "tool_call",
                "name": "lookup_order",
                "id": "tooluse_1",
                "arguments": ARGS,
            }
            tool.add_event(
                "gen_ai.client.inference.operation.details",
                {"gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [call]}])},
            )
            response = {"type": "tool_call_response", "id": "tooluse_1", "response": content}
            tool.add_event(
                "gen_ai.client.inference.operation.details",
                {"gen_ai.output.messages": json.dumps([{"role": "tool", "parts": [response]}])},
            )
        else:
            tool.add_event(
                "gen_ai.tool.message",
                {"role": "tool", "content": json.dumps(ARGS), "id": "tooluse_1"},
            )
            tool.add_event("gen_ai.choice", {"message": json.dumps(content), "id": "tooluse_1"})
        tool.set_attribute("gen_ai.tool.status", status)
        if status == "error":
            tool.set_status(StatusCode.ERROR, "lookup failed")
        tool.end()


@pytest.mark.parametrize("latest", [False, True], ids=["default-events", "latest-conventions"])
def test_strands_tool_io_from_span_events(rec: Recorder, latest: bool) -> None:
    """Strands puts a tool's input and result in span events (two shapes); both read."""
    strands_tool(rec, latest=latest)
    [run] = runs_of(rec)
    [tool] = tools_of(run)
    assert (tool.name, tool.call_id, tool.arguments, tool.arguments_is_json) == (
        "lookup_order",
        "tooluse_1",
        ARGS,
        True,
    )
    assert tool.result == [{"text": json.dumps(ORDER)}]
    assert tool.status == "unset"


def test_strands_error_status_is_a_failed_execution(rec: Recorder) -> None:
    """A tool Strands reports as ``error`` is a failed execution."""
    strands_tool(rec, latest=False, status="error")
    [tool] = tools_of(runs_of(rec)[0])
    assert tool.status == "error"


def test_every_reader_says_what_it_was_checked_against() -> None:
    """Each row of the table names its framework and the versions/source it was read
    from (documentation the docs table repeats)."""
    assert len({r.framework for r in TOOL_READERS}) == len(TOOL_READERS)
    assert all(r.checked.strip() for r in TOOL_READERS)
    assert all(r.checked.strip() for r in MODEL_READERS)
