"""``@tracejudge.tool``: ``execute_tool`` spans for tools the application runs itself.

Why: a client patch only sees what the model *asked* for. Whether the refund API was
really called, with which arguments, and whether it failed, is only visible where the
tool runs. Each execution becomes an INTERNAL ``execute_tool {name}`` span carrying the
bound arguments and the result (always captured, redacted and capped: judging needs
them), the declared side effect (``tracejudge.tool.effect``) and the model's tool-call
id, picked up from the latest model response in the same logical flow (matched by name,
then by arguments when several calls share a name) unless given explicitly:
``call_id=`` in the context-manager form, ``with tool_call_id(id):`` around a decorated
tool's call. (Not a reserved keyword argument of the decorated function: that would
change the application's own call signature under its type checker.)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast, overload

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._invocation import UNSET, ToolInvocation
from tracejudge.instrumentation._runtime import Runtime, get_runtime
from tracejudge.instrumentation._scope import InvocationScope

F = TypeVar("F", bound=Callable[..., Any])

EFFECTS: Final = frozenset({"read", "write", "notify", "unknown"})

ToolRun = ToolInvocation
"""The handle of a running tool (context-manager form): ``set_result``, ``set_arguments``,
``span``."""


class _ToolSpec:
    """Static settings of one tool (validated once)."""

    __slots__ = ("attributes", "description", "effect", "name")

    def __init__(
        self, name: str | None, effect: str, description: str | None, idempotency_key: str | None
    ) -> None:
        if effect not in EFFECTS:
            raise ValueError(f"tool effect must be one of {sorted(EFFECTS)}, got {effect!r}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError("tool name must be a non-empty string")
        self.name = name
        self.effect = effect
        self.description = description or None
        self.attributes: dict[str, AttributeValue] = {semconv.TRACEJUDGE_TOOL_EFFECT: effect}
        if idempotency_key:
            self.attributes[semconv.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY] = idempotency_key

    def start(
        self,
        rt: Runtime,
        name: str,
        aliases: tuple[str, ...],
        arguments: Any,
        call_id: str | None,
    ) -> ToolInvocation:
        return ToolInvocation(
            rt,
            name,
            aliases=aliases,
            description=self.description,
            call_id=call_id,
            arguments=arguments,
            attributes=self.attributes,
        )


class ToolScope(InvocationScope[ToolInvocation]):
    """``tool(...)``'s return value: a decorator factory and a context manager."""

    def __init__(self, spec: _ToolSpec, arguments: Any, call_id: str | None) -> None:
        self._spec = spec
        self._arguments = arguments
        self._call_id = call_id
        self._run: ToolInvocation | None = None

    def __call__(self, func: F) -> F:
        return _decorate(func, self._spec)

    def __enter__(self) -> ToolInvocation:
        name = self._spec.name
        if name is None:
            raise ValueError("the context-manager form needs a name: tool('name', ...)")
        if self._run is not None:
            raise RuntimeError("a tool() scope can be entered only once")
        self._run = self._spec.start(get_runtime(), name, (), self._arguments, self._call_id)
        return self._run


def _binder(func: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """Build (once, at decoration) a function mapping call args to a name→value dict."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return lambda args, kwargs: {"args": list(args), "kwargs": kwargs}
    params = list(sig.parameters)
    skip_first = bool(params) and params[0] in ("self", "cls")

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), "kwargs": kwargs}
        bound.apply_defaults()
        out = dict(bound.arguments)
        if skip_first:
            out.pop(params[0], None)
        return out

    return bind


def _begin_failed(exc: Exception) -> None:
    """Telemetry could not start: log it (or raise, in tests); the tool still runs."""
    rt = get_runtime()
    rt.internal_error(exc)
    if rt.raise_internal_errors:
        raise exc


def _decorate(func: F, spec: _ToolSpec) -> F:
    name = spec.name or getattr(func, "__name__", None) or "tool"
    fname = getattr(func, "__name__", name)
    aliases = () if fname == name else (fname,)
    bind = _binder(func)

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolInvocation:
        rt = get_runtime()
        arguments: Any = UNSET
        with rt.guard:
            arguments = bind(args, kwargs)
        return spec.start(rt, name, aliases, arguments, None)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                run = begin(args, kwargs)
            except Exception as exc:
                _begin_failed(exc)
                return await func(*args, **kwargs)
            try:
                result = await func(*args, **kwargs)
            except BaseException as exc:
                run.fail(exc)
                raise
            run.stop(result)
            return result

        return cast(F, run_async)

    @functools.wraps(func)
    def run_sync(*args: Any, **kwargs: Any) -> Any:
        try:
            run = begin(args, kwargs)
        except Exception as exc:
            _begin_failed(exc)
            return func(*args, **kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            run.fail(exc)
            raise
        run.stop(result)
        return result

    return cast(F, run_sync)


@overload
def tool(func: F, /) -> F: ...


@overload
def tool(
    tool_name: str | None = None,
    /,
    *,
    name: str | None = None,
    effect: str = "unknown",
    description: str | None = None,
    idempotency_key: str | None = None,
    call_id: str | None = None,
    arguments: Mapping[str, Any] | Any = UNSET,
) -> ToolScope: ...


def tool(
    func_or_name: Any = None,
    /,
    *,
    name: str | None = None,
    effect: str = "unknown",
    description: str | None = None,
    idempotency_key: str | None = None,
    call_id: str | None = None,
    arguments: Any = UNSET,
) -> Any:
    """Trace tool executions as ``execute_tool {name}`` spans.

    Forms:

    - ``@tool`` on a sync or async function (name = the function's name);
    - ``@tool(name="refund_api.create", effect="write")``;
    - ``with tool("refund_api.create", effect="write", arguments={...}) as t:
      t.set_result(...)`` (also ``async with``; ``call_id=`` links it to the model's
      tool call explicitly).

    ``effect`` is one of read, write, notify, unknown. The tool's own exceptions are
    re-raised unchanged (the span gets status ERROR and ``error.type``).
    """
    if callable(func_or_name) and not isinstance(func_or_name, str):
        return _decorate(func_or_name, _ToolSpec(name, effect, description, idempotency_key))
    if func_or_name is not None and name is not None:
        raise TypeError("tool(): give the name positionally or as name=, not both")
    spec = _ToolSpec(func_or_name or name, effect, description, idempotency_key)
    return ToolScope(spec, arguments, call_id)
