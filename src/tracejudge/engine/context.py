"""What every check reads: a run indexed once, and the report a check writes into.

The engine builds one ``RunContext`` per run and hands it to every rule, so per-run work
(indexing tool calls by name, resolving tool kinds, the CEL view) is done once, not once
per rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from tracejudge.engine.compile import Path, cel_activation
from tracejudge.model.run import ModelCall, Run, Step, ToolCall

if TYPE_CHECKING:
    from tracejudge.engine.baseline import BaselineStore

ToolKind: TypeAlias = Literal["lookup", "mutate", "notify", "approval"]
_EFFECT_KIND: dict[str, ToolKind] = {"read": "lookup", "write": "mutate", "notify": "notify"}


@dataclass(slots=True, frozen=True)
class ToolMeta:
    """What the rules file says about one tool."""

    kind: ToolKind
    entities: Path | None = None
    """Where the entities a lookup returns live in its result (e.g. ``orders[*].id``)."""
    idempotency_argument: str | None = None
    category: str | None = None
    """The terminal-action category baselines compare (defaults to the tool name)."""


@dataclass(slots=True, frozen=True)
class Price:
    """USD per one million tokens."""

    input: float
    output: float


@dataclass(slots=True)
class Item:
    """One finding before the engine stamps the rule's id, layer and severity on it."""

    code: str
    span_ids: tuple[str, ...]
    explanation: str
    step_index: int | None
    soft: bool = False
    evidence: bool = False
    """True: the evidence was insufficient (not a failure of the agent)."""


class Report:
    """Where a check writes what it found; the engine turns it into a ``RuleOutcome``."""

    __slots__ = ("items", "metrics", "not_applicable")

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.metrics: dict[str, float] = {}
        self.not_applicable = False

    def fail(
        self,
        code: str,
        span_ids: tuple[str, ...],
        explanation: str,
        step: int | None,
        *,
        soft: bool = False,
    ) -> None:
        """Record a failure (``soft``: at most a warning, whatever the rule's severity)."""
        self.items.append(Item(code, span_ids, explanation, step, soft))

    def insufficient(
        self, code: str, span_ids: tuple[str, ...], explanation: str, step: int | None = None
    ) -> None:
        """Record that the run lacks the evidence the check needs (never a silent pass)."""
        self.items.append(Item(code, span_ids, explanation, step, True, True))


class RunContext:
    """A run plus the indexes checks share."""

    __slots__ = (
        "_activation",
        "_view",
        "baselines",
        "by_name",
        "final_index",
        "kinds",
        "prices",
        "run",
        "tool_index",
        "tools",
    )

    def __init__(
        self,
        run: Run,
        tools: dict[str, ToolMeta],
        prices: dict[str, Price],
        baselines: BaselineStore | None = None,
    ) -> None:
        self.run = run
        self.tools = tools
        self.prices = prices
        self.baselines = baselines
        self.tool_index: list[tuple[int, ToolCall]] = []
        self.by_name: dict[str, list[tuple[int, ToolCall]]] = {}
        self.kinds: dict[int, ToolKind | None] = {}
        for i, step in enumerate(run.steps):
            if isinstance(step, ToolCall):
                self.tool_index.append((i, step))
                self.by_name.setdefault(step.name, []).append((i, step))
                meta = tools.get(step.name)
                self.kinds[i] = meta.kind if meta is not None else _EFFECT_KIND.get(step.effect)
        self.final_index = len(run.steps)
        """Step index given to findings about the final answer: after every step."""
        self._view: dict[str, Any] | None = None
        self._activation: Any = None

    @property
    def root(self) -> tuple[str, ...]:
        """Span ids citing the run as a whole."""
        return (self.run.root_span_id,)

    def final_span(self) -> tuple[str, ...]:
        """The span carrying the final answer (the root when unknown)."""
        sid = self.run.final_answer_span_id or self.run.root_span_id
        return (sid,)

    def view(self) -> dict[str, Any]:
        """The run as plain JSON-like data: what CEL predicates see as ``run``."""
        if self._view is None:
            self._view = run_view(self.run, self.kinds)
        return self._view

    def activation(self) -> Any:
        """The CEL activation binding ``run``, built once per run."""
        if self._activation is None:
            self._activation = cel_activation(self.view())
        return self._activation


def ok(call: ToolCall) -> bool:
    """A call counts as successful unless its span or the tool reported an error."""
    return call.status != "error" and call.error_type is None


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _step_view(i: int, step: Step, kind: str | None) -> dict[str, Any]:
    base: dict[str, Any] = {
        "index": i,
        "span_id": step.span_id,
        "status": step.status,
        "error_type": step.error_type,
        "duration_ms": max(0, step.end_ns - step.start_ns) / 1e6,
    }
    if isinstance(step, ModelCall):
        base.update(
            kind="model",
            name=step.operation,
            model=step.response_model or step.request_model,
            input_tokens=step.input_tokens,
            output_tokens=step.output_tokens,
            ok=step.status != "error",
        )
    else:
        base.update(
            kind="tool",
            name=step.name,
            tool_kind=kind,
            args=_jsonable(step.arguments),
            args_is_json=step.arguments_is_json,
            result=_jsonable(step.result),
            approval_granted=step.approval_granted,
            ok=ok(step),
        )
    return base


def run_view(run: Run, kinds: dict[int, ToolKind | None]) -> dict[str, Any]:
    """The dict view of a run (documented in docs/rules.md, section CEL)."""
    steps = [_step_view(i, s, kinds.get(i)) for i, s in enumerate(run.steps)]
    tools = [s for s in steps if s["kind"] == "tool"]
    in_tok = sum(s["input_tokens"] or 0 for s in steps if s["kind"] == "model")
    out_tok = sum(s["output_tokens"] or 0 for s in steps if s["kind"] == "model")
    return {
        "trace_id": run.trace_id,
        "agent": run.agent_name,
        "case_id": run.case_id,
        "user_id": run.user_id,
        "tenant_id": run.tenant_id,
        "final_answer": run.final_answer,
        "steps": steps,
        "tools": tools,
        "tool_calls": len(tools),
        "model_calls": len(steps) - len(tools),
        "duration_ms": run.duration_ns / 1e6,
        "input_tokens": in_tok,
        "output_tokens": out_tok,
        "attributes": _jsonable(run.root_attributes),
    }
