"""The contract every agent-framework integration keeps, checked as whole spans.

Each scenario runs on every framework (``drivers.py``: the OpenAI Agents SDK and
LangGraph, each through its real SDK, the real ``openai`` client and loopback HTTP to
tracejudge's scripted model server — a fake model, since no real one can run in a test):
an agent run with a model call and a tool call that succeeds; a tool call that raises; a
nested agent (the Agents SDK's handoff, LangGraph's agent called as a tool); a streamed
run; ``uninstrument()`` and ``instrument()`` again; and the bad-input rules — a version
outside the supported range, an interface that moved, a bug in a translation. Each test
compares the run's answer and exported spans with one snapshot per framework
(``tests/support/spans.py``).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.frameworks.contract.drivers import Driver
from tests.frameworks.lifecycle_support import names, ours
from tests.support.spans import span_dicts
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.instrumentation import SupportedVersions, active_patchers

_MODEL_CONTENT = ("gen_ai.input.messages", "gen_ai.tool.definitions", "gen_ai.system_instructions")
"""Left out of the scenario snapshots: what each model call was sent is the provider
tests' subject (and the frameworks' own prompt plumbing), not the integration's."""


def instrument(tracer_provider: TracerProvider) -> None:
    tracejudge.instrument(
        tracer_provider=tracer_provider, capture_content="SPAN_ONLY", raise_internal_errors=True
    )


def play(driver: Driver, scenario: str) -> str:
    """The scenario on the driver's framework; its answer, or the error it raised."""
    with ScriptedModelServer(driver.scripts(scenario)) as server:
        try:
            return driver.run(scenario, server)
        except Exception as exc:  # a framework that lets the tool's error end the run
            return f"raised {type(exc).__name__}: {exc}"


