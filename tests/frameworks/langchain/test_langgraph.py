"""The LangChain integration against real ``langgraph`` agents over ``ChatOpenAI``.

Real parts throughout: LangGraph's prebuilt ReAct agent (``create_react_agent``) and a
hand-built ``StateGraph``, ``langchain-openai``'s ``ChatOpenAI`` over the real ``openai``
client and loopback HTTP, and the real OTel SDK with an in-memory exporter. The model is
either a recorded Chat Completions tool loop (the weather cassettes recorded by
open-telemetry/opentelemetry-python-contrib, Apache-2.0, see the cassettes' MANIFEST.tsv)
served by ``tests.support.replay.ReplayServer``, or — where a needed sequence is not
recorded (tool errors, streams, secrets in results) — tracejudge's scripted model server,
which answers in the Chat Completions wire format. Whole spans are asserted: names,
kinds, parents, status and attributes.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.tools import ToolException, tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphInterrupt
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

import tracejudge
from tests.support.replay import ReplayServer
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Conversation, Reply, Script, ToolRequest

from .graphs import compiled, react_agent
from .spans import by_name, only, shape, tree

pytestmark = pytest.mark.usefixtures("langchain_instrumented")

WEATHER = "openai/test_chat_completion_tool_calls_with_content.yaml"
ASYNC_WEATHER = "openai/test_async_chat_completion_tool_calls_with_content.yaml"
SYSTEM = "You're a helpful assistant."
QUESTION = "What's the weather in Seattle and San Francisco today?"
# What the recorded model answered in its second (final) response.
ANSWER = (
    "Today, the weather in Seattle is 50 degrees and raining, while in San Francisco, "
    "it's 70 degrees and sunny."
)
SEATTLE, SAN_FRANCISCO = "call_JpNb8OiAkbIbHzDggfpdDHpi", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"
FORECAST = {"Seattle, WA": "50 degrees and raining", "San Francisco, CA": "70 degrees and sunny"}


@tool
def get_current_weather(location: str) -> str:
    """Get the current weather in a given location"""
    return FORECAST[location]


def ask(text: str) -> Any:
    """A graph input of one user message (typed loosely: each graph has its own state)."""
    return {"messages": [("user", text)]}


def chat(base_url: str, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key=SecretStr("test-key"),
        max_retries=0,
        **options,
    )


def final(text: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}
    ]


THREAD_KEY = "conversation:unknown_service:python:thread-7"
"""The routing key of a run on thread ``thread-7`` (the test provider names no service)."""


def weather_tool(
    call_id: str, location: str, agent: str, route_key: str | None = None
) -> dict[str, Any]:
    """A tool span as the handler makes it (``route_key``: the run's thread is a
    conversation, whose routing key every span of the run carries)."""
    span: dict[str, Any] = {
        "name": "execute_tool get_current_weather",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": f"invoke_agent {agent}",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_current_weather",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Get the current weather in a given location",
            "gen_ai.agent.name": agent,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": {"location": location},
            "gen_ai.tool.call.result": FORECAST[location],
        },
    }
    if route_key is not None:
        span["attributes"]["tracejudge.route.key"] = route_key
    return span


def test_react_agent_on_the_recorded_loop_is_one_agent_two_tools_and_one_chat_span_per_call(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """``create_react_agent`` over the recorded loop (the model asks for the weather in
    two cities at once, both tools run in parallel, the model answers): one
    ``invoke_agent weather`` root with exactly one ``chat`` span per model call — the
    OpenAI client patch's, nested in the agent — and one ``execute_tool`` per tool call
    with its arguments, result and the model's call id; the run's thread id and the
    identity given as metadata on the root, with the final answer."""
    server = replay(WEATHER, sequential=True)
    agent = react_agent(chat(server.base_url), [get_current_weather], prompt=SYSTEM, name="weather")
    config: Any = {
        "configurable": {"thread_id": "thread-7"},
        "metadata": {"tracejudge.run.id": "run-1", "tracejudge.case.id": "weather"},
    }
    out = agent.invoke(ask(QUESTION), config=config)
    assert out["messages"][-1].content == ANSWER
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    assert server.unmatched == []

    spans = tree(span_exporter.get_finished_spans())
    first, *tools, second, root = spans
    assert shape([first, second, root]) == [
        ("chat gpt-4o-mini", "invoke_agent weather"),
        ("chat gpt-4o-mini", "invoke_agent weather"),
        ("invoke_agent weather", None),
    ]
    assert sorted(tools, key=lambda s: s["attributes"]["gen_ai.tool.call.id"]) == [
        weather_tool(SEATTLE, "Seattle, WA", "weather", THREAD_KEY),
        weather_tool(SAN_FRANCISCO, "San Francisco, CA", "weather", THREAD_KEY),
    ]
    assert first["attributes"]["tracejudge.route.key"] == THREAD_KEY
    assert second["attributes"]["tracejudge.route.key"] == THREAD_KEY
    assert root == {
        "name": "invoke_agent weather",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": None,
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather",
            "gen_ai.conversation.id": "thread-7",
            "tracejudge.route.key": THREAD_KEY,
            "tracejudge.run.id": "run-1",
            "tracejudge.case.id": "weather",
            "gen_ai.provider.name": "openai",
            "gen_ai.output.messages": final(ANSWER),
        },
    }
    assert first["kind"] == second["kind"] == "CLIENT"
    requested = first["attributes"]["gen_ai.output.messages"][0]["parts"]
    assert [(p["id"], p["arguments"]) for p in requested] == [
        (SEATTLE, {"location": "Seattle, WA"}),
        (SAN_FRANCISCO, {"location": "San Francisco, CA"}),
    ]
    assert first["attributes"]["gen_ai.input.messages"][0] == {
        "role": "system",
        "parts": [{"type": "text", "content": SYSTEM}],
    }
    assert second["attributes"]["gen_ai.input.messages"][-1] == {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": SAN_FRANCISCO, "response": "70 degrees and sunny"}
        ],
    }
    assert second["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]


class MessagesState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def weather_graph(model: ChatOpenAI) -> Any:
    """A hand-built graph: a model node, a tools node that runs the requested calls one
    after the other (``tool.invoke(tool_call)``), and the edge between them."""
    bound = model.bind_tools([get_current_weather])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    def run_tools(state: MessagesState) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls  # type: ignore[union-attr]
        return {"messages": [get_current_weather.invoke(call) for call in calls]}

    def route(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return compiled(graph, "weather-graph")


def test_hand_built_state_graph_is_traced_like_the_prebuilt_agent(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """A ``StateGraph`` of the application's own nodes over the same recorded loop: the
    graph (named at ``compile``) is the agent, its nodes are not spans, the tools it
    invokes with the model's tool calls are ``execute_tool`` spans with the call ids."""
    server = replay(WEATHER, sequential=True)
    out = weather_graph(chat(server.base_url)).invoke(ask(QUESTION))
    assert out["messages"][-1].content == ANSWER

    spans = tree(span_exporter.get_finished_spans())
    assert shape(spans) == [
        ("chat gpt-4o-mini", "invoke_agent weather-graph"),
        ("execute_tool get_current_weather", "invoke_agent weather-graph"),
        ("execute_tool get_current_weather", "invoke_agent weather-graph"),
        ("chat gpt-4o-mini", "invoke_agent weather-graph"),
        ("invoke_agent weather-graph", None),
    ]
    assert spans[1:3] == [
        weather_tool(SEATTLE, "Seattle, WA", "weather-graph"),
        weather_tool(SAN_FRANCISCO, "San Francisco, CA", "weather-graph"),
    ]
    assert spans[-1]["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather-graph",
        "gen_ai.provider.name": "openai",
        "gen_ai.output.messages": final(ANSWER),
    }


