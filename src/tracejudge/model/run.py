"""The run model: what an agent did, in order, with the evidence for it.

A ``Run`` is built from the spans of one trace (one run per root ``invoke_agent`` span, or
one for the whole trace when there is none). Rules read only this model, never raw spans,
so every instrumentation flavour (GenAI conventions, their older event form, OpenInference,
OpenLLMetry) is judged by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from tracejudge.model.spans import AttrValue, SpanRecord

StepStatus: TypeAlias = Literal["ok", "error", "unset"]
ToolEffect: TypeAlias = Literal["read", "write", "notify", "unknown"]


@dataclass(slots=True, frozen=True)
class RequestedToolCall:
    """A tool call the model asked for (a ``tool_call`` part of its output)."""

    call_id: str | None
    name: str
    arguments: Any


@dataclass(slots=True)
class ModelCall:
    """One model (inference or embeddings) call."""

    span_id: str
    operation: str
    provider: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    finish_reasons: tuple[str, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_messages: list[dict[str, Any]] | None = None
    output_messages: list[dict[str, Any]] | None = None
    requested_tool_calls: list[RequestedToolCall] = field(default_factory=list)
    status: StepStatus = "unset"
    error_type: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    kind: Literal["model"] = "model"


@dataclass(slots=True)
class ToolCall:
    """One tool execution, observed (an ``execute_tool`` span) or inferred.

    An inferred call has no span of its own: the model asked for it and a later model
    request carried its result as a ``tool`` message. ``span_id`` then names the model
    call whose input showed the result, and ``inferred`` is True.
    ``arguments``/``result`` are parsed JSON when the text was JSON, else the raw text
    (``arguments_is_json`` tells which).
    """

    span_id: str
    name: str
    call_id: str | None = None
    arguments: Any = None
    arguments_is_json: bool = True
    result: Any = None
    status: StepStatus = "unset"
    error_type: str | None = None
    effect: ToolEffect = "unknown"
    idempotency_key: str | None = None
    approval_granted: bool | None = None
    start_ns: int = 0
    end_ns: int = 0
    inferred: bool = False
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    kind: Literal["tool"] = "tool"


Step: TypeAlias = ModelCall | ToolCall


@dataclass(slots=True)
class Run:
    """One agent run: identity, ordered steps, final answer and the spans behind them.

    ``notes`` lists what was wrong with the evidence (missing attributes, non-JSON
    arguments, parent cycles...) so rules can answer ``insufficient_evidence`` instead
    of passing silently.
    """

    trace_id: str
    root_span_id: str
    agent_name: str | None = None
    agent_id: str | None = None
    agent_version: str | None = None
    run_id: str | None = None
    case_id: str | None = None
    experiment_id: str | None = None
    variant_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    steps: list[Step] = field(default_factory=list)
    final_answer: str | None = None
    final_answer_span_id: str | None = None
    final_answer_step_index: int | None = None
    """Index in ``steps`` of the model call that produced the answer's text (the last model
    call with text output), also when the answer itself is read from the agent span; it
    places the claim in time for causal ordering. None when no model call produced text."""
    start_ns: int = 0
    end_ns: int = 0
    root_attributes: dict[str, AttrValue] = field(default_factory=dict)
    spans: list[SpanRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool executions, in order."""
        return [s for s in self.steps if isinstance(s, ToolCall)]

    @property
    def model_calls(self) -> list[ModelCall]:
        """The model calls, in order."""
        return [s for s in self.steps if isinstance(s, ModelCall)]

    @property
    def duration_ns(self) -> int:
        """Wall time of the run."""
        return max(0, self.end_ns - self.start_ns)