@pytest.mark.parametrize("scenario", ["tool_ok", "tool_raises", "nested", "stream"])
def test_scenario(
    driver: Driver,
    scenario: str,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """The run's answer and every span it made."""
    instrument(tracer_provider)
    answer = play(driver, scenario)
    spans = span_dicts(span_exporter, drop=_MODEL_CONTENT)
    assert {"answer": answer, "spans": spans} == snapshot(
        {
            "openai-agents/tool_ok": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-c901616d6527f4a5793508e4d0e32",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 52,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_a424fe40d97378af6938c826",
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
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 5000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_a424fe40d97378af6938c826",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 6000000000,
                        "end_time": 7000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2bc84f25a1634bef4fe9c3583c849",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 97,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 8000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "openai-agents/tool_raises": {
                "answer": "B-1 is paid, but the refund was refused.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-c2a664b81ca71a327e4ae59d61c78",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 85,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_b7154d35859707b04d6cc87e",
                                            "arguments": {"order_id": "B-1"},
                                        },
                                        {
                                            "type": "tool_call",
                                            "name": "refund",
                                            "id": "call_3876a87594d63a7aea463885",
                                            "arguments": {"order_id": "B-1"},
                                        },
                                    ],
                                    "finish_reason": "tool_call",
                                }
                            ],
                        },
                    },
                    {
                        "name": "execute_tool lookup_order",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 6000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_b7154d35859707b04d6cc87e",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "execute_tool refund",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 5000000000,
                        "end_time": 7000000000,
                        "status": "ERROR",
                        "status_description": "Error running tool (non-fatal): Tool execution failed. Error details are redacted.",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "refund",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_3876a87594d63a7aea463885",
                            "gen_ai.tool.description": "Refund an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "An error occurred while running the tool. Please try again.",
                            "error.type": "_OTHER",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 5},
                        "parent": 1,
                        "start_time": 8000000000,
                        "end_time": 9000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-58bb6ff8bb756d45ab7d89be3d565",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 166,
                            "gen_ai.usage.output_tokens": 23,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "text",
                                            "content": "B-1 is paid, but the refund was refused.",
                                        }
                                    ],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 10000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "text",
                                            "content": "B-1 is paid, but the refund was refused.",
                                        }
                                    ],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "openai-agents/nested": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-1f68d426aa85e95b63bd161b902fe",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 48,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "transfer_to_orders",
                                            "id": "call_f08a1646c4202df5c83580dd",
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
                            "gen_ai.tool.name": "transfer_to_orders",
                            "tracejudge.handoff.to_agent": "orders",
                            "gen_ai.tool.call.id": "call_f08a1646c4202df5c83580dd",
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2a48f4bee7a62d1c24ff7cd23b5ae",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 98,
                            "gen_ai.usage.output_tokens": 52,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_6bc26f011e840a90b4ebb56f",
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
                            "gen_ai.tool.call.id": "call_6bc26f011e840a90b4ebb56f",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-f32604b46423744d9700b34353941",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 170,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
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
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
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
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "openai-agents/stream": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "gen_ai.request.stream": True,
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "gen_ai.response.time_to_first_chunk": "<ttfc>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2f25d05f78cb486d9da4135e255c8",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_799e794c92da31bfac2055d7",
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
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 5000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_799e794c92da31bfac2055d7",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 6000000000,
                        "end_time": 7000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.request.stream": True,
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "gen_ai.response.time_to_first_chunk": "<ttfc>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2ea5d0ac3f7d4d11a9dedd99e78da",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 8000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "langchain/tool_ok": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-c901616d6527f4a5793508e4d0e32",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 52,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_a424fe40d97378af6938c826",
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
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 5000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_a424fe40d97378af6938c826",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 6000000000,
                        "end_time": 7000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2bc84f25a1634bef4fe9c3583c849",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 102,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 8000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "langchain/tool_raises": {
                "answer": "raised ValueError: refund of B-1 refused",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-c2a664b81ca71a327e4ae59d61c78",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 85,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_b7154d35859707b04d6cc87e",
                                            "arguments": {"order_id": "B-1"},
                                        },
                                        {
                                            "type": "tool_call",
                                            "name": "refund",
                                            "id": "call_3876a87594d63a7aea463885",
                                            "arguments": {"order_id": "B-1"},
                                        },
                                    ],
                                    "finish_reason": "tool_call",
                                }
                            ],
                        },
                    },
                    {
                        "name": "execute_tool lookup_order",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 5000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_b7154d35859707b04d6cc87e",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "execute_tool refund",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 6000000000,
                        "end_time": 8000000000,
                        "status": "ERROR",
                        "status_description": "refund of B-1 refused",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "refund",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_3876a87594d63a7aea463885",
                            "gen_ai.tool.description": "Refund an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "error.type": "ValueError",
                        },
                        "events": [
                            {
                                "name": "exception",
                                "timestamp": 7000000000,
                                "attributes": {
                                    "exception.type": "ValueError",
                                    "exception.message": "refund of B-1 refused",
                                    "exception.stacktrace": "<traceback>",
                                },
                            }
                        ],
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 10000000000,
                        "status": "ERROR",
                        "status_description": "refund of B-1 refused",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "error.type": "ValueError",
                        },
                        "events": [
                            {
                                "name": "exception",
                                "timestamp": 9000000000,
                                "attributes": {
                                    "exception.type": "ValueError",
                                    "exception.message": "refund of B-1 refused",
                                    "exception.stacktrace": "<traceback>",
                                },
                            }
                        ],
                    },
                ],
            },
            "langchain/nested": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-1f68d426aa85e95b63bd161b902fe",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 58,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "ask_orders",
                                            "id": "call_f08a1646c4202df5c83580dd",
                                            "arguments": {
                                                "question": "Is B-1 paid? If so, refund it."
                                            },
                                        }
                                    ],
                                    "finish_reason": "tool_call",
                                }
                            ],
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 3,
                        "start_time": 5000000000,
                        "end_time": 6000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-3cd572bb34c88d56d8b2dddfba2e4",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 52,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_a06054d9b7ffd89d48c2cc5c",
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
                        "context": {"trace_id": 1, "span_id": 5},
                        "parent": 3,
                        "start_time": 7000000000,
                        "end_time": 8000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "triage",
                            "gen_ai.tool.call.id": "call_a06054d9b7ffd89d48c2cc5c",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 6},
                        "parent": 3,
                        "start_time": 9000000000,
                        "end_time": 10000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-c9e6f50fae7c02efdf4802d17a0ae",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 102,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "execute_tool ask_orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 11000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "ask_orders",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "triage",
                            "gen_ai.tool.call.id": "call_f08a1646c4202df5c83580dd",
                            "gen_ai.tool.description": "Ask the orders agent.",
                            "gen_ai.tool.call.arguments": {
                                "question": "Is B-1 paid? If so, refund it."
                            },
                            "gen_ai.tool.call.result": "B-1 is paid.",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 7},
                        "parent": 1,
                        "start_time": 12000000000,
                        "end_time": 13000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2a48f4bee7a62d1c24ff7cd23b5ae",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 109,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
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
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
            "langchain/stream": {
                "answer": "B-1 is paid.",
                "spans": [
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
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2f25d05f78cb486d9da4135e255c8",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["tool_calls"],
                            "gen_ai.usage.input_tokens": 26,
                            "gen_ai.usage.output_tokens": 52,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [
                                        {
                                            "type": "tool_call",
                                            "name": "lookup_order",
                                            "id": "call_799e794c92da31bfac2055d7",
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
                        "context": {"trace_id": 1, "span_id": 3},
                        "parent": 1,
                        "start_time": 4000000000,
                        "end_time": 5000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "lookup_order",
                            "gen_ai.tool.type": "function",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.tool.call.id": "call_799e794c92da31bfac2055d7",
                            "gen_ai.tool.description": "Look up an order.",
                            "gen_ai.tool.call.arguments": {"order_id": "B-1"},
                            "gen_ai.tool.call.result": "B-1: paid",
                        },
                    },
                    {
                        "name": "chat gpt-4o-mini",
                        "kind": "CLIENT",
                        "context": {"trace_id": 1, "span_id": 4},
                        "parent": 1,
                        "start_time": 6000000000,
                        "end_time": 7000000000,
                        "status": "UNSET",
                        "attributes": {
                            "openai.api.type": "chat_completions",
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.request.model": "gpt-4o-mini",
                            "server.address": "127.0.0.1",
                            "server.port": "<port>",
                            "openai.response.system_fingerprint": "fp_tracejudge",
                            "gen_ai.response.id": "chatcmpl-2ea5d0ac3f7d4d11a9dedd99e78da",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.response.finish_reasons": ["stop"],
                            "gen_ai.usage.input_tokens": 102,
                            "gen_ai.usage.output_tokens": 16,
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                    {
                        "name": "invoke_agent orders",
                        "kind": "INTERNAL",
                        "context": {"trace_id": 1, "span_id": 1},
                        "parent": None,
                        "start_time": 1000000000,
                        "end_time": 8000000000,
                        "status": "UNSET",
                        "attributes": {
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "orders",
                            "gen_ai.provider.name": "openai",
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "parts": [{"type": "text", "content": "B-1 is paid."}],
                                    "finish_reason": "stop",
                                }
                            ],
                        },
                    },
                ],
            },
        }
    )[f"{driver.name}/{scenario}"]


