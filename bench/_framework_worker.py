"""One configuration of the framework benchmark, in its own process.

``bench_frameworks.py`` runs every configuration in a fresh interpreter (instrumentors
patch the frameworks and the OpenAI SDK globally) and, inside it, alternates short blocks
of agent runs with the instrumentation switched on and off (ABBA); the overhead per run is
the median of the paired block differences, as in ``_instr_worker.py``.

A run is one whole agent run: the model asks for ``lookup_order``, the tool runs, the model
answers (two model calls, one tool execution). The OpenAI SDK under the framework talks to
an in-process ``httpx2.MockTransport`` that answers with recorded-shape chat completions,
so the figure is framework + instrumentation cost, not network. Every configuration
exports through the same discarding exporter and reports spans per run.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _harness import discard_provider

USAGE = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}


def _completion(message: dict[str, Any], finish: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1730000000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": USAGE,
        }
    ).encode()


TOOL_CALL = _completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"customer_id": "c-1"}'},
            }
        ],
    },
    "tool_calls",
)
ANSWER = _completion(
    {"role": "assistant", "content": "Order A-1 has a duplicate charge of $40.00."}, "stop"
)
PROMPT = "Please look up my orders (customer c-1)."


def _handler(request: Any) -> Any:
    """The tool call first; the answer once the request carries the tool's result."""
    import httpx2

    body = json.loads(request.content or b"{}")
    done = any(m.get("role") == "tool" for m in body.get("messages", []))
    return httpx2.Response(
        200, content=ANSWER if done else TOOL_CALL, headers={"content-type": "application/json"}
    )


def lookup_order(customer_id: str) -> str:
    """Look the customer's orders up."""
    return json.dumps({"orders": [{"id": "A-1", "amount": 40.0, "duplicate": True}]})


def _agents_run() -> Callable[[], Any]:
    import agents
    import httpx2
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool

    agents.set_trace_processors([])  # no export to OpenAI; instrumentors add their own
    client = openai.AsyncOpenAI(
        api_key="sk-bench",
        base_url="http://bench.invalid/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(_handler)),
    )
    agent = Agent(
        name="support-agent",
        instructions="You are a support agent.",
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[function_tool(lookup_order)],
    )
    loop = asyncio.new_event_loop()

    def run() -> Any:
        return loop.run_until_complete(Runner.run(agent, PROMPT, max_turns=4)).final_output

    return run


def _langgraph_run() -> Callable[[], Any]:
    import httpx2
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    model = ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-bench",  # type: ignore[arg-type]
        base_url="http://bench.invalid/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(_handler)),
    )
    graph = create_react_agent(model, [tool(lookup_order)], name="support-agent")

    def run() -> Any:
        return graph.invoke({"messages": [("user", PROMPT)]})["messages"][-1].content

    return run


def _toggle(config: str, provider: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    """(on, off) for one configuration."""
    if config.endswith("-bare"):
        return (lambda: None), (lambda: None)
    if config.endswith("-tracejudge"):
        import tracejudge

        return (lambda: tracejudge.instrument(tracer_provider=provider)), tracejudge.uninstrument
    if config == "agents-openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        inst: Any = OpenAIAgentsInstrumentor()
    elif config == "agents-otel":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Otel

        inst = Otel()
    elif config == "langgraph-openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        inst = LangChainInstrumentor()
    else:
        raise SystemExit(f"unknown configuration {config!r}")
    return (lambda: inst.instrument(tracer_provider=provider)), inst.uninstrument


def main() -> int:
    """``_framework_worker.py CONFIG RUNS BLOCK``: prints one JSON line."""
    config, runs, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    import os

    # content capture on for every configuration (what a judge needs)
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    os.environ["OTEL_INSTRUMENTATION_OPENAI_AGENTS_CAPTURE_CONTENT"] = "true"
    provider = discard_provider()
    run = _agents_run() if config.startswith("agents-") else _langgraph_run()
    on, off = _toggle(config, provider)
    # Warm-up, instrumented first: SDK objects that bind a method on first use (openai's
    # cached with_raw_response, which ChatOpenAI calls through) must first meet it patched,
    # as the docs ask of applications ("instrument() before the first model call").
    on()
    for _ in range(5):
        run()
    off()
    for _ in range(5):
        run()
    gc.collect()
    gc.freeze()
    pairs: list[float] = []
    bare: list[float] = []
    spans = 0
    blocks = max(2, runs // block)
    for k in range(blocks):
        order = (False, True) if k % 2 == 0 else (True, False)
        times: dict[bool, float] = {}
        for state in order:
            if state:
                on()
                before = provider.discard.count
            t0 = time.perf_counter()
            for _ in range(block):
                run()
            times[state] = (time.perf_counter() - t0) / block
            if state:
                spans += provider.discard.count - before
                off()
        pairs.append(times[True] - times[False])
        bare.append(times[False])
    print(
        json.dumps(
            {
                "config": config,
                "overhead_us": statistics.median(pairs) * 1e6,
                "bare_us": statistics.median(bare) * 1e6,
                "spans": spans / (blocks * block),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
