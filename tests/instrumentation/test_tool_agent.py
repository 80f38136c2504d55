"""``@tracejudge.tool`` and ``tracejudge.agent()`` spans, and context across threads/tasks.

Model calls use the real ``openai`` SDK against recorded responses (loopback HTTP), so the
tool-call-id join is exercised end to end.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.otel import snap
from tests.support.replay import ReplayServer
from tests.support.spans import span_dicts

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
WEATHER: list[Any] = [
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"}
]


class RefundDenied(Exception):
    """A user-level error a tool raises."""


@tracejudge.tool(name="refund_api.create", effect="write", description="Refund an order")
def create_refund(order_id: str, amount: float, note: str = "") -> dict[str, Any]:
    return {"refund_id": "rf_1", "order_id": order_id, "amount": amount}


@tracejudge.tool
def get_current_weather(location: str) -> str:
    return f"sunny in {location}"


@tracejudge.tool(effect="read")
async def lookup_order(order_id: str) -> dict[str, str]:
    await asyncio.sleep(0)
    return {"order_id": order_id, "status": "delivered"}


@tracejudge.tool(effect="write")
def failing_refund(order_id: str) -> None:
    raise RefundDenied(f"order {order_id} is not refundable")


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def sid(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.span_id


def tid(span: ReadableSpan) -> int:
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.trace_id


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def test_tool_span_snapshot(span_exporter: InMemorySpanExporter) -> None:
    """A decorated tool emits one INTERNAL ``execute_tool {name}`` span with its bound
    arguments (defaults included), result and declared effect."""
    assert create_refund("A-1", 12.5) == {"refund_id": "rf_1", "order_id": "A-1", "amount": 12.5}
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "execute_tool refund_api.create",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "refund_api.create",
                    "gen_ai.tool.type": "function",
                    "tracejudge.tool.effect": "write",
                    "gen_ai.tool.description": "Refund an order",
                    "gen_ai.tool.call.arguments": {"order_id": "A-1", "amount": 12.5, "note": ""},
                    "gen_ai.tool.call.result": {
                        "refund_id": "rf_1",
                        "order_id": "A-1",
                        "amount": 12.5,
                    },
                },
            }
        ]
    )


def test_tool_error_reraised_unchanged(span_exporter: InMemorySpanExporter) -> None:
    """The tool's own exception reaches the caller as is; the span is ERROR with the
    exception's qualified class name as ``error.type`` and no result."""
    with pytest.raises(RefundDenied, match="not refundable") as info:
        failing_refund("B-2")
    assert type(info.value) is RefundDenied
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "execute_tool failing_refund",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "order B-2 is not refundable",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "failing_refund",
                    "gen_ai.tool.type": "function",
                    "tracejudge.tool.effect": "write",
                    "gen_ai.tool.call.arguments": {"order_id": "B-2"},
                    "error.type": "tests.instrumentation.test_tool_agent.RefundDenied",
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "tests.instrumentation.test_tool_agent.RefundDenied",
                            "exception.message": "order B-2 is not refundable",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_async_tool_and_context_manager_form(span_exporter: InMemorySpanExporter) -> None:
    """Async tools and the ``with tool(...)`` form produce the same span shape; the
    context-manager form takes an explicit ``call_id``."""

    async def main() -> None:
        assert (await lookup_order("C-3"))["status"] == "delivered"
        async with tracejudge.tool(
            "email.send", effect="notify", arguments={"to": "a@b.c"}, call_id="call_x"
        ) as t:
            t.set_result("queued")

    asyncio.run(main())
    lookup, email = span_exporter.get_finished_spans()
    assert snap(lookup)["attributes"]["gen_ai.tool.call.arguments"] == {"order_id": "C-3"}
    assert snap(email) == {
        "name": "execute_tool email.send",
        "kind": "INTERNAL",
        "status": "UNSET",
        "attributes": {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "email.send",
            "gen_ai.tool.type": "function",
            "tracejudge.tool.effect": "notify",
            "gen_ai.tool.call.id": "call_x",
            "gen_ai.tool.call.arguments": {"to": "a@b.c"},
            "gen_ai.tool.call.result": "queued",
        },
    }


def test_unserializable_arguments_fall_back_to_repr(span_exporter: InMemorySpanExporter) -> None:
    """Arguments/results that are not JSON become their ``repr()`` instead of failing."""

    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque thing>"

    @tracejudge.tool
    def handle(thing: Any) -> Any:
        return thing

    handle(Opaque())
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.tool.call.arguments"] == {"thing": "<Opaque thing>"}
    assert attrs["gen_ai.tool.call.result"] == "<Opaque thing>"


def test_invalid_effect_is_a_clear_error() -> None:
    """A typo in ``effect`` fails at decoration time, naming the accepted values."""
    with pytest.raises(ValueError, match="read"):
        tracejudge.tool(effect="delete")


