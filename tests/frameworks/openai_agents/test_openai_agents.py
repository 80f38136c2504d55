"""The OpenAI Agents SDK integration against the real ``openai-agents`` package.

Real parts throughout: the installed SDK's ``Runner`` and models over the real ``openai``
client and loopback HTTP — a recorded Agents-SDK tool loop (cassette recorded by
traceloop/openllmetry with Agents/Python 0.2.7, Apache-2.0, see the cassettes'
MANIFEST.tsv) served by ``tests.support.replay.ReplayServer``, and tracejudge's scripted
model server (Chat Completions) for handoffs, guardrails, tool errors and streams —
with the real OTel SDK and an in-memory exporter. Whole spans are asserted: names,
kinds, parents, status and attributes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import agents
import openai
import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    input_guardrail,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import snap
from tests.support.replay import ReplayServer
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Conversation, Reply, Script, ToolRequest

pytestmark = pytest.mark.usefixtures("agents_instrumented")

CASSETTE = "openai-agents/test_tool_call_and_result_attributes.yaml"
CITY_INFO = (
    "City: London, Population: 9000000, Country: United Kingdom, "
    "Description: Capital city with rich history"
)
CITY_INSTRUCTIONS = "You help users get information about cities using the get_city_info tool."
# What the recorded model said in its second (final) response.
CITY_ANSWER = (
    "London is the capital city of the United Kingdom, with a population of approximately "
    "9 million. It is renowned for its rich history, cultural heritage, and diverse population."
)


def tree(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Each finished span as ``snap`` data plus its parent's name (None for a root), in
    the order the spans ended."""
    names = {s.context.span_id: s.name for s in spans if s.context is not None}
    out = []
    for span in spans:
        data = snap(span)
        data["parent"] = names.get(span.parent.span_id) if span.parent is not None else None
        out.append(data)
    return out


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def only(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [found] = by_name(spans, name)
    return found


@function_tool
def get_city_info(city_name: str) -> str:
    """Get detailed information about a city."""
    return (
        f"City: {city_name}, Population: 9000000, Country: United Kingdom, "
        "Description: Capital city with rich history"
    )


def city_agent(server: ReplayServer) -> Agent[Any]:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return Agent(
        name="CityAgent",
        instructions=CITY_INSTRUCTIONS,
        model=OpenAIResponsesModel(model="gpt-4o", openai_client=client),
        tools=[get_city_info],
    )


def test_recorded_tool_loop_maps_to_agent_tool_and_one_chat_span_per_model_call(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """The recorded loop (model asks for ``get_city_info``, the tool runs, the model
    answers) is one ``invoke_agent`` root holding exactly one ``chat`` span per model
    call — the OpenAI client patch's, not a second one from the SDK's response spans —
    and an ``execute_tool`` span with the arguments, the result and the model's call id."""
    server = replay(CASSETTE, sequential=True)
    result = run(city_agent(server), "Tell me about London")
    assert result.final_output == CITY_ANSWER
    assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses"]
    assert server.unmatched == []

    spans = tree(span_exporter.get_finished_spans())
    assert [(s["name"], s["kind"], s["parent"]) for s in spans] == [
        ("chat gpt-4o", "CLIENT", "invoke_agent CityAgent"),
        ("execute_tool get_city_info", "INTERNAL", "invoke_agent CityAgent"),
        ("chat gpt-4o", "CLIENT", "invoke_agent CityAgent"),
        ("invoke_agent CityAgent", "INTERNAL", None),
    ]
    first_call, tool, second_call, agent = spans
    assert tool == {
        "name": "execute_tool get_city_info",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": "invoke_agent CityAgent",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_city_info",
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": "CityAgent",
            "gen_ai.tool.call.id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
            "gen_ai.tool.call.arguments": {"city_name": "London"},
            "gen_ai.tool.call.result": CITY_INFO,
        },
    }
    assert agent == {
        "name": "invoke_agent CityAgent",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": None,
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "CityAgent",
            "gen_ai.provider.name": "openai",
            "gen_ai.output.messages": [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": CITY_ANSWER}],
                    "finish_reason": "stop",
                }
            ],
        },
    }
    first, second = first_call["attributes"], second_call["attributes"]
    assert first["openai.api.type"] == second["openai.api.type"] == "responses"
    assert first["gen_ai.response.id"] == "resp_0a91d4a1b37538fc0068fdd3ab217c819591ff2ae8e7267945"
    assert first["gen_ai.system_instructions"] == [{"type": "text", "content": CITY_INSTRUCTIONS}]
    assert first["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "finish_reason": "tool_call",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                    "name": "get_city_info",
                    "arguments": {"city_name": "London"},
                }
            ],
        }
    ]
    assert second["gen_ai.response.finish_reasons"] == ["stop"]
    assert second["gen_ai.input.messages"][-1] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                "response": CITY_INFO,
            }
        ],
    }


