"""Every place the run model reads content from, walked from its reader tables.

Why: what the run model reads as a prompt, an answer or a tool payload must be what
``--drop-content`` drops and ``--redact-attributes`` redacts (``tracejudge.content``).
The readers are tables (``TOOL_READERS``, ``MODEL_READERS``, ``AGENT_OUTPUT_KEYS``, the
message events of ``messages``) plus the message attributes the step builder tries in
order; this module turns them into a list of ``ContentPlace`` s, each saying where the
content sits (a span attribute, a span event's attribute, a log record's attribute or
body), in which shape the reader parses it, and what the span needs for the reader to
apply. tests/model/test_content_places.py builds a span or log record for every place,
checks the run model reads the content there, and that the filters remove it: a new
reader row is covered the moment it is added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from tracejudge import semconv as sc
from tracejudge.model.messages import INPUT_EVENTS
from tracejudge.model.readers import AGENT_OUTPUT_KEYS, TOOL_READERS, EventField
from tracejudge.model.vendor_models import FORMAT_GEMINI, MODEL_READERS

__all__ = ["ContentPlace", "Shape", "content_places"]

Shape = Literal[
    "text",
    "messages",
    "openai_messages",
    "openinference",
    "indexed",
    "gemini_request",
    "gemini_response",
    "langchain_request",
    "langchain_response",
    "parts",
    "choice",
]
"""How a reader parses the value: plain ``text``; a JSON list of GenAI ``messages``;
OpenAI-style ``openai_messages`` (``[{"role", "content"}]``); OpenInference flattened
``openinference`` (``key.0.message.content``); OpenLLMetry ``indexed``
(``key.0.content``); a Gemini request/response; LangChain run inputs/outputs; GenAI
``parts`` (``part_type``/``part_field`` of ``EventField``); a ``choice`` event's
``message``."""

Carrier = Literal["span attribute", "span event", "log attribute", "log body"]
Role = Literal["agent", "model", "tool"]

_OP = sc.GenAiOperationNameValues
_ROLE_ATTRS: Final[dict[Role, tuple[tuple[str, str], ...]]] = {
    "agent": ((sc.GEN_AI_OPERATION_NAME, _OP.INVOKE_AGENT),),
    "model": ((sc.GEN_AI_OPERATION_NAME, _OP.CHAT),),
    "tool": ((sc.GEN_AI_OPERATION_NAME, _OP.EXECUTE_TOOL), (sc.GEN_AI_TOOL_NAME, "lookup")),
}


@dataclass(frozen=True)
class ContentPlace:
    """One place a reader reads content from.

    - ``reader``: which table row or function reads it (for messages and docs);
    - ``carrier``: a span attribute, an attribute of a span event, or the attribute or
      body of a log record joined to its span as an event (``model.log_events``);
    - ``key``: the attribute (or body field) holding the value; ``event``: the event
      name (span event or log record), "" for a span attribute;
    - ``shape``: how the reader parses it (``Shape``); ``part_type``/``part_field`` for
      ``parts``;
    - ``role``: what the span is (agent, model call, tool); ``when``: attributes the
      reader row needs; ``span_name``: the span name it needs ("" for any).
    """

    reader: str
    carrier: Carrier
    key: str
    shape: Shape
    role: Role
    event: str = ""
    when: tuple[tuple[str, str], ...] = ()
    span_name: str = ""
    part_type: str = ""
    part_field: str = ""

    @property
    def span_attributes(self) -> dict[str, str]:
        """The attributes the span needs for the reader to read this place."""
        return dict(_ROLE_ATTRS[self.role] + self.when)

    def __str__(self) -> str:
        where = f"{self.event}/{self.key}" if self.event else self.key
        return f"{self.reader}: {self.carrier} {where} ({self.shape})"


def _event_places(
    reader: str, role: Role, field: EventField, shape: Shape, when: tuple[tuple[str, str], ...]
) -> list[ContentPlace]:
    """A span-event place and its two log-record forms (attribute, and body field: a
    map body's keys become the event's attributes when joined)."""
    kw = {"part_type": field.part_type, "part_field": field.part_field}
    return [
        ContentPlace(reader, carrier, field.key, shape, role, field.event, when, **kw)
        for carrier in ("span event", "log attribute", "log body")
    ]


def _tool_places() -> list[ContentPlace]:
    out: list[ContentPlace] = []
    for row in TOOL_READERS:
        when = ((row.when_key, row.when_value),) if row.when_key else ()
        name = f"TOOL_READERS[{row.framework}]"
        for key in (*row.arguments, *row.result):
            out.append(ContentPlace(name, "span attribute", key, "text", "tool", "", when))
        for field in (*row.arguments_events, *row.result_events):
            shape: Shape = "parts" if field.part_type else "text"
            out.extend(_event_places(name, "tool", field, shape, when))
    return out


def _model_reader_places() -> list[ContentPlace]:
    out: list[ContentPlace] = []
    for row in MODEL_READERS:
        name = f"MODEL_READERS[{row.framework}]"
        gemini = row.format == FORMAT_GEMINI
        request: Shape = "gemini_request" if gemini else "langchain_request"
        response: Shape = "gemini_response" if gemini else "langchain_response"
        when = ((row.when_key, row.when_value),)
        for key, shape in ((row.request_key, request), (row.response_key, response)):
            # The span is recognised by the row alone (no gen_ai.operation.name needed),
            # but a GenAI operation is what the bridges set besides: keep it "model".
            out.append(
                ContentPlace(name, "span attribute", key, shape, "model", "", when, row.span_name)
            )
    return out


def _message_places() -> list[ContentPlace]:
    """``steps._messages``: the attributes tried in order, then the message events."""
    name = "model call messages (steps._messages)"
    out = [
        ContentPlace(name, "span attribute", sc.GEN_AI_INPUT_MESSAGES, "messages", "model"),
        ContentPlace(name, "span attribute", sc.GEN_AI_OUTPUT_MESSAGES, "messages", "model"),
        ContentPlace(
            name, "span attribute", sc.FOREIGN_LLM_INPUT_MESSAGES, "openinference", "model"
        ),
        ContentPlace(
            name, "span attribute", sc.FOREIGN_LLM_OUTPUT_MESSAGES, "openinference", "model"
        ),
        ContentPlace(name, "span attribute", sc.FOREIGN_GEN_AI_PROMPT, "indexed", "model"),
        ContentPlace(name, "span attribute", sc.FOREIGN_GEN_AI_COMPLETION, "indexed", "model"),
        ContentPlace(name, "span attribute", sc.FOREIGN_GEN_AI_PROMPT, "openai_messages", "model"),
        ContentPlace(
            name, "span attribute", sc.FOREIGN_GEN_AI_COMPLETION, "openai_messages", "model"
        ),
    ]
    events = "model call events (messages.messages_from_events)"
    fields: list[tuple[EventField, Shape]] = [
        (
            EventField(
                sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS, sc.GEN_AI_INPUT_MESSAGES
            ),
            "messages",
        ),
        (
            EventField(
                sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS, sc.GEN_AI_OUTPUT_MESSAGES
            ),
            "messages",
        ),
        (EventField(sc.FOREIGN_GEN_AI_CHOICE, sc.FOREIGN_MESSAGE), "choice"),
        (EventField(sc.FOREIGN_GEN_AI_CHOICE, sc.FOREIGN_GEN_AI_EVENT_CONTENT), "choice"),
        (
            EventField(sc.FOREIGN_GEN_AI_CONTENT_PROMPT, sc.FOREIGN_GEN_AI_PROMPT),
            "openai_messages",
        ),
        (
            EventField(sc.FOREIGN_GEN_AI_CONTENT_COMPLETION, sc.FOREIGN_GEN_AI_COMPLETION),
            "openai_messages",
        ),
    ]
    for event in INPUT_EVENTS:
        fields.append((EventField(event, sc.FOREIGN_CONTENT), "text"))
        fields.append((EventField(event, sc.FOREIGN_GEN_AI_EVENT_CONTENT), "text"))
    for field, shape in fields:
        out.extend(_event_places(events, "model", field, shape, ()))
    return out


def _agent_places() -> list[ContentPlace]:
    name = "final answer (build._final_answer, AGENT_OUTPUT_KEYS)"
    out = [ContentPlace(name, "span attribute", sc.GEN_AI_OUTPUT_MESSAGES, "messages", "agent")]
    out.extend(ContentPlace(name, "span attribute", k, "text", "agent") for k in AGENT_OUTPUT_KEYS)
    return out


def content_places() -> tuple[ContentPlace, ...]:
    """Every place the run model reads content from (one entry per place and form)."""
    return (*_message_places(), *_model_reader_places(), *_tool_places(), *_agent_places())
