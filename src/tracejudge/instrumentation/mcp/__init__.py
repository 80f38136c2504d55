"""MCP integration (the ``mcp`` Python SDK): tool calls over MCP as tool executions.

``instrument()`` installs it when the application imports ``mcp``. Two patches, both
exact and undone by ``uninstrument()``:

- ``mcp.client.session.ClientSession.call_tool``: the GenAI ``execute_tool {tool}`` span
  with arguments, result and MCP attributes around each call (``_client``);
- ``mcp.server.lowlevel.server.Server.__init__``: each new server gets one middleware
  that puts a ``tools/call``'s arguments and result on the SDK's own server span
  (``_server``).

Trace context: the SDK (2.x) injects the W3C ``traceparent`` into ``params._meta`` of every
request it sends and continues it on the receiving side, so a server's spans join the
agent's trace without tracejudge; tracejudge's client span is current while the SDK
sends, so the server's span is its descendant. The run builder counts a tool execution
seen from both sides once (the client's span; the server's, nested below it, is the same
execution).

Versions: tested on mcp 2.3.0 and 1.30.0. The 1.x SDK records no spans and propagates no
context: there tracejudge's client span is made and its ``traceparent`` injected into
``params._meta`` (``_client``), but a 1.x *server* records nothing of its own and gets no
span from tracejudge (its ``Server`` has no middleware to add one through).
"""

from __future__ import annotations

import importlib
from typing import Final

from tracejudge.instrumentation._integration import SupportedVersions, installed_version
from tracejudge.instrumentation._patcher import MethodPatches
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.mcp._client import wrap_call_tool
from tracejudge.instrumentation.mcp._server import ToolEvidenceMiddleware, wrap_server_init

__all__ = ["SUPPORTED", "MCPIntegration"]

SUPPORTED: Final = SupportedVersions("1.30", "3")
"""Tested on 2.3.0 (tests/frameworks/mcp/) and 1.30.0 (the oldest-SDK env of
scripts/sdk-matrix.sh, where openai-agents 0.2.7 brings it; client side only)."""

_runtime: Runtime | None = None
"""The runtime of the installed integration (None: not instrumenting). Module-level, so
servers made under an earlier ``instrument()`` keep their evidence after a new one."""


def _current() -> Runtime | None:
    return _runtime


_MIDDLEWARE: Final = ToolEvidenceMiddleware(_current)
"""The one middleware of this process (appended to each server at most once)."""


def _major(version: str | None) -> int | None:
    head = (version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


class MCPIntegration:
    """The ``Integration`` of the ``mcp`` distribution (module ``mcp``)."""

    name = "mcp"
    distribution = "mcp"
    module = "mcp"
    supported = SUPPORTED
    hooks = (
        "mcp.client.session.ClientSession.call_tool",
        "mcp.server.lowlevel.server.Server.__init__",
    )

    def __init__(self) -> None:
        self._patches = MethodPatches()

    def install(self, runtime: Runtime) -> None:
        """Wrap the two hooks; AttributeError/ImportError when the SDK moved them."""
        session = importlib.import_module("mcp.client.session").ClientSession
        server = importlib.import_module("mcp.server.lowlevel.server").Server
        global _runtime
        _runtime = runtime
        inject = _major(installed_version(self.distribution)) == 1
        self._patches.patch_method(
            session,
            "call_tool",
            lambda original: wrap_call_tool(original, _current, inject=inject),
        )
        if inject:  # 1.x: no server spans to add the evidence to (see the module doc)
            return
        self._patches.patch_method(
            server, "__init__", lambda original: wrap_server_init(original, _MIDDLEWARE, _current)
        )

    def uninstall(self) -> None:
        """Restore both methods; servers made meanwhile keep a middleware that is now a
        pass-through (it reads no runtime)."""
        global _runtime
        _runtime = None
        self._patches.restore()
