"""The reader tables against LlamaIndex and AG2 0.x, judged.

Neither runs here (llama-index-core is not a dev dependency; AG2 0.x is the same ``ag2``
distribution as the 1.x that tests/frameworks/ag2/ runs for real; the LangSmith bridge
runs for real in tests/model/test_langsmith_bridge.py),
so, as in test_framework_readers.py, their spans are *replayed*: each fixture emits with
the real OTel SDK the span names, attributes and events the framework's own telemetry
code writes — copied from its source, cited in the fixture's docstring, a stand-in for
the framework only — and the spans take the real path (SDK span -> OTLP protobuf -> decoder
-> run builder -> engine). LlamaIndex's spans are made by the real
``opentelemetry-util-genai`` 1.3b0 (installed here with the official Agents-SDK
instrumentation), called the way ``opentelemetry-instrumentation-genai-llama-index``
1.3b0 calls it; only LlamaIndex's own dispatcher is stood in.

The LlamaIndex run replays the refund agent's recorded trajectories
(examples/refund/traces/: ``healthy`` and ``silent_failure``, which claims a refund it
never made) and is judged with examples/refund/rules.yaml: the same verdicts as the
plain-SDK agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.model.model_helpers import Recorder, recorder
from tests.support.refund_trajectories import Trajectory, judge, recorded
from tracejudge.model import build_runs
from tracejudge.model.run import ModelCall, Run, ToolCall
from tracejudge.otlp.records import spans_from_proto_request

SUPPORT = "support_agent"
MODEL = "gpt-4o-mini"


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    # util-genai (the LlamaIndex fixture) records content only when told to, as a user
    # of the LlamaIndex instrumentation tells it; the other fixtures ignore these.
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    with recorder() as r:
        yield r


def runs_of(rec: Recorder) -> list[Run]:
    """The recorded spans over the wire format the collector receives, then built."""
    request = encode_spans(rec.exporter.get_finished_spans())
    wire = ExportTraceServiceRequest.FromString(request.SerializeToString())
    return build_runs(spans_from_proto_request(wire))


def tools_of(run: Run) -> list[ToolCall]:
    return [s for s in run.steps if isinstance(s, ToolCall)]


# --- AG2 -----------------------------------------------------------------------------


def ag2_legacy_failed_tool(rec: Recorder) -> None:
    """AG2 0.x (``autogen``) tool span of a call that failed.

    Shape from ag2 0.14.0 ``autogen/opentelemetry/instrumentators/agent_instrumentators/
    tool.py`` (``instrument_execute_function``): ``execute_tool {name}`` with the
    standard keys; when ``execute_function`` returns ``is_success=False`` it sets only
    ``error.type`` ``ExecutionError`` — no span status, no result."""
    with rec.tracer.start_as_current_span("invoke_agent user_proxy") as agent:
        agent.set_attribute("ag2.span.type", "agent")
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "user_proxy")
        with rec.tracer.start_as_current_span("execute_tool refund_api.create") as tool:
            tool.set_attribute("ag2.span.type", "tool")
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "refund_api.create")
            tool.set_attribute("gen_ai.tool.type", "function")
            tool.set_attribute("gen_ai.tool.call.id", "call_1")
            tool.set_attribute("gen_ai.tool.call.arguments", '{"order_id": "ord_B1002"}')
            tool.set_attribute("error.type", "ExecutionError")


# --- LlamaIndex (through opentelemetry-util-genai) ------------------------------------


def llama_index_agent(rec: Recorder, story: Trajectory, *, fail_last: bool = False) -> None:
    """LlamaIndex's spans for one ``AgentWorkflow`` run of the refund agent, made by the
    real util-genai ``TelemetryHandler`` as opentelemetry-instrumentation-genai-llama-index
    1.3b0 ``_handler.py`` drives it: ``workflow(name=...)`` for the ``AgentWorkflow`` run
    (``invoke_workflow``), ``invoke_local_agent(request_model, agent_name)`` for the member
    agent with its input messages, ``tool(name, tool_type, agent_name, context)`` per
    ``call_tool`` with ``tool_call_id``, ``arguments`` (``tool_kwargs``) and ``tool_result``
    (``ToolOutput.raw_output``), ``fail(error)`` for a ``ToolOutput`` with ``is_error``.
    LlamaIndex records no model calls itself (its LLM's provider instrumentation does);
    the model calls here are util-genai ``inference`` spans, as the official openai-v2
    instrumentation makes them. ``user.id`` is an attribute given to the agent invocation
    (the run's root: the workflow span above it is a container the run does not read).
    """
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import (
        InputMessage,
        OutputMessage,
        Text,
        ToolCallRequest,
    )

    handler = TelemetryHandler(tracer_provider=rec.provider)
    workflow = handler.workflow(name="AgentWorkflow")
    agent = handler.invoke_local_agent(request_model=MODEL, agent_name=SUPPORT)
    agent.attributes["user.id"] = story.user_id
    agent.input_messages = [InputMessage(role="user", parts=[Text(content=story.request)])]

    def inference(parts: list[Any], finish: str) -> None:
        call = handler.inference(provider="openai", request_model=MODEL)
        call.input_messages = [InputMessage(role="user", parts=[Text(content=story.request)])]
        call.output_messages = [OutputMessage(role="assistant", parts=parts, finish_reason=finish)]
        call.input_tokens, call.output_tokens = 300, 40
        call.stop()

    for index, step in enumerate(story.steps):
        request = ToolCallRequest(arguments=step.arguments, name=step.name, id=step.call_id)
        inference([request], "tool_calls")
        tool = handler.tool(
            step.name, tool_type="function", agent_name=SUPPORT, context=agent.context
        )
        tool.tool_call_id = step.call_id
        tool.arguments = step.arguments
        if fail_last and index == len(story.steps) - 1:
            tool.fail(RuntimeError("Error calling tool: payment provider unavailable"))
            continue
        tool.tool_result = step.result
        tool.stop()
    inference([Text(content=story.answer)], "stop")
    agent.output_messages = [
        OutputMessage(role="assistant", parts=[Text(content=story.answer)], finish_reason="stop")
    ]
    agent.stop()
    workflow.stop()


def test_llama_index_tool_executions_and_model_calls_are_read(rec: Recorder) -> None:
    """A LlamaIndex run: every tool execution with its call id, arguments, result and
    status (util-genai leaves a success unset), the model calls with their messages and
    requested tool calls joined to the executions, the final answer and the user."""
    story = recorded("healthy")
    llama_index_agent(rec, story)
    [run] = runs_of(rec)
    assert run.agent_name == SUPPORT
    assert [(t.name, t.call_id, t.arguments, t.result, t.status) for t in tools_of(run)] == [
        (s.name, s.call_id, s.arguments, s.result, "unset") for s in story.steps
    ]
    assert all(t.arguments_is_json and not t.inferred for t in tools_of(run))
    models = [s for s in run.steps if isinstance(s, ModelCall)]
    assert len(models) == len(story.steps) + 1
    requested = [r.call_id for m in models for r in m.requested_tool_calls]
    assert requested == [s.call_id for s in story.steps]
    assert models[0].input_messages
    assert run.final_answer == story.answer
    assert run.user_id == story.user_id
    assert not [n for n in run.notes if n.code in ("not_executed", "inferred_call")]


@pytest.mark.parametrize(
    ("variant", "verdict", "failing"),
    [("healthy", "pass", set()), ("silent_failure", "fail", {"refund-claim-needs-refund"})],
)
def test_refund_rules_judge_llama_index_like_the_plain_agent(
    rec: Recorder, variant: str, verdict: str, failing: set[str]
) -> None:
    """The refund rules give LlamaIndex's replay of a recorded trajectory the plain-SDK
    agent's verdict: the healthy run passes; the run that claims a refund but never called
    ``refund_api.create`` fails on the claim."""
    llama_index_agent(rec, recorded(variant))
    [run] = runs_of(rec)
    got, failed = judge(run)
    assert got == verdict, failed
    assert failing <= failed
    if verdict == "pass":
        assert failed == set()


def test_ag2_legacy_execution_error_is_a_failed_execution(rec: Recorder) -> None:
    """autogen 0.x's ``error.type`` ``ExecutionError`` (no span status) is a failed tool."""
    ag2_legacy_failed_tool(rec)
    [tool] = tools_of(runs_of(rec)[0])
    assert (tool.name, tool.arguments, tool.result) == (
        "refund_api.create",
        {"order_id": "ord_B1002"},
        None,
    )
    assert (tool.status, tool.error_type) == ("error", "ExecutionError")


def test_llama_index_failed_tool_output_is_a_failed_execution(rec: Recorder) -> None:
    """A ``ToolOutput`` with ``is_error`` (util-genai ``fail``) is a failed execution."""
    llama_index_agent(rec, recorded("healthy"), fail_last=True)
    last = tools_of(runs_of(rec)[0])[-1]
    assert (last.name, last.status, last.result) == ("send_email", "error", None)