def test_uninstrument_stops_and_instrument_again_resumes_without_doubling(
    driver: Driver, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """instrument → spans; uninstrument → none at all (the framework keeps our hook, now
    disabled); instrument twice more → spans again, each exactly once."""
    instrument(tracer_provider)
    assert driver.integration.name in active_patchers()
    play(driver, "tool_ok")
    traced = names(span_exporter)
    span_exporter.clear()
    tracejudge.uninstrument()
    untraced_answer = play(driver, "tool_ok")
    untraced = names(span_exporter)
    instrument(tracer_provider)
    instrument(tracer_provider)
    play(driver, "tool_ok")
    again = names(span_exporter)
    assert {
        "traced": traced,
        "untraced": (untraced_answer, untraced),
        "again": again,
    } == snapshot(
        {
            "openai-agents": {
                "traced": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
                "untraced": ("B-1 is paid.", []),
                "again": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
            },
            "langchain": {
                "traced": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
                "untraced": ("B-1 is paid.", []),
                "again": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
            },
        }
    )[driver.name]


def test_version_outside_the_supported_range_warns_once_and_still_traces(
    driver: Driver,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One warning naming the distribution, its installed version and the range; the run
    is traced all the same."""
    monkeypatch.setattr(driver.integration, "supported", SupportedVersions("0.0.1", "0.0.2"))
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        instrument(tracer_provider)
        instrument(tracer_provider)
    (warning,) = ours(caplog)
    assert driver.integration.distribution in warning
    assert ">=0.0.1,<0.0.2" in warning
    play(driver, "tool_ok")
    assert (
        names(span_exporter)
        == snapshot(
            {
                "openai-agents": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
                "langchain": [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
            }
        )[driver.name]
    )


def test_moved_interface_warns_once_and_the_model_calls_are_still_traced(
    driver: Driver,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The framework no longer offers the hook: one warning naming it, the application's
    run works, and the OpenAI client patch still traces every model call."""
    driver.break_interface(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        instrument(tracer_provider)
        answer = play(driver, "tool_ok")
    (warning,) = ours(caplog)
    assert driver.moved_hook in warning
    assert driver.integration.name not in active_patchers()
    assert (answer, names(span_exporter)) == snapshot(
        {
            "openai-agents": ("B-1 is paid.", ["chat gpt-4o-mini", "chat gpt-4o-mini"]),
            "langchain": ("B-1 is paid.", ["chat gpt-4o-mini", "chat gpt-4o-mini"]),
        }
    )[driver.name]


def test_a_telemetry_bug_never_reaches_the_run(
    driver: Driver,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug in the integration's translation is logged as one warning; the run
    completes, and its spans still end."""

    def bug(*args: Any) -> Any:
        raise RuntimeError("translation bug")

    driver.break_translation(monkeypatch, bug)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        answer = play(driver, "tool_ok")
    assert any("translation bug" in m for m in ours(caplog))
    assert (answer, names(span_exporter)) == snapshot(
        {
            "openai-agents": (
                "B-1 is paid.",
                [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
            ),
            "langchain": (
                "B-1 is paid.",
                [
                    "chat gpt-4o-mini",
                    "execute_tool lookup_order",
                    "chat gpt-4o-mini",
                    "invoke_agent orders",
                ],
            ),
        }
    )[driver.name]
