"""LangChain / LangGraph integration: their runs as GenAI spans, through langchain-core's callbacks.

``instrument()`` installs one callback handler into every LangChain run when the
application imports ``langchain_core``: it registers a configure hook
(``langchain_core.tracers.context.register_configure_hook``, the interface langchain-core
offers for process-wide handlers; LangSmith's tracer is installed the same way) over a
context variable whose default is tracejudge's handler, so every run — in any thread or
task, with or without ``callbacks=`` of its own — gets it. Nothing of LangChain is
patched. What it maps, and why model calls are left to the model client's patch, is in
``_handler``.

langchain-core keeps its configure hooks for the life of the process and has no call to
remove one, so the hook is registered once and ``uninstall()`` disables the handler (it
then asks for no callbacks, and only ends the spans it had started). An application that
sets the variable to None in a context (``HANDLER_VAR.set(None)``) runs untraced there.
"""

from __future__ import annotations

import importlib
from contextvars import ContextVar
from typing import Any, Final

from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.langchain._handler import GenAiCallbacks

__all__ = ["SUPPORTED", "LangChainIntegration", "handler"]

SUPPORTED: Final = SupportedVersions("0.3.0", "2")
"""langchain-core releases tested: 0.3.0 (the oldest claimed; scripts/sdk-matrix.sh)
and 1.8.1, with the langgraph and langchain-openai releases of each."""

_handler: GenAiCallbacks | None = None
HANDLER_VAR: ContextVar[Any] | None = None
"""The context variable of the configure hook (set on first install)."""


def handler() -> Any:
    """The one tracejudge callback handler of this process (a langchain-core
    ``BaseCallbackHandler``), made on first use; raises ImportError when langchain-core
    is not installed."""
    global _handler
    if _handler is None:
        base = importlib.import_module("langchain_core.callbacks").BaseCallbackHandler
        cls = type("TracejudgeCallbackHandler", (GenAiCallbacks, base), {})
        _handler = cls()
    return _handler


class LangChainIntegration:
    """The ``Integration`` of the ``langchain-core`` distribution (module
    ``langchain_core``), which LangChain, LangGraph and their model packages run on."""

    name = "langchain"
    distribution = "langchain-core"
    module = "langchain_core"
    supported = SUPPORTED
    hooks = ("langchain_core.tracers.context.register_configure_hook",)

    def install(self, runtime: Runtime) -> None:
        """Register the hook (once) and enable the handler; AttributeError/ImportError
        when langchain-core no longer offers ``register_configure_hook`` or
        ``BaseCallbackHandler``."""
        global HANDLER_VAR
        register = importlib.import_module("langchain_core.tracers.context").register_configure_hook
        made = handler()
        if HANDLER_VAR is None:
            var: ContextVar[Any] = ContextVar("tracejudge_langchain_handler", default=made)
            register(var, True)
            HANDLER_VAR = var
        made.runtime = runtime

    def uninstall(self) -> None:
        """Disable the handler (langchain-core cannot remove a hook)."""
        if _handler is not None:
            _handler.runtime = None