# --- scripted runs: handoffs, guardrails, errors, streams -------------------------------


@function_tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "amount": 42.0, "status": "paid"}


def _lookup(conversation: Conversation) -> Reply:
    return Reply(tool_calls=(ToolRequest("lookup_order", {"order_id": "B-1"}),))


def _answer(conversation: Conversation) -> Reply:
    # The SDK sends a dict result to the model as its str(); the script reads the amount.
    seen = str(conversation.result_of("lookup_order"))
    amount = 42.0 if "'amount': 42.0" in seen else 0.0
    return Reply(text=f"Order B-1 is paid ({amount:.2f} USD).")


HANDOFF = Script(
    "handoff",
    [
        lambda c: Reply(tool_calls=(ToolRequest("transfer_to_orders", {}),)),
        _lookup,
        _answer,
    ],
)
DIRECT = Script("direct", [_lookup, _answer])


def chat_model(server: ScriptedModelServer, script: str) -> OpenAIChatCompletionsModel:
    """A Chat Completions model on the scripted server. Its client is closed by
    ``run`` inside the run's event loop (not by garbage collection after it closed)."""
    client = openai.AsyncOpenAI(
        base_url=server.openai_base_url(script), api_key="test-key", max_retries=0
    )
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)


def run(agent: Agent[Any], text: str, **options: Any) -> Any:
    """``Runner.run`` in a fresh event loop; the model clients are closed in it."""

    async def main() -> Any:
        try:
            return await Runner.run(agent, text, **options)
        finally:
            for each in _agents_of(agent):
                client = getattr(each.model, "_client", None)
                if client is not None:
                    await client.close()

    return asyncio.run(main())


def _agents_of(agent: Agent[Any]) -> list[Agent[Any]]:
    found = [agent]
    for handoff in agent.handoffs:
        if isinstance(handoff, Agent):
            found.extend(_agents_of(handoff))
    return found


def test_handoff_nests_the_next_agent_and_is_the_transfer_tool_execution(
    span_exporter: InMemorySpanExporter,
) -> None:
    """triage hands off to orders: one root (triage) with orders' ``invoke_agent`` nested
    in it, the handoff recorded as the execution of the model's transfer tool call (its
    call id, ``tracejudge.handoff.*``), the final answer on both agents, the trace's
    group id as the conversation id and the run identity from trace metadata on the root."""
    with ScriptedModelServer([HANDOFF]) as server:
        model = chat_model(server, "handoff")
        orders = Agent(name="orders", instructions="Answer.", model=model, tools=[lookup_order])
        triage = Agent(name="triage", instructions="Route.", model=model, handoffs=[orders])
        config = RunConfig(
            group_id="conversation-7",
            trace_metadata={"tracejudge.run.id": "run-1", "tracejudge.case.id": "case-b1"},
        )
        result = run(triage, "Is B-1 paid?", run_config=config)
    answer = "Order B-1 is paid (42.00 USD)."
    assert result.final_output == answer

    spans = tree(span_exporter.get_finished_spans())
    assert [(s["name"], s["parent"]) for s in spans] == [
        ("chat gpt-4o-mini", "invoke_agent triage"),
        ("execute_tool transfer_to_orders", "invoke_agent triage"),
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("execute_tool lookup_order", "invoke_agent orders"),
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("invoke_agent orders", "invoke_agent triage"),
        ("invoke_agent triage", None),
    ]
    transfer_call = spans[0]["attributes"]["gen_ai.output.messages"][0]["parts"][0]
    assert transfer_call["name"] == "transfer_to_orders"
    assert only(spans, "execute_tool transfer_to_orders") == {
        "name": "execute_tool transfer_to_orders",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": "invoke_agent triage",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.name": "transfer_to_orders",
            "gen_ai.tool.call.id": transfer_call["id"],
            "gen_ai.agent.name": "triage",
            "tracejudge.handoff.from_agent": "triage",
            "tracejudge.handoff.to_agent": "orders",
        },
    }
    final = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": answer}],
            "finish_reason": "stop",
        }
    ]
    assert only(spans, "invoke_agent triage")["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "triage",
        "gen_ai.conversation.id": "conversation-7",
        "tracejudge.run.id": "run-1",
        "tracejudge.case.id": "case-b1",
        "gen_ai.provider.name": "openai",
        "gen_ai.output.messages": final,
    }
    assert only(spans, "invoke_agent orders")["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "orders",
        "gen_ai.conversation.id": "conversation-7",
        "gen_ai.provider.name": "openai",
        "gen_ai.output.messages": final,
    }
    lookup = only(spans, "execute_tool lookup_order")["attributes"]
    assert lookup["gen_ai.agent.name"] == "orders"
    assert lookup["gen_ai.tool.call.result"] == {
        "order_id": "B-1",
        "amount": 42.0,
        "status": "paid",
    }
    requested = spans[2]["attributes"]["gen_ai.output.messages"][0]["parts"][0]
    assert lookup["gen_ai.tool.call.id"] == requested["id"]


