"""The MCP integration against the real ``mcp`` SDK: a client and a server in one trace.

Real parts throughout: the installed SDK's ``MCPServer`` (tools declared with its
decorator) and ``Client`` connected over the SDK's in-memory transport (the same
JSON-RPC dispatcher and ``params._meta`` handling as stdio, without a subprocess) and,
in one test, over stdio to a server process of its own (``stdio_server.py``), the
SDK's own client and server spans, tracejudge's ``instrument()``, the real OTel SDK with
an in-memory exporter, and the run builder the judge uses.

One thing is pointed by hand: the SDK takes its tracer from the *global* tracer provider
(``mcp.shared._otel._tracer``, made at import); tests use a private provider per test,
so that tracer is replaced with one from the test's provider, as a global provider
would give it.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp.shared._otel as mcp_otel
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import MCPServer
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.instrumentation import mcp as tj_mcp
from tracejudge.instrumentation._patcher import WRAPPED_MARK, reset_warnings
from tracejudge.model import build_runs, load_traces, spans_from_sdk
from tracejudge.model.run import ToolCall

pytestmark = pytest.mark.usefixtures("instrumented")

STDIO_SERVER = Path(__file__).with_name("stdio_server.py")
ROOT = Path(__file__).resolve().parents[3]
ORDER = {"order_id": "A-1001", "status": "charged twice", "amount": 42.0}


@pytest.fixture(autouse=True)
def sdk_tracer(tracer_provider: TracerProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_otel, "_tracer", tracer_provider.get_tracer("mcp-python-sdk"))


def make_server() -> MCPServer:
    server = MCPServer("orders")

    @server.tool()
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {**ORDER, "order_id": order_id}

    @server.tool()
    def refund(order_id: str) -> str:
        """Refund an order."""
        raise ValueError(f"order {order_id} is not refundable")

    return server


async def call(
    server: MCPServer, name: str, arguments: dict[str, Any], mode: str = "legacy"
) -> Any:
    """One call as an agent would make it. ``legacy`` (the default here) connects over
    the SDK's in-memory streams with the JSON-RPC dispatcher, the path of stdio and HTTP
    (``_meta`` on the wire); ``auto`` takes the SDK's direct in-process dispatch."""
    async with tracejudge.agent("refund_agent"), Client(server, mode=mode) as client:
        return await client.call_tool(name, arguments)


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def parent_name(spans: Sequence[ReadableSpan], span: ReadableSpan) -> str | None:
    ids = {s.context.span_id: s.name for s in spans if s.context is not None}
    return ids.get(span.parent.span_id) if span.parent is not None else None


def test_tool_call_is_one_trace_across_client_and_server(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A ``tools/call`` is tracejudge's ``execute_tool`` span holding the SDK's CLIENT span,
    and the server's SERVER span continues that trace from ``params._meta`` (the server
    task runs in the context it was started in, not the caller's: only the carried
    ``traceparent`` can make it a child of the client span). Both ends carry the
    arguments and the result."""
    server = make_server()
    result = asyncio.run(call(server, "lookup_order", {"order_id": "A-1001"}))
    assert result.is_error is False

    spans = span_exporter.get_finished_spans()
    named = by_name(spans)
    tool = named["execute_tool lookup_order"]
    send = named["MCP send tools/call lookup_order"]
    handled = named["tools/call lookup_order"]
    agent = named["invoke_agent refund_agent"]
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    assert parent_name(spans, tool) == "invoke_agent refund_agent"
    assert parent_name(spans, send) == "execute_tool lookup_order"
    assert parent_name(spans, handled) == "MCP send tools/call lookup_order"
    assert (tool.kind.name, send.kind.name, handled.kind.name) == ("INTERNAL", "CLIENT", "SERVER")

    attrs = dict(tool.attributes or {})
    assert {k: v for k, v in attrs.items() if not k.startswith("gen_ai.tool.call.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.type": "extension",
        "gen_ai.agent.name": "refund_agent",
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": attrs["mcp.protocol.version"],
    }
    assert str(attrs["mcp.protocol.version"])[:2] == "20"  # a dated MCP revision
    assert attrs["gen_ai.tool.call.arguments"] == '{"order_id":"A-1001"}'
    server_attrs = dict(handled.attributes or {})
    assert server_attrs["gen_ai.tool.call.arguments"] == '{"order_id":"A-1001"}'
    assert server_attrs["gen_ai.operation.name"] == "execute_tool"
    for side in (attrs, server_attrs):
        assert '"structuredContent":{' in str(side["gen_ai.tool.call.result"])
        assert '"charged twice"' in str(side["gen_ai.tool.call.result"])
    assert agent.parent is None


def test_run_builder_sees_one_tool_execution_with_arguments_and_result(
    span_exporter: InMemorySpanExporter,
) -> None:
    """The call seen from both ends is one step of the agent's run, with the arguments
    and the structured result a rule reads."""
    asyncio.run(call(make_server(), "lookup_order", {"order_id": "A-1001"}))
    [run] = build_runs(spans_from_sdk(span_exporter.get_finished_spans()))
    assert run.agent_name == "refund_agent"
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments, t.status) for t in tools] == [
        ("lookup_order", {"order_id": "A-1001"}, "unset")
    ]
    [tool] = tools
    assert tool.result["structuredContent"] == ORDER
    assert tool.result["isError"] is False


def test_server_side_only_trace_is_still_one_execution(
    span_exporter: InMemorySpanExporter,
) -> None:
    """The server's spans alone (a server process exporting on its own, its client
    another program) still show the tool execution, with arguments and result."""
    asyncio.run(call(make_server(), "lookup_order", {"order_id": "A-1001"}))
    spans = [s for s in span_exporter.get_finished_spans() if s.kind.name == "SERVER"]
    runs = build_runs(spans_from_sdk(spans))
    tools = [s for r in runs for s in r.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments) for t in tools] == [("lookup_order", {"order_id": "A-1001"})]


def test_direct_in_process_dispatch_is_one_trace_and_one_execution(
    span_exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK's default in-process dispatch (no JSON-RPC, no ``_meta``) runs the server in
    the caller's context: still one trace, one execution, and no missing-context warning."""
    reset_warnings()
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        asyncio.run(call(make_server(), "lookup_order", {"order_id": "A-1001"}, mode="auto"))
    assert not [r for r in caplog.records if "params._meta" in r.getMessage()]
    spans = span_exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    [run] = build_runs(spans_from_sdk(spans))
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments) for t in tools] == [("lookup_order", {"order_id": "A-1001"})]


