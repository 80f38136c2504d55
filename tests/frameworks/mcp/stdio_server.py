"""An MCP server process for the stdio test: the SDK's ``MCPServer`` over stdio, traced by
``tracejudge.instrument()`` on its own (global) tracer provider, each finished span written
at once to the file named by ``argv[1]`` as OTLP protobuf in the Collector file exporter's
framing (each request after its 4-byte big-endian size): what a collector would get from
this process, in a form ``tracejudge eval`` reads."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import tracejudge


class LineExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = encode_spans(spans).SerializeToString()
        with open(self.path, "ab") as out:
            out.write(len(data).to_bytes(4, "big") + data)
        return SpanExportResult.SUCCESS


def main() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(LineExporter(sys.argv[1])))
    trace.set_tracer_provider(provider)  # the MCP SDK's tracer follows the global provider
    tracejudge.instrument(tracer_provider=provider)

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("orders")

    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {"order_id": order_id, "status": "charged twice"}

    server.tool()(lookup_order)
    server.run("stdio")


if __name__ == "__main__":
    main()
