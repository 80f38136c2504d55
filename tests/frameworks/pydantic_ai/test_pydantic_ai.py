"""pydantic-ai's own OpenTelemetry spans, read by the run builder and judged.

Real parts throughout: the installed ``pydantic-ai-slim`` ``Agent`` with its own
instrumentation (``InstrumentationSettings``, no logfire) over the real ``openai`` client
(``OpenAIResponsesModel``) and loopback HTTP — the recorded Agents-SDK tool loop (traceloop/
openllmetry, Apache-2.0, tests/fixtures/MANIFEST.tsv) served in order by
``tests.support.replay.ReplayServer`` — exported by the real OTel SDK to memory, decoded by
``spans_from_sdk`` and judged by the engine, as ``tracejudge eval`` does. tracejudge's
``instrument()`` is not involved: this is a framework tracejudge only *reads*.

Both of pydantic-ai's tool-span shapes are covered: instrumentation version 2 (``running
tool`` with ``tool_arguments``/``tool_response``, the shape the builder missed before the
reader table) and the current default (``execute_tool {tool}`` with the standard keys).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Literal

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.support.replay import ReplayServer
from tracejudge.engine import Engine, load_rules_text
from tracejudge.model import build_runs, spans_from_sdk
from tracejudge.model.run import ModelCall, Run, ToolCall

CASSETTE = "openai-agents/test_tool_call_and_result_attributes.yaml"
CITY_ANSWER_START = "London is the capital city of the United Kingdom"

# Judged on what the tool was given and returned: both must be read for these to pass.
RULES = json.dumps(
    {
        "version": 1,
        "tools": {"get_city_info": {"kind": "lookup"}},
        "rules": [
            {
                "id": "asked-for-london",
                "layer": "policy",
                "severity": "fail",
                "check": {
                    "type": "cel",
                    "expr": "run.tools.exists(t, t.name == 'get_city_info' "
                    "&& t.args.city_name == 'London')",
                    "message": "the lookup must be for London",
                },
            },
            {
                "id": "population-seen",
                "layer": "outcome",
                "severity": "fail",
                "check": {
                    "type": "cel",
                    "expr": "run.tools.exists(t, string(t.result).contains('9000000'))",
                    "message": "the answer must rest on a lookup that returned the population",
                },
            },
        ],
    }
)


def get_city_info(city_name: str) -> str:
    """Get detailed information about a city."""
    return f"City: {city_name}, Population: 9000000, Country: United Kingdom"


def run_agent(server: ReplayServer, version: Literal[2, 5]) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    model = OpenAIResponsesModel("gpt-4o", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, name="CityAgent", instructions="You help users.", tools=[get_city_info])
    with warnings.catch_warnings():  # version 2 is deprecated (and still emitted)
        warnings.simplefilter("ignore")
        agent.instrument = InstrumentationSettings(
            tracer_provider=provider, version=version, include_content=True
        )
    result = agent.run_sync("Tell me about London")
    assert result.output.startswith(CITY_ANSWER_START)
    provider.shutdown()
    return exporter


def one_run(exporter: InMemorySpanExporter) -> Run:
    [run] = build_runs(spans_from_sdk(exporter.get_finished_spans()))
    return run


@pytest.mark.parametrize(
    ("version", "tool_span"), [(2, "running tool"), (5, "execute_tool get_city_info")]
)
def test_agent_run_model_calls_and_tool_evidence_are_read(
    replay: Callable[..., ReplayServer], version: Literal[2, 5], tool_span: str
) -> None:
    """One pydantic-ai run is one ``Run``: the agent span is its root, the two model
    calls and the tool execution between them are its steps, the tool's arguments and
    result are read wherever this version put them, and the final answer is found."""
    server = replay(CASSETTE, sequential=True)
    exporter = run_agent(server, version)
    names = [s.name for s in exporter.get_finished_spans()]
    assert tool_span in names  # the shape under test really was emitted

    run = one_run(exporter)
    assert run.agent_name == "CityAgent"
    assert [type(s).__name__ for s in run.steps] == ["ModelCall", "ToolCall", "ModelCall"]
    first, tool, second = run.steps
    assert isinstance(first, ModelCall)
    assert isinstance(second, ModelCall)
    assert isinstance(tool, ToolCall)
    assert (tool.name, tool.arguments, tool.arguments_is_json) == (
        "get_city_info",
        {"city_name": "London"},
        True,
    )
    assert tool.result == "City: London, Population: 9000000, Country: United Kingdom"
    assert tool.status == "unset"
    assert not tool.inferred
    # the model asked for exactly this execution: the call ids join
    assert [r.call_id for r in first.requested_tool_calls] == [tool.call_id]
    assert run.final_answer is not None
    assert run.final_answer.startswith(CITY_ANSWER_START)
    assert not [n for n in run.notes if n.code in ("not_executed", "inferred_call")]


@pytest.mark.parametrize("version", [2, 5])
def test_rules_on_tool_arguments_and_results_pass(
    replay: Callable[..., ReplayServer], version: Literal[2, 5]
) -> None:
    """Rules that read the tool's arguments and result pass on both span shapes (with
    the version-2 arguments unread, ``asked-for-london`` failed)."""
    server = replay(CASSETTE, sequential=True)
    run = one_run(run_agent(server, version))
    verdict = Engine(load_rules_text(RULES)).judge(run)
    assert verdict.error is None
    assert verdict.verdict == "pass", [f.to_dict() for f in verdict.findings]
