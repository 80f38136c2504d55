"""Per-context state: duplicate-span suppression and the model's pending tool calls.

Why: two problems need state that follows the *logical* flow of an agent (threads and
asyncio tasks included), which is exactly what OpenTelemetry context / ``contextvars``
carry.

1. Never two spans for one model call. ``should_skip_model_span()`` is the cheap check
   each patched call makes before starting a span: instrumentation is suppressed via
   the OTel suppression keys (ours, the SDK's and OpenLLMetry's), or the current span
   already is a GenAI model span (ours, or another instrumentor's: GenAI conventions,
   OpenInference, OpenLLMetry). Cost: two context lookups and one attribute-dict lookup.

2. Linking tool executions to the model's tool-call ids. After each model response the
   patcher calls ``record_requested_tool_calls()`` (with the request's tool definitions);
   a ``ToolInvocation`` (``_invocation``) then claims the matching id with
   ``claim_tool_call_id()`` and reads its tool's description. The ledger is a mutable
   object placed in context by an ``AgentInvocation`` (so tasks/threads spawned inside the
   agent share it) or created lazily.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace

from tracejudge import semconv
from tracejudge.instrumentation._scope import ContextValueScope
from tracejudge.instrumentation._shapes import get

SUPPRESS_KEY: Final = otel_context.create_key("tracejudge-suppress-model-spans")

# Keys other libraries use to switch instrumentation off (string keys are stable API).
_OTEL_SUPPRESS: Final = "suppress_instrumentation"
_LLM_SUPPRESS: Final = "suppress_language_model_instrumentation"

_MODEL_OPERATIONS: Final = frozenset(
    {
        semconv.GenAiOperationNameValues.CHAT,
        semconv.GenAiOperationNameValues.TEXT_COMPLETION,
        semconv.GenAiOperationNameValues.GENERATE_CONTENT,
        semconv.GenAiOperationNameValues.EMBEDDINGS,
    }
)
_FOREIGN_MODEL_KINDS: Final = frozenset({"LLM", "EMBEDDING"})
_MARKERS: Final = frozenset(
    {
        semconv.GEN_AI_OPERATION_NAME,
        semconv.FOREIGN_OPENINFERENCE_SPAN_KIND,
        semconv.FOREIGN_LLM_REQUEST_TYPE,
    }
)
"""The attributes by which an enclosing span is a model call (see ``should_skip_model_span``)."""


def should_skip_model_span() -> bool:
    """True when a model-call span must not be started here (see module docstring)."""
    ctx = otel_context.get_current()
    if ctx.get(SUPPRESS_KEY) or ctx.get(_OTEL_SUPPRESS) or ctx.get(_LLM_SUPPRESS):
        return True
    span = trace.get_current_span(ctx)
    if not span.is_recording():
        return False
    attrs: Mapping[str, Any] | None = getattr(span, "attributes", None)
    if not attrs or _MARKERS.isdisjoint(attrs):
        # the common enclosing span (an agent's, a tool's, a web request's): one pass
        # over its keys instead of three lookups that each raise KeyError inside the SDK
        return False
    if attrs.get(semconv.GEN_AI_OPERATION_NAME) in _MODEL_OPERATIONS:
        return True
    if attrs.get(semconv.FOREIGN_OPENINFERENCE_SPAN_KIND) in _FOREIGN_MODEL_KINDS:
        return True
    return attrs.get(semconv.FOREIGN_LLM_REQUEST_TYPE) is not None


@dataclass(slots=True)
class PendingToolCall:
    """One tool call the latest model response asked for."""

    call_id: str
    name: str
    arguments: Any
    claimed: bool = False


@dataclass(slots=True)
class ToolCallLedger:
    """The tool calls requested by the latest model response in this logical flow."""

    calls: list[PendingToolCall] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    offered: Any = None
    """The tool definitions the latest response's request offered, as the SDK took them
    (read only when a tool span needs its tool's description; see ``description``)."""

    def replace(self, calls: Iterable[PendingToolCall], offered: Any = None) -> None:
        """Forget older requests; the latest response is the one being executed."""
        with self.lock:
            self.calls = list(calls)
            self.offered = offered

    def description(self, names: tuple[str, ...]) -> str | None:
        """The description the request gave the tool called one of ``names`` (None when
        it gave none, or offered no such tool)."""
        return offered_description(self.offered, names)

    def claim_id(self, call_id: str) -> None:
        """Mark the pending call with this id claimed (an id given explicitly), so the
        name/argument matching never hands it to another tool."""
        with self.lock:
            for c in self.calls:
                if c.call_id == call_id:
                    c.claimed = True

    def claim(self, names: tuple[str, ...], arguments: Any) -> str | None:
        """Take the id of the unclaimed call with a matching name (and arguments when
        more than one matches); ``None`` when nothing matches."""
        with self.lock:
            candidates = [c for c in self.calls if not c.claimed and c.name in names]
            if not candidates:
                return None
            chosen = candidates[0]
            if len(candidates) > 1 and arguments is not None:
                for c in candidates:
                    if _same_arguments(c.arguments, arguments):
                        chosen = c
                        break
            chosen.claimed = True
            return chosen.call_id


def _same_arguments(requested: Any, actual: Any) -> bool:
    """Compare the model's arguments (parsed JSON) with a tool's bound arguments."""
    if requested == actual:
        return True
    if isinstance(requested, Mapping) and isinstance(actual, Mapping):
        return all(k in actual and actual[k] == v for k, v in requested.items())
    return False


_LEDGER: contextvars.ContextVar[ToolCallLedger | None] = contextvars.ContextVar(
    "tracejudge_tool_call_ledger", default=None
)


def new_ledger() -> contextvars.Token[ToolCallLedger | None]:
    """Start a fresh ledger for an agent run; returns the token that restores the one
    before (``AgentInvocation`` gives it back)."""
    return _LEDGER.set(ToolCallLedger())


def offered_description(offered: Any, names: tuple[str, ...]) -> str | None:
    """The description of the tool named one of ``names`` in a request's ``tools``: the
    providers' shapes alike (Chat Completions ``{"type": "function", "function": {...}}``,
    Responses and Anthropic ``{"name", "description", ...}``, as dicts or SDK objects)."""
    if not isinstance(offered, (list, tuple)):
        return None
    for tool in offered:
        function = get(tool, "function")
        spec = tool if function is None else function
        if get(spec, "name") in names:
            text = get(spec, "description")
            return text if isinstance(text, str) and text else None
    return None


def record_requested_tool_calls(calls: Sequence[PendingToolCall], offered: Any = None) -> None:
    """Called by patchers after every chat-style response (an empty list clears);
    ``offered``: the request's tool definitions (their descriptions go on tool spans)."""
    ledger = _LEDGER.get()
    if ledger is None:
        if not calls:
            return  # nothing pending and nothing to clear: skip the allocation
        ledger = ToolCallLedger()
        _LEDGER.set(ledger)
    ledger.replace(calls, offered)


def current_ledger() -> ToolCallLedger | None:
    """The tool-call ledger of this logical flow, if any."""
    return _LEDGER.get()


def claim_tool_call_id(names: tuple[str, ...], arguments: Any) -> str | None:
    """The model's tool-call id for a tool now executing under one of ``names``: the one
    given with ``tool_call_id()`` if a scope is open, else the ledger's match."""
    explicit = take_explicit_call_id()
    if explicit is not None:
        mark_tool_call_id_claimed(explicit)
        return explicit
    ledger = _LEDGER.get()
    if ledger is None:
        return None
    return ledger.claim(names, arguments)


def mark_tool_call_id_claimed(call_id: str) -> None:
    """An id was given explicitly: take it out of the ledger's matching."""
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.claim_id(call_id)


# --- explicit ids ------------------------------------------------------------------

# The open ``tool_call_id()`` scope's id, as a one-element list: the first tool span
# started in the scope takes it with ``list.pop()`` (atomic), so a tool nested inside
# that tool, or a second tool in the same scope, falls back to the ledger.
_EXPLICIT: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "tracejudge_explicit_tool_call_id", default=None
)