def test_async_run_nests_like_a_sync_one(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """``ainvoke`` (LangGraph's async loop, ``ChatOpenAI``'s async client, the tools as
    asyncio tasks) over the recorded async loop: the same tree, the same call ids."""
    server = replay(ASYNC_WEATHER, sequential=True)
    agent = react_agent(chat(server.base_url), [get_current_weather], prompt=SYSTEM, name="weather")
    out = asyncio.run(agent.ainvoke(ask(QUESTION)))
    assert out["messages"][-1].content.startswith("Today, Seattle is experiencing 50 degrees")

    spans = tree(span_exporter.get_finished_spans())
    assert sorted(shape(spans)) == sorted(
        [
            ("chat gpt-4o-mini", "invoke_agent weather"),
            ("execute_tool get_current_weather", "invoke_agent weather"),
            ("execute_tool get_current_weather", "invoke_agent weather"),
            ("chat gpt-4o-mini", "invoke_agent weather"),
            ("invoke_agent weather", None),
        ]
    )
    ids = {
        s["attributes"]["gen_ai.tool.call.id"]
        for s in by_name(spans, "execute_tool get_current_weather")
    }
    assert ids == {"call_O8NOz8VlxosSASEsOY7LDUcP", "call_3m7cyuckijnpiWr6tq0Tl8Mg"}
    assert (
        only(spans, "invoke_agent weather")["attributes"]["gen_ai.output.messages"][0]["parts"][0][
            "content"
        ]
        == out["messages"][-1].content
    )


# --- scripted runs: streams, tool errors, graph errors, content rules ---------------------


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 42.0, "status": "paid"}


