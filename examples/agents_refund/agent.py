"""The refund agent on the OpenAI Agents SDK: ``python examples/agents_refund/agent.py``.

The same support agent as ``examples/refund`` (same world, tools, scripted model
variants and rules), written the Agents SDK way: an ``Agent`` with function tools, run
by ``Runner``. The SDK runs the tool loop; tracejudge's one ``instrument()`` line
registers its tracing processor with the SDK, which turns the agent run and the tool
executions into GenAI spans, while the OpenAI client patch records each model call. No
``@tracejudge.tool`` here: the SDK's own function spans are the tool executions (a
decorator as well would record every call twice). The run's identity (case, variant,
run, user) goes in as the SDK's trace metadata.

With no ``--base-url`` the model is tracejudge's local scripted server (Chat Completions),
so it runs with no key and no network. Spans go to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (one note
when nothing listens there), or with ``--trace-out FILE`` into an OTLP/JSON file that
``tracejudge eval`` judges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import agents
import openai
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge import semconv
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_agent import AGENT_NAME, CASE_ID, DEFAULT_MODEL
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts
from tracejudge.demo.refund_tools import SYSTEM_PROMPT, TOOL_SPECS
from tracejudge.demo.world import USER_REQUEST, ToolInputError, World


def _result(action: Any) -> str:
    """A tool's result as the JSON text the model reads (an error is a result too)."""
    try:
        return json.dumps(action())
    except (ToolInputError, TypeError, ValueError) as exc:
        return json.dumps({"error": str(exc)})


def build_tools(world: World) -> list[Any]:
    """The four refund tools over ``world`` as Agents SDK function tools (names,
    descriptions and parameters as in ``TOOL_SPECS``)."""
    described = {spec.name: spec.description for spec in TOOL_SPECS}

    def tool(name: str) -> Any:
        return function_tool(name_override=name, description_override=described[name])

    @tool("lookup_order")
    def lookup_order(customer_id: str) -> str:
        return _result(lambda: world.lookup_order(customer_id))

    @tool("check_policy")
    def check_policy(order_id: str, amount: float) -> str:
        return _result(lambda: world.check_policy(order_id, amount))

    @tool("refund_api.create")
    def refund_create(order_id: str, amount: float, reason: str, idempotency_key: str) -> str:
        return _result(lambda: world.create_refund(order_id, amount, reason, idempotency_key))

    @tool("send_email")
    def send_email(to: str, subject: str, body: str) -> str:
        return _result(lambda: world.send_email(to, subject, body))

    return [lookup_order, check_policy, refund_create, send_email]


async def run_refund_agent(
    base_url: str, *, variant: str, run_id: str, world: World, stream: bool = False
) -> str:
    """One run of the refund agent; returns its final answer."""
    async with openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
        agent = Agent(
            name=AGENT_NAME,
            instructions=SYSTEM_PROMPT,
            model=OpenAIChatCompletionsModel(model=DEFAULT_MODEL, openai_client=client),
            tools=build_tools(world),
            # Streamed Chat Completions report token usage only when asked to; without it
            # the judge warns that token and cost budgets cannot be checked.
            model_settings=ModelSettings(include_usage=True),
        )
        config = RunConfig(
            workflow_name="refund",
            trace_metadata={
                semconv.TRACEJUDGE_CASE_ID: CASE_ID,
                semconv.TRACEJUDGE_VARIANT_ID: variant,
                semconv.TRACEJUDGE_RUN_ID: run_id,
                semconv.USER_ID: world.customer_id,
            },
        )
        if not stream:
            result = await Runner.run(agent, USER_REQUEST, run_config=config, max_turns=8)
            return str(result.final_output)
        streamed = Runner.run_streamed(agent, USER_REQUEST, run_config=config, max_turns=8)
        async for _ in streamed.stream_events():
            pass
        return str(streamed.final_output)


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--trace-out", type=Path, help="write the run's spans as OTLP/JSON")
    parser.add_argument("--stream", action="store_true", help="run streamed (run_streamed)")
    args = parser.parse_args(argv)

    # The SDK exports its traces to OpenAI by default; this example has no key and no
    # network, so its processors are replaced with none before instrument() adds ours.
    agents.set_trace_processors([])
    memory = InMemorySpanExporter()
    if args.trace_out:
        provider = TracerProvider(resource=Resource({"service.name": "refund-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracejudge.instrument(tracer_provider=provider)  # the one line, with a local provider
    else:
        # the one line: OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (one warning if nothing listens)
        tracejudge.instrument()

    world = World()
    with ScriptedModelServer(refund_scripts()) as server:
        answer = asyncio.run(
            run_refund_agent(
                server.openai_base_url(args.variant),
                variant=args.variant,
                run_id=f"{args.variant}-1",
                world=world,
                stream=args.stream,
            )
        )

    print(f"answer: {answer}")
    print(f"refunds made: {world.refunds or 'none'}")
    if args.trace_out:
        write_otlp_json(args.trace_out, memory.get_finished_spans())
        print(f"spans: {len(memory.get_finished_spans())} written to {args.trace_out}")
    tracejudge.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
