"""What the Gemini patch remembers between calls, and reads once per call, must never
show stale content.

A call's ``config`` (request parameters, tools, system instruction) is converted once per
config object while it still equals its snapshot (``ConfigParts``); the function calls
handed to the tool-call ledger take their arguments from the converted output parts
(``requested_calls``) rather than converting them a second time. These tests change a
config in place between calls and compare ``requested_calls`` with ``tool_calls_of``,
which reads the response on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from google import genai
from google.genai import types
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.replay import ReplayServer
from tests.support.spans import span_dicts
from tracejudge.instrumentation import Runtime
from tracejudge.instrumentation.gemini import _convert as cv
from tracejudge.instrumentation.gemini._patch import requested_calls, start, tool_calls_of

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
MODEL = "gemini-2.0-flash"
ASK = "What's the weather like in San Francisco?"


def _client(server: ReplayServer) -> genai.Client:
    return genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.origin, api_version="v1beta"),
    )


def _tool(description: str) -> types.Tool:
    return types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description=description,
                parameters=types.Schema(
                    type=types.Type.OBJECT,
                    properties={"location": types.Schema(type=types.Type.STRING)},
                ),
            )
        ]
    )


def test_a_config_changed_in_place_is_read_again(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The same config object on three calls: unchanged, the second span is the first's;
    after its temperature, its tool's description (a nested model) and its system
    instruction change in place, the third span carries the new values."""
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = _client(server)
    tool = _tool("Weather now")
    config = types.GenerateContentConfig(
        system_instruction="Be brief.", tools=[tool], temperature=0.5
    )
    for _ in range(2):
        c.models.generate_content(model=MODEL, contents=ASK, config=config)
    config.temperature = 0.25
    declarations = tool.function_declarations
    assert declarations is not None
    declarations[0].description = "Weather, changed"
    config.system_instruction = "Be thorough."
    c.models.generate_content(model=MODEL, contents=ASK, config=config)
    first, second, third = (s["attributes"] for s in span_dicts(span_exporter))
    assert first == second
    assert first["gen_ai.request.temperature"] == 0.5
    assert first["gen_ai.tool.definitions"][0]["description"] == "Weather now"
    assert first["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert third["gen_ai.request.temperature"] == 0.25
    assert third["gen_ai.tool.definitions"][0]["description"] == "Weather, changed"
    assert third["gen_ai.system_instructions"] == [{"type": "text", "content": "Be thorough."}]


def test_a_dict_config_changed_in_place_is_read_again(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A config given as a dict, reused and then changed in place (a parameter added, the
    system instruction replaced): the later call's span has the new values."""
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = _client(server)
    config: dict[str, Any] = {"system_instruction": "Be brief.", "tools": [_tool("Weather")]}
    c.models.generate_content(model=MODEL, contents=ASK, config=config)  # type: ignore[arg-type]
    config["top_k"] = 4
    config["system_instruction"] = "Be thorough."
    c.models.generate_content(model=MODEL, contents=ASK, config=config)  # type: ignore[arg-type]
    first, second = (s["attributes"] for s in span_dicts(span_exporter))
    assert "gen_ai.request.top_k" not in first
    assert second["gen_ai.request.top_k"] == 4
    assert second["gen_ai.system_instructions"] == [{"type": "text", "content": "Be thorough."}]


class _Resource:
    """A ``Models`` stand-in: what the patch reads of the client (no address)."""

    _api_client = None


def test_a_config_that_cannot_be_copied_is_converted_on_every_call(
    span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """A dict config holding something ``deepcopy`` refuses (a lock) is not remembered: each
    call converts it, so a change in place still shows on the next span."""
    runtime = Runtime(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    config: dict[str, Any] = {
        "temperature": 0.5,
        "system_instruction": "Be brief.",
        "tools": [_tool("Weather")],
        "lock": threading.Lock(),
    }
    for _ in range(2):
        start(runtime, _Resource(), {"model": MODEL, "contents": ASK, "config": config}).end()
    config["temperature"] = 0.25
    config["system_instruction"] = "Be thorough."
    start(runtime, _Resource(), {"model": MODEL, "contents": ASK, "config": config}).end()
    first, second, third = (s["attributes"] for s in span_dicts(span_exporter))
    assert first == second
    assert first["gen_ai.request.temperature"] == 0.5
    assert third["gen_ai.request.temperature"] == 0.25
    assert third["gen_ai.system_instructions"] == [{"type": "text", "content": "Be thorough."}]
    assert third["gen_ai.tool.definitions"] == first["gen_ai.tool.definitions"]


def _response(*parts: types.Part) -> types.GenerateContentResponse:
    return types.GenerateContentResponse(
        candidates=[
            types.Candidate(content=types.Content(role="model", parts=list(parts))),
            types.Candidate(
                content=types.Content(
                    role="model",
                    parts=[types.Part(function_call=types.FunctionCall(name="ignored"))],
                )
            ),
        ]
    )


@pytest.mark.parametrize(
    "response",
    [
        _response(
            types.Part(text="Looking it up."),
            types.Part(
                function_call=types.FunctionCall(
                    id="call_1", name="get_weather", args={"location": {"city": "Paris"}}
                )
            ),
            types.Part(function_call=types.FunctionCall(name="get_time", args={})),
            types.Part(function_call=types.FunctionCall(id="", name="no_id")),
        ),
        # a part with text and a function call: a text part, and still a requested call
        _response(
            types.Part(text="both", function_call=types.FunctionCall(id="c2", name="get_weather"))
        ),
        _response(),
        types.GenerateContentResponse(candidates=[]),
        {"candidates": [{"content": {"parts": [{"function_call": {"id": "d", "name": "n"}}]}}]},
    ],
    ids=["calls", "text-and-call", "no-parts", "no-candidates", "dicts"],
)
def test_requested_calls_are_the_calls_tool_calls_of_reads(response: Any) -> None:
    """``requested_calls`` (from the converted output) equals ``tool_calls_of`` (from the
    response alone) for each shape: ids, names, arguments, only the first candidate."""
    assert requested_calls(response, cv.output_messages(response)) == tool_calls_of(response)
