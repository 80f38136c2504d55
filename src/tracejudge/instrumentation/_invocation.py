"""Agent and tool invocations: the one lifecycle of ``invoke_agent`` and ``execute_tool`` spans.

Why: five writers make these spans — ``@tool``, ``agent()``, the MCP client and server,
the LangChain handler and the Agents SDK processor. What the conventions and the judge ask
of the spans is the same for all of them and lives here once: the span's name, kind and
GenAI attributes, the context while it runs (the span current, and for an agent a fresh
tool-call ledger and the ``AgentState`` its model calls report to), the link from a tool
execution to the model turn that requested it (the ledger's call id, and the tool's
description from the request that offered it), the arguments, result and final answer
under the content policy (captured, redacted and capped), and ``error.type`` with status
ERROR on failure. A writer only maps its framework's events onto an invocation.

Shape (after opentelemetry-util-genai's ``TelemetryHandler.start_tool()``): constructing
an invocation starts its span; ``stop(result)`` or ``fail(error)`` finishes it, exactly
once (later calls do nothing). ``release()`` gives the context back early, for frameworks
whose agent ends before its span may (a handoff). An error is an exception or, for
frameworks that report errors as data, a ``Failure`` (``error.type`` and a message).

Context is given back only where the invocation left it: when a framework ends a run from
another task or thread than the one it started in, the span is no longer current there and
nothing of ours is undone in a context that is not ours.

Telemetry never raises into the application: every step runs in the runtime's guard and
the span is ended whatever happens.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import ContentStats
from tracejudge.instrumentation._context import (
    AGENT_STATE,
    AgentState,
    ToolCallLedger,
    claim_tool_call_id,
    current_ledger,
    mark_tool_call_id_claimed,
    new_ledger,
    take_explicit_call_id,
)
from tracejudge.instrumentation._genai import message, set_error, text_part
from tracejudge.instrumentation._runtime import Runtime

UNSET: Final[Any] = object()
"""No value given (arguments, a result): distinct from ``None``, a value a tool may return."""

_EXECUTE_TOOL: Final = sc.GenAiOperationNameValues.EXECUTE_TOOL
_INVOKE_AGENT: Final = sc.GenAiOperationNameValues.INVOKE_AGENT
_STATUS_MAX: Final = 512
IDENTITY_KEYS: Final = (
    sc.TRACEJUDGE_RUN_ID,
    sc.TRACEJUDGE_CASE_ID,
    sc.TRACEJUDGE_EXPERIMENT_ID,
    sc.TRACEJUDGE_VARIANT_ID,
    sc.TRACEJUDGE_TENANT_ID,
    sc.USER_ID,
)
"""The run's identity a framework carries in its run metadata (a LangChain run's
``metadata``, an Agents SDK trace's ``metadata``), copied onto the agent span."""


def identity_from(metadata: Mapping[str, Any], into: dict[str, AttributeValue]) -> None:
    """Copy the non-empty string values of ``IDENTITY_KEYS`` in ``metadata`` into ``into``."""
    for key in IDENTITY_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            into[key] = value


@dataclass(frozen=True, slots=True)
class Failure:
    """An error a framework reports as data, not as an exception: ``type`` becomes
    ``error.type``, ``message`` the status description (no exception event)."""

    type: str
    message: str = ""


Error = BaseException | Failure
"""What ``fail`` takes."""


def mark_failed(span: Span, error: Error, error_type: str | None = None) -> None:
    """Status ERROR and ``error.type`` on ``span`` (and the exception event for an
    exception): the conventions' "Recording Errors", for invocations and the spans
    writers make beside them (a guardrail)."""
    if isinstance(error, Failure):
        span.set_attribute(sc.ERROR_TYPE, error_type or error.type)
        span.set_status(Status(StatusCode.ERROR, error.message[:_STATUS_MAX] or None))
        return
    set_error(span, error)
    if error_type is not None:
        span.set_attribute(sc.ERROR_TYPE, error_type)


def _parent_context(parent: Span | None) -> otel_context.Context | None:
    return trace.set_span_in_context(parent) if parent is not None else None


class _Context:
    """What an invocation put in context, and giving it back (see the module docstring)."""

    __slots__ = ("ledger", "span", "span_token", "state", "state_token")

    def __init__(self, span: Span, state: AgentState | None) -> None:
        self.span = span
        self.span_token: object | None = otel_context.attach(trace.set_span_in_context(span))
        self.ledger: contextvars.Token[ToolCallLedger | None] | None = None
        self.state = state
        self.state_token: contextvars.Token[AgentState | None] | None = None
        if state is not None:
            self.ledger = new_ledger()
            self.state_token = AGENT_STATE.set(state)

    def release(self) -> None:
        """Give the context back, once; a context variable set in another context than
        this one (a run ended elsewhere) is left as it is there."""
        state_token, self.state_token = self.state_token, None
        if state_token is not None:
            with contextlib.suppress(ValueError):
                AGENT_STATE.reset(state_token)
        ledger_token, self.ledger = self.ledger, None
        if ledger_token is not None:
            with contextlib.suppress(ValueError):
                ledger_token.var.reset(ledger_token)
        span_token, self.span_token = self.span_token, None
        if span_token is not None and trace.get_current_span() is self.span:
            otel_context.detach(span_token)  # type: ignore[arg-type]


