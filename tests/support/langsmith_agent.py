"""A real LangGraph refund agent under the LangSmith OTel bridge, its spans written out.

    .venv/bin/python -m tests.support.langsmith_agent OUT_DIR   # OUT_DIR/<variant>.json

Why a process of its own: LangChain/LangGraph emit no OpenTelemetry themselves; LangSmith's
exporter (``LANGSMITH_OTEL_ENABLED`` with ``LANGSMITH_OTEL_ONLY``: no API key, nothing sent
to LangSmith, offline) turns their runs into spans with the raw run inputs/outputs in
``gen_ai.prompt``/``gen_ai.completion``. It is switched on by environment variables that
langsmith reads once and caches, and exports through the *global* tracer provider — process
state that must not leak into (or be pre-empted by) the other tests, tracejudge's own
LangChain integration among them. tests/model/test_langsmith_bridge.py runs this module in
a subprocess and judges the files.

What runs: LangGraph's prebuilt ReAct agent (``create_react_agent``) with real LangChain
tools returning the refund agent's recorded tool results, over a scripted chat model
(langchain-core's ``FakeMessagesListChatModel`` replaying the recorded trajectory's model
turns; ``bind_tools`` returns it unchanged). ``user.id`` is on the application's span
around the graph (the exporter parents LangSmith's root span under the current one).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.update(
    LANGSMITH_OTEL_ENABLED="true", LANGSMITH_TRACING="true", LANGSMITH_OTEL_ONLY="true"
)

# Imported after the environment is set: langsmith and langchain-core read it.
from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import StructuredTool, ToolException
from langchain_core.tracers.langchain import wait_for_all_tracers
from langgraph.prebuilt import create_react_agent
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from tests.support.guards import wait_for
from tests.support.refund_trajectories import Trajectory, recorded
from tracejudge.demo.recording import write_otlp_json

VARIANTS = ("healthy", "silent_failure", "tool_error")
"""The refund agent's two recorded variants, and ``tool_error``: the healthy trajectory
with ``send_email`` raising a ``ToolException`` it handles (``handle_tool_error``), which
LangChain reports as a successful run whose output is a ``ToolMessage`` with status
``error``."""
FAILING_TOOL = "send_email"
MODEL = "gpt-4o-mini"
USAGE = {"input_tokens": 300, "output_tokens": 40, "total_tokens": 340}
_SCHEMAS: dict[str, dict[str, Any]] = {
    "lookup_order": {"customer_id": {"type": "string"}},
    "check_policy": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "refund_api.create": {
        "order_id": {"type": "string"},
        "amount": {"type": "number"},
        "reason": {"type": "string"},
        "idempotency_key": {"type": "string"},
    },
    "send_email": {
        "to": {"type": "string"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
}


class ScriptedChatModel(FakeMessagesListChatModel):
    """The recorded model turns; the tools bound are the graph's business, not the
    script's. It names the recorded model and provider to LangSmith as a provider's chat
    model does, so the spans carry the model a price rule needs."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "openai"
        params["ls_model_name"] = MODEL
        return params


def _tool(name: str, result: Any, *, fail: bool) -> StructuredTool:
    def run(**kwargs: Any) -> str:
        if fail:
            raise ToolException("smtp unavailable")
        return json.dumps(result)

    props = _SCHEMAS[name]
    return StructuredTool.from_function(
        func=run,
        name=name,
        description=f"The refund agent's {name}.",
        args_schema={"type": "object", "properties": props, "required": list(props)},
        handle_tool_error=True,
    )


def run_graph(story: Trajectory, *, fail: str = "") -> None:
    """One graph run replaying ``story`` (the tool named ``fail`` raises)."""
    turns: list[BaseMessage] = [
        AIMessage(
            content="",
            tool_calls=[{"name": s.name, "args": s.arguments, "id": s.call_id}],
            usage_metadata=USAGE,
        )
        for s in story.steps
    ]
    turns.append(AIMessage(content=story.answer, usage_metadata=USAGE))
    results = {s.name: s.result for s in story.steps}
    missing = {"status": "not in the recording"}
    tools = [_tool(n, results.get(n, missing), fail=n == fail) for n in _SCHEMAS]
    model = ScriptedChatModel(responses=turns)
    graph = create_react_agent(model, tools, prompt=story.system)
    with trace.get_tracer("refund-app").start_as_current_span("refund-request") as span:
        span.set_attribute("user.id", story.user_id)
        out = graph.invoke({"messages": [("user", story.request)]})
    assert out["messages"][-1].content == story.answer


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "refund-agent-langgraph"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    for variant in VARIANTS:
        memory.clear()
        if variant == "tool_error":
            run_graph(recorded("healthy"), fail=FAILING_TOOL)
        else:
            run_graph(recorded(variant))
        # LangSmith exports from a background thread, and not in the order the runs ended:
        # under load the graph's own run ("LangGraph") could be exported before the last
        # model call's, so waiting for it alone lost a span (CI). Drain LangSmith's queue
        # (the event: every run handed to the exporter), then check the root is there.
        wait_for_all_tracers()
        wait_for(
            lambda: any(s.name == "LangGraph" for s in memory.get_finished_spans()),
            what="the LangGraph run exported",
        )
        seen = len(memory.get_finished_spans())
        write_otlp_json(out / f"{variant}.json", list(memory.get_finished_spans()))
        print(f"{variant}: {seen} spans")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
