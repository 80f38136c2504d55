"""One client process of the load-balancing end-to-end test (test_loadbalancing.py).

Run as ``python -m tests.e2e.lb_client PLAN_JSON``. The plan names the service, the OTLP/gRPC
endpoints to export to (the load balancer, and the single reference instance) and the jobs:
conversation turns (``tests/collector/conversation_support.py``'s scripts, emitted with
``tracejudge.agent(conversation_id=...)``, the model calls as spans of another tracer, as
third-party instrumentation makes them) and stable or shadow runs
(``tests/support/shadow_runs.py``). The spans are made by the real instrumentation with its
defaults, ``instrument(route_key=True)`` among them, and exported by the real OTLP exporter
through the SDK's batching processor. It prints one JSON line: the trace id of each job and,
per endpoint, how many spans the endpoint acknowledged and how many it refused.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

import tracejudge
from tests.collector.conversation_support import CONFIRMED, UNCONFIRMED, Turn
from tests.support import shadow_runs
from tracejudge import semconv as sc

SCRIPTS: dict[str, Sequence[Turn]] = {"confirmed": CONFIRMED, "unconfirmed": UNCONFIRMED}


class Counted(SpanExporter):
    """The real OTLP exporter, counting what its endpoint acknowledged or refused."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.accepted = 0
        self.refused = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.accepted += len(spans)
            else:
                self.refused += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(tracer: Tracer, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
    attributes = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_INPUT_MESSAGES: json.dumps(inputs),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(outputs),
    }
    with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
        pass


def turn(tracer: Tracer, conversation: str, t: Turn, n: int, *, end: bool) -> str:
    """One turn of a conversation as one trace; returns its trace id (hex)."""
    with tracejudge.agent("airline", conversation_id=conversation) as run:
        if end:
            run.span.set_attribute(sc.TRACEJUDGE_CONVERSATION_END, True)
        user = _text("user", t.user)
        if t.cancel is None:
            _chat(tracer, [user], [_text("assistant", t.reply)])
        else:
            call_id = f"call-{n}"
            args = {"reservation_id": t.cancel}
            part = {"type": "tool_call", "id": call_id, "name": "cancel_reservation"}
            _chat(tracer, [user], [{"role": "assistant", "parts": [{**part, "arguments": args}]}])
            with tracejudge.tool(
                "cancel_reservation", effect="write", call_id=call_id, arguments=args
            ) as tool:
                tool.set_result({"status": "cancelled"})
            response = {"type": "tool_call_response", "id": call_id, "response": "cancelled"}
            _chat(tracer, [{"role": "tool", "parts": [response]}], [_text("assistant", t.reply)])
        run.set_output(t.reply)
    return f"{run.span.get_span_context().trace_id:032x}"


def main(plan: dict[str, Any]) -> dict[str, Any]:
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: plan["service"]}))
    exporters = {
        name: Counted(OTLPSpanExporter(endpoint=endpoint, insecure=True))
        for name, endpoint in plan["endpoints"].items()
    }
    for exporter in exporters.values():
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=100_000))
    tracejudge.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("third-party-model-instrumentation")
    traces: list[str] = []
    for job in plan["jobs"]:
        if job["kind"] == "turn":
            script = SCRIPTS[job["script"]]
            traces.append(
                turn(tracer, job["conversation"], script[job["index"]], job["n"], end=job["end"])
            )
        else:
            before = len(traces)
            with tracer.start_as_current_span("request") as request:
                shadow_runs.run_once(
                    job["shape"],
                    request_id=job["request"],
                    shadow=job["shadow"],
                    variant="v2" if job["shadow"] else "v1",
                )
            traces.append(f"{request.get_span_context().trace_id:032x}")
            assert len(traces) == before + 1
    tracejudge.uninstrument()
    provider.shutdown()  # flushes every batch processor
    return {
        "traces": traces,
        "accepted": {name: e.accepted for name, e in exporters.items()},
        "refused": {name: e.refused for name, e in exporters.items()},
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