def test_agent_run_links_tool_calls_to_model_ids(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Inside ``agent()`` the tool spans pick up the model's tool-call ids (matched by
    name, then arguments), nest under the agent span, and the agent span carries the run
    identity, the provider and the final answer."""
    server = replay("openai/test_chat_completion_tool_calls_with_content.yaml")

    @tracejudge.agent(
        "weather-bot",
        version="1.2",
        run_id="run-1",
        case_id="case-1",
        experiment_id="exp-1",
        variant_id="v2",
        user_id="user-9",
        tenant_id="tenant-3",
    )
    def run() -> str:
        c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        r = c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER)
        # Execute in reverse order: ids must follow the arguments, not the order.
        for tc in reversed(r.choices[0].message.tool_calls or []):
            get_current_weather(**json.loads(tc.function.arguments))  # type: ignore[union-attr]
        return "Seattle: sunny. San Francisco: sunny."

    assert run() == "Seattle: sunny. San Francisco: sunny."
    spans = span_exporter.get_finished_spans()
    [agent_span] = by_name(spans, "invoke_agent weather-bot")
    tools = by_name(spans, "execute_tool get_current_weather")
    ids = {
        snap(t)["attributes"]["gen_ai.tool.call.arguments"]["location"]: snap(t)["attributes"][
            "gen_ai.tool.call.id"
        ]
        for t in tools
    }
    assert ids == {
        "Seattle, WA": "call_JpNb8OiAkbIbHzDggfpdDHpi",
        "San Francisco, CA": "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
    }
    assert all(snap(t)["attributes"]["gen_ai.agent.name"] == "weather-bot" for t in tools)
    assert all(parent_id(s) == sid(agent_span) for s in tools)
    assert snap(agent_span) == {
        "name": "invoke_agent weather-bot",
        "kind": "INTERNAL",
        "status": "UNSET",
        "attributes": {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather-bot",
            "gen_ai.agent.version": "1.2",
            "tracejudge.run.id": "run-1",
            "tracejudge.case.id": "case-1",
            "tracejudge.experiment.id": "exp-1",
            "tracejudge.variant.id": "v2",
            "user.id": "user-9",
            "tracejudge.tenant.id": "tenant-3",
            "gen_ai.provider.name": "openai",
            "gen_ai.output.messages": [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "Seattle: sunny. San Francisco: sunny."}],
                    "finish_reason": "stop",
                }
            ],
        },
    }


def test_agent_context_manager_set_output_and_error(span_exporter: InMemorySpanExporter) -> None:
    """The ``with agent(...)`` form records ``set_output`` text and marks the span ERROR
    when the run raises (the exception propagates unchanged)."""

    def run_agent() -> None:
        with tracejudge.agent("refunds") as run:
            run.set_output("Your refund is on its way")
            failing_refund("D-4")

    with pytest.raises(RefundDenied):
        run_agent()
    spans = span_exporter.get_finished_spans()
    [agent_span] = by_name(spans, "invoke_agent refunds")
    data = snap(agent_span)
    assert data["status"] == "ERROR"
    assert data["attributes"]["gen_ai.output.messages"][0]["parts"][0]["content"] == (
        "Your refund is on its way"
    )
    assert "gen_ai.provider.name" not in data["attributes"]


def test_async_agent_decorator(span_exporter: InMemorySpanExporter) -> None:
    """An async agent function is traced; its string return value is the final answer."""

    @tracejudge.agent("async-bot")
    async def run() -> str:
        await lookup_order("E-5")
        return "delivered"

    assert asyncio.run(run()) == "delivered"
    tool_span, agent_span = span_exporter.get_finished_spans()
    assert parent_id(tool_span) == sid(agent_span)
    assert snap(agent_span)["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "delivered"}
    ]


def test_context_propagates_to_threads_and_tasks(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Model and tool spans made in worker threads (context copied) and in asyncio tasks
    are children of the agent span that started them."""
    sync_server = replay("openai/test_chat_completion_with_content.yaml")
    async_server = replay("openai/test_async_chat_completion_tool_calls_with_content.yaml")

    def call_model() -> None:
        c = openai.OpenAI(base_url=sync_server.base_url, api_key="k", max_retries=0)
        c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER)

    async def call_async_model() -> None:
        c = openai.AsyncOpenAI(base_url=async_server.base_url, api_key="k", max_retries=0)
        await c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER)

    with tracejudge.agent("fanout"), ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(contextvars.copy_context().run, call_model) for _ in range(2)]
        for f in futures:
            f.result()

        async def gather() -> None:
            await asyncio.gather(call_async_model(), lookup_order("F-6"))

        asyncio.run(gather())
    spans = span_exporter.get_finished_spans()
    [agent_span] = by_name(spans, "invoke_agent fanout")
    children = [s for s in spans if s is not agent_span]
    assert len(children) == 4
    assert {parent_id(s) for s in children} == {sid(agent_span)}
    trace_id = tid(agent_span)
    assert all(tid(s) == trace_id for s in children)


def test_spans_are_deterministic_with_fake_clock(span_exporter: InMemorySpanExporter) -> None:
    """With the shared fake clock and counting id generator, ids, parents and timestamps
    are the same on every run, so whole traces are compared as snapshots: the agent is
    span 1 of trace 1, the tool span 2 under it, and each reading of the clock is 1 s."""
    with tracejudge.agent("clocked"):
        create_refund("G-7", 1.0)
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "execute_tool refund_api.create",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 2},
                "parent": 1,
                "start_time": 2000000000,
                "end_time": 3000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "refund_api.create",
                    "gen_ai.tool.type": "function",
                    "tracejudge.tool.effect": "write",
                    "gen_ai.agent.name": "clocked",
                    "gen_ai.tool.description": "Refund an order",
                    "gen_ai.tool.call.arguments": {"order_id": "G-7", "amount": 1.0, "note": ""},
                    "gen_ai.tool.call.result": {
                        "refund_id": "rf_1",
                        "order_id": "G-7",
                        "amount": 1.0,
                    },
                },
            },
            {
                "name": "invoke_agent clocked",
                "kind": "INTERNAL",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "clocked",
                },
            },
        ]
    )
