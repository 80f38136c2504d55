"""Real OTLP trace files for the CLI tests: the OTel SDK records, the OTLP encoder encodes.

Each run is a refund agent: ``invoke_agent`` root, a chat call asking for ``issue_refund``,
the tool execution (succeeding, failing or skipped) and a chat call with the final answer.
Ids come from a counter so files are identical from one test run to the next.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from tracejudge import semconv as sc
from tracejudge.otlp.json_encode import request_to_otlp_json

T0 = 1_764_460_800_000_000_000
MS = 1_000_000
RULES_YAML = """\
version: 1
rules:
  - id: refund-issued
    layer: outcome
    description: A refund case must end with a successful issue_refund call.
    check: {type: required_steps, tools: [issue_refund], require_success: true}
"""

Refund = Literal["ok", "error", "skipped"]


class CountingIds(IdGenerator):
    """Deterministic ids: trace n is n, spans count up from a per-recorder base."""

    def __init__(self, base: int) -> None:
        self.trace = base
        self.span = base << 8

    def generate_trace_id(self) -> int:
        self.trace += 1
        return self.trace

    def generate_span_id(self) -> int:
        self.span += 1
        return self.span


@dataclass(frozen=True)
class RunSpec:
    """One agent run to record."""

    case: str
    variant: str
    refund: Refund
    agent: str = "refund-agent"


def record_runs(specs: list[RunSpec], base: int = 1) -> ExportTraceServiceRequest:
    """Record the runs with the real SDK and encode them with the real OTLP encoder."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({sc.SERVICE_NAME: "refund-service"}),
        id_generator=CountingIds(base << 16),
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.cli", "1.0")
    for i, spec in enumerate(specs):
        t = T0 + i * 10_000 * MS
        root = tracer.start_span(
            f"invoke_agent {spec.agent}",
            kind=SpanKind.INTERNAL,
            start_time=t,
            attributes={
                sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                sc.GEN_AI_AGENT_NAME: spec.agent,
                sc.TRACEJUDGE_CASE_ID: spec.case,
                sc.TRACEJUDGE_VARIANT_ID: spec.variant,
            },
        )
        ctx = set_span_in_context(root)
        call_id = f"call_{i}"
        chat = tracer.start_span(
            "chat gpt-4o",
            context=ctx,
            kind=SpanKind.CLIENT,
            start_time=t + 10 * MS,
            attributes=_chat_attrs(
                [{"role": "user", "parts": [{"type": "text", "content": "Refund order 42"}]}],
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": call_id,
                                "name": "issue_refund",
                                "arguments": {"order_id": "42"},
                            }
                        ],
                        "finish_reason": "tool_call",
                    }
                ],
            ),
        )
        chat.set_status(Status(StatusCode.OK))
        chat.end(end_time=t + 300 * MS)
        if spec.refund != "skipped":
            tool = tracer.start_span(
                "execute_tool issue_refund",
                context=ctx,
                start_time=t + 310 * MS,
                attributes={
                    sc.GEN_AI_OPERATION_NAME: "execute_tool",
                    sc.GEN_AI_TOOL_NAME: "issue_refund",
                    sc.GEN_AI_TOOL_CALL_ID: call_id,
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"order_id": "42"}),
                    sc.GEN_AI_TOOL_CALL_RESULT: json.dumps({"refunded": spec.refund == "ok"}),
                },
            )
            if spec.refund == "error":
                tool.set_attribute(sc.ERROR_TYPE, "PaymentDeclined")
                tool.set_status(Status(StatusCode.ERROR, "payment declined"))
            else:
                tool.set_status(Status(StatusCode.OK))
            tool.end(end_time=t + 500 * MS)
        final = tracer.start_span(
            "chat gpt-4o",
            context=ctx,
            kind=SpanKind.CLIENT,
            start_time=t + 510 * MS,
            attributes=_chat_attrs(
                [{"role": "user", "parts": [{"type": "text", "content": "Refund order 42"}]}],
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "Your refund is on its way."}],
                        "finish_reason": "stop",
                    }
                ],
            ),
        )
        final.set_status(Status(StatusCode.OK))
        final.end(end_time=t + 900 * MS)
        root.end(end_time=t + 1000 * MS)
    request = encode_spans(exporter.get_finished_spans())
    provider.shutdown()
    return request


def _chat_attrs(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_PROVIDER_NAME: "openai",
        sc.GEN_AI_REQUEST_MODEL: "gpt-4o",
        sc.GEN_AI_RESPONSE_MODEL: "gpt-4o",
        sc.GEN_AI_USAGE_INPUT_TOKENS: 20,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10,
        sc.GEN_AI_INPUT_MESSAGES: json.dumps(inputs),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(outputs),
    }


def write_json(path: Path, request: ExportTraceServiceRequest, *, gz: bool = False) -> Path:
    """Write an OTLP/JSON file, gzipped when asked."""
    data = json.dumps(request_to_otlp_json(request)).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def write_pb(path: Path, request: ExportTraceServiceRequest, *, gz: bool = False) -> Path:
    """Write an OTLP protobuf file, gzipped when asked."""
    data = request.SerializeToString()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def write_jsonl(path: Path, requests: list[ExportTraceServiceRequest]) -> Path:
    """One OTLP/JSON request per line, as the Collector's file exporter writes."""
    path.write_text("".join(json.dumps(request_to_otlp_json(r)) + "\n" for r in requests))
    return path
