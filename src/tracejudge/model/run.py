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
TurnRole: TypeAlias = Literal["system", "user", "assistant", "tool"]
ToolEffect: TypeAlias = Literal["read", "write", "notify", "unknown"]


NoteCode: TypeAlias = Literal[
    # gaps in the evidence: each becomes an F-EVIDENCE-* warning (tracejudge.engine.evidence)
    "orphan_span",
    "parent_cycle",
    "unfinished_span",
    "unjudged_steps",
    "bad_messages",
    "orphan_tool_result",
    "shadow_without_request",
    "source_problem",
    # where evidence came from, or a repair rules already see: recorded, no finding
    "args_not_json",
    "result_error",
    "unknown_effect",
    "duplicate_span",
    "several_roots",
    "outside_runs",
    "no_call_id",
    "matched_by_name",
    "not_executed",
    "inferred_call",
    "final_answer",
    "merged_conversation",
]
"""What a builder note is about. The engine maps codes to findings with a table, so a
reworded ``text`` never changes a verdict; a new kind of note is a new code here."""


@dataclass(slots=True)
class Note:
    """One thing the run builder noticed about the evidence, as a record.

    Not frozen: the compiled build cannot ``copy`` or ``pickle`` a frozen dataclass (its
    ``__setstate__`` assigns each field). Treat it as read-only.

    ``code`` says what kind of problem or provenance it is, ``span_ids`` the spans it is
    about (the ones in the trace: an orphan, not its missing parent), ``text`` the
    explanation for people. The engine reads ``code`` and ``span_ids``; only people read
    ``text``.
    """

    code: NoteCode
    span_ids: tuple[str, ...]
    text: str


@dataclass(slots=True, frozen=True)
class RequestedToolCall:
    """A tool call the model asked for (a ``tool_call`` part of its output)."""

    call_id: str | None
    name: str
    arguments: Any


@dataclass(slots=True)
class Turn:
    """One message of the conversation, in order, tied to the step that showed it.

    Not frozen, as ``Note``; treat it as read-only (``dataclasses.replace`` makes a
    changed one).

    Each model call re-sends the history, so the builder reconstructs the conversation once
    (no duplicates) from every call's input and output messages. ``step_index`` places the
    turn among ``Run.steps``: for an assistant turn, the model call that produced it; for a
    user, system or tool turn, the first model call whose input shows it (the turn happened
    before that call). A turn known only from the agent span's output (no model call
    produced it) has ``step_index == len(run.steps)``.
    """

    index: int
    role: TurnRole
    text: str | None = None
    """The turn's text parts joined by newlines; None when it has none."""
    tool_calls: tuple[RequestedToolCall, ...] = ()
    """Assistant turns: the tool calls it requested."""
    call_id: str | None = None
    """Tool turns: the id of the call this result answers."""
    tool_name: str | None = None
    """Tool turns: the tool's name when the message says it."""
    result: Any = None
    """Tool turns: the result as the model saw it (parsed JSON when it was JSON)."""
    step_index: int = 0
    span_id: str = ""
    """The span that showed the turn first (a model call, or the agent span)."""
    time_ns: int = 0
    """When the turn is known to have existed: the producing call's end for assistant
    turns, the showing call's start otherwise."""


@dataclass(slots=True)
class ModelCall:
    """One model (inference or embeddings) call.

    Not frozen: one is built per model call on the collector's hot path, and a frozen
    dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
    (4x the cost in the compiled build: docs/performance.md). Treat it as read-only:
    a changed one is made with ``dataclasses.replace``.
    """

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

    Not frozen: ``request_turn`` is filled in when the run's conversation is first read
    (``tracejudge.model.conversation.turns_of``), after the run was built.

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
    request_turn: int | None = None
    """Index in ``Run.turns`` of the assistant turn that requested this call (matched by
    call id, else by name and position); None when no captured message requested it."""


Step: TypeAlias = ModelCall | ToolCall


@dataclass(slots=True)
class Run:
    """One agent run: identity, ordered steps, final answer and the spans behind them.

    Not frozen: its conversation (``turns``, and each tool call's ``request_turn``) is
    built the first time something reads it and kept on the run (``turns_of``), and the
    builder adds the notes about spans outside every run after building the runs.

    ``notes`` lists what was wrong with the evidence (missing parents, non-JSON
    arguments, parent cycles...) and where it came from, as coded records (``Note``), so
    the engine can answer ``insufficient_evidence`` instead of passing silently.
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
    notes: list[Note] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    """The conversation, reconstructed from the model calls' messages (see ``Turn``) the
    first time something reads it: read it with ``tracejudge.model.conversation.turns_of``,
    which builds it once (most rule sets never read it, and the collector's hot path
    should not pay for it)."""
    conversation_id: str | None = None
    """``gen_ai.conversation.id`` (or ``session.id``): runs of several traces that share it
    are merged into one run."""
    conversation_built: bool = False
    """Whether ``turns`` has been built (see ``turns_of``)."""
    request_id: str | None = None
    """``tracejudge.request.id``: the user request the run answers (a shadow run and the
    stable run of the same request share it; see ``tracejudge.engine.shadow``)."""
    shadow: bool = False
    """``tracejudge.run.shadow``: the run is a shadow (never user-facing traffic)."""

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
