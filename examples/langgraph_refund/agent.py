"""The refund agent on LangGraph: ``python examples/langgraph_refund/agent.py``.

The same support agent as ``examples/refund`` (same world, tools, scripted model
variants and rules), written the LangGraph way: LangChain tools, ``ChatOpenAI`` and the
prebuilt ReAct agent (``create_react_agent``), which runs the tool loop. tracejudge's one
``instrument()`` line installs its callback handler into langchain-core, which turns the
graph run and the tool executions into GenAI spans, while the OpenAI client patch
records each model call (``ChatOpenAI`` runs on the ``openai`` client). No
``@tracejudge.tool`` here: LangChain's tool runs are the tool executions (a decorator as
well would record every call twice). The run's identity (case, variant, run, user) goes
in as the run's config metadata; the ``thread_id`` becomes the conversation id.

With no ``--base-url`` the model is tracejudge's local scripted server (Chat Completions),
so it runs with no key and no network. Spans go to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (one note
when nothing listens there), or with ``--trace-out FILE`` into an OTLP/JSON file that
``tracejudge eval`` judges.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

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
    """The four refund tools over ``world`` as LangChain tools (names and descriptions
    as in ``TOOL_SPECS``; the arguments' schema from the functions' signatures)."""
    from langchain_core.tools import StructuredTool

    described = {spec.name: spec.description for spec in TOOL_SPECS}

    def lookup_order(customer_id: str) -> str:
        return _result(lambda: world.lookup_order(customer_id))

    def check_policy(order_id: str, amount: float) -> str:
        return _result(lambda: world.check_policy(order_id, amount))

    def refund_create(order_id: str, amount: float, reason: str, idempotency_key: str) -> str:
        return _result(lambda: world.create_refund(order_id, amount, reason, idempotency_key))

    def send_email(to: str, subject: str, body: str) -> str:
        return _result(lambda: world.send_email(to, subject, body))

    functions = {
        "lookup_order": lookup_order,
        "check_policy": check_policy,
        "refund_api.create": refund_create,
        "send_email": send_email,
    }
    return [
        StructuredTool.from_function(func, name=name, description=described[name])
        for name, func in functions.items()
    ]


def run_refund_agent(
    base_url: str, *, variant: str, run_id: str, world: World, stream: bool = False
) -> str:
    """One run of the refund agent; returns its final answer."""
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still shipped
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        # Streamed Chat Completions report token usage only when asked to
        # (stream_usage); without it the judge warns that token budgets cannot be checked.
        model = ChatOpenAI(
            model=DEFAULT_MODEL,
            base_url=base_url,
            api_key=SecretStr("unused"),
            max_retries=0,
            streaming=stream,
            stream_usage=True,
        )
        agent = create_react_agent(model, build_tools(world), prompt=SYSTEM_PROMPT, name=AGENT_NAME)
    config: Any = {
        "recursion_limit": 16,
        "configurable": {"thread_id": f"refund-{run_id}"},
        "metadata": {
            semconv.TRACEJUDGE_CASE_ID: CASE_ID,
            semconv.TRACEJUDGE_VARIANT_ID: variant,
            semconv.TRACEJUDGE_RUN_ID: run_id,
            semconv.USER_ID: world.customer_id,
        },
    }
    request = {"messages": [("user", USER_REQUEST)]}
    if not stream:
        return str(agent.invoke(request, config=config)["messages"][-1].content)
    last: Any = None
    for state in agent.stream(request, config=config, stream_mode="values"):
        last = state
    return str(last["messages"][-1].content)


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--trace-out", type=Path, help="write the run's spans as OTLP/JSON")
    parser.add_argument("--stream", action="store_true", help="run streamed (agent.stream)")
    args = parser.parse_args(argv)

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
        answer = run_refund_agent(
            server.openai_base_url(args.variant),
            variant=args.variant,
            # one thread per run: runs of one thread are one conversation to the judge
            run_id=f"{args.variant}-{'streamed' if args.stream else 1}",
            world=world,
            stream=args.stream,
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
