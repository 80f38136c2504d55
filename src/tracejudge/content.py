"""What counts as content: the one declaration.

Why one: the collector's ``--drop-content`` had a list for spans (stamp.py) and another
for log records (logs_forward.py); they drifted, and prompts, answers and tool payloads in
the older-convention span events, the un-indexed ``gen_ai.prompt`` / ``gen_ai.completion``
attributes and plain log bodies left the collector past the filter (issue 18). Every
place that decides "is this content?" asks this module: the span and log-record filters
of ``--drop-content``, and the content table of docs/privacy.md (generated from
``DECLARATION`` by ``make content-docs``). tests/model/test_content_places.py walks the
run model's reader tables (``tracejudge.model.places``) and proves that everything the
run model reads as content is dropped by the filter and redacted by
``--redact-attributes``.

The rules:

- an attribute whose key is declared here is content, and so is every key flattened
  under it (``gen_ai.prompt.0.content``, ``llm.input_messages.1.message.content``,
  ``llm.prompts.0.prompt.text``): the key and everything after ``key + "."``;
- a span event whose name is declared here is content as a whole (dropped);
- a log record carrying one of those events keeps its name, time and trace context,
  loses its body and its content attributes, and loses the fields the older events'
  bodies put message content in (``CONTENT_EVENT_FIELDS``), which some SDKs write as
  attributes;
- the body of every log record is content, whether or not it names an event (a plain
  log line may quote a prompt, and the older events carry their messages there).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final, Literal

from tracejudge import semconv as sc

__all__ = [
    "CONTENT_EVENTS",
    "CONTENT_EVENT_FIELDS",
    "CONTENT_KEYS",
    "DECLARATION",
    "LOG_BODIES_ARE_CONTENT",
    "ContentItem",
    "is_content_event",
    "is_content_event_field",
    "is_content_key",
]

Kind = Literal["attribute", "event", "event field", "log body"]


@dataclass(frozen=True)
class ContentItem:
    """One declared place of content: ``name`` of ``kind``, who writes it (``source``)."""

    kind: Kind
    name: str
    source: str


DECLARATION: Final[tuple[ContentItem, ...]] = (
    # The GenAI semantic conventions.
    ContentItem("attribute", sc.GEN_AI_INPUT_MESSAGES, "GenAI semantic conventions"),
    ContentItem("attribute", sc.GEN_AI_OUTPUT_MESSAGES, "GenAI semantic conventions"),
    ContentItem("attribute", sc.GEN_AI_SYSTEM_INSTRUCTIONS, "GenAI semantic conventions"),
    ContentItem("attribute", sc.GEN_AI_TOOL_CALL_ARGUMENTS, "GenAI semantic conventions"),
    ContentItem("attribute", sc.GEN_AI_TOOL_CALL_RESULT, "GenAI semantic conventions"),
    ContentItem("attribute", sc.GEN_AI_TOOL_DEFINITIONS, "GenAI semantic conventions"),
    ContentItem(
        "event", sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS, "GenAI semantic conventions"
    ),
    # The deprecated GenAI conventions (OpenLLMetry, older instrumentations, LangSmith).
    ContentItem("attribute", sc.FOREIGN_GEN_AI_PROMPT, "deprecated GenAI conventions"),
    ContentItem("attribute", sc.FOREIGN_GEN_AI_COMPLETION, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_SYSTEM_MESSAGE, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_USER_MESSAGE, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_ASSISTANT_MESSAGE, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_TOOL_MESSAGE, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_CHOICE, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_CONTENT_PROMPT, "deprecated GenAI conventions"),
    ContentItem("event", sc.FOREIGN_GEN_AI_CONTENT_COMPLETION, "deprecated GenAI conventions"),
    ContentItem("event field", sc.FOREIGN_GEN_AI_EVENT_CONTENT, "deprecated GenAI conventions"),
    ContentItem("event field", sc.FOREIGN_CONTENT, "deprecated GenAI conventions"),
    ContentItem("event field", sc.FOREIGN_MESSAGE, "deprecated GenAI conventions"),
    ContentItem("event field", "tool_calls", "deprecated GenAI conventions"),
    # OpenInference.
    ContentItem("attribute", sc.FOREIGN_INPUT_VALUE, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_OUTPUT_VALUE, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_TOOL_PARAMETERS, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_LLM_INPUT_MESSAGES, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_LLM_OUTPUT_MESSAGES, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_LLM_PROMPTS, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_LLM_PROMPT_TEMPLATE_TEMPLATE, "OpenInference"),
    ContentItem("attribute", sc.FOREIGN_LLM_PROMPT_TEMPLATE_VARIABLES, "OpenInference"),
    # OpenLLMetry decorators.
    ContentItem("attribute", sc.FOREIGN_TRACELOOP_ENTITY_INPUT, "OpenLLMetry"),
    ContentItem("attribute", sc.FOREIGN_TRACELOOP_ENTITY_OUTPUT, "OpenLLMetry"),
    # Frameworks' own attributes (model/readers.py, model/vendor_models.py).
    ContentItem("attribute", sc.FOREIGN_TOOL_ARGUMENTS, "pydantic-ai"),
    ContentItem("attribute", sc.FOREIGN_TOOL_RESPONSE, "pydantic-ai"),
    ContentItem("attribute", sc.FOREIGN_FINAL_RESULT, "pydantic-ai"),
    ContentItem("attribute", sc.FOREIGN_GCP_VERTEX_AGENT_TOOL_CALL_ARGS, "Google ADK"),
    ContentItem("attribute", sc.FOREIGN_GCP_VERTEX_AGENT_TOOL_RESPONSE, "Google ADK"),
    ContentItem("attribute", sc.FOREIGN_GCP_VERTEX_AGENT_LLM_REQUEST, "Google ADK"),
    ContentItem("attribute", sc.FOREIGN_GCP_VERTEX_AGENT_LLM_RESPONSE, "Google ADK"),
    # OTLP log records.
    ContentItem("log body", "LogRecord.body", "every log record, named event or plain line"),
)
"""Every declared place of content (docs/privacy.md's table is generated from it)."""


def _names(kind: Kind) -> frozenset[str]:
    return frozenset(item.name for item in DECLARATION if item.kind == kind)


CONTENT_KEYS: Final[frozenset[str]] = _names("attribute")
"""Attribute keys that are content, with every key flattened under them."""
CONTENT_EVENTS: Final[frozenset[str]] = _names("event")
"""Span-event and log-record event names whose payload is content."""
CONTENT_EVENT_FIELDS: Final[frozenset[str]] = _names("event field")
"""Fields of a content event's body that hold the message (content in a log record
of a content event, whether in the body or written as attributes)."""
LOG_BODIES_ARE_CONTENT: Final[bool] = bool(_names("log body"))
"""A log record's body is content (cleared by ``--drop-content``)."""


_MAX_DOTS: Final = max(key.count(".") for key in CONTENT_KEYS)
"""The most dots a declared key has: a longer key's prefix past that many is no key."""
_CACHED_KEY_MAX: Final = 256
"""Keys up to this length are cached; a longer one (rare, and an attacker's way to fill
the cache with megabytes) is looked at afresh."""


def _is_content_key(key: str) -> bool:
    if key in CONTENT_KEYS:
        return True
    dot = key.find(".")
    dots = 0
    while dot != -1 and dots <= _MAX_DOTS:
        if key[:dot] in CONTENT_KEYS:
            return True
        dot = key.find(".", dot + 1)
        dots += 1
    return False


_cached_is_content_key = functools.lru_cache(maxsize=8192)(_is_content_key)


def is_content_key(key: str) -> bool:
    """Whether attribute ``key`` is content: a declared key or one flattened under it.
    Linear in the key whatever its dots; cached (a collector sees the same few hundred
    keys over and over)."""
    if len(key) > _CACHED_KEY_MAX:
        return _is_content_key(key)
    return _cached_is_content_key(key)


def is_content_event(name: str) -> bool:
    """Whether a span event or log-record event named ``name`` is content as a whole."""
    return name in CONTENT_EVENTS


def is_content_event_field(key: str) -> bool:
    """Whether ``key`` of a content event's body (or attributes) holds its message."""
    return key in CONTENT_EVENT_FIELDS or is_content_key(key)
