"""Instrumentation: ``instrument()``, the patcher seam, ``@tool`` and ``agent()``.

Two seams, one pattern each:

- a model provider is a ``ProviderSpec`` (its methods as ``Target``s, each served by an
  ``Endpoint``: request, response and stream translation) applied by
  ``ProviderPatcher`` — the one sync/async wrapper and the one stream observer;
- an agent framework is an ``Integration`` (what it patches or registers, the versions
  it supports, install/uninstall), added with ``register_integration``.

Both reach ``instrument()`` as a ``Patcher`` (the Protocol; ``register_patcher`` for
anything else). Authors also use ``MethodPatches`` (exact, idempotent method
replacement), ``Runtime`` (tracer, metrics, content policy, ``guard``),
``ModelCallTelemetry`` (one model call's span and metrics), the message-part helpers,
``should_skip_model_span`` (no duplicate spans) and ``PendingToolCall`` (requested tool
calls, for the tool-call-id join).
"""

from __future__ import annotations

from tracejudge.instrumentation._agent import AgentRun, AgentScope, agent
from tracejudge.instrumentation._content import CaptureMode, ContentStats, Redactor
from tracejudge.instrumentation._context import (
    PendingToolCall,
    ToolCallIdScope,
    should_skip_model_span,
    tool_call_id,
)
from tracejudge.instrumentation._genai import (
    ModelCallTelemetry,
    error_type_of,
    message,
    set_error,
    text_part,
    tool_call_part,
    tool_call_response_part,
)
from tracejudge.instrumentation._integration import Integration, SupportedVersions
from tracejudge.instrumentation._patcher import (
    MethodPatches,
    Patcher,
    register_integration,
    register_patcher,
    sdk_importable,
    unregister_patcher,
    wrapped_by_other_instrumentor,
)
from tracejudge.instrumentation._provider import Endpoint, ProviderPatcher, ProviderSpec, Target
from tracejudge.instrumentation._route import RouteKeyProcessor, RouteKeyScope, route_key
from tracejudge.instrumentation._runtime import Runtime, get_runtime
from tracejudge.instrumentation._setup import (
    active_patchers,
    instrument,
    pending_sdks,
    uninstrument,
)
from tracejudge.instrumentation._tool import ToolRun, ToolScope, tool

__all__ = [
    "AgentRun",
    "AgentScope",
    "CaptureMode",
    "ContentStats",
    "Endpoint",
    "Integration",
    "MethodPatches",
    "ModelCallTelemetry",
    "Patcher",
    "PendingToolCall",
    "ProviderPatcher",
    "ProviderSpec",
    "Redactor",
    "RouteKeyProcessor",
    "RouteKeyScope",
    "Runtime",
    "SupportedVersions",
    "Target",
    "ToolCallIdScope",
    "ToolRun",
    "ToolScope",
    "active_patchers",
    "agent",
    "error_type_of",
    "get_runtime",
    "instrument",
    "message",
    "pending_sdks",
    "register_integration",
    "register_patcher",
    "route_key",
    "sdk_importable",
    "set_error",
    "should_skip_model_span",
    "text_part",
    "tool",
    "tool_call_id",
    "tool_call_part",
    "tool_call_response_part",
    "uninstrument",
    "unregister_patcher",
    "wrapped_by_other_instrumentor",
]
