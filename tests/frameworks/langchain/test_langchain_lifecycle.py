"""The LangChain integration's lifecycle and bad input, against the real langchain-core.

langchain-core keeps configure hooks for the life of the process and cannot remove one,
so these tests check what is particular to it: after ``uninstrument()`` the handler asks
for no callbacks at all, a second ``instrument()`` never registers a second hook, the
handler reaches runs in threads the application starts, handlers the application passes
itself keep working beside ours, odd tool results are recorded. What every integration
promises (no doubled spans, the bad-input rules) is the contract suite's
(``tests/frameworks/contract``).
Runs are real LangGraph agents over ``ChatOpenAI`` and tracejudge's scripted model server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from langchain_core.tracers import context as lc_context
from langchain_openai import ChatOpenAI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

import tracejudge
from tests.frameworks.lifecycle_support import TRACED, names
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Reply, Script, ToolRequest
from tracejudge.instrumentation import _patcher as patcher_mod
from tracejudge.instrumentation import active_patchers
from tracejudge.instrumentation import langchain as integration

from .graphs import react_agent


@tool
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


def run_agent(name: str = "run", config: Any = None) -> str:
    """One scripted two-call run of a real ReAct agent; returns its final answer."""
    with ScriptedModelServer([_script(name)]) as server:
        model = ChatOpenAI(
            model="gpt-4o-mini",
            base_url=server.openai_base_url(name),
            api_key=SecretStr("test-key"),
            max_retries=0,
        )
        agent = react_agent(model, [lookup_order], prompt="Answer.", name="orders")
        out = agent.invoke({"messages": [("user", "Is B-1 paid?")]}, config=config)
    return str(out["messages"][-1].content)


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    """Warnings forgotten before and after; uninstrumented after."""
    patcher_mod.reset_warnings()
    yield
    tracejudge.uninstrument()
    patcher_mod.reset_warnings()


def ours_registered() -> int:
    """How many of langchain-core's configure hooks are tracejudge's."""
    var = integration.HANDLER_VAR
    return sum(1 for hook in lc_context._configure_hooks if hook[0] is var)


def test_uninstrument_stops_and_instrument_again_resumes_without_doubling(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """instrument → spans; uninstrument → none (the hook stays registered, the handler
    disabled and asking for no callbacks); instrument twice more → one hook, spans
    again, each exactly once."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    assert "langchain" in active_patchers()
    run_agent("one")
    assert names(span_exporter) == TRACED

    span_exporter.clear()
    tracejudge.uninstrument()
    handler = integration.handler()
    assert (handler.ignore_chain, handler.ignore_agent, handler.ignore_chat_model) == (
        True,
        True,
        True,
    )
    assert run_agent("two") == "B-1 is paid."
    # the OpenAI client patch is gone too: nothing at all
    assert names(span_exporter) == []

    tracejudge.instrument(tracer_provider=tracer_provider)
    tracejudge.instrument(tracer_provider=tracer_provider)
    assert ours_registered() == 1
    run_agent("three")
    assert names(span_exporter) == TRACED


def test_the_handler_reaches_runs_in_threads_the_application_starts(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """The hook's context variable defaults to the handler, so a run in a plain thread
    (which starts with an empty context) is traced too."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(run_agent("thread")))
    worker.start()
    worker.join(60)
    assert answers == ["B-1 is paid."]
    assert names(span_exporter) == TRACED


def test_the_applications_own_callbacks_run_beside_ours(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """A handler passed in the run's config still sees every run; ours is added once."""

    class Counting(BaseCallbackHandler):
        def __init__(self) -> None:
            self.tools = 0

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            self.tools += 1

    counting = Counting()
    tracejudge.instrument(tracer_provider=tracer_provider)
    run_agent("own", config={"callbacks": [counting]})
    assert counting.tools == 1
    assert names(span_exporter) == TRACED


def test_odd_tool_results_are_recorded_not_raised(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """A tool returning an unserializable object (recorded as its ``repr``, as every
    tool's are) and a direct ``tool.invoke`` outside any graph (no agent, no tool
    call): recorded, nothing raised with ``raise_internal_errors`` on."""

    class Receipt:
        def __repr__(self) -> str:
            return "<Receipt B-1>"

    @tool
    def receipt(order_id: str) -> Any:
        """Fetch a receipt."""
        return Receipt()

    tracejudge.instrument(tracer_provider=tracer_provider, raise_internal_errors=True)
    assert repr(receipt.invoke({"order_id": "B-1"})) == "<Receipt B-1>"
    [span] = span_exporter.get_finished_spans()
    assert span.name == "execute_tool receipt"
    assert span.parent is None
    assert span.attributes is not None
    assert "Receipt B-1" in str(span.attributes["gen_ai.tool.call.result"])
    assert "gen_ai.agent.name" not in span.attributes
    assert "gen_ai.tool.call.id" not in span.attributes