class _Ending:
    """The end every invocation shares, once: the context given back, the span stamped
    (``_stamp``) inside the runtime's guard, then ended, whatever happens, when the
    invocation owns it."""

    __slots__ = ("_ended",)

    runtime: Runtime
    span: Span
    _ended: bool

    def release(self) -> None:
        """Give the context back now (``stop``/``fail`` do it too)."""
        raise NotImplementedError

    def _stamp(self, rt: Runtime) -> None:
        raise NotImplementedError

    def _owns_span(self) -> bool:
        return True

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        self.release()
        rt = self.runtime
        try:
            with rt.guard:
                self._stamp(rt)
        finally:
            if self._owns_span():
                self.span.end()

    @property
    def ended(self) -> bool:
        """Whether ``stop``/``fail`` ran."""
        return self._ended


class ToolInvocation(_Ending):
    """One tool execution: an INTERNAL ``execute_tool {name}`` span.

    - ``name``: the tool's name (None: known only at the end, see ``rename``);
      ``aliases``: more names the model may call it by (matching the ledger).
    - ``call_id``: the model's tool-call id when the framework knows it, else the open
      ``tool_call_id()`` scope's; else the ledger's match is claimed at the start when
      the arguments are known then (``arguments`` given), otherwise at the end, with the
      arguments set by then.
    - ``description``: else the one the requesting model call was offered, if any.
    - ``agent_name``: else the running ``agent()``'s name, if any.
    - ``parent``: the parent span (None: the current span); ``attach``: make the span
      current while the tool runs (spans made inside nest under it).
    - ``attributes``: the writer's own (``tracejudge.tool.effect``, ``mcp.*``...).

    ``adopt(runtime, span)`` makes an invocation over a span someone else started and
    ends (the MCP SDK's server span): it records the arguments and result only.
    """

    __slots__ = (
        "_context",
        "_error",
        "_error_type",
        "_linked",
        "_names",
        "_owned",
        "arguments",
        "call_id",
        "description",
        "name",
        "result",
        "runtime",
        "span",
    )

    def __init__(
        self,
        runtime: Runtime,
        name: str | None,
        *,
        aliases: tuple[str, ...] = (),
        tool_type: str = "function",
        description: str | None = None,
        call_id: str | None = None,
        arguments: Any = UNSET,
        agent_name: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        parent: Span | None = None,
        attach: bool = True,
    ) -> None:
        self.runtime = runtime
        self.name = name
        self.arguments = arguments
        self.result: Any = UNSET
        self.call_id = call_id if call_id is not None else take_explicit_call_id()
        self.description = description
        self._names: tuple[str, ...] = (name, *aliases) if name is not None else aliases
        self._owned = True
        self._ended = False
        self._error: Error | None = None
        self._error_type: str | None = None
        self._linked = False
        attrs: dict[str, AttributeValue] = {sc.GEN_AI_OPERATION_NAME: _EXECUTE_TOOL}
        if name is not None:
            attrs[sc.GEN_AI_TOOL_NAME] = name
        attrs[sc.GEN_AI_TOOL_TYPE] = tool_type
        if attributes:
            attrs.update(attributes)
        if agent_name is None:
            state = AGENT_STATE.get()
            agent_name = state.name if state is not None else None
        if agent_name is not None:
            attrs[sc.GEN_AI_AGENT_NAME] = agent_name
        if self.call_id is not None or arguments is not UNSET:
            self._link()
            self._link_attributes(attrs)
        span_name = f"{_EXECUTE_TOOL} {name}" if name is not None else _EXECUTE_TOOL
        self.span: Span = runtime.tracer.start_span(
            span_name, context=_parent_context(parent), kind=SpanKind.INTERNAL, attributes=attrs
        )
        self._context = _Context(self.span, None) if attach else None

    @classmethod
    def adopt(cls, runtime: Runtime, span: Span) -> ToolInvocation:
        """An invocation recording onto ``span``, which its owner names, links and ends."""
        self = cls.__new__(cls)
        self.runtime = runtime
        self.span = span
        self.name = None
        self.arguments = UNSET
        self.result = UNSET
        self.call_id = None
        self.description = None
        self._names = ()
        self._owned = False
        self._ended = False
        self._error = None
        self._error_type = None
        self._linked = True
        self._context = None
        return self

    # --- what the writer learns while the tool runs ----------------------------

    def set_arguments(self, value: Any) -> None:
        """Record (or replace) the tool's arguments."""
        self.arguments = value

    def set_result(self, value: Any) -> None:
        """Record what the tool returned."""
        self.result = value

    def set_call_id(self, call_id: str) -> None:
        """The model's call id, learned after the start (from what the tool returned)."""
        with self.runtime.guard:
            self.call_id = call_id
            self.span.set_attribute(sc.GEN_AI_TOOL_CALL_ID, call_id)

    def rename(self, name: str) -> None:
        """Name a tool known only at the end (a handoff's transfer tool)."""
        with self.runtime.guard:
            self.name = name
            self._names = (name, *self._names)
            self.span.update_name(f"{_EXECUTE_TOOL} {name}")
            self.span.set_attribute(sc.GEN_AI_TOOL_NAME, name)

    # --- end -------------------------------------------------------------------

    def release(self) -> None:
        """Give the context back now (``stop``/``fail`` do it too)."""
        if self._context is not None:
            self._context.release()

    def record_error(self, error: Error, *, error_type: str | None = None) -> None:
        """Mark the execution failed (recorded at the end); ``error_type`` overrides the
        one the error gives (an MCP error's JSON-RPC code)."""
        self._error = error
        self._error_type = error_type

    def stop(self, result: Any = UNSET) -> None:
        """Finish: link, content, error (if one was recorded), end. Idempotent."""
        if result is not UNSET:
            self.result = result
        self._end()

    def fail(self, error: Error, *, error_type: str | None = None, result: Any = UNSET) -> None:
        """Finish failed (``result``: what the tool reported, for an error it returned)."""
        self.record_error(error, error_type=error_type)
        self.stop(result)

    def _owns_span(self) -> bool:
        return self._owned

    def _stamp(self, rt: Runtime) -> None:
        span = self.span
        if not self._linked:
            self._link()
            attrs: dict[str, AttributeValue] = {}
            self._link_attributes(attrs)
            if attrs:
                span.set_attributes(attrs)
        if rt.capture_evidence:
            stats = ContentStats()
            if self.arguments is not UNSET and self.arguments is not None:
                span.set_attribute(
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS, rt.encode_content(self.arguments, stats)
                )
            if self.result is not UNSET:
                span.set_attribute(
                    sc.GEN_AI_TOOL_CALL_RESULT, rt.encode_content(self.result, stats)
                )
            rt.stamp_content_stats(span, stats)
        if self._error is not None:
            mark_failed(span, self._error, self._error_type)

    def _link(self) -> None:
        """The model's call id (claimed from the ledger unless given) and the tool's
        description (from the request that offered the tool, unless given)."""
        self._linked = True
        if self.call_id is not None:
            mark_tool_call_id_claimed(self.call_id)
        elif self._names:
            arguments = None if self.arguments is UNSET else self.arguments
            self.call_id = claim_tool_call_id(self._names, arguments)
        if self.description is None and self._names:
            ledger = current_ledger()
            if ledger is not None:
                self.description = ledger.description(self._names)

    def _link_attributes(self, attrs: dict[str, AttributeValue]) -> None:
        if self.call_id is not None:
            attrs[sc.GEN_AI_TOOL_CALL_ID] = self.call_id
        if self.description is not None:
            attrs[sc.GEN_AI_TOOL_DESCRIPTION] = self.description


