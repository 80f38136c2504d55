"""The Agents SDK integration's lifecycle and bad input, against the real ``openai-agents``.

The SDK keeps trace processors for the life of the process and cannot remove one, so
these tests check what is particular to it: an application that replaced the SDK's
processors gets ours back on ``instrument()``, and span data the integration does not map
is skipped without raising. What every integration promises (``uninstrument()``, no
doubled spans, the bad-input rules) is the contract suite's (``tests/frameworks/
contract``). Runs use tracejudge's scripted model server (Chat Completions) over loopback
with the real SDK and ``openai`` client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import agents
import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.frameworks.lifecycle_support import TRACED, names
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Reply, Script, ToolRequest
from tracejudge.instrumentation import _patcher as patcher_mod


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"{order_id}: paid"


def _script(name: str) -> Script:
    return Script(
        name,
        [
            lambda c: Reply(tool_calls=(ToolRequest("lookup_order", {"order_id": "B-1"}),)),
            lambda c: Reply(text="B-1 is paid."),
        ],
    )


def run_agent(name: str = "run") -> str:
    """One scripted two-call run of a real Agents SDK agent; returns its final output."""
    return run_with(lookup_order, _script(name))


def run_with(tool: Any, script: Script) -> str:
    """A run of an ``orders`` agent with ``tool``; the client is closed in its loop."""

    async def main(server: ScriptedModelServer) -> str:
        async with openai.AsyncOpenAI(
            base_url=server.openai_base_url(script.name), api_key="test-key", max_retries=0
        ) as client:
            agent = Agent(
                name="orders",
                instructions="Answer.",
                model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
                tools=[tool],
            )
            return str((await Runner.run(agent, "Is B-1 paid?")).final_output)

    with ScriptedModelServer([script]) as server:
        return asyncio.run(main(server))


@pytest.fixture
def clean() -> Iterator[None]:
    """The SDK's default exporter off and warnings forgotten; uninstrumented after."""
    agents.set_trace_processors([])
    patcher_mod.reset_warnings()
    yield
    tracejudge.uninstrument()
    patcher_mod.reset_warnings()


pytestmark = pytest.mark.usefixtures("clean")


def test_processors_replaced_by_the_application_are_restored_by_instrument(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """``set_trace_processors([...])`` after ``instrument()`` drops ours with the SDK's
    (documented); calling ``instrument()`` again puts it back."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    agents.set_trace_processors([])
    run_agent("dropped")
    assert "invoke_agent orders" not in names(span_exporter)
    span_exporter.clear()
    tracejudge.instrument(tracer_provider=tracer_provider)
    run_agent("restored")
    assert names(span_exporter) == TRACED


def test_odd_span_data_is_recorded_not_raised(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """Spans the integration does not map (custom spans of the application) are
    skipped, their children still found; a tool returning an unserializable object is
    recorded as its repr. With ``raise_internal_errors`` on, nothing raises."""

    class Receipt:
        def __repr__(self) -> str:
            return "<Receipt B-1>"

    @function_tool
    def lookup_order(order_id: str) -> Any:
        """Look up an order."""
        with agents.custom_span("db", {"query": object()}):
            return Receipt()

    tracejudge.instrument(tracer_provider=tracer_provider, raise_internal_errors=True)
    run_with(lookup_order, _script("odd"))
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    tool = spans["execute_tool lookup_order"]
    assert tool.attributes is not None
    assert "Receipt B-1" in str(tool.attributes["gen_ai.tool.call.result"])
    assert names(span_exporter) == TRACED
