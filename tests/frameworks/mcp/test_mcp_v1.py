"""The MCP integration on the 1.x SDK (1.30.0, run by scripts/sdk-matrix.sh).

The 1.x SDK records no spans and carries no trace context: tracejudge's client span is
the tool execution, and its ``traceparent`` must reach the server in ``params._meta``.
Real parts: the SDK's ``FastMCP`` server and ``ClientSession`` connected by its own
in-memory streams (``create_connected_server_and_client_session``, JSON-RPC over memory
streams), the real OTel SDK, the run builder.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.model import build_runs, spans_from_sdk
from tracejudge.model.run import ToolCall

pytestmark = pytest.mark.usefixtures("instrumented")

# 1.x names, looked up at run time: the type checker sees the dev environment's 2.x SDK.
FastMCP: Any = importlib.import_module("mcp.server.fastmcp").FastMCP
connect: Any = importlib.import_module(
    "mcp.shared.memory"
).create_connected_server_and_client_session


def test_client_span_and_trace_context_in_meta(span_exporter: InMemorySpanExporter) -> None:
    """The call is one ``execute_tool`` span with arguments and result, and the server
    receives that span's ``traceparent`` in ``_meta`` (the caller's own ``_meta`` kept)."""
    server = FastMCP("orders")
    seen: list[Any] = []

    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        meta = server.get_context().request_context.meta
        seen.append(meta.model_dump() if meta is not None else None)
        return {"order_id": order_id, "status": "charged twice"}

    server.tool()(lookup_order)

    async def main() -> Any:
        async with (
            tracejudge.agent("refund_agent"),
            connect(server._mcp_server) as session,
        ):
            return await session.call_tool(
                "lookup_order", {"order_id": "A-1001"}, meta={"mine": "kept"}
            )

    result = asyncio.run(main())
    assert result.isError is False
    [tool] = [s for s in span_exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert tool.context is not None
    [meta] = seen
    assert meta["mine"] == "kept"
    trace_id = format(tool.context.trace_id, "032x")
    span_id = format(tool.context.span_id, "016x")
    assert meta["traceparent"] == f"00-{trace_id}-{span_id}-01"

    [run] = build_runs(spans_from_sdk(span_exporter.get_finished_spans()))
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.arguments) for t in tools] == [("lookup_order", {"order_id": "A-1001"})]
    assert tools[0].result["structuredContent"] == {
        "order_id": "A-1001",
        "status": "charged twice",
    }
