"""The client side of MCP: a ``tools/call`` as the agent's tool execution.

``ClientSession.call_tool`` is wrapped. What the SDK (2.x) already records is left to it:
its own CLIENT span per request (``MCP send tools/call {tool}``, with ``mcp.method.name``
and ``jsonrpc.request.id``) and the W3C trace context it injects into ``params._meta``,
which the server continues. What it does not record is what a judge needs — the tool's
arguments and result, and that this request *is* a tool execution of the agent — so
tracejudge opens the GenAI ``execute_tool {tool}`` span around the call (INTERNAL, the
SDK's CLIENT span nests under it), with ``mcp.method.name = tools/call``, the negotiated
``mcp.protocol.version``, the model's tool-call id (claimed from the run's ledger, as
``@tracejudge.tool`` does), ``gen_ai.tool.call.arguments``/``.result`` (captured,
redacted and capped as every tool's are) and, for a ``CallToolResult`` with ``isError``,
``error.type = tool_error`` and status ERROR (the MCP conventions' rule).

The 1.x SDK records no spans and injects no context: there tracejudge injects the W3C
``traceparent`` of its span into ``params._meta`` itself (the ``meta`` argument of
``call_tool``), so servers that continue it (any 2.x server, other SDKs) join the trace.

When an outer instrumentation already traces this tool execution (the current span is
an ``execute_tool`` span: the Agents SDK's MCP tools, ``@tracejudge.tool`` around a call),
no second span is made: the MCP attributes are added to that span, as the MCP
conventions ask ("SHOULD NOT create a separate span").

Never raises into the application: telemetry runs in the runtime's guard and the call
itself is awaited exactly once with the caller's arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final

from opentelemetry import propagate, trace
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._invocation import Failure, ToolInvocation
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get

_OP: Final = sc.GenAiOperationNameValues.EXECUTE_TOOL
_TOOLS_CALL: Final = sc.McpMethodNameValues.TOOLS_CALL
_TOOL_TYPE: Final = "extension"
"""``gen_ai.tool.type``: an MCP tool runs outside the agent, behind a protocol."""
TOOL_ERROR: Final = "tool_error"
"""``error.type`` of a ``CallToolResult`` with ``isError`` (MCP conventions)."""

Call = Callable[..., Coroutine[Any, Any, Any]]
RuntimeOf = Callable[[], Runtime | None]


def outer_tool_span() -> Span | None:
    """The current span when it is a recording ``execute_tool`` span, else None."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    attrs = getattr(span, "attributes", None)
    if isinstance(attrs, Mapping) and attrs.get(sc.GEN_AI_OPERATION_NAME) == _OP:
        return span
    return None


def result_value(result: Any) -> Any:
    """A ``CallToolResult`` as the JSON the server sent (camelCase keys, so ``isError``
    reads as the run builder's failure flag); anything else as it is."""
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", by_alias=True, exclude_none=True)
        except Exception:  # a result the SDK cannot dump: record its text
            return str(result)
    return result


def is_error_result(result: Any) -> bool:
    """Whether a tool result reports failure (``CallToolResult.isError``)."""
    flag = get(result, "is_error")
    if flag is None:
        flag = get(result, "isError")
    return flag is True


def _protocol_version(session: Any) -> str | None:
    version = get(session, "protocol_version")
    return version if isinstance(version, str) and version else None


def _start(rt: Runtime, session: Any, name: str, arguments: Any) -> ToolInvocation | None:
    """The invocation of this call; None when an outer tool span traces it (then that
    span gets the MCP attributes)."""
    mcp_attrs: dict[str, AttributeValue] = {sc.MCP_METHOD_NAME: _TOOLS_CALL}
    version = _protocol_version(session)
    if version is not None:
        mcp_attrs[sc.MCP_PROTOCOL_VERSION] = version
    outer = outer_tool_span()
    if outer is not None:
        outer.set_attributes(mcp_attrs)
        return None
    return ToolInvocation(
        rt,
        name,
        tool_type=_TOOL_TYPE,
        arguments=arguments,
        attributes=mcp_attrs,
    )


def _error_code(exc: BaseException) -> str | None:
    """An MCPError's JSON-RPC error code, as ``error.type``."""
    code = get(get(exc, "error"), "code")
    return str(code) if isinstance(code, int) and not isinstance(code, bool) else None


def with_trace_context(kw: dict[str, Any]) -> dict[str, Any]:
    """``kw`` with the current trace context injected into its ``meta`` (a copy; the
    caller's own ``_meta`` entries kept): what 2.x does itself, done for 1.x."""
    carrier = dict(kw.get("meta") or {})
    propagate.inject(carrier)
    return {**kw, "meta": carrier} if carrier else kw


def wrap_call_tool(original: Call, runtime_of: RuntimeOf, *, inject: bool) -> Call:
    """``ClientSession.call_tool`` traced (see the module docstring); ``inject``: put
    the W3C trace context into ``params._meta`` (the 1.x SDK does not)."""

    async def call_tool(self: Any, name: str, arguments: Any = None, *args: Any, **kw: Any) -> Any:
        rt = runtime_of()
        if rt is None:
            return await original(self, name, arguments, *args, **kw)
        run: ToolInvocation | None = None
        with rt.guard:
            run = _start(rt, self, name, arguments)
        if run is None:
            return await original(self, name, arguments, *args, **kw)
        try:
            if inject:
                with rt.guard:
                    kw = with_trace_context(kw)
            result = await original(self, name, arguments, *args, **kw)
        except BaseException as exc:
            if isinstance(exc, Exception):
                run.fail(exc, error_type=_error_code(exc))
            else:
                run.stop()
            raise
        if is_error_result(result):
            run.fail(Failure(TOOL_ERROR), result=result_value(result))
        else:
            run.stop(result_value(result))
        return result

    call_tool.__doc__ = getattr(original, "__doc__", None)
    call_tool.__name__ = getattr(original, "__name__", "call_tool")
    call_tool.__qualname__ = getattr(original, "__qualname__", "call_tool")
    return call_tool
