"""Per-run overhead of tracejudge's LangChain callback handler on a LangGraph run.

What is measured: one run of a hand-built ``StateGraph`` (a model node, a tools node and
the edge back: two model calls, one tool call — the ReAct loop's shape) on an in-process
fake chat model, so that only LangChain's own work and the handler's are timed (no HTTP,
no model client patch: the model-call spans are the OpenAI patch's and are measured by
``bench_instrumentation.py``). Three states of the same process:

- ``off``: tracejudge's configure hook not registered (as if never installed);
- ``disabled``: registered, handler disabled (after ``uninstrument()``: it asks
  langchain-core for no callbacks);
- ``on``: ``instrument()``: an ``invoke_agent`` and an ``execute_tool`` span per run,
  tool arguments and results captured, exported to a discarding exporter;
- ``openinference`` (when installed: ``make bench-langgraph`` runs in .venv-bench, which
  has it): OpenInference's ``LangChainInstrumentor``, the peer, on the same provider and
  exporter (it makes a span of every LangChain run), instrumented and uninstrumented per
  block like ours.

Why paired in-process blocks (as ``bench_instrumentation.py``), timed in CPU time: a
LangGraph run costs milliseconds, the handler a fraction of that, and on a shared
machine both the noise between processes and the wall-clock time of a descheduled
process are larger than that. Blocks of runs alternate the states (ABBA), the overhead
of a state is the median of its paired differences against ``off``. The hook is toggled
by adding and removing tracejudge's entry in langchain-core's hook list, which only a
benchmark may do.

Usage: ``make bench-langgraph``, or ``.venv-bench/bin/python bench/bench_langgraph.py
--rounds 5 --runs 100``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.tracers import context as lc_context
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import tracejudge
from tracejudge.instrumentation import langchain as tj_langchain


class _Counting(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


class _Scripted(BaseChatModel):
    """Asks for ``lookup_order`` on a fresh conversation, answers once it has a result."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if messages[-1].type == "tool":
            reply = AIMessage(content="B-1 is paid.")
        else:
            call = {"name": "lookup_order", "args": {"order_id": "B-1"}, "id": "call_1"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "status": "paid", "amount": 42.0}


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build_graph() -> Any:
    model = _Scripted()

    def call_model(state: _State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def run_tools(state: _State) -> dict[str, Any]:
        last: Any = state["messages"][-1]
        return {"messages": [lookup_order.invoke(call) for call in last.tool_calls]}

    def route(state: _State) -> str:
        last: Any = state["messages"][-1]
        return "tools" if last.tool_calls else END

    graph = StateGraph(_State)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


def _block(run: Callable[[], Any], n: int) -> float:
    gc.disable()
    start = time.process_time()
    for _ in range(n):
        run()
    elapsed = time.process_time() - start
    gc.enable()
    return elapsed / n * 1e6


def _openinference() -> Any:
    """OpenInference's LangChain instrumentor, or None when it is not installed."""
    try:
        from openinference.instrumentation.langchain import (  # type: ignore[import-not-found]
            LangChainInstrumentor,
        )
    except ImportError:
        return None
    return LangChainInstrumentor()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200, help="graph runs per block")
    parser.add_argument("--rounds", type=int, default=5, help="ABBA rounds")
    args = parser.parse_args()

    exporter = _Counting()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
    hook = next(h for h in lc_context._configure_hooks if h[0] is tj_langchain.HANDLER_VAR)
    graph = build_graph()
    request = {"messages": [("user", "Is B-1 paid?")]}

    def run() -> Any:
        return graph.invoke(request)

    peer = _openinference()
    states = ["off", "disabled", "on", *(["openinference"] if peer is not None else [])]

    def state(name: str) -> None:
        registered = hook in lc_context._configure_hooks
        if name in ("off", "openinference") and registered:
            lc_context._configure_hooks.remove(hook)
        elif name in ("disabled", "on") and not registered:
            lc_context._configure_hooks.append(hook)
        if name == "on":
            tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
        else:
            tracejudge.uninstrument()
        if peer is not None:
            if name == "openinference" and not peer.is_instrumented_by_opentelemetry:
                peer.instrument(tracer_provider=provider)
            elif name != "openinference" and peer.is_instrumented_by_opentelemetry:
                peer.uninstrument()

    for name in states:  # warm-up
        state(name)
        _block(run, max(10, args.runs // 10))

    timings: dict[str, list[float]] = {name: [] for name in states}
    spans_per_run: dict[str, list[float]] = {name: [] for name in states}
    for r in range(args.rounds):
        order = [*states, *reversed(states)]
        if r % 2:
            order.reverse()
        for name in order:
            state(name)
            before = exporter.spans
            timings[name].append(_block(run, args.runs))
            spans_per_run[name].append((exporter.spans - before) / args.runs)
    state("off")

    def paired(name: str) -> list[float]:
        # each state ran twice per round, next to an "off" block of the same round
        return [t - o for t, o in zip(timings[name], timings["off"], strict=True)]

    base = statistics.median(timings["off"])
    print(
        f"{'state':<14}{'cpu us/run':>11}{'overhead us':>13}{'spread (min-max)':>20}"
        f"{'spans/run':>11}"
    )
    for name in states:
        diffs = paired(name)
        spans = statistics.median(spans_per_run[name])
        print(
            f"{name:<14}{statistics.median(timings[name]):>11.1f}"
            f"{statistics.median(diffs):>13.1f}{f'{min(diffs):.1f}..{max(diffs):.1f}':>20}"
            f"{spans:>11.1f}"
        )
    print(f"(a run: 1 graph, 2 model calls, 1 tool call; off = {base:.1f} us/run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
