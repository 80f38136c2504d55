"""The langchain-core callback handler that turns LangChain/LangGraph runs into GenAI spans.

Mapping (langchain-core's runs → ours):

- the outermost chain run (a LangGraph graph — ``create_react_agent``, LangChain's
  ``create_agent``, a compiled ``StateGraph`` — or any runnable the application
  invokes at the top; "outermost" among the runs this handler saw, so a run nested in
  a LangSmith ``@traceable`` still is one) → ``invoke_agent {name}`` (INTERNAL), named as the run is
  (``create_react_agent(name=...)``, ``compile(name=...)``, ``run_name`` in the config;
  LangGraph's default is ``LangGraph``). Its final answer (the last model call's text
  when it asked for no tool, else the output state's last assistant message) is
  ``gen_ai.output.messages``; the run's ``thread_id`` is ``gen_ai.conversation.id``;
  run identity given as config metadata (``tracejudge.run.id``, ``user.id``...) is
  copied onto it. When an ``invoke_agent`` span is already current (the application
  wrapped the call in ``tracejudge.agent(...)``) the outer run is not a second agent:
  what it does nests in that one.
- tool runs → ``execute_tool {tool}`` (INTERNAL) with ``gen_ai.tool.call.arguments``
  and ``gen_ai.tool.call.result`` (captured, redacted and capped as every tool's are)
  and the model's tool-call id, as langchain-core passes it (``ToolNode`` does), else
  from the ``ToolMessage`` result, else claimed from the run's tool-call ledger.
- chat model and LLM runs → nothing of their own: the model client's instrumentation
  owns the model call span (tracejudge's OpenAI patch under ``ChatOpenAI``), so there
  is exactly one span per model call. The handler only makes the span the call belongs
  to (its agent, or the tool it runs in) the current OpenTelemetry span for the call's
  duration, so the client's span nests there even where a framework ran it in a
  context that lost it; and it reads the call's result for the agent's final answer.
- every other run (graph nodes, sequences, prompts, branches, retrievers) → not mapped:
  what runs inside hangs from the nearest mapped ancestor.

While an agent or a tool runs its span is the current OpenTelemetry span (LangGraph
copies the context into the threads and tasks it runs nodes in, so ``@tracejudge.tool``
spans and model calls inside nest there), a fresh tool-call ledger is in place and
``AgentState`` reports the providers used. Errors: a failed run is status ERROR with
``error.type`` (the exception's class); LangGraph's control flow (an interrupt, a
command to the parent graph) is not an error. The handler never raises into
LangChain: every callback runs in the runtime's guard (and LangChain would only log).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final
from uuid import UUID

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._invocation import (
    UNSET,
    AgentInvocation,
    Failure,
    ToolInvocation,
    identity_from,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get
from tracejudge.instrumentation.langchain import _convert as cv

_OP = sc.GenAiOperationNameValues
_TOOL_ERROR_TYPE: Final = "_OTHER"
"""``error.type`` of a tool error langchain handled into a ``ToolMessage`` (it reports a
message, not an exception)."""
_STATUS_MAX: Final = 512
_THREAD_ID: Final = "thread_id"
"""LangGraph's conversation key (``config["configurable"]["thread_id"]``), which it
copies into the runs' metadata."""


class _Mapped:
    """One LangChain run we made a span for (agent or tool), while it is open, and the
    agent run responsible for it (itself, for an agent)."""

    __slots__ = ("agent", "run")

    def __init__(
        self, run: AgentInvocation | ToolInvocation, agent: AgentInvocation | None
    ) -> None:
        self.run = run
        self.agent = agent


class _Model:
    """One open model call: the run it answers to and what its start put in context."""

    __slots__ = ("ctx_token", "owner")

    def __init__(self, owner: _Mapped | None, ctx_token: object | None) -> None:
        self.owner = owner
        self.ctx_token = ctx_token


