"""The server side of MCP: the tool's arguments and result on the server's span.

The SDK (2.x) opens a SERVER span per inbound request itself (its
``OpenTelemetryMiddleware``, first in ``Server.middleware``: ``tools/call {tool}`` with
``mcp.method.name``, ``gen_ai.operation.name = execute_tool``, ``gen_ai.tool.name``,
``jsonrpc.request.id``, ``error.type`` — continuing the client's trace from the
``traceparent`` in ``params._meta``), but leaves out the opt-in
``gen_ai.tool.call.arguments``/``.result``. tracejudge appends one middleware to every
``Server`` made while instrumented, which runs inside the SDK's and adds those two to
the SDK's span — not a second span for the same request. A server whose SDK span was
removed (the application dropped ``OpenTelemetryMiddleware``) gets nothing added:
there is no span to add to, and the application opted out of them.

A ``tools/call`` whose ``_meta`` carries no trace context, and whose server span
therefore starts a trace of its own, gets one warning (the client is not propagating),
once per process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span

from tracejudge import semconv as sc
from tracejudge.instrumentation._invocation import UNSET, ToolInvocation
from tracejudge.instrumentation._patcher import warn_once
from tracejudge.instrumentation.mcp._client import RuntimeOf, result_value

_TOOLS_CALL: Final = sc.McpMethodNameValues.TOOLS_CALL
_TRACEPARENT: Final = "traceparent"
_ARGUMENTS: Final = "arguments"


def _sdk_server_span() -> Span | None:
    """The SDK's span of this ``tools/call`` (the current span), or None."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    attrs = getattr(span, "attributes", None)
    if isinstance(attrs, Mapping) and attrs.get(sc.MCP_METHOD_NAME) == _TOOLS_CALL:
        return span
    return None


def _check_meta(meta: Any, span: Span | None) -> None:
    """Warn (once) when a request carried no trace context and its server span, for
    want of it, starts a trace (the SDK's in-process dispatch carries none, but runs
    the server in the caller's context: no warning then)."""
    if isinstance(meta, Mapping) and meta.get(_TRACEPARENT):
        return
    if span is not None and getattr(span, "parent", None) is not None:
        return
    warn_once(
        "mcp:_meta",
        "an MCP tools/call request carried no trace context in params._meta; the server's "
        "spans start a trace of their own (is the client instrumented?)",
    )


class ToolEvidenceMiddleware:
    """A ``ServerMiddleware`` (``(ctx, call_next) -> result``) adding a ``tools/call``'s
    arguments and result to the SDK's server span; a pass-through for everything else
    and while tracejudge is not instrumenting (``runtime_of()`` None)."""

    def __init__(self, runtime_of: RuntimeOf) -> None:
        self._runtime_of = runtime_of

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        rt = self._runtime_of()
        if rt is None or getattr(ctx, "method", None) != _TOOLS_CALL:
            return await call_next(ctx)
        run: ToolInvocation | None = None
        with rt.guard:
            span = _sdk_server_span()
            _check_meta(getattr(ctx, "meta", None), span)
            if span is not None:
                run = ToolInvocation.adopt(rt, span)
                params = getattr(ctx, "params", None)
                if isinstance(params, Mapping):
                    run.set_arguments(params.get(_ARGUMENTS))
        try:
            result = await call_next(ctx)
        except BaseException:
            if run is not None:
                run.stop()  # the SDK's span records the error itself
            raise
        if run is not None:
            run.stop(UNSET if result is None else result_value(result))
        return result


def wrap_server_init(
    original: Callable[..., None], middleware: ToolEvidenceMiddleware, runtime_of: RuntimeOf
) -> Any:
    """``Server.__init__`` that appends ``middleware`` (once) to the new server's list."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        rt = runtime_of()
        if rt is None:
            return
        with rt.guard:
            chain = getattr(self, "middleware", None)
            if not isinstance(chain, list):  # 1.x has none; a later 2.x may move it
                warn_once(
                    "mcp:middleware",
                    "this mcp version's Server has no middleware list; MCP server spans get "
                    "no tool arguments or results",
                )
                return
            if not any(m is middleware for m in chain):
                chain.append(middleware)

    __init__.__doc__ = getattr(original, "__doc__", None)
    return __init__
