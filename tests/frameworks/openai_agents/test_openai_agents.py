"""The OpenAI Agents SDK integration against the real ``openai-agents`` package.

Real parts throughout: the installed SDK's ``Runner`` and models over the real ``openai``
client and loopback HTTP — a recorded Agents-SDK tool loop (cassette recorded by
traceloop/openllmetry with Agents/Python 0.2.7, Apache-2.0, see the cassettes'
MANIFEST.tsv) served by ``tests.support.replay.ReplayServer``, and tracejudge's scripted
model server (Chat Completions) for handoffs, guardrails and content rules — with the
real OTel SDK and an in-memory exporter. Whole spans are compared with snapshots
(``tests/support/spans.py``); a tool that raises and a streamed run are in the contract
every integration keeps (``tests/frameworks/contract``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
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
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.replay import ReplayServer
from tests.support.spans import by_name, only, span_dicts
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.script import Conversation, Reply, Script, ToolRequest

pytestmark = pytest.mark.usefixtures("agents_instrumented")

CASSETTE = "openai-agents/test_tool_call_and_result_attributes.yaml"
CITY_INSTRUCTIONS = "You help users get information about cities using the get_city_info tool."
# What the recorded model said in its second (final) response.
CITY_ANSWER = (
    "London is the capital city of the United Kingdom, with a population of approximately "
    "9 million. It is renowned for its rich history, cultural heritage, and diverse population."
)


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

    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat gpt-4o",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 2},
                "parent": 1,
                "start_time": 2000000000,
                "end_time": 3000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "responses",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Tell me about London"}],
                        }
                    ],
                    "gen_ai.system_instructions": [
                        {
                            "type": "text",
                            "content": "You help users get information about cities using the get_city_info tool.",
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_city_info",
                            "description": "Get detailed information about a city.",
                            "parameters": {
                                "properties": {
                                    "city_name": {"title": "City Name", "type": "string"}
                                },
                                "required": ["city_name"],
                                "title": "get_city_info_args",
                                "type": "object",
                                "additionalProperties": False,
                            },
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "openai.response.service_tier": "default",
                    "gen_ai.response.id": "resp_0a91d4a1b37538fc0068fdd3ab217c819591ff2ae8e7267945",
                    "gen_ai.response.model": "gpt-4o-2024-08-06",
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                    "gen_ai.usage.input_tokens": 72,
                    "gen_ai.usage.output_tokens": 17,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_city_info",
                                    "id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                                    "arguments": {"city_name": "London"},
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            },
            {
                "name": "execute_tool get_city_info",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 3},
                "parent": 1,
                "start_time": 4000000000,
                "end_time": 5000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_city_info",
                    "gen_ai.tool.type": "function",
                    "gen_ai.agent.name": "CityAgent",
                    "gen_ai.tool.call.id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                    "gen_ai.tool.description": "Get detailed information about a city.",
                    "gen_ai.tool.call.arguments": {"city_name": "London"},
                    "gen_ai.tool.call.result": "City: London, Population: 9000000, Country: United Kingdom, Description: Capital city with rich history",
                },
            },
            {
                "name": "chat gpt-4o",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 4},
                "parent": 1,
                "start_time": 6000000000,
                "end_time": 7000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "responses",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Tell me about London"}],
                        },
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_city_info",
                                    "id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                                    "arguments": {"city_name": "London"},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": "City: London, Population: 9000000, Country: United Kingdom, Description: Capital city with rich history",
                                    "id": "call_veL3ZXS1QhDqzKYs3kbmi9e2",
                                }
                            ],
                        },
                    ],
                    "gen_ai.system_instructions": [
                        {
                            "type": "text",
                            "content": "You help users get information about cities using the get_city_info tool.",
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_city_info",
                            "description": "Get detailed information about a city.",
                            "parameters": {
                                "properties": {
                                    "city_name": {"title": "City Name", "type": "string"}
                                },
                                "required": ["city_name"],
                                "title": "get_city_info_args",
                                "type": "object",
                                "additionalProperties": False,
                            },
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "openai.response.service_tier": "default",
                    "gen_ai.response.id": "resp_0a91d4a1b37538fc0068fdd3adc7bc8195a7f9628abd015ade",
                    "gen_ai.response.model": "gpt-4o-2024-08-06",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 121,
                    "gen_ai.usage.output_tokens": 36,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "London is the capital city of the United Kingdom, with a population of approximately 9 million. It is renowned for its rich history, cultural heritage, and diverse population.",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
            {
                "name": "invoke_agent CityAgent",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 8000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "CityAgent",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "London is the capital city of the United Kingdom, with a population of approximately 9 million. It is renowned for its rich history, cultural heritage, and diverse population.",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
        ]
    )


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
    assert result.final_output == "Order B-1 is paid (42.00 USD)."
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 2},
                "parent": 1,
                "start_time": 2000000000,
                "end_time": 3000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "chat_completions",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.input.messages": [
                        {"role": "system", "parts": [{"type": "text", "content": "Route."}]},
                        {"role": "user", "parts": [{"type": "text", "content": "Is B-1 paid?"}]},
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "transfer_to_orders",
                            "description": "Handoff to the orders agent to handle the request. ",
                            "parameters": {
                                "additionalProperties": False,
                                "type": "object",
                                "properties": {},
                                "required": [],
                            },
                        }
                    ],
                    "openai.response.system_fingerprint": "fp_tracejudge",
                    "gen_ai.response.id": "chatcmpl-cf2cc7bf48fdc0856178cdd756648",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                    "gen_ai.usage.input_tokens": 21,
                    "gen_ai.usage.output_tokens": 48,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "transfer_to_orders",
                                    "id": "call_ba954c5a8dca9d8f1211a41d",
                                    "arguments": {},
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            },
            {
                "name": "execute_tool transfer_to_orders",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 3},
                "parent": 1,
                "start_time": 4000000000,
                "end_time": 5000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.type": "function",
                    "tracejudge.handoff.from_agent": "triage",
                    "gen_ai.agent.name": "triage",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.tool.name": "transfer_to_orders",
                    "tracejudge.handoff.to_agent": "orders",
                    "gen_ai.tool.call.id": "call_ba954c5a8dca9d8f1211a41d",
                    "gen_ai.tool.description": "Handoff to the orders agent to handle the request. ",
                },
            },
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 5},
                "parent": 4,
                "start_time": 7000000000,
                "end_time": 8000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "chat_completions",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.input.messages": [
                        {"role": "system", "parts": [{"type": "text", "content": "Answer."}]},
                        {"role": "user", "parts": [{"type": "text", "content": "Is B-1 paid?"}]},
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "transfer_to_orders",
                                    "id": "call_ba954c5a8dca9d8f1211a41d",
                                    "arguments": {},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": '{"assistant": "orders"}',
                                    "id": "call_ba954c5a8dca9d8f1211a41d",
                                }
                            ],
                        },
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "lookup_order",
                            "description": "Look up an order.",
                            "parameters": {
                                "properties": {"order_id": {"title": "Order Id", "type": "string"}},
                                "required": ["order_id"],
                                "title": "lookup_order_args",
                                "type": "object",
                                "additionalProperties": False,
                            },
                        }
                    ],
                    "openai.response.system_fingerprint": "fp_tracejudge",
                    "gen_ai.response.id": "chatcmpl-8db3b642f29d633b65a6d516644b9",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                    "gen_ai.usage.input_tokens": 94,
                    "gen_ai.usage.output_tokens": 52,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "lookup_order",
                                    "id": "call_ecbbb240c6d93b1b7f7fb62d",
                                    "arguments": {"order_id": "B-1"},
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            },
            {
                "name": "execute_tool lookup_order",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 6},
                "parent": 4,
                "start_time": 9000000000,
                "end_time": 10000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.type": "function",
                    "gen_ai.agent.name": "orders",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.tool.call.id": "call_ecbbb240c6d93b1b7f7fb62d",
                    "gen_ai.tool.description": "Look up an order.",
                    "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                    "gen_ai.tool.call.result": {
                        "order_id": "B-1",
                        "amount": 42.0,
                        "status": "paid",
                    },
                },
            },
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 7},
                "parent": 4,
                "start_time": 11000000000,
                "end_time": 12000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "chat_completions",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.input.messages": [
                        {"role": "system", "parts": [{"type": "text", "content": "Answer."}]},
                        {"role": "user", "parts": [{"type": "text", "content": "Is B-1 paid?"}]},
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "transfer_to_orders",
                                    "id": "call_ba954c5a8dca9d8f1211a41d",
                                    "arguments": {},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": '{"assistant": "orders"}',
                                    "id": "call_ba954c5a8dca9d8f1211a41d",
                                }
                            ],
                        },
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "lookup_order",
                                    "id": "call_ecbbb240c6d93b1b7f7fb62d",
                                    "arguments": {"order_id": "B-1"},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": "{'order_id': 'B-1', 'amount': 42.0, 'status': 'paid'}",
                                    "id": "call_ecbbb240c6d93b1b7f7fb62d",
                                }
                            ],
                        },
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "lookup_order",
                            "description": "Look up an order.",
                            "parameters": {
                                "properties": {"order_id": {"title": "Order Id", "type": "string"}},
                                "required": ["order_id"],
                                "title": "lookup_order_args",
                                "type": "object",
                                "additionalProperties": False,
                            },
                        }
                    ],
                    "openai.response.system_fingerprint": "fp_tracejudge",
                    "gen_ai.response.id": "chatcmpl-14b3e43608c1589e0ce74484e8fc8",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 176,
                    "gen_ai.usage.output_tokens": 20,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "Order B-1 is paid (42.00 USD)."}
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
            {
                "name": "invoke_agent orders",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 4},
                "parent": 1,
                "start_time": 6000000000,
                "end_time": 13000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "orders",
                    "gen_ai.conversation.id": "conversation-7",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "Order B-1 is paid (42.00 USD)."}
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
            {
                "name": "invoke_agent triage",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 14000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "triage",
                    "gen_ai.conversation.id": "conversation-7",
                    "tracejudge.run.id": "run-1",
                    "tracejudge.case.id": "case-b1",
                    "tracejudge.route.key": "conversation:unknown_service:python:conversation-7",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "Order B-1 is paid (42.00 USD)."}
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
        ]
    )


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
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "guardrail no_account_numbers",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 2},
                "parent": 1,
                "start_time": 2000000000,
                "end_time": 3000000000,
                "status": "UNSET",
                "attributes": {
                    "tracejudge.guardrail.name": "no_account_numbers",
                    "gen_ai.agent.name": "orders",
                    "tracejudge.guardrail.triggered": True,
                },
            },
            {
                "name": "invoke_agent orders",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 4000000000,
                "status": "ERROR",
                "status_description": "Guardrail tripwire triggered",
                "attributes": {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "orders",
                    "error.type": "_OTHER",
                },
            },
        ]
    )


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
        return span_dicts(span_exporter)

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
    tool = only(span_dicts(span_exporter), "execute_tool lookup_order")
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
    spans = span_dicts(span_exporter)
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