class GenAiCallbacks:
    """The callback handler (langchain-core's ``BaseCallbackHandler`` is mixed in when
    langchain-core is imported, see ``langchain.handler()``). ``runtime`` None:
    disabled (``uninstrument()``; langchain-core offers no way to remove a configure
    hook) — it then asks langchain-core for no callbacks once nothing it started is
    open, and only ends what it had started."""

    raise_error: bool = False
    run_inline: bool = True
    """Called in the run's own thread/task (not in an executor), so that the context it
    sets is the one the run's code sees."""

    def __init__(self) -> None:
        self.runtime: Runtime | None = None
        self._lock = threading.Lock()
        self._runs: dict[UUID, _Mapped | None] = {}
        """Every open chain/tool run → the mapped run responsible for it (itself when
        mapped, its nearest mapped ancestor otherwise, None when it has none)."""
        self._own: dict[UUID, _Mapped] = {}
        """The open runs that are mapped themselves (agents, tools)."""
        self._models: dict[UUID, _Model] = {}

    # --- what langchain-core asks before each callback ----------------------------

    def _off(self) -> bool:
        return self.runtime is None and not self._runs and not self._models

    @property
    def ignore_chain(self) -> bool:
        return self._off()

    @property
    def ignore_agent(self) -> bool:  # tool callbacks are asked under this name
        return self._off()

    @property
    def ignore_llm(self) -> bool:
        return self._off()

    @property
    def ignore_chat_model(self) -> bool:
        return self._off()

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    # --- chains ------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        rt = self.runtime
        if rt is None:
            return
        with rt.guard:
            with self._lock:
                known = parent_run_id is not None and parent_run_id in self._runs
                owner = self._runs.get(parent_run_id) if known else None  # type: ignore[arg-type]
            # Outermost: no parent, or one langchain-core knows and we do not (a LangSmith
            # ``@traceable`` around the call, a tracer's run the application passed in).
            if not known and not _agent_is_current():
                name = cv.run_name(serialized, kwargs, "agent")
                record = self._start_agent(rt, name, metadata)
                with self._lock:
                    self._runs[run_id] = self._own[run_id] = record
                return
            with self._lock:
                self._runs[run_id] = owner

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._pop(run_id)
        if record is not None and isinstance(record.run, AgentInvocation):
            self._finish_agent(record.run, outputs, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._pop(run_id)
        if record is not None and isinstance(record.run, AgentInvocation):
            self._finish_agent(record.run, None, error)

    def _pop(self, run_id: UUID) -> _Mapped | None:
        """Forget a chain or tool run; its record when the run was mapped itself."""
        with self._lock:
            self._runs.pop(run_id, None)
            return self._own.pop(run_id, None)

    # --- tools -------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: Any = None,
        **kwargs: Any,
    ) -> None:
        rt = self.runtime
        if rt is None:
            return
        with rt.guard:
            with self._lock:
                owner = self._runs.get(parent_run_id) if parent_run_id is not None else None
            agent = owner.agent if owner is not None else None
            run = ToolInvocation(
                rt,
                cv.run_name(serialized, kwargs, "tool"),
                description=cv.text_of(get(serialized, "description")),
                call_id=cv.text_of(kwargs.get("tool_call_id")),
                arguments=cv.tool_arguments(input_str, inputs),
                agent_name=agent.name if agent is not None else None,
                parent=owner.run.span if owner is not None else None,
            )
            record = _Mapped(run, agent)
            with self._lock:
                self._runs[run_id] = self._own[run_id] = record

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._pop(run_id)
        if record is not None and isinstance(record.run, ToolInvocation):
            self._finish_tool(record.run, output, None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        record = self._pop(run_id)
        if record is not None and isinstance(record.run, ToolInvocation):
            self._finish_tool(record.run, None, error)

    def _finish_tool(self, run: ToolInvocation, output: Any, error: BaseException | None) -> None:
        result: Any = UNSET
        failure: Failure | None = None
        with run.runtime.guard:
            if run.call_id is None:
                call_id = cv.tool_message_id(output)
                if call_id is not None:
                    run.set_call_id(call_id)
            if error is None and output is not None:
                result = cv.tool_result(output)
            if error is None and cv.tool_message_failed(output):
                text = cv.content_text(get(output, "content")) or "tool error"
                failure = Failure(_TOOL_ERROR_TYPE, text)
        if error is not None and not cv.is_control_flow(error):
            run.fail(error)
        elif failure is not None:
            run.fail(failure, result=result)
        else:
            run.stop(result)

    # --- model calls -----------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_model(run_id, parent_run_id)

    def on_llm_start(
        self,
        serialized: Any,
        prompts: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_model(run_id, parent_run_id)

    def _start_model(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        """Make the span the call belongs to current for the call (see the module
        docstring); the model client's instrumentation records the call itself."""
        rt = self.runtime
        if rt is None:
            return
        with rt.guard:
            with self._lock:
                owner = self._runs.get(parent_run_id) if parent_run_id is not None else None
            token = None
            if owner is not None and trace.get_current_span() is not owner.run.span:
                token = otel_context.attach(trace.set_span_in_context(owner.run.span))
            with self._lock:
                self._models[run_id] = _Model(owner, token)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        call = self._pop_model(run_id)
        rt = self.runtime
        if call is None or rt is None or call.owner is None:
            return
        with rt.guard:
            agent = call.owner.agent
            if agent is not None:  # None when it asked for tools: not the answer
                agent.set_output(cv.final_text(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._pop_model(run_id)

    def _pop_model(self, run_id: UUID) -> _Model | None:
        with self._lock:
            call = self._models.pop(run_id, None)
        if call is not None and call.ctx_token is not None:
            owner = call.owner
            if owner is not None and trace.get_current_span() is owner.run.span:
                otel_context.detach(call.ctx_token)  # type: ignore[arg-type]
            call.ctx_token = None
        return call

    # --- agents ------------------------------------------------------------------

    def _start_agent(self, rt: Runtime, name: str, metadata: Mapping[str, Any] | None) -> _Mapped:
        attrs: dict[str, AttributeValue] = {}
        if isinstance(metadata, Mapping):
            thread = metadata.get(_THREAD_ID)
            if isinstance(thread, (str, int)) and not isinstance(thread, bool):
                attrs[sc.GEN_AI_CONVERSATION_ID] = str(thread)
            identity_from(metadata, attrs)
        run = AgentInvocation(rt, name, attrs)
        return _Mapped(run, run)

    def _finish_agent(
        self, run: AgentInvocation, outputs: Any, error: BaseException | None
    ) -> None:
        if error is not None:
            run.set_output(None)  # a candidate answer, not the final one
        elif run.output is None:
            with run.runtime.guard:
                run.set_output(cv.state_answer(outputs))
        if error is not None and not cv.is_control_flow(error):
            run.fail(error)
        else:
            run.stop()


def _agent_is_current() -> bool:
    """Whether the current span is an ``invoke_agent`` span (ours or the application's
    ``tracejudge.agent(...)``): then the outer run is not a second agent."""
    span = trace.get_current_span()
    attrs: Mapping[str, Any] | None = getattr(span, "attributes", None)
    return attrs is not None and attrs.get(sc.GEN_AI_OPERATION_NAME) == _OP.INVOKE_AGENT
