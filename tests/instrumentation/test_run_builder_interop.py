"""Our spans, read back by the run builder the judge uses: the instrumentation's contract.

Real ``openai`` SDK against recorded responses, real OTel SDK spans, then
``tracejudge.model`` decoding and run building, as ``tracejudge eval`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.replay import ReplayServer
from tracejudge.model.build import build_runs
from tracejudge.model.decode_sdk import spans_from_sdk

pytestmark = pytest.mark.usefixtures("instrumented")

WEATHER: list[Any] = [
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"}
]


@tracejudge.tool(effect="read")
def get_current_weather(location: str) -> str:
    return f"rain in {location}"


def test_run_builder_sees_steps_ids_and_answer(
    replay: Callable[..., ReplayServer], span_exporter: InMemorySpanExporter
) -> None:
    """One agent run becomes one ``Run`` with the model call (and the tool calls it asked
    for), both tool executions joined by call id, the identity and the final answer."""
    server = replay("openai/test_chat_completion_tool_calls_with_content.yaml")

    @tracejudge.agent("weather-bot", case_id="case-7", user_id="u-1")
    def run() -> str:
        c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        r = c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER)
        for tc in r.choices[0].message.tool_calls or []:
            get_current_weather(**json.loads(tc.function.arguments))  # type: ignore[union-attr]
        return "It rains in both cities."

    run()
    [built] = build_runs(spans_from_sdk(span_exporter.get_finished_spans()))
    assert (built.agent_name, built.case_id, built.user_id) == ("weather-bot", "case-7", "u-1")
    assert built.final_answer == "It rains in both cities."
    [model] = built.model_calls
    assert [c.call_id for c in model.requested_tool_calls] == [
        "call_JpNb8OiAkbIbHzDggfpdDHpi",
        "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
    ]
    tools = built.tool_calls
    assert [(t.name, t.call_id, t.effect, t.inferred) for t in tools] == [
        ("get_current_weather", "call_JpNb8OiAkbIbHzDggfpdDHpi", "read", False),
        ("get_current_weather", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ", "read", False),
    ]
    assert tools[0].arguments == {"location": "Seattle, WA"}
    assert tools[0].result == "rain in Seattle, WA"
