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
   patcher calls ``record_requested_tool_calls()``; ``@tool`` then claims the matching
   id with ``claim_tool_call_id()``. The ledger is a mutable object placed in context by
   ``agent()`` (so tasks/threads spawned inside the agent share it) or created lazily.
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


def should_skip_model_span() -> bool:
    """True when a model-call span must not be started here (see module docstring)."""
    ctx = otel_context.get_current()
    if ctx.get(SUPPRESS_KEY) or ctx.get(_OTEL_SUPPRESS) or ctx.get(_LLM_SUPPRESS):
        return True
    span = trace.get_current_span(ctx)
    if not span.is_recording():
        return False
    attrs: Mapping[str, Any] | None = getattr(span, "attributes", None)
    if not attrs:
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

    def replace(self, calls: Iterable[PendingToolCall]) -> None:
        """Forget older requests; the latest response is the one being executed."""
        with self.lock:
            self.calls = list(calls)

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
    """Start a fresh ledger for an agent run; returns the token to ``reset_ledger``."""
    return _LEDGER.set(ToolCallLedger())


def reset_ledger(token: contextvars.Token[ToolCallLedger | None]) -> None:
    """Restore the ledger that was current before ``new_ledger``."""
    try:
        _LEDGER.reset(token)
    except ValueError:  # reset from another context (generator finalised elsewhere)
        _LEDGER.set(None)


def record_requested_tool_calls(calls: Sequence[PendingToolCall]) -> None:
    """Called by patchers after every chat-style response (an empty list clears)."""
    ledger = _LEDGER.get()
    if ledger is None:
        if not calls:
            return  # nothing pending and nothing to clear: skip the allocation
        ledger = ToolCallLedger()
        _LEDGER.set(ledger)
    ledger.replace(calls)


def claim_tool_call_id(names: tuple[str, ...], arguments: Any) -> str | None:
    """The model's tool-call id for a tool now executing under one of ``names``."""
    ledger = _LEDGER.get()
    if ledger is None:
        return None
    return ledger.claim(names, arguments)


class AgentState:
    """What the model calls inside an ``agent()`` run report back to it."""

    __slots__ = ("name", "providers")

    def __init__(self, name: str) -> None:
        self.name = name
        self.providers: set[str] = set()


AGENT_STATE: contextvars.ContextVar[AgentState | None] = contextvars.ContextVar(
    "tracejudge_agent", default=None
)


def current_agent_state() -> AgentState | None:
    """The innermost running agent's state (``None`` outside ``agent()``)."""
    return AGENT_STATE.get()
