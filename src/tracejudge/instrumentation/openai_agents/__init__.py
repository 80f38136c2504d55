"""OpenAI Agents SDK integration: its traces as GenAI spans, through its own interface.

``instrument()`` registers one tracing processor with the SDK
(``agents.add_trace_processor``, the public interface the SDK offers for this; nothing of
the SDK is patched) when the application imports ``agents``. What it maps, and why the
model calls are left to the OpenAI client patch, is in ``_processor``.

The SDK keeps its processors for the life of the process and has no call to remove one,
so the processor is registered once and ``uninstall()`` disables it (it then starts no
span and only ends those it had started). An application that replaces the SDK's
processors afterwards (``agents.set_trace_processors([...])``) drops ours with them:
call ``instrument()`` again after that (it registers the processor again when it is no
longer among the SDK's), or include ``processor()`` in the list.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.openai_agents._processor import GenAiProcessor

__all__ = ["SUPPORTED", "OpenAIAgentsIntegration", "processor"]

SUPPORTED: Final = SupportedVersions("0.2.7", "0.25")
"""Tested on 0.2.7 (the oldest claimed; scripts/sdk-matrix.sh) and 0.24.0."""

_processor: GenAiProcessor | None = None


def processor() -> Any:
    """The one tracejudge processor of this process (an SDK ``TracingProcessor``), made
    on first use; raises ImportError when the SDK is not installed."""
    global _processor
    if _processor is None:
        base = importlib.import_module("agents.tracing").TracingProcessor
        cls = type("TracejudgeProcessor", (GenAiProcessor, base), {})
        _processor = cls()
    return _processor


def _registered(candidate: object) -> bool | None:
    """Whether the SDK still holds ``candidate`` (None: the SDK's internals do not say)."""
    try:
        provider = importlib.import_module("agents.tracing").get_trace_provider()
        held = provider._multi_processor._processors
    except Exception:  # internals moved: assume it is (registering twice doubles spans)
        return None
    return any(p is candidate for p in held)


class OpenAIAgentsIntegration:
    """The ``Integration`` of the ``openai-agents`` distribution (module ``agents``)."""

    name = "openai-agents"
    distribution = "openai-agents"
    module = "agents"
    supported = SUPPORTED
    hooks = ("agents.add_trace_processor",)

    def __init__(self) -> None:
        self._added = False

    def install(self, runtime: Runtime) -> None:
        """Register (once) and enable the processor; AttributeError/ImportError when the
        SDK no longer offers ``add_trace_processor``/``TracingProcessor``."""
        agents = importlib.import_module("agents")
        add = agents.add_trace_processor
        made = processor()
        if _registered(made) is False or not getattr(made, "_tracejudge_added", False):
            add(made)
            made._tracejudge_added = True
        made.runtime = runtime

    def uninstall(self) -> None:
        """Disable the processor (the SDK cannot remove it)."""
        if _processor is not None:
            _processor.runtime = None
