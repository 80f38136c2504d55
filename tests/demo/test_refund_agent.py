"""The refund agent loop: tool errors reach the model, runs end, spans carry the evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import tracejudge
from tracejudge import semconv
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.refund_agent import AgentError, run_refund_agent
from tracejudge.demo.script import Conversation, Reply, Script, ToolRequest


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans of the agent under test, through the real instrumentation."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracejudge.instrument(tracer_provider=provider, raise_internal_errors=True)
    try:
        yield memory
    finally:
        tracejudge.uninstrument()
        provider.shutdown()


def _refund_unknown_order(conv: Conversation) -> Reply:
    args = {"order_id": "ord_NOPE", "amount": 1.0, "reason": "x", "idempotency_key": "k"}
    return Reply(tool_calls=(ToolRequest("refund_api.create", args),))


def _report_error(conv: Conversation) -> Reply:
    return Reply(text=f"Sorry, that failed: {conv.result_of('refund_api.create')['error']}")


def test_tool_error_is_fed_back_and_recorded(spans: InMemorySpanExporter) -> None:
    """A failing tool must not crash the agent: the model reads the error, the span shows it."""
    script = Script("err", [_refund_unknown_order, _report_error])
    with ScriptedModelServer([script]) as server:
        client = openai.OpenAI(base_url=server.openai_base_url("err"), api_key="x", max_retries=0)
        result = run_refund_agent(client, variant_id="err", run_id="r-err")
    assert result.answer == "Sorry, that failed: no order 'ord_NOPE' for customer cus_4821"
    assert result.world.refunds == []
    (tool_span,) = [s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.attributes is not None
    assert tool_span.attributes[semconv.TRACEJUDGE_TOOL_EFFECT] == "write"


def test_unknown_tool_and_bad_arguments_become_error_results(spans: InMemorySpanExporter) -> None:
    """Requests the agent cannot execute are answered with a readable error, not an exception."""
    seen: list[object] = []

    def ask(conv: Conversation) -> Reply:
        return Reply(
            tool_calls=(
                ToolRequest("delete_everything", {}),
                ToolRequest("check_policy", {"order_id": "ord_B1002"}),
            )
        )

    def answer(conv: Conversation) -> Reply:
        seen.extend(r.result for r in conv.tool_results)
        return Reply(text="ok")

    with ScriptedModelServer([Script("bad", [ask, answer])]) as server:
        client = openai.OpenAI(base_url=server.openai_base_url("bad"), api_key="x", max_retries=0)
        run_refund_agent(client, variant_id="bad", run_id="r-bad")
    assert seen[0] == {"error": "unknown tool 'delete_everything'"}
    assert isinstance(seen[1], dict)
    assert "amount" in json.dumps(seen[1])


def test_an_agent_that_never_answers_stops_at_the_turn_limit(spans: InMemorySpanExporter) -> None:
    """A looping model ends the run with AgentError instead of spinning forever."""

    def again(conv: Conversation) -> Reply:
        return Reply(tool_calls=(ToolRequest("lookup_order", {"customer_id": "cus_4821"}),))

    with ScriptedModelServer([Script("loop", [again] * 10)]) as server:
        client = openai.OpenAI(base_url=server.openai_base_url("loop"), api_key="x", max_retries=0)
        with pytest.raises(AgentError, match="after 3 model calls"):
            run_refund_agent(client, variant_id="loop", run_id="r-loop", max_turns=3)
    roots = [s for s in spans.get_finished_spans() if s.name == "invoke_agent refund-agent"]
    assert roots[0].status.status_code is StatusCode.ERROR
