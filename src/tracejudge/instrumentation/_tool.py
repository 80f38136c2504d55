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
from types import TracebackType
from typing import Any, Final, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._content import ContentStats
from tracejudge.instrumentation._context import (
    AGENT_STATE,
    claim_tool_call_id,
    mark_tool_call_id_claimed,
)
from tracejudge.instrumentation._genai import set_error
from tracejudge.instrumentation._runtime import Runtime, get_runtime

F = TypeVar("F", bound=Callable[..., Any])

EFFECTS: Final = frozenset({"read", "write", "notify", "unknown"})
_OPERATION: Final = semconv.GenAiOperationNameValues.EXECUTE_TOOL
_UNSET: Final = object()


class ToolRun:
    """Handle of a running tool (context-manager form): record arguments and result."""

    __slots__ = ("_arguments", "_result", "span")

    def __init__(self, span: Span, arguments: Any) -> None:
        self.span = span
        self._arguments = arguments
        self._result: Any = _UNSET

    def set_result(self, value: Any) -> None:
        """Record what the tool returned."""
        self._result = value

    def set_arguments(self, value: Any) -> None:
        """Record (or replace) the tool's arguments, e.g. once they are known."""
        self._arguments = value

    @property
    def arguments(self) -> Any:
        """The arguments recorded so far (a sentinel object when none)."""
        return self._arguments

    @property
    def result(self) -> Any:
        """The result recorded so far (a sentinel object when none)."""
        return self._result


class _ToolSpec:
    """Static settings of one tool (validated once)."""

    __slots__ = ("description", "effect", "idempotency_key", "name")

    def __init__(
        self, name: str | None, effect: str, description: str | None, idempotency_key: str | None
    ) -> None:
        if effect not in EFFECTS:
            raise ValueError(f"tool effect must be one of {sorted(EFFECTS)}, got {effect!r}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError("tool name must be a non-empty string")
        self.name = name
        self.effect = effect
        self.description = description
        self.idempotency_key = idempotency_key


def _start(
    rt: Runtime,
    spec: _ToolSpec,
    name: str,
    aliases: tuple[str, ...],
    arguments: Any,
    call_id: str | None,
) -> Span:
    attrs: dict[str, AttributeValue] = {
        semconv.GEN_AI_OPERATION_NAME: _OPERATION,
        semconv.GEN_AI_TOOL_NAME: name,
        semconv.GEN_AI_TOOL_TYPE: "function",
        semconv.TRACEJUDGE_TOOL_EFFECT: spec.effect,
    }
    if spec.description:
        attrs[semconv.GEN_AI_TOOL_DESCRIPTION] = spec.description
    if spec.idempotency_key:
        attrs[semconv.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY] = spec.idempotency_key
    state = AGENT_STATE.get()
    if state is not None:
        attrs[semconv.GEN_AI_AGENT_NAME] = state.name
    if call_id is None:
        call_id = claim_tool_call_id(aliases, arguments)
    else:
        mark_tool_call_id_claimed(call_id)
    if call_id is not None:
        attrs[semconv.GEN_AI_TOOL_CALL_ID] = call_id
    return rt.tracer.start_span(f"{_OPERATION} {name}", kind=SpanKind.INTERNAL, attributes=attrs)


def _finish(
    rt: Runtime, span: Span, arguments: Any, result: Any, exc: BaseException | None
) -> None:
    """Stamp content and status; never raises (guarded), always ends the span."""
    try:
        with rt.guard:
            stats = ContentStats()
            if arguments is not _UNSET and rt.capture_evidence:
                span.set_attribute(
                    semconv.GEN_AI_TOOL_CALL_ARGUMENTS, rt.encode_content(arguments, stats)
                )
            if exc is not None:
                set_error(span, exc)
            elif result is not _UNSET and rt.capture_evidence:
                span.set_attribute(
                    semconv.GEN_AI_TOOL_CALL_RESULT, rt.encode_content(result, stats)
                )
            rt.stamp_content_stats(span, stats)
    finally:
        span.end()


class ToolScope:
    """``tool(...)``'s return value: a decorator factory and a context manager."""

    def __init__(self, spec: _ToolSpec, arguments: Any, call_id: str | None) -> None:
        self._spec = spec
        self._arguments = arguments
        self._call_id = call_id
        self._state: tuple[Runtime, ToolRun, object] | None = None

    def __call__(self, func: F) -> F:
        return _decorate(func, self._spec)

    def __enter__(self) -> ToolRun:
        if self._spec.name is None:
            raise ValueError("the context-manager form needs a name: tool('name', ...)")
        if self._state is not None:
            raise RuntimeError("a tool() scope can be entered only once")
        rt = get_runtime()
        args = self._arguments
        span = _start(
            rt,
            self._spec,
            self._spec.name,
            (self._spec.name,),
            None if args is _UNSET else args,
            self._call_id,
        )
        run = ToolRun(span, args)
        token = otel_context.attach(trace.set_span_in_context(span))
        self._state = (rt, run, token)
        return run

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = self._state
        if state is None:
            return
        rt, run, token = state
        otel_context.detach(token)  # type: ignore[arg-type]
        _finish(rt, run.span, run.arguments, run.result, exc)

    async def __aenter__(self) -> ToolRun:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


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
    aliases = (name,) if fname == name else (name, fname)
    bind = _binder(func)

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Runtime, Span, Any, object]:
        rt = get_runtime()
        arguments: Any = _UNSET
        with rt.guard:
            arguments = bind(args, kwargs)
        span = _start(rt, spec, name, aliases, None if arguments is _UNSET else arguments, None)
        token = otel_context.attach(trace.set_span_in_context(span))
        return rt, span, arguments, token

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                rt, span, arguments, token = begin(args, kwargs)
            except Exception as exc:
                _begin_failed(exc)
                return await func(*args, **kwargs)
            try:
                result = await func(*args, **kwargs)
            except BaseException as exc:
                otel_context.detach(token)  # type: ignore[arg-type]
                _finish(rt, span, arguments, _UNSET, exc)
                raise
            otel_context.detach(token)  # type: ignore[arg-type]
            _finish(rt, span, arguments, result, None)
            return result

        return cast(F, run_async)

    @functools.wraps(func)
    def run_sync(*args: Any, **kwargs: Any) -> Any:
        try:
            rt, span, arguments, token = begin(args, kwargs)
        except Exception as exc:
            _begin_failed(exc)
            return func(*args, **kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)  # type: ignore[arg-type]
            _finish(rt, span, arguments, _UNSET, exc)
            raise
        otel_context.detach(token)  # type: ignore[arg-type]
        _finish(rt, span, arguments, result, None)
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
    arguments: Mapping[str, Any] | Any = _UNSET,
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
    arguments: Any = _UNSET,
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