def test_stdio_server_process_joins_the_agents_trace(
    span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A server in its own process (stdio transport), exporting its spans on its own: its
    SERVER span continues the agent's trace from ``params._meta`` across the process
    boundary, and the two processes' spans together are one run with one execution."""
    out = tmp_path / "server-spans.binpb"
    params = StdioServerParameters(
        command=sys.executable, args=[str(STDIO_SERVER), str(out)], cwd=str(ROOT)
    )

    async def main() -> Any:
        async with tracejudge.agent("refund_agent"), Client(params) as client:
            return await client.call_tool("lookup_order", {"order_id": "A-1001"})

    result = asyncio.run(main())
    assert result.is_error is False
    server_spans = [s for t in load_traces(out).values() for s in t]
    handled = [s for s in server_spans if s.name == "tools/call lookup_order"]
    assert len(handled) == 1
    assert handled[0].attributes["gen_ai.tool.call.arguments"] == '{"order_id":"A-1001"}'
    client_spans = spans_from_sdk(span_exporter.get_finished_spans())
    send = next(s for s in client_spans if s.name == "MCP send tools/call lookup_order")
    assert (handled[0].trace_id, handled[0].parent_span_id) == (send.trace_id, send.span_id)
    [run] = build_runs([*client_spans, *server_spans])
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments) for t in tools] == [("lookup_order", {"order_id": "A-1001"})]


def test_tool_error_result_is_a_failed_execution(span_exporter: InMemorySpanExporter) -> None:
    """A tool that raised comes back as ``CallToolResult(isError=True)``: ``error.type``
    ``tool_error`` and status ERROR on the client span (MCP conventions), and a failed
    step for the judge."""
    result = asyncio.run(call(make_server(), "refund", {"order_id": "A-1001"}))
    assert result.is_error is True
    tool = by_name(span_exporter.get_finished_spans())["execute_tool refund"]
    assert (tool.attributes or {})["error.type"] == "tool_error"
    assert tool.status.status_code.name == "ERROR"
    [run] = build_runs(spans_from_sdk(span_exporter.get_finished_spans()))
    [step] = [s for s in run.steps if isinstance(s, ToolCall)]
    assert (step.name, step.status, step.error_type) == ("refund", "error", "tool_error")


def test_outer_tool_span_is_enriched_not_duplicated(span_exporter: InMemorySpanExporter) -> None:
    """Under an outer tool execution (``@tracejudge.tool`` here; the Agents SDK's MCP tools
    alike) no second ``execute_tool`` span is made: the MCP attributes go on the outer."""
    server = make_server()

    @tracejudge.tool(name="lookup_order")
    async def lookup_order(order_id: str) -> Any:
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("lookup_order", {"order_id": order_id})

    async def main() -> None:
        async with tracejudge.agent("refund_agent"):
            await lookup_order("A-1001")

    asyncio.run(main())
    spans = span_exporter.get_finished_spans()
    tools = [s for s in spans if s.name == "execute_tool lookup_order"]
    assert len(tools) == 1
    assert (tools[0].attributes or {})["mcp.method.name"] == "tools/call"
    assert parent_name(spans, by_name(spans)["MCP send tools/call lookup_order"]) == (
        "execute_tool lookup_order"
    )


def test_request_without_trace_context_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    """A ``tools/call`` whose ``_meta`` has no ``traceparent`` (a client that does not
    propagate) gets one warning naming it; the request is served. The request context is
    a stand-in object here (the SDK always injects context when it has a span, so a real
    client cannot send such a request in this process)."""
    reset_warnings()
    middleware = tj_mcp._MIDDLEWARE
    seen: list[Any] = []

    async def call_next(ctx: Any) -> str:
        seen.append(ctx)
        return "served"

    ctx = SimpleNamespace(method="tools/call", meta=None, params={"name": "x", "arguments": {}})
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        assert asyncio.run(middleware(ctx, call_next)) == "served"
        assert asyncio.run(middleware(ctx, call_next)) == "served"
    warnings = [r.getMessage() for r in caplog.records if "params._meta" in r.getMessage()]
    assert len(warnings) == 1
    assert seen == [ctx, ctx]


def test_uninstrument_restores_the_sdk(span_exporter: InMemorySpanExporter) -> None:
    """After ``uninstrument()`` the SDK's methods are its own again and a call makes only
    the SDK's spans."""
    from mcp.client.session import ClientSession
    from mcp.server.lowlevel.server import Server

    tracejudge.uninstrument()
    assert getattr(ClientSession.call_tool, WRAPPED_MARK, None) is None
    assert getattr(Server.__init__, WRAPPED_MARK, None) is None
    asyncio.run(call(make_server(), "lookup_order", {"order_id": "A-1001"}))
    names = {s.name for s in span_exporter.get_finished_spans()}
    assert "execute_tool lookup_order" not in names
    assert "MCP send tools/call lookup_order" in names
    assert all(m is not tj_mcp._MIDDLEWARE for m in Server("x").middleware)