def _lookup(conversation: Conversation) -> Reply:
    return Reply(tool_calls=(ToolRequest("lookup_order", {"order_id": "B-1"}),))


def _answer(conversation: Conversation) -> Reply:
    result = conversation.result_of("lookup_order")
    status = result.get("status") if isinstance(result, dict) else "unknown"
    return Reply(text=f"Order B-1 is {status}.")


def orders_agent(server: ScriptedModelServer, script: str, tools: Any, **options: Any) -> Any:
    model = chat(server.openai_base_url(script), **options)
    return react_agent(model, tools, prompt="Answer.", name="orders")


def test_streamed_run_is_traced_like_a_plain_one(span_exporter: InMemorySpanExporter) -> None:
    """``agent.stream`` over a streaming ``ChatOpenAI``: the same tree, the chat spans
    carrying the streamed tool call and text, the final answer on the agent."""
    with ScriptedModelServer([Script("stream", [_lookup, _answer])]) as server:
        agent = orders_agent(server, "stream", [lookup_order], streaming=True)
        chunks = list(agent.stream(ask("Is B-1 paid?"), stream_mode="updates"))
    assert len(chunks) == 3  # model, tools, model
    spans = tree(span_exporter.get_finished_spans())
    assert shape(spans) == [
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("execute_tool lookup_order", "invoke_agent orders"),
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("invoke_agent orders", None),
    ]
    first, tool_span, second, root = spans
    assert first["attributes"]["gen_ai.request.stream"] is True
    assert first["attributes"]["gen_ai.output.messages"][0]["parts"][0]["name"] == "lookup_order"
    assert tool_span["attributes"]["gen_ai.tool.call.result"] == {
        "order_id": "B-1",
        "amount": 42.0,
        "status": "paid",
    }
    requested = first["attributes"]["gen_ai.output.messages"][0]["parts"][0]["id"]
    assert tool_span["attributes"]["gen_ai.tool.call.id"] == requested
    assert root["attributes"]["gen_ai.output.messages"] == final("Order B-1 is paid.")
    assert second["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "Order B-1 is paid."}
    ]


def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A tool that raises, under a ``ToolNode(handle_tool_errors=True)``: the node tells
    the model and the run goes on; the ``execute_tool`` span records the arguments,
    status ERROR and the exception's class as ``error.type``; the agent is not failed."""

    @tool("lookup_order")
    def failing_lookup(order_id: str) -> str:
        """Look up an order."""
        raise ConnectionError("orders database unreachable")

    script = Script("failing", [_lookup, lambda c: Reply(text="Sorry, I cannot look that up.")])
    with ScriptedModelServer([script]) as server:
        tools = ToolNode([failing_lookup], handle_tool_errors=True)
        out = orders_agent(server, "failing", tools).invoke(ask("Is B-1 paid?"))
    assert out["messages"][-1].content == "Sorry, I cannot look that up."
    spans = tree(span_exporter.get_finished_spans())
    failed = only(spans, "execute_tool lookup_order")
    assert failed["status"] == "ERROR"
    assert failed["attributes"]["error.type"] == "ConnectionError"
    assert failed["attributes"]["gen_ai.tool.call.arguments"] == {"order_id": "B-1"}
    assert "gen_ai.tool.call.result" not in failed["attributes"]
    assert "gen_ai.tool.call.id" in failed["attributes"]
    assert only(spans, "invoke_agent orders")["status"] == "UNSET"


