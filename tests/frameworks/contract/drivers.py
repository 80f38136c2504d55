"""One driver per agent framework: the same scenarios, run through each framework's real SDK.

A driver says how its framework runs the contract's scenarios (``tests/frameworks/contract/
scripts.py``) against the scripted model server, and how its integration's interface is
broken for the bad-input cases. ``test_contract.py`` runs every scenario on every driver
and compares the whole spans.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import agents
import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool as lc_tool
from langchain_core.tracers import context as lc_context
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from tests.frameworks.contract import scripts
from tests.frameworks.langchain.graphs import react_agent
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Script
from tracejudge.instrumentation.langchain import LangChainIntegration
from tracejudge.instrumentation.langchain import _convert as lc_convert
from tracejudge.instrumentation.openai_agents import OpenAIAgentsIntegration
from tracejudge.instrumentation.openai_agents import _convert as agents_convert

SCENARIOS = ("tool_ok", "tool_raises", "nested", "stream")


class Driver(Protocol):
    """A framework under the contract."""

    name: str
    integration: type[Any]
    """Its ``Integration`` class (its ``supported`` range is patched in a test)."""
    moved_hook: str
    """What the 'interface moved' case removes (named in the warning)."""

    def scripts(self, scenario: str) -> list[Script]:
        """The scripts the scenario plays (the first is the run's)."""
        ...

    def run(self, scenario: str, server: ScriptedModelServer) -> str:
        """Run the scenario; its final answer."""
        ...

    def break_interface(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Remove the hook the integration installs through."""
        ...

    def break_translation(self, monkeypatch: pytest.MonkeyPatch, bug: Callable[..., Any]) -> None:
        """Replace a translation function of the integration with ``bug``."""
        ...


# --- the OpenAI Agents SDK ----------------------------------------------------------


@function_tool(name_override="lookup_order")
def _sdk_lookup_order(order_id: str) -> str:
    """Look up an order."""
    return scripts.lookup_order_result(order_id)


@function_tool(name_override="refund")
def _sdk_refund(order_id: str) -> str:
    """Refund an order."""
    raise scripts.refund_error(order_id)


class AgentsSdk:
    """``openai-agents``: ``Runner.run`` (``run_streamed`` to stream), a handoff to nest."""

    name = "openai-agents"
    integration = OpenAIAgentsIntegration
    moved_hook = "add_trace_processor"

    def scripts(self, scenario: str) -> list[Script]:
        if scenario == "nested":
            return [scripts.handoff(scenario, "transfer_to_orders")]
        if scenario == "tool_raises":
            return [scripts.tool_raises(scenario)]
        return [scripts.tool_ok(scenario)]

    def run(self, scenario: str, server: ScriptedModelServer) -> str:
        return asyncio.run(self._run(scenario, server))

    async def _run(self, scenario: str, server: ScriptedModelServer) -> str:
        async with openai.AsyncOpenAI(
            base_url=server.openai_base_url(scenario), api_key="test-key", max_retries=0
        ) as client:
            model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            orders = Agent(
                name="orders",
                instructions="Answer.",
                model=model,
                tools=[_sdk_lookup_order, _sdk_refund],
            )
            if scenario == "nested":
                triage = Agent(name="triage", instructions="Route.", model=model, handoffs=[orders])
                return str((await Runner.run(triage, scripts.PROMPT)).final_output)
            if scenario == "stream":
                streamed = Runner.run_streamed(orders, scripts.PROMPT)
                async for _ in streamed.stream_events():
                    pass
                return str(streamed.final_output)
            return str((await Runner.run(orders, scripts.PROMPT)).final_output)

    def break_interface(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delattr(agents, "add_trace_processor")

    def break_translation(self, monkeypatch: pytest.MonkeyPatch, bug: Callable[..., Any]) -> None:
        monkeypatch.setattr(agents_convert, "final_text", bug)


# --- LangChain / LangGraph ----------------------------------------------------------


@lc_tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return scripts.lookup_order_result(order_id)


@lc_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    raise scripts.refund_error(order_id)


_ONE_AT_A_TIME: RunnableConfig = {"max_concurrency": 1}
"""LangGraph's ``ToolNode`` runs the tool calls of one model message on a thread pool, so
with two calls (``tool_raises``) which span starts first, and which fake-clock reading
and span id each gets, would depend on thread scheduling: the snapshot differed about one
run in fifty under load. One worker runs them in the message's order."""


class LangGraph:
    """LangGraph's ReAct agent over ``ChatOpenAI``: ``invoke`` (``stream`` to stream), an
    agent called as a tool of another to nest."""

    name = "langchain"
    integration = LangChainIntegration
    moved_hook = "register_configure_hook"

    def scripts(self, scenario: str) -> list[Script]:
        if scenario == "nested":
            return [scripts.delegate(scenario, "ask_orders"), scripts.tool_ok("nested-inner")]
        if scenario == "tool_raises":
            return [scripts.tool_raises(scenario)]
        return [scripts.tool_ok(scenario)]

    def run(self, scenario: str, server: ScriptedModelServer) -> str:
        orders = self._agent(server, scenario if scenario != "nested" else "nested-inner")
        if scenario == "nested":

            @lc_tool
            def ask_orders(question: str) -> str:
                """Ask the orders agent."""
                out = orders.invoke({"messages": [("user", question)]}, _ONE_AT_A_TIME)
                return str(out["messages"][-1].content)

            triage = react_agent(
                self._model(server, scenario), [ask_orders], prompt="Route.", name="triage"
            )
            out = triage.invoke({"messages": [("user", scripts.PROMPT)]}, _ONE_AT_A_TIME)
            return str(out["messages"][-1].content)
        if scenario == "stream":
            last: Any = None
            for chunk in orders.stream(
                {"messages": [("user", scripts.PROMPT)]}, _ONE_AT_A_TIME, stream_mode="values"
            ):
                last = chunk
            return str(last["messages"][-1].content)
        out = orders.invoke({"messages": [("user", scripts.PROMPT)]}, _ONE_AT_A_TIME)
        return str(out["messages"][-1].content)

    def _model(self, server: ScriptedModelServer, script: str) -> ChatOpenAI:
        return ChatOpenAI(
            model="gpt-4o-mini",
            base_url=server.openai_base_url(script),
            api_key=SecretStr("test-key"),
            max_retries=0,
        )

    def _agent(self, server: ScriptedModelServer, script: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return react_agent(
                self._model(server, script), [lookup_order, refund], prompt="Answer.", name="orders"
            )

    def break_interface(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delattr(lc_context, "register_configure_hook")

    def break_translation(self, monkeypatch: pytest.MonkeyPatch, bug: Callable[..., Any]) -> None:
        monkeypatch.setattr(lc_convert, "final_text", bug)


DRIVERS: tuple[Driver, ...] = (AgentsSdk(), LangGraph())
