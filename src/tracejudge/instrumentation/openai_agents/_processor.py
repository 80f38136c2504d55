"""The Agents SDK tracing processor that turns its spans into GenAI spans.

Mapping (the SDK's span type → ours):

- ``agent`` → ``invoke_agent {agent}`` (INTERNAL). A handoff nests the agent taking
  over inside the one handing off: the SDK ends the first agent's span and starts the
  next one as its sibling, so the first agent's span is kept open until the agent it
  handed to has ended. One run therefore has one root ``invoke_agent`` span, which is
  what the run builder judges as one run. The agent's final answer (the last model
  call's text when it asked for no tool; a handed-off chain's final answer on every
  agent of the chain) is ``gen_ai.output.messages``; the trace's ``group_id`` is
  ``gen_ai.conversation.id``; run identity given as trace metadata
  (``tracejudge.run.id``, ``user.id``...) is copied onto the root.
- ``function`` → ``execute_tool {tool}`` (INTERNAL) with ``gen_ai.tool.call.arguments``
  and ``gen_ai.tool.call.result`` (captured, redacted and capped as every tool's are)
  and the model's tool-call id, claimed from the run's tool-call ledger (by name, then
  by arguments) like ``@tracejudge.tool`` does.
- ``handoff`` → ``execute_tool transfer_to_{agent}``: from the model's side a handoff
  *is* the execution of its transfer tool call, so it is recorded as one (with that
  call's id), marked ``tracejudge.handoff.from_agent``/``to_agent``.
- ``guardrail`` → ``guardrail {name}`` (INTERNAL; the conventions have no guardrail
  span) with ``tracejudge.guardrail.name``/``.triggered``.
- ``response``/``generation`` (model calls) → nothing of their own: the model client's
  instrumentation owns the model call span (tracejudge's OpenAI patch, or another GenAI
  instrumentor it defers to), which nests under the agent because the agent's span is
  the current OpenTelemetry span while the agent runs. The SDK's data only supplies the
  agent's final answer. So there is exactly one span per model call.
- anything else (the SDK's task/turn spans, MCP listings, speech) → not mapped: their
  children hang from the nearest mapped ancestor.

While an agent or a tool runs its span is the current OpenTelemetry span (spans of
``@tracejudge.tool``, of model clients and of nested runs join it), a fresh tool-call
ledger is in place and ``AgentState`` reports the providers used. The processor never
raises into the SDK: every callback runs in the runtime's guard.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._invocation import (
    UNSET,
    AgentInvocation,
    Failure,
    ToolInvocation,
    identity_from,
    mark_failed,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get
from tracejudge.instrumentation.openai_agents import _convert as cv

_ERROR_TYPE: Final = "_OTHER"
"""``error.type`` of an SDK span error: the SDK reports a message, not an exception class."""


class _Open:
    """One SDK span we mapped (or watch), while it is open."""

    __slots__ = (
        "agent",
        "child_error",
        "guardrail",
        "handed_from",
        "handoff_to",
        "kind",
        "name",
        "parent",
        "run",
        "sdk_parent",
        "trace_id",
    )

    def __init__(self, kind: str, name: str, parent: _Open | None, trace_id: str) -> None:
        self.kind = kind
        self.name = name
        self.parent = parent
        self.trace_id = trace_id
        self.agent: _Open | None = self if kind == cv.AGENT else _agent_of(parent)
        self.run: AgentInvocation | ToolInvocation | None = None
        self.guardrail: Span | None = None
        self.handoff_to: str | None = None
        self.handed_from: _Open | None = None
        self.child_error: Any = None
        self.sdk_parent: str | None = None

    @property
    def span(self) -> Span | None:
        """Our span of it (None: not mapped)."""
        return self.run.span if self.run is not None else self.guardrail


def _agent_of(record: _Open | None) -> _Open | None:
    return record.agent if record is not None else None


def _failure(error: Any) -> Failure | None:
    """An SDK ``SpanError`` as a ``Failure`` (None: no error)."""
    description = cv.error_description(error)
    return None if description is None else Failure(_ERROR_TYPE, description)


class _TraceInfo:
    __slots__ = ("conversation", "identity", "pending")

    def __init__(self, conversation: str | None, identity: dict[str, AttributeValue]) -> None:
        self.conversation = conversation
        self.identity = identity
        self.pending: list[_Open] = []
        """Agents that handed off and wait for the agent they handed to."""


class GenAiProcessor:
    """The ``TracingProcessor`` (the SDK's ABC is mixed in when the SDK is imported, see
    ``openai_agents.processor()``). ``runtime`` None: disabled (``uninstrument()``;
    the SDK offers no way to remove a processor) — it then starts nothing and only
    ends what it had started."""

    def __init__(self) -> None:
        self.runtime: Runtime | None = None
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        self._traces: dict[str, _TraceInfo] = {}

    # --- traces ----------------------------------------------------------------

    def on_trace_start(self, sdk_trace: Any) -> None:
        rt = self.runtime
        if rt is None:
            return
        with rt.guard:
            trace_id = str(get(sdk_trace, "trace_id"))
            identity: dict[str, AttributeValue] = {}
            metadata = get(sdk_trace, "metadata")
            if isinstance(metadata, Mapping):
                identity_from(metadata, identity)
            with self._lock:
                self._traces[trace_id] = _TraceInfo(
                    cv.text_of(get(sdk_trace, "group_id")), identity
                )

    def on_trace_end(self, sdk_trace: Any) -> None:
        """End what the trace left open: agents still waiting for a handoff that never
        started (they end with what they have), spans the SDK never ended."""
        trace_id = str(get(sdk_trace, "trace_id"))
        with self._lock:
            info = self._traces.pop(trace_id, None)
            stale = [k for k, r in self._open.items() if r.trace_id == trace_id]
            leftovers = [self._open.pop(k) for k in stale]
        for record in info.pending if info is not None else ():
            _end_agent_chain(record)
        for record in leftovers:
            _end(record)

    # --- spans -----------------------------------------------------------------

    def on_span_start(self, sdk_span: Any) -> None:
        rt = self.runtime
        if rt is None:
            return
        with rt.guard:
            self._start(rt, sdk_span)

    def on_span_end(self, sdk_span: Any) -> None:
        span_id = str(get(sdk_span, "span_id"))
        with self._lock:
            record = self._open.pop(span_id, None)
        if record is None:
            return
        rt = self.runtime
        if rt is None:  # disabled mid-span: end what we started, record nothing more
            _end(record)
            return
        with rt.guard:
            self._end(record, sdk_span)

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None

    # --- start -----------------------------------------------------------------

    def _start(self, rt: Runtime, sdk_span: Any) -> None:
        data = get(sdk_span, "span_data")
        kind = cv.kind_of(data) or "unknown"
        span_id = str(get(sdk_span, "span_id"))
        trace_id = str(get(sdk_span, "trace_id"))
        with self._lock:
            parent = self._mapped_ancestor(get(sdk_span, "parent_id"))
            info = self._traces.get(trace_id)
            handed_from = None
            sdk_parent = get(sdk_span, "parent_id")
            sdk_parent = sdk_parent if isinstance(sdk_parent, str) else None
            if kind == cv.AGENT and info is not None and info.pending:
                handed_from = _take_pending(info, cv.text_of(get(data, "name")), sdk_parent)
        if handed_from is not None:
            parent = handed_from
        if kind == cv.AGENT:
            record = self._start_agent(rt, data, parent, info, trace_id)
            record.handed_from = handed_from
            record.sdk_parent = sdk_parent
        elif kind == cv.FUNCTION:
            record = _start_tool(rt, data, parent, trace_id)
        elif kind == cv.HANDOFF:
            record = _start_handoff(rt, data, parent, trace_id)
        elif kind == cv.GUARDRAIL:
            record = _start_guardrail(rt, data, parent, trace_id)
        else:
            # Not mapped (model calls, task/turn spans...), but kept so that the spans
            # under it find their mapped ancestor, and model calls their agent.
            record = _Open(kind, kind, parent, trace_id)
        with self._lock:
            self._open[span_id] = record

    def _mapped_ancestor(self, parent_id: Any) -> _Open | None:
        """The record of the nearest ancestor we mapped (the SDK's parent chain; spans
        we do not map, like task and turn spans, are not in the table)."""
        if not isinstance(parent_id, str):
            return None
        found = self._open.get(parent_id)
        while found is not None and found.span is None:
            found = found.parent
        return found

    def _start_agent(
        self, rt: Runtime, data: Any, parent: _Open | None, info: _TraceInfo | None, trace_id: str
    ) -> _Open:
        name = cv.text_of(get(data, "name")) or "agent"
        attrs: dict[str, AttributeValue] = {}
        if info is not None:
            if info.conversation is not None:
                attrs[sc.GEN_AI_CONVERSATION_ID] = info.conversation
            if parent is None:
                attrs.update(info.identity)
        record = _Open(cv.AGENT, name, parent, trace_id)
        record.run = AgentInvocation(rt, name, attrs, parent=_span_of(parent))
        return record

    # --- end -------------------------------------------------------------------

    def _end(self, record: _Open, sdk_span: Any) -> None:
        data = get(sdk_span, "span_data")
        kind = record.kind
        if kind in (cv.RESPONSE, cv.GENERATION):
            agent = record.agent
            if agent is not None and isinstance(agent.run, AgentInvocation):
                # None when it asked for tools: not the answer
                agent.run.set_output(cv.final_text(kind, data))
            return
        run = record.run
        error = _failure(get(sdk_span, "error"))
        if isinstance(run, AgentInvocation):
            self._finish_agent(record, run, sdk_span)
        elif isinstance(run, ToolInvocation):
            if kind == cv.HANDOFF:
                _finish_handoff(run, record, data)
            else:
                _finish_tool(run, data)
            if error is not None:
                run.record_error(error)
            run.stop()
        elif record.guardrail is not None:
            span = record.guardrail
            try:
                span.set_attribute(
                    sc.TRACEJUDGE_GUARDRAIL_TRIGGERED, get(data, "triggered") is True
                )
                if error is not None:
                    mark_failed(span, error)
            finally:
                span.end()
        else:
            # The SDK's own grouping spans (a turn of the loop): an error there — a
            # guardrail's tripwire, for one — is the agent's.
            sdk_error = get(sdk_span, "error")
            if kind in cv.GROUPING and sdk_error and record.agent is not None:
                record.agent.child_error = record.agent.child_error or sdk_error

    def _finish_agent(self, record: _Open, run: AgentInvocation, sdk_span: Any) -> None:
        """The SDK ended an agent span: end ours, unless the agent handed off (then it
        waits, open, for the agent it handed to); ending an agent ends the agents that
        handed to it."""
        run.release()
        error = _failure(get(sdk_span, "error") or record.child_error)
        if error is not None:
            run.record_error(error)
        if record.handoff_to is not None:
            with self._lock:
                info = self._traces.get(record.trace_id)
                if info is not None:
                    info.pending.append(record)
                    return
        _end_agent_chain(record)


def _span_of(record: _Open | None) -> Span | None:
    return record.span if record is not None else None


def _start_tool(rt: Runtime, data: Any, parent: _Open | None, trace_id: str) -> _Open:
    name = cv.text_of(get(data, "name")) or "tool"
    agent = _agent_of(parent)
    record = _Open(cv.FUNCTION, name, parent, trace_id)
    record.run = ToolInvocation(
        rt,
        name,
        agent_name=agent.name if agent is not None else None,
        parent=_span_of(parent),
    )
    return record


def _start_handoff(rt: Runtime, data: Any, parent: _Open | None, trace_id: str) -> _Open:
    attrs: dict[str, AttributeValue] = {}
    source = cv.text_of(get(data, "from_agent"))
    if source is not None:
        attrs[sc.TRACEJUDGE_HANDOFF_FROM_AGENT] = source
    record = _Open(cv.HANDOFF, "handoff", parent, trace_id)
    # Named once the target is known (at the end): the transfer tool is named after it.
    record.run = ToolInvocation(
        rt, None, agent_name=source, attributes=attrs, parent=_span_of(parent), attach=False
    )
    return record


def _start_guardrail(rt: Runtime, data: Any, parent: _Open | None, trace_id: str) -> _Open:
    name = cv.text_of(get(data, "name")) or "guardrail"
    attrs: dict[str, AttributeValue] = {sc.TRACEJUDGE_GUARDRAIL_NAME: name}
    agent = _agent_of(parent)
    if agent is not None:
        attrs[sc.GEN_AI_AGENT_NAME] = agent.name
    record = _Open(cv.GUARDRAIL, name, parent, trace_id)
    ctx = trace.set_span_in_context(parent.span) if parent is not None and parent.span else None
    record.guardrail = rt.tracer.start_span(
        f"guardrail {name}", context=ctx, kind=SpanKind.INTERNAL, attributes=attrs
    )
    return record


def _finish_tool(run: ToolInvocation, data: Any) -> None:
    run.set_arguments(cv.tool_arguments(data))
    output = get(data, "output", UNSET)
    if output is not UNSET and output is not None:
        run.set_result(cv.tool_result(output))


def _finish_handoff(run: ToolInvocation, record: _Open, data: Any) -> None:
    target = cv.text_of(get(data, "to_agent"))
    if target is None:
        return
    run.rename(cv.handoff_tool_name(target))
    run.span.set_attribute(sc.TRACEJUDGE_HANDOFF_TO_AGENT, target)
    agent = record.agent
    if agent is not None:
        agent.handoff_to = target


def _end_agent_chain(record: _Open) -> None:
    """End ``record``'s span and those of the agents that handed off to it; its final
    answer is theirs too (they delegated the answer)."""
    answer = record.run.output if isinstance(record.run, AgentInvocation) else None
    current: _Open | None = record
    while current is not None:
        run = current.run
        if isinstance(run, AgentInvocation) and not run.ended:
            if current is not record:
                run.set_output(answer)
            run.stop()
        current = current.handed_from


def _end(record: _Open) -> None:
    """End what we started of an SDK span, recording nothing more (disabled, or left
    open by the SDK)."""
    if record.run is not None:
        record.run.release()
    span = record.span
    if span is not None and span.is_recording():
        span.end()


def _take_pending(info: _TraceInfo, name: str | None, sdk_parent: str | None) -> _Open | None:
    """The agent that handed off to ``name``: the SDK names the handoff's target after
    the agent it starts next, as a sibling of the agent that handed off (same SDK parent).
    An agent starting in parallel in the same trace matches neither."""
    for index in range(len(info.pending) - 1, -1, -1):
        waiting = info.pending[index]
        if waiting.handoff_to == name and waiting.sdk_parent == sdk_parent:
            return info.pending.pop(index)
    return None
