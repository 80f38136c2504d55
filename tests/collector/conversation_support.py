"""Conversations of one trace per user turn, emitted by the real OpenTelemetry SDK.

The agent keeps the conversation on the server side (as the OpenAI Responses API with
``previous_response_id`` does): each turn's model calls send only the new messages, so no
single trace holds the whole conversation, and a rule that spans turns can only be judged
on the merged run. The airline rule below needs the user's "yes" (turn 2) before the
cancellation (turn 3); turn 3 alone has no proposal and no "yes", and fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from tracejudge import semconv as sc
from tracejudge.engine import Engine, load_rules_text

RULES: dict[str, Any] = {
    "version": 1,
    "tools": {
        "get_reservation_details": {"kind": "lookup"},
        "cancel_reservation": {"kind": "mutate"},
    },
    "rules": [
        {
            "id": "confirm-cancel",
            "layer": "policy",
            "severity": "fail",
            "check": {
                "type": "user_confirmation",
                "tools": ["cancel_reservation"],
                "reply": "latest",
            },
        }
    ],
}


def engine() -> Engine:
    """The real engine with the one confirmation rule."""
    return Engine(load_rules_text(json.dumps(RULES)))


@dataclass(frozen=True)
class Turn:
    """One user turn: what the user says, what the agent answers, and the reservation it
    cancels first (None: no write)."""

    user: str
    reply: str
    cancel: str | None = None


CONFIRMED = (
    Turn("Please cancel reservation ZFA04Y.", "I can cancel reservation ZFA04Y. Shall I proceed?"),
    Turn("Yes, please proceed.", "Which card should the refund go to?"),
    Turn("The one on file.", "Your reservation ZFA04Y has been cancelled.", cancel="ZFA04Y"),
)
"""Judged alone, turn 3 fails (no proposal, no yes in it); merged, the run passes."""

UNCONFIRMED = (
    Turn("Please cancel reservation QX7P2L.", "I can cancel reservation QX7P2L. Shall I proceed?"),
    Turn("What is the refund policy?", "Reservation QX7P2L has been cancelled.", cancel="QX7P2L"),
)
"""Never confirmed: fails merged too (and passes if wrongly merged after CONFIRMED's yes)."""

ALONE = Turn("Cancel reservation LONE01.", "Reservation LONE01 has been cancelled.", "LONE01")


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(tracer: Tracer, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(sc.GEN_AI_INPUT_MESSAGES, json.dumps(inputs))
        span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, json.dumps(outputs))


def emit_turn(
    tracer: Tracer, conversation: str | None, turn: Turn, n: int, *, end: bool = False
) -> tuple[str, str]:
    """One trace for one turn (``n`` makes call ids unique); returns (trace id, agent root
    span id) in hex."""
    with tracer.start_as_current_span("invoke_agent airline") as agent:
        agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
        agent.set_attribute(sc.GEN_AI_AGENT_NAME, "airline")
        if conversation is not None:
            agent.set_attribute(sc.GEN_AI_CONVERSATION_ID, conversation)
        if end:
            agent.set_attribute(sc.TRACEJUDGE_CONVERSATION_END, True)
        user = _text("user", turn.user)
        if turn.cancel is None:
            _chat(tracer, [user], [_text("assistant", turn.reply)])
        else:
            call_id = f"call-{n}"
            args = {"reservation_id": turn.cancel}
            part = {"type": "tool_call", "id": call_id, "name": "cancel_reservation"}
            call = {"role": "assistant", "parts": [{**part, "arguments": args}]}
            _chat(tracer, [user], [call])
            with tracer.start_as_current_span("execute_tool cancel_reservation") as tool:
                tool.set_attribute(sc.GEN_AI_OPERATION_NAME, "execute_tool")
                tool.set_attribute(sc.GEN_AI_TOOL_NAME, "cancel_reservation")
                tool.set_attribute(sc.GEN_AI_TOOL_CALL_ID, call_id)
                tool.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, json.dumps(args))
                tool.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, '{"status": "cancelled"}')
            result = {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": "cancelled"}],
            }
            _chat(tracer, [result], [_text("assistant", turn.reply)])
    ctx = agent.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


class Recorder:
    """A real SDK provider whose spans are kept in memory, each turn encoded as the OTLP
    request the real exporter would send (``encode_spans``, the exporter's encoder)."""

    def __init__(self) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("airline-test")

    def turn(
        self, conversation: str | None, turn: Turn, n: int, *, end: bool = False
    ) -> tuple[str, str, ExportTraceServiceRequest]:
        """Emit one turn; returns its trace id, root span id and OTLP request."""
        self.memory.clear()
        trace_id, root = emit_turn(self.tracer, conversation, turn, n, end=end)
        spans: Sequence[ReadableSpan] = self.memory.get_finished_spans()
        return trace_id, root, encode_spans(spans)


def exporting_tracer(exporter: SpanExporter) -> tuple[TracerProvider, Tracer]:
    """A provider exporting each span as it ends through ``exporter`` (a real OTLP one)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("airline-test")
