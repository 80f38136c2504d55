"""AG2's own OpenTelemetry spans, read by the run builder and judged with the refund rules.

Real parts throughout: the installed ``ag2`` 1.2.1 ``Agent`` with its own
``TelemetryMiddleware`` (``ag2[tracing]``) and its scripted model (``ag2.testing.TestConfig``,
offline: no provider client), real tool functions, the real OTel SDK exporting to
memory, then OTLP protobuf -> decoder -> run builder -> engine, as the collector does.
tracejudge's ``instrument()`` is not involved: AG2 is a framework tracejudge only *reads*.

The model's turns replay the refund agent's recorded trajectories
(examples/refund/traces/: ``healthy``, and ``silent_failure``, which claims a refund it
never made); the tools return what the recorded tools returned.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag2 import Agent, tool
from ag2.events import ModelMessage, ModelResponse, ToolCallEvent, ToolCallsEvent, Usage
from ag2.middleware import TelemetryMiddleware
from ag2.testing import TestConfig
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import FakeClock
from tests.support.refund_trajectories import Trajectory, judge, recorded
from tracejudge.model import build_runs
from tracejudge.model.run import ModelCall, Run, ToolCall
from tracejudge.otlp.records import spans_from_proto_request

USAGE = Usage(prompt_tokens=300, completion_tokens=40)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The framework suites' fake clock, at 1 ms per reading instead of 1 s: these tests judge
    the runs with the refund rules, whose budget allows a run 10 s, and an AG2 run reads the
    clock more than ten times (at 1 s per reading the healthy run failed ``run-budget``)."""
    clock = FakeClock(step_ns=1_000_000)
    monkeypatch.setattr(sdk_trace, "time_ns", clock)
    return clock


def tools_for(story: Trajectory, fail: str = "") -> list[Any]:
    """Real AG2 tools named as the refund agent's, returning the recorded results (the
    one named ``fail`` raises instead)."""
    results = {s.name: s.result for s in story.steps}

    def make(name: str) -> Any:
        def run(**kwargs: Any) -> Any:
            if name == fail:
                raise RuntimeError("payment provider unavailable")
            return results.get(name, {"status": "not in the recording"})

        return tool(name=name, description=f"The refund agent's {name}.")(run)

    names = ("lookup_order", "check_policy", "refund_api.create", "send_email")
    return [make(n) for n in names]


def turns_for(story: Trajectory) -> list[ModelResponse]:
    """The recorded model turns: each tool request, then the answer (with usage, which
    TestConfig does not invent)."""
    turns = [
        ModelResponse(
            tool_calls=ToolCallsEvent(
                [ToolCallEvent(name=s.name, arguments=json.dumps(s.arguments), id=s.call_id)]
            ),
            usage=USAGE,
        )
        for s in story.steps
    ]
    turns.append(ModelResponse(ModelMessage(story.answer), usage=USAGE))
    return turns


def run_ag2(story: Trajectory, fail: str = "") -> Run:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = TelemetryMiddleware(
        tracer_provider=provider,
        agent_name="support_agent",
        provider_name="openai",
        model_name="gpt-4o-mini",
        span_attributes={"user.id": story.user_id},
    )
    agent = Agent(
        "support_agent",
        prompt=story.system,
        config=TestConfig(*turns_for(story), raise_tool_errors=False),
        tools=tools_for(story, fail),
        middleware=[telemetry],
    )

    async def ask() -> Any:
        return await agent.ask(story.request)

    reply = asyncio.run(ask())
    assert reply.body == story.answer
    provider.shutdown()
    request = encode_spans(exporter.get_finished_spans())
    wire = ExportTraceServiceRequest.FromString(request.SerializeToString())
    [run] = build_runs(spans_from_proto_request(wire))
    return run


def tools_of(run: Run) -> list[ToolCall]:
    return [s for s in run.steps if isinstance(s, ToolCall)]


def test_ag2_run_tools_and_model_calls_are_read() -> None:
    """One ``ask`` is one run: each tool execution with call id, arguments and result (AG2
    renders a dict result as JSON text), each model call with its OpenAI-style messages,
    the requested tool calls joined to the executions, the final answer and the user."""
    story = recorded("healthy")
    run = run_ag2(story)
    assert run.agent_name == "support_agent"
    assert [(t.name, t.call_id, t.arguments, t.result, t.status) for t in tools_of(run)] == [
        (s.name, s.call_id, s.arguments, s.result, "unset") for s in story.steps
    ]
    models = [s for s in run.steps if isinstance(s, ModelCall)]
    assert len(models) == len(story.steps) + 1
    assert [r.call_id for m in models for r in m.requested_tool_calls] == [
        s.call_id for s in story.steps
    ]
    assert models[0].input_messages == [
        {"role": "user", "parts": [{"type": "text", "content": story.request}]}
    ]
    assert (models[0].request_model, models[0].input_tokens) == ("gpt-4o-mini", 300)
    assert run.final_answer == story.answer
    assert run.user_id == story.user_id
    assert not [n for n in run.notes if n.code in ("not_executed", "inferred_call")]


def test_ag2_failed_tool_is_a_failed_execution() -> None:
    """A tool that raised is a failed execution (AG2 sets the span status ERROR)."""
    run = run_ag2(recorded("healthy"), fail="refund_api.create")
    [refund] = [t for t in tools_of(run) if t.name == "refund_api.create"]
    assert (refund.status, refund.error_type, refund.result) == ("error", "RuntimeError", None)


@pytest.mark.parametrize(
    ("variant", "verdict", "failing"),
    [("healthy", "pass", set()), ("silent_failure", "fail", {"refund-claim-needs-refund"})],
)
def test_refund_rules_judge_ag2_like_the_plain_agent(
    variant: str, verdict: str, failing: set[str]
) -> None:
    """The plain-SDK agent's verdicts: the healthy run passes, the run that claims a refund
    but never called ``refund_api.create`` fails on the claim."""
    got, failed = judge(run_ag2(recorded(variant)))
    assert got == verdict, failed
    assert failing <= failed
    if verdict == "pass":
        assert failed == set()
