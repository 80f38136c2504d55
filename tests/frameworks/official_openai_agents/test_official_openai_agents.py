"""The official ``opentelemetry-instrumentation-genai-openai-agents``' spans, judged.

Real parts: the installed Agents SDK ``Runner`` over the real ``openai`` client and the
recorded Agents-SDK tool loop (traceloop/openllmetry, Apache-2.0, tests/fixtures/
MANIFEST.tsv) served by ``tests.support.replay.ReplayServer``, traced by the official
OpenTelemetry instrumentation (1.3b0, ``OpenAIAgentsInstrumentor``) — not by tracejudge —
into the real OTel SDK, then decoded and built as ``tracejudge eval`` does. Its shape is
``invoke_workflow > invoke_agent > execute_tool`` with the standard
``gen_ai.tool.call.arguments``/``.result`` (content capture on); the workflow span is a
container above the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import agents
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool
from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.replay import ReplayServer
from tracejudge.model import build_runs, spans_from_sdk
from tracejudge.model.run import ToolCall

CASSETTE = "openai-agents/test_tool_call_and_result_attributes.yaml"


@function_tool
def get_city_info(city_name: str) -> str:
    """Get detailed information about a city."""
    return f"City: {city_name}, Population: 9000000"


@pytest.fixture
def official(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The official instrumentor on a private provider, content on, the SDK's own
    uploader off (no network); removed afterwards."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agents.set_trace_processors([])
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, disable_openai_trace_export=True)
    yield exporter
    instrumentor.uninstrument()
    agents.set_trace_processors([])
    provider.shutdown()


def test_workflow_agent_and_tool_evidence_are_read(
    official: InMemorySpanExporter, replay: Callable[..., ReplayServer]
) -> None:
    """One run rooted at the agent span (the workflow above it is a container, no note),
    its tool execution with the arguments and the result the official instrumentation
    recorded."""
    server = replay(CASSETTE, sequential=True)
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    agent = Agent(
        name="CityAgent",
        instructions="You help users get information about cities.",
        model=OpenAIResponsesModel(model="gpt-4o", openai_client=client),
        tools=[get_city_info],
    )
    result = Runner.run_sync(agent, "Tell me about London")
    assert result.final_output.startswith("London is the capital city")

    spans = official.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "execute_tool get_city_info",
        "invoke_agent CityAgent",
        "invoke_workflow Agent workflow",
    ]
    [run] = build_runs(spans_from_sdk(spans))
    assert run.agent_name == "CityAgent"
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments, t.result) for t in tools] == [
        ("get_city_info", {"city_name": "London"}, "City: London, Population: 9000000")
    ]
    assert not [n for n in run.notes if n.code in ("outside_runs", "unjudged_steps")]