class AgentInvocation(_Ending):
    """One agent run: an INTERNAL ``invoke_agent {name}`` span, current while the agent
    runs, with a fresh tool-call ledger and the ``AgentState`` its model calls report
    their provider to. At the end: ``gen_ai.provider.name`` when every model call used the
    same one, the final answer (``set_output``) as ``gen_ai.output.messages``, the error.

    ``attributes``: identity and the writer's own; ``parent``: the parent span (None: the
    current span). Also the handle ``agent()`` gives the application (``set_output``,
    ``span``).
    """

    __slots__ = ("_context", "_error", "name", "output", "runtime", "span", "state")

    def __init__(
        self,
        runtime: Runtime,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        *,
        parent: Span | None = None,
    ) -> None:
        self.runtime = runtime
        self.name = name
        self.output: str | None = None
        self._ended = False
        self._error: Error | None = None
        attrs: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: _INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: name,
        }
        if attributes:
            attrs.update(attributes)
        self.span: Span = runtime.tracer.start_span(
            f"{_INVOKE_AGENT} {name}",
            context=_parent_context(parent),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
        )
        self.state = AgentState(name)
        self._context = _Context(self.span, self.state)

    def set_output(self, text: str | None) -> None:
        """Record the agent's final answer to the user (what the judge checks)."""
        self.output = text

    def release(self) -> None:
        """Give the context back now, before the span ends (``stop``/``fail`` do it too)."""
        self._context.release()

    def record_error(self, error: Error) -> None:
        """Mark the run failed (recorded at the end)."""
        self._error = error

    def stop(self) -> None:
        """Finish: provider, final answer, error (if one was recorded), end. Idempotent."""
        self._end()

    def fail(self, error: Error) -> None:
        """Finish failed."""
        self.record_error(error)
        self.stop()

    def _stamp(self, rt: Runtime) -> None:
        span = self.span
        providers = self.state.providers
        if len(providers) == 1:
            span.set_attribute(sc.GEN_AI_PROVIDER_NAME, next(iter(providers)))
        if self.output is not None and rt.capture_evidence:
            stats = ContentStats()
            span.set_attribute(
                sc.GEN_AI_OUTPUT_MESSAGES,
                rt.encode_content([message("assistant", [text_part(self.output)], "stop")], stats),
            )
            rt.stamp_content_stats(span, stats)
        if self._error is not None:
            mark_failed(span, self._error)
