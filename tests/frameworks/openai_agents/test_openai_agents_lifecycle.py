"""The Agents SDK integration's lifecycle and bad input, against the real ``openai-agents``.

The SDK keeps trace processors for the life of the process and cannot remove one, so
these tests check what tracejudge promises around that: ``uninstrument()`` stops the
spans, a second ``instrument()`` never registers a second processor (no doubled spans),
an application that replaced the SDK's processors gets ours back on ``instrument()``;
and the bad-input rules every integration follows — a version outside the supported
range or an SDK whose interface moved is one warning naming it, nothing is raised into
the application, the rest is still traced. Runs use tracejudge's scripted model server
(Chat Completions) over loopback with the real SDK and ``openai`` client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import agents
import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.frameworks.lifecycle_support import TRACED, names, ours
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Reply, Script, ToolRequest
from tracejudge.instrumentation import SupportedVersions, active_patchers
from tracejudge.instrumentation import _patcher as patcher_mod
from tracejudge.instrumentation.openai_agents import OpenAIAgentsIntegration, _convert

AGENTS_VERSION = agents.__version__ if hasattr(agents, "__version__") else None


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


def test_uninstrument_stops_and_instrument_again_resumes_without_doubling(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """instrument → spans; uninstrument → none (the processor stays registered in the
    SDK, disabled); instrument twice more → spans again, each exactly once."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    assert "openai-agents" in active_patchers()
    run_agent("one")
    assert names(span_exporter) == TRACED

    span_exporter.clear()
    tracejudge.uninstrument()
    assert run_agent("two") == "B-1 is paid."
    assert names(span_exporter) == []

    tracejudge.instrument(tracer_provider=tracer_provider)
    tracejudge.instrument(tracer_provider=tracer_provider)
    run_agent("three")
    assert names(span_exporter) == TRACED


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


def test_version_outside_the_supported_range_warns_once_and_still_traces(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One warning naming openai-agents, its installed version and the range; the run
    is traced all the same."""
    monkeypatch.setattr(OpenAIAgentsIntegration, "supported", SupportedVersions("0.0.1", "0.0.2"))
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        tracejudge.instrument(tracer_provider=tracer_provider)
    warnings = ours(caplog)
    assert len(warnings) == 1
    assert "openai-agents" in warnings[0]
    assert ">=0.0.1,<0.0.2" in warnings[0]
    if AGENTS_VERSION is not None:
        assert str(AGENTS_VERSION) in warnings[0]
    run_agent("outside")
    assert names(span_exporter) == TRACED


def test_moved_processor_interface_warns_once_and_the_model_calls_are_still_traced(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An SDK without ``add_trace_processor`` (its interface moved): one warning naming
    openai-agents, the application's run works, and the OpenAI client patch still
    traces every model call."""
    monkeypatch.delattr(agents, "add_trace_processor")
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        assert run_agent("moved") == "B-1 is paid."
    warnings = ours(caplog)
    assert len(warnings) == 1
    assert "openai-agents SDK is installed but could not be patched" in warnings[0]
    assert "add_trace_processor" in warnings[0]
    assert "openai-agents" not in active_patchers()
    assert names(span_exporter) == ["chat gpt-4o-mini", "chat gpt-4o-mini"]


def test_a_telemetry_bug_never_reaches_the_run(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug in the processor's translation is logged as one warning; the SDK run
    completes, and the spans still end."""

    def broken(kind: str, span_data: Any) -> str | None:
        raise RuntimeError("translation bug")

    monkeypatch.setattr(_convert, "final_text", broken)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        assert run_agent("bug") == "B-1 is paid."
    assert any("translation bug" in m for m in ours(caplog))
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