def test_a_triggered_guardrail_is_its_own_span_and_fails_the_run(
    span_exporter: InMemorySpanExporter,
) -> None:
    """An input guardrail whose tripwire fires: a ``guardrail {name}`` span (triggered),
    the agent span in ERROR with the SDK's reason; the SDK's own exception reaches the
    application unchanged and nothing of ours is raised."""

    @input_guardrail
    def no_account_numbers(ctx: Any, agent: Any, user_input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info={"found": "1234"}, tripwire_triggered=True)

    with ScriptedModelServer([DIRECT]) as server:
        agent = Agent(
            name="orders",
            instructions="Answer.",
            model=chat_model(server, "direct"),
            tools=[lookup_order],
            input_guardrails=[no_account_numbers],
        )
        with pytest.raises(agents.InputGuardrailTripwireTriggered):
            run(agent, "My account is 1234")
    spans = tree(span_exporter.get_finished_spans())
    guardrail = only(spans, "guardrail no_account_numbers")
    assert guardrail == {
        "name": "guardrail no_account_numbers",
        "kind": "INTERNAL",
        "status": "UNSET",
        "parent": "invoke_agent orders",
        "attributes": {
            "tracejudge.guardrail.name": "no_account_numbers",
            "gen_ai.agent.name": "orders",
            "tracejudge.guardrail.triggered": True,
        },
    }
    root = only(spans, "invoke_agent orders")
    assert root["status"] == "ERROR"
    assert root["attributes"]["error.type"] == "_OTHER"
    assert "gen_ai.output.messages" not in root["attributes"]
    assert [s["name"] for s in spans if s["parent"] is None] == ["invoke_agent orders"]


