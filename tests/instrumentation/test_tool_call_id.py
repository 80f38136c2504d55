"""``tool_call_id()``: giving a decorated tool the model's tool-call id explicitly.

Why it matters: matching by name and arguments is a guess when a model asks for the
same tool twice with equal arguments, or when the application rewrites arguments
before running the tool. An agent loop knows the id it is executing; with this scope
it can say so without changing the tool's own call signature. The model call is the
real ``openai`` SDK against a recorded tool-call response (loopback HTTP).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.replay import ReplayServer
from tracejudge.instrumentation import tool_call_id

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
WEATHER: list[Any] = [
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"}
]
SEATTLE_ID = "call_JpNb8OiAkbIbHzDggfpdDHpi"
SF_ID = "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"


@tracejudge.tool
def get_current_weather(location: str) -> str:
    return f"sunny in {location}"


@tracejudge.tool(name="geocode", effect="read")
def geocode(location: str) -> str:
    return location.split(",")[0]


@tracejudge.tool(name="forecast", effect="read")
def forecast(location: str) -> str:
    """A tool that calls another tool: only the outer one takes the explicit id."""
    return f"forecast for {geocode(location)}"


def _ids(spans: tuple[ReadableSpan, ...], name: str) -> list[Any]:
    return [
        (s.attributes or {}).get("gen_ai.tool.call.id")
        for s in sorted(spans, key=lambda s: s.start_time or 0)
        if s.name == name
    ]


def _ask(server: ReplayServer) -> list[Any]:
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    r = c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER)
    return list(r.choices[0].message.tool_calls or [])


def test_explicit_id_wins_over_argument_matching(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The application rewrites the arguments before running the tool (so matching by
    arguments would pick the wrong call); the explicit ids are what the spans carry."""
    calls = _ask(replay("openai/test_chat_completion_tool_calls_with_content.yaml"))
    for tc in calls:
        location = json.loads(tc.function.arguments)["location"]
        # Swapped on purpose: Seattle's call runs with San Francisco's argument.
        other = "San Francisco, CA" if location.startswith("Seattle") else "Seattle, WA"
        with tool_call_id(tc.id):
            get_current_weather(other)
    ids = _ids(span_exporter.get_finished_spans(), "execute_tool get_current_weather")
    assert ids == [tc.id for tc in calls]
    assert set(ids) == {SEATTLE_ID, SF_ID}


def test_explicit_id_is_taken_out_of_matching(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """After one call ran with an explicit id, a later tool without one is matched to
    the remaining call, never to the id already used."""
    calls = _ask(replay("openai/test_chat_completion_tool_calls_with_content.yaml"))
    first, second = calls
    with tool_call_id(first.id):
        get_current_weather("somewhere else")
    get_current_weather("anywhere")  # matched by name: only the second call is left
    ids = _ids(span_exporter.get_finished_spans(), "execute_tool get_current_weather")
    assert ids == [first.id, second.id]


def test_only_the_first_tool_in_the_scope_takes_it(span_exporter: InMemorySpanExporter) -> None:
    """A tool that calls another tool: the outer span gets the id, the nested one does
    not (it was not what the model asked for), and neither does a second tool run in
    the same block."""
    with tool_call_id("call_outer"):
        forecast("Seattle, WA")
        geocode("Portland, OR")
    spans = span_exporter.get_finished_spans()
    assert _ids(spans, "execute_tool forecast") == ["call_outer"]
    assert _ids(spans, "execute_tool geocode") == [None, None]


def test_scope_ends_with_the_block(span_exporter: InMemorySpanExporter) -> None:
    """Outside the block (and when no tool ran inside it) nothing is left over."""
    with tool_call_id("call_unused"):
        pass
    geocode("Seattle, WA")
    assert _ids(span_exporter.get_finished_spans(), "execute_tool geocode") == [None]


def test_bad_ids_are_clear_errors() -> None:
    """An empty or non-string id is a ValueError at the call site."""
    with pytest.raises(ValueError, match="non-empty string"):
        tool_call_id("")
    with pytest.raises(ValueError, match="non-empty string"):
        tool_call_id(42)  # type: ignore[arg-type]


@tracejudge.tool(name="lookup_order", effect="read")
def lookup_order(order_id: str) -> str:
    return f"{order_id}: paid"


@tracejudge.tool(name="refund", effect="write", description="Refund (as the tool says).")
def refund(order_id: str) -> str:
    return f"{order_id}: refunded"


def test_a_tool_span_gets_the_description_the_requesting_call_offered(
    span_exporter: InMemorySpanExporter,
) -> None:
    """The model turn that asked for a tool was offered the tool's definition: a tool
    span without a description of its own takes the definition's (``gen_ai.tool.
    description``, recommended), one that declares its own keeps it. The model is
    tracejudge's scripted server (a fake model), over the real ``openai`` client."""
    from tracejudge.demo.model_server import ScriptedModelServer
    from tracejudge.demo.script import Reply, Script, ToolRequest

    def definition(name: str, text: str) -> dict[str, Any]:
        params = {"type": "object", "properties": {"order_id": {"type": "string"}}}
        return {
            "type": "function",
            "function": {"name": name, "description": text, "parameters": params},
        }

    asks = (
        ToolRequest("lookup_order", {"order_id": "B-1"}),
        ToolRequest("refund", {"order_id": "B-1"}),
    )
    with ScriptedModelServer([Script("described", [lambda c: Reply(tool_calls=asks)])]) as server:
        client = openai.OpenAI(
            base_url=server.openai_base_url("described"), api_key="k", max_retries=0
        )
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Refund B-1"}],
            tools=[
                definition("lookup_order", "Look up an order."),  # type: ignore[list-item]
                definition("refund", "Refund an order."),  # type: ignore[list-item]
            ],
        )
        client.close()
    lookup_order("B-1")
    refund("B-1")
    descriptions = {
        s.name: (s.attributes or {}).get("gen_ai.tool.description")
        for s in span_exporter.get_finished_spans()
        if s.name.startswith("execute_tool")
    }
    assert descriptions == {
        "execute_tool lookup_order": "Look up an order.",
        "execute_tool refund": "Refund (as the tool says).",
    }
