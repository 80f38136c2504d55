"""``tracejudge.agent()``: the ``invoke_agent`` span that roots one judged run.

Why: the judge needs to know where a run starts and ends, who it ran for (user, tenant),
which case/experiment/variant it belongs to, and what the agent finally told the user
(the claim checked against the tool spans). The span is INTERNAL (an in-process agent);
``gen_ai.provider.name`` is set when every model call inside used the same provider.
The agent scope also starts a fresh tool-call ledger, so tool spans inside the run pick
up the ids the run's model calls requested (even in tasks/threads it spawns).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._content import ContentStats
from tracejudge.instrumentation._context import AGENT_STATE as _AGENT
from tracejudge.instrumentation._context import AgentState, new_ledger, reset_ledger
from tracejudge.instrumentation._genai import message, set_error, text_part
from tracejudge.instrumentation._runtime import Runtime, get_runtime

F = TypeVar("F", bound=Callable[..., Any])

_OPERATION: Final = semconv.GenAiOperationNameValues.INVOKE_AGENT


class AgentRun:
    """Handle of a running agent: set the final answer, reach the span."""

    __slots__ = ("_output", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self._output: str | None = None

    def set_output(self, text: str) -> None:
        """Record the agent's final answer to the user (what the judge checks)."""
        self._output = text

    @property
    def output(self) -> str | None:
        """The final answer set so far."""
        return self._output


class AgentScope:
    """``agent(...)``'s return value: a decorator and a (sync or async) context manager.

    As a context manager it can be entered once; as a decorator every call of the
    decorated function runs in a fresh scope with the same settings.
    """

    def __init__(self, name: str, attributes: dict[str, AttributeValue]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("agent() needs a non-empty name")
        self._name = name
        self._attributes = attributes
        self._runtime: Runtime | None = None
        self._run: AgentRun | None = None
        self._tokens: tuple[object, Any, Any] | None = None

    def _fresh(self) -> AgentScope:
        return AgentScope(self._name, self._attributes)

    # --- context manager -------------------------------------------------------

    def __enter__(self) -> AgentRun:
        if self._run is not None:
            raise RuntimeError("an agent() scope can be entered only once; call agent() again")
        rt = self._runtime = get_runtime()
        attrs = dict(self._attributes)
        span = rt.tracer.start_span(
            f"{_OPERATION} {self._name}", kind=SpanKind.INTERNAL, attributes=attrs
        )
        self._run = AgentRun(span)
        ctx_token = otel_context.attach(trace.set_span_in_context(span))
        self._tokens = (ctx_token, new_ledger(), _AGENT.set(AgentState(self._name)))
        return self._run

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run, rt, tokens = self._run, self._runtime, self._tokens
        if run is None or rt is None or tokens is None:
            return
        self._tokens = None
        ctx_token, ledger_token, agent_token = tokens
        state = _AGENT.get()
        try:
            _AGENT.reset(agent_token)
        except ValueError:
            _AGENT.set(None)
        reset_ledger(ledger_token)
        otel_context.detach(ctx_token)  # type: ignore[arg-type]
        try:
            with rt.guard:
                self._finish(rt, run, state, exc)
        finally:
            run.span.end()  # a second end() is a no-op (the SDK only warns at debug level)

    def _finish(
        self, rt: Runtime, run: AgentRun, state: AgentState | None, exc: BaseException | None
    ) -> None:
        span = run.span
        if state is not None and len(state.providers) == 1:
            span.set_attribute(semconv.GEN_AI_PROVIDER_NAME, next(iter(state.providers)))
        if run.output is not None and rt.capture_evidence:
            stats = ContentStats()
            span.set_attribute(
                semconv.GEN_AI_OUTPUT_MESSAGES,
                rt.encode_content([message("assistant", [text_part(run.output)], "stop")], stats),
            )
            rt.stamp_content_stats(span, stats)
        if exc is not None:
            set_error(span, exc)

    async def __aenter__(self) -> AgentRun:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # --- decorator -------------------------------------------------------------

    def __call__(self, func: F) -> F:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with self._fresh() as run:
                    result = await func(*args, **kwargs)
                    if isinstance(result, str) and run.output is None:
                        run.set_output(result)
                    return result

            return cast(F, run_async)

        @functools.wraps(func)
        def run_sync(*args: Any, **kwargs: Any) -> Any:
            with self._fresh() as run:
                result = func(*args, **kwargs)
                if isinstance(result, str) and run.output is None:
                    run.set_output(result)
                return result

        return cast(F, run_sync)


def agent(
    name: str,
    *,
    id: str | None = None,
    version: str | None = None,
    description: str | None = None,
    run_id: str | None = None,
    case_id: str | None = None,
    experiment_id: str | None = None,
    variant_id: str | None = None,
    user_id: str | None = None,
    tenant_id: str | None = None,
    request_id: str | None = None,
    shadow: bool = False,
) -> AgentScope:
    """Trace one agent run as an ``invoke_agent {name}`` span.

    Use as ``@agent("refunds")`` on a sync or async function (a ``str`` return value
    becomes the final answer) or as ``with agent("refunds") as run: ...;
    run.set_output(answer)`` (``async with`` works too). Identity arguments become
    ``gen_ai.agent.*``, ``tracejudge.run.id`` / ``case.id`` / ``experiment.id`` /
    ``variant.id``, ``user.id`` and ``tracejudge.tenant.id``.

    Shadow runs: the stable deployment passes the id of the user request it answers as
    ``request_id``; the candidate answering a copy of that request passes the same id and
    ``shadow=True`` (``tracejudge.request.id``, ``tracejudge.run.shadow``). The collector
    and ``tracejudge eval`` then diff the shadow against the stable run and never count it
    as user traffic. A shadow whose ``request_id`` is None (a header that did not arrive)
    is still tagged a shadow, and its verdict says it could not be paired.
    """
    attrs: dict[str, AttributeValue] = {
        semconv.GEN_AI_OPERATION_NAME: _OPERATION,
        semconv.GEN_AI_AGENT_NAME: name,
    }
    for key, value in (
        (semconv.GEN_AI_AGENT_ID, id),
        (semconv.GEN_AI_AGENT_VERSION, version),
        (semconv.GEN_AI_AGENT_DESCRIPTION, description),
        (semconv.TRACEJUDGE_RUN_ID, run_id),
        (semconv.TRACEJUDGE_CASE_ID, case_id),
        (semconv.TRACEJUDGE_EXPERIMENT_ID, experiment_id),
        (semconv.TRACEJUDGE_VARIANT_ID, variant_id),
        (semconv.USER_ID, user_id),
        (semconv.TRACEJUDGE_TENANT_ID, tenant_id),
        (semconv.TRACEJUDGE_REQUEST_ID, request_id),
    ):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"agent(): {key} must be a str, got {type(value).__name__}")
            attrs[key] = value
    if not isinstance(shadow, bool):
        raise TypeError(f"agent(): shadow must be a bool, got {type(shadow).__name__}")
    if shadow:
        attrs[semconv.TRACEJUDGE_RUN_SHADOW] = True
    return AgentScope(name, attrs)