def test_a_tool_error_langchain_handles_is_an_error_span_with_its_message(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A ``ToolException`` the tool handles itself (``handle_tool_error=True``): the tool
    run ends normally with the error text as its result, which the span records, in
    ERROR, as langchain marks the ``ToolMessage``."""

    @tool("lookup_order")
    def refusing_lookup(order_id: str) -> str:
        """Look up an order."""
        raise ToolException("order B-1 is archived")

    refusing_lookup.handle_tool_error = True

    script = Script("handled", [_lookup, lambda c: Reply(text="B-1 is archived.")])
    with ScriptedModelServer([script]) as server:
        orders_agent(server, "handled", [refusing_lookup]).invoke(ask("B-1?"))
    failed = only(tree(span_exporter.get_finished_spans()), "execute_tool lookup_order")
    assert failed["status"] == "ERROR"
    assert failed["attributes"]["error.type"] == "_OTHER"
    assert failed["attributes"]["gen_ai.tool.call.result"] == "order B-1 is archived"


def test_a_failing_graph_fails_its_agent_span_and_the_error_reaches_the_application(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A node that raises: the exception reaches the application unchanged; the agent
    span is in ERROR with the exception's class and an ``exception`` event."""

    class ReconcileError(RuntimeError):
        pass

    def broken(state: MessagesState) -> dict[str, Any]:
        raise ReconcileError("ledger out of balance")

    graph = StateGraph(MessagesState)
    graph.add_node("reconcile", broken)
    graph.add_edge(START, "reconcile")
    with pytest.raises(ReconcileError, match="ledger out of balance"):
        compiled(graph, "books").invoke(ask("close the books"))
    [root] = span_exporter.get_finished_spans()
    assert root.name == "invoke_agent books"
    assert root.status.status_code.name == "ERROR"
    assert root.attributes is not None
    assert str(root.attributes["error.type"]).endswith("ReconcileError")
    assert [e.name for e in root.events] == ["exception"]


def test_tools_the_application_traces_itself_nest_in_the_graph(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A node calling a ``@tracejudge.tool`` function (no LangChain tool): its span is
    inside the graph's agent span, in the node's thread, and names the agent."""

    @tracejudge.tool(effect="write")
    def save_note(text: str) -> str:
        return "saved"

    def note(state: MessagesState) -> dict[str, Any]:
        save_note("called back")
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("note", note)
    graph.add_edge(START, "note")
    compiled(graph, "notes").invoke(ask("note it"))
    spans = tree(span_exporter.get_finished_spans())
    assert shape(spans) == [
        ("execute_tool save_note", "invoke_agent notes"),
        ("invoke_agent notes", None),
    ]
    assert spans[0]["attributes"]["gen_ai.agent.name"] == "notes"


def test_inside_tracejudge_agent_the_graph_is_not_a_second_agent(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """An application that roots its run with ``tracejudge.agent(...)`` keeps one
    agent: the graph's model calls and tools nest in the application's span."""
    server = replay(WEATHER, sequential=True)
    graph = weather_graph(chat(server.base_url))
    with tracejudge.agent("concierge", case_id="weather") as run:
        out = graph.invoke(ask(QUESTION))
        run.set_output(out["messages"][-1].content)
    spans = tree(span_exporter.get_finished_spans())
    assert shape(spans) == [
        ("chat gpt-4o-mini", "invoke_agent concierge"),
        ("execute_tool get_current_weather", "invoke_agent concierge"),
        ("execute_tool get_current_weather", "invoke_agent concierge"),
        ("chat gpt-4o-mini", "invoke_agent concierge"),
        ("invoke_agent concierge", None),
    ]
    ids = [s["attributes"]["gen_ai.tool.call.id"] for s in spans[1:3]]
    assert ids == [SEATTLE, SAN_FRANCISCO]
    assert spans[1]["attributes"]["gen_ai.agent.name"] == "concierge"


def test_tool_content_follows_the_capture_rules(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """As for every tool: arguments, results and the final answer are recorded in every
    message-content mode (NO_CONTENT here) and dropped only by ``capture_content=False``."""

    def traced(script: str) -> list[dict[str, Any]]:
        span_exporter.clear()
        with ScriptedModelServer([Script(script, [_lookup, _answer])]) as server:
            orders_agent(server, script, [lookup_order]).invoke(ask("B-1?"))
        return tree(span_exporter.get_finished_spans())

    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    spans = traced("no-content")
    tool_attrs = only(spans, "execute_tool lookup_order")["attributes"]
    assert tool_attrs["gen_ai.tool.call.arguments"] == {"order_id": "B-1"}
    assert tool_attrs["gen_ai.tool.call.result"]["status"] == "paid"
    assert "gen_ai.output.messages" in only(spans, "invoke_agent orders")["attributes"]
    assert "gen_ai.input.messages" not in by_name(spans, "chat gpt-4o-mini")[0]["attributes"]

    tracejudge.instrument(tracer_provider=tracer_provider, capture_content=False)
    spans = traced("nothing")
    tool_attrs = only(spans, "execute_tool lookup_order")["attributes"]
    assert "gen_ai.tool.call.arguments" not in tool_attrs
    assert "gen_ai.tool.call.result" not in tool_attrs
    assert "gen_ai.tool.call.id" in tool_attrs  # ids are not content
    assert "gen_ai.output.messages" not in only(spans, "invoke_agent orders")["attributes"]


def test_secrets_in_tool_results_are_redacted(span_exporter: InMemorySpanExporter) -> None:
    """Tool content passes the same redaction as ``@tracejudge.tool``'s."""

    @tool("lookup_order")
    def leaky_lookup(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {"order_id": order_id, "api_key": "sk-live-0123456789abcdefghij"}

    with ScriptedModelServer([Script("secret", [_lookup, lambda c: Reply(text="Done.")])]) as s:
        orders_agent(s, "secret", [leaky_lookup]).invoke(ask("B-1?"))
    found = only(tree(span_exporter.get_finished_spans()), "execute_tool lookup_order")
    assert "sk-live" not in json.dumps(found["attributes"])
    assert found["attributes"]["tracejudge.content.redacted"] >= 1


def test_an_interrupt_in_a_tool_is_control_flow_not_an_error(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A tool that stops the graph for a human (LangGraph's ``GraphInterrupt``, what
    ``interrupt()`` raises): the run pauses and returns; neither the tool nor the agent
    span is an error, and the tool has no result."""

    @tool("refund")
    def refund_needing_approval(order_id: str) -> str:
        """Refund an order (needs approval)."""
        raise GraphInterrupt(())

    script = Script(
        "paused", [lambda c: Reply(tool_calls=(ToolRequest("refund", {"order_id": "B-1"}),))]
    )
    with ScriptedModelServer([script]) as server:
        orders_agent(server, "paused", [refund_needing_approval]).invoke(ask("Refund B-1"))
    spans = tree(span_exporter.get_finished_spans())
    assert shape(spans) == [
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("execute_tool refund", "invoke_agent orders"),
        ("invoke_agent orders", None),
    ]
    paused = only(spans, "execute_tool refund")
    assert (paused["status"], only(spans, "invoke_agent orders")["status"]) == ("UNSET", "UNSET")
    assert "error.type" not in paused["attributes"]
    assert "gen_ai.tool.call.result" not in paused["attributes"]
    assert paused["attributes"]["gen_ai.tool.call.arguments"] == {"order_id": "B-1"}


def test_a_graph_inside_a_run_tracejudge_did_not_see_is_still_the_agent(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """A parent run langchain-core knows and tracejudge does not — what a LangSmith
    ``@traceable`` around the call, or a tracer's callback manager the application passes
    in, gives the graph: the graph is still the agent, with the same tree."""
    server = replay(WEATHER, sequential=True)
    foreign = CallbackManager(handlers=[], parent_run_id=uuid.uuid4())
    out = weather_graph(chat(server.base_url)).invoke(ask(QUESTION), config={"callbacks": foreign})
    assert out["messages"][-1].content == ANSWER
    assert shape(tree(span_exporter.get_finished_spans())) == [
        ("chat gpt-4o-mini", "invoke_agent weather-graph"),
        ("execute_tool get_current_weather", "invoke_agent weather-graph"),
        ("execute_tool get_current_weather", "invoke_agent weather-graph"),
        ("chat gpt-4o-mini", "invoke_agent weather-graph"),
        ("invoke_agent weather-graph", None),
    ]