def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A tool that raises: the SDK tells the model (its default) and the run goes on;
    the ``execute_tool`` span records the arguments and is in ERROR."""

    @function_tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        raise ConnectionError("orders database unreachable")

    script = Script(
        "failing",
        [_lookup, lambda c: Reply(text="Sorry, I cannot look that up right now.")],
    )
    with ScriptedModelServer([script]) as server:
        agent = Agent(
            name="orders",
            instructions="Answer.",
            model=chat_model(server, "failing"),
            tools=[lookup_order],
        )
        result = run(agent, "Is B-1 paid?")
    assert result.final_output == "Sorry, I cannot look that up right now."
    tool = only(tree(span_exporter.get_finished_spans()), "execute_tool lookup_order")
    assert tool["status"] == "ERROR"
    assert tool["attributes"]["error.type"] == "_OTHER"
    assert tool["attributes"]["gen_ai.tool.call.arguments"] == {"order_id": "B-1"}
    assert "gen_ai.tool.call.id" in tool["attributes"]


def test_streamed_run_is_traced_like_a_plain_one(span_exporter: InMemorySpanExporter) -> None:
    """``Runner.run_streamed`` over a streamed Chat Completions model: the same span tree,
    the chat spans carrying the streamed tool call and text."""

    async def streamed_run(server: ScriptedModelServer) -> str:
        agent = Agent(
            name="orders",
            instructions="Answer.",
            model=chat_model(server, "direct"),
            tools=[lookup_order],
        )
        streamed = Runner.run_streamed(agent, "Is B-1 paid?")
        async for _ in streamed.stream_events():
            pass
        await agent.model._client.close()  # type: ignore[union-attr]
        return str(streamed.final_output)

    with ScriptedModelServer([DIRECT]) as server:
        answer = asyncio.run(streamed_run(server))
    assert answer == "Order B-1 is paid (42.00 USD)."
    spans = tree(span_exporter.get_finished_spans())
    assert [(s["name"], s["parent"]) for s in spans] == [
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("execute_tool lookup_order", "invoke_agent orders"),
        ("chat gpt-4o-mini", "invoke_agent orders"),
        ("invoke_agent orders", None),
    ]
    first, _, second, root = spans
    assert first["attributes"]["gen_ai.request.stream"] is True
    assert first["attributes"]["gen_ai.output.messages"][0]["parts"][0]["name"] == "lookup_order"
    assert second["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": answer}
    ]
    assert root["attributes"]["gen_ai.output.messages"][0]["parts"][0]["content"] == answer


def test_tool_content_follows_the_capture_rules(
    tracer_provider: Any, span_exporter: InMemorySpanExporter
) -> None:
    """As for every tool: arguments, results and the final answer are recorded in every
    message-content mode (NO_CONTENT here) and dropped only by ``capture_content=False``."""
    import tracejudge

    def traced(script: str) -> list[dict[str, Any]]:
        span_exporter.clear()
        with ScriptedModelServer([Script(script, [_lookup, _answer])]) as server:
            agent = Agent(
                name="orders",
                instructions="Answer.",
                model=chat_model(server, script),
                tools=[lookup_order],
            )
            run(agent, "Is B-1 paid?")
        return tree(span_exporter.get_finished_spans())

    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    spans = traced("no-content")
    tool = only(spans, "execute_tool lookup_order")["attributes"]
    assert tool["gen_ai.tool.call.arguments"] == {"order_id": "B-1"}
    assert tool["gen_ai.tool.call.result"]["status"] == "paid"
    assert "gen_ai.output.messages" in only(spans, "invoke_agent orders")["attributes"]
    assert "gen_ai.input.messages" not in by_name(spans, "chat gpt-4o-mini")[0]["attributes"]

    tracejudge.instrument(tracer_provider=tracer_provider, capture_content=False)
    spans = traced("nothing")
    tool = only(spans, "execute_tool lookup_order")["attributes"]
    assert "gen_ai.tool.call.arguments" not in tool
    assert "gen_ai.tool.call.result" not in tool
    assert "gen_ai.tool.call.id" in tool  # ids are not content
    assert "gen_ai.output.messages" not in only(spans, "invoke_agent orders")["attributes"]


def test_secrets_in_tool_results_are_redacted(span_exporter: InMemorySpanExporter) -> None:
    """Tool content passes the same redaction as ``@tracejudge.tool``'s."""

    @function_tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {"order_id": order_id, "api_key": "sk-live-0123456789abcdefghij"}

    with ScriptedModelServer([Script("secret", [_lookup, lambda c: Reply(text="Done.")])]) as s:
        agent = Agent(
            name="orders",
            instructions="Answer.",
            model=chat_model(s, "secret"),
            tools=[lookup_order],
        )
        run(agent, "Is B-1 paid?")
    tool = only(tree(span_exporter.get_finished_spans()), "execute_tool lookup_order")
    assert "sk-live" not in json.dumps(tool["attributes"])
    assert tool["attributes"]["tracejudge.content.redacted"] >= 1


def test_a_json_text_result_is_recorded_as_json(span_exporter: InMemorySpanExporter) -> None:
    """Agents SDK tools return text; a result that is a JSON object is recorded as that
    object (rules read it by path), any other text as a string."""

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return json.dumps({"orders": [{"id": order_id, "is_duplicate": True}]})

    @function_tool
    def note(order_id: str) -> str:
        """Write a note."""
        return "{not json"

    script = Script(
        "json-text",
        [
            lambda c: Reply(
                tool_calls=(
                    ToolRequest("lookup_order", {"order_id": "B-1"}),
                    ToolRequest("note", {"order_id": "B-1"}),
                )
            ),
            lambda c: Reply(text="Done."),
        ],
    )
    with ScriptedModelServer([script]) as server:
        agent = Agent(
            name="orders",
            instructions="Answer.",
            model=chat_model(server, "json-text"),
            tools=[lookup_order, note],
        )
        run(agent, "Is B-1 a duplicate?")
    spans = tree(span_exporter.get_finished_spans())
    lookup = only(spans, "execute_tool lookup_order")["attributes"]
    assert lookup["gen_ai.tool.call.result"] == {"orders": [{"id": "B-1", "is_duplicate": True}]}
    raw = [s for s in span_exporter.get_finished_spans() if s.name == "execute_tool note"]
    assert raw[0].attributes is not None
    assert raw[0].attributes["gen_ai.tool.call.result"] == json.dumps("{not json")
    ids = {
        only(spans, name)["attributes"]["gen_ai.tool.call.id"]
        for name in ("execute_tool lookup_order", "execute_tool note")
    }
    assert len(ids) == 2  # parallel calls of one response: each its own id