def take_explicit_call_id() -> str | None:
    """The open ``tool_call_id()`` scope's id, taken (None: no scope, or taken)."""
    holder = _EXPLICIT.get()
    if not holder:
        return None
    try:
        return holder.pop()
    except IndexError:  # another thread sharing this scope took it first
        return None


class ToolCallIdScope(ContextValueScope[list[str]]):
    """``with tool_call_id("call_abc"): refund(...)`` (see ``tool_call_id``)."""

    __slots__ = ()

    def __init__(self, call_id: str) -> None:
        super().__init__(_EXPLICIT, [call_id], "a tool_call_id()")


def tool_call_id(call_id: str) -> ToolCallIdScope:
    """Give the next tool execution in this block the model's tool-call id explicitly.

    For decorated tools, whose call signature is the application's own::

        for tc in response.choices[0].message.tool_calls:
            with tool_call_id(tc.id):
                TOOLS[tc.function.name](**json.loads(tc.function.arguments))

    The first ``@tool``/``tool(...)`` span started inside the block takes the id (tools
    it calls in turn, and later tools in the block, are matched as usual). Without it,
    the id is matched from the latest model response by name, then by arguments.
    """
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"tool_call_id() needs a non-empty string id, got {call_id!r}")
    return ToolCallIdScope(call_id)


class AgentState:
    """What the model calls inside an ``agent()`` run report back to it."""

    __slots__ = ("name", "providers")

    def __init__(self, name: str) -> None:
        self.name = name
        self.providers: set[str] = set()


AGENT_STATE: contextvars.ContextVar[AgentState | None] = contextvars.ContextVar(
    "tracejudge_agent", default=None
)
