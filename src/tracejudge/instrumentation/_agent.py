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
from typing import Any, TypeVar, cast

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._invocation import AgentInvocation
from tracejudge.instrumentation._runtime import get_runtime
from tracejudge.instrumentation._scope import InvocationScope

F = TypeVar("F", bound=Callable[..., Any])

AgentRun = AgentInvocation
"""The handle of a running agent: ``set_output(answer)``, ``output``, ``span``."""


class AgentScope(InvocationScope[AgentInvocation]):
    """``agent(...)``'s return value: a decorator and a (sync or async) context manager.

    As a context manager it can be entered once; as a decorator every call of the
    decorated function runs in a fresh scope with the same settings.
    """

    def __init__(self, name: str, attributes: dict[str, AttributeValue]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("agent() needs a non-empty name")
        self._name = name
        self._attributes = attributes
        self._run: AgentInvocation | None = None
        self._entered = False

    def _fresh(self) -> AgentScope:
        return AgentScope(self._name, self._attributes)

    # --- context manager -------------------------------------------------------

    def __enter__(self) -> AgentRun:
        if self._entered:
            raise RuntimeError("an agent() scope can be entered only once; call agent() again")
        self._entered = True
        self._run = AgentInvocation(get_runtime(), self._name, self._attributes)
        return self._run

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
    conversation_id: str | None = None,
) -> AgentScope:
    """Trace one agent run as an ``invoke_agent {name}`` span.

    Use as ``@agent("refunds")`` on a sync or async function (a ``str`` return value
    becomes the final answer) or as ``with agent("refunds") as run: ...;
    run.set_output(answer)`` (``async with`` works too). Identity arguments become
    ``gen_ai.agent.*``, ``tracejudge.run.id`` / ``case.id`` / ``experiment.id`` /
    ``variant.id``, ``user.id`` and ``tracejudge.tenant.id``.

    Conversations: ``conversation_id`` (``gen_ai.conversation.id``) names the conversation
    this run is one turn of; runs that share it are judged as one run. It is also the
    routing key of every span started in the run (``tracejudge.route.key``, see
    ``route_key``), so a load balancer in front of several collectors keeps the turns on
    one of them.

    Shadow runs: the stable deployment passes the id of the user request it answers as
    ``request_id``; the candidate answering a copy of that request passes the same id and
    ``shadow=True`` (``tracejudge.request.id``, ``tracejudge.run.shadow``). The collector
    and ``tracejudge eval`` then diff the shadow against the stable run and never count it
    as user traffic. A shadow whose ``request_id`` is None (a header that did not arrive)
    is still tagged a shadow, and its verdict says it could not be paired.
    """
    attrs: dict[str, AttributeValue] = {}
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
        (semconv.GEN_AI_CONVERSATION_ID, conversation_id),
    ):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"agent(): {key} must be a str, got {type(value).__name__}")
            if key == semconv.GEN_AI_CONVERSATION_ID and not value:
                raise ValueError("agent(): conversation_id must be a non-empty string or None")
            attrs[key] = value
    if not isinstance(shadow, bool):
        raise TypeError(f"agent(): shadow must be a bool, got {type(shadow).__name__}")
    if shadow:
        attrs[semconv.TRACEJUDGE_RUN_SHADOW] = True
    return AgentScope(name, attrs)
