"""What every check reads: a run indexed once, and the report a check writes into.

The engine builds one ``RunContext`` per run and hands it to every rule, so per-run work
(indexing tool calls by name, resolving tool kinds, the CEL view) is done once, not once
per rule.
"""

from __future__ import annotations

import bisect
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import orjson

from tracejudge.engine.celview import ViewSpec, run_view
from tracejudge.engine.compile import Path, cel_activation
from tracejudge.model.conversation import turns_of
from tracejudge.model.run import Run, ToolCall, Turn

if TYPE_CHECKING:
    from tracejudge.engine.baseline import BaselineStore
    from tracejudge.engine.cases import CaseSet

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
    absent: bool = False
    """True: about something that never happened or the run as a whole (no step of its own)."""
    undecided: bool = False
    """True: a heuristic could not decide (an ambiguous confirmation or claim); the
    explanation cites the sentence. A warning, a failure under ``Engine(strict=True)``."""


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
        absent: bool = False,
    ) -> None:
        """Record a failure.

        ``soft``: at most a warning, whatever the rule's severity. ``absent``: the finding
        is about something that never happened (a missing call) or the whole run, so it
        has no step of its own and ranks after failures observed at a step.
        """
        self.items.append(Item(code, span_ids, explanation, step, soft, absent=absent))

    def insufficient(
        self, code: str, span_ids: tuple[str, ...], explanation: str, step: int | None = None
    ) -> None:
        """Record that the run lacks the evidence the check needs (never a silent pass)."""
        self.items.append(Item(code, span_ids, explanation, step, True, True, True))

    def undecided(
        self, code: str, span_ids: tuple[str, ...], explanation: str, step: int | None = None
    ) -> None:
        """Record that a heuristic could not decide: never a silent pass, never a confident
        fail. The explanation must cite the sentence that left it undecided."""
        self.items.append(Item(code, span_ids, explanation, step, True, undecided=True))


_ORJSON_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical(value: Any) -> str:
    """A stable text form of JSON-like values (for equality, duplicates and scanning).

    orjson on the hot path (about 8x ``json.dumps``); the stdlib for what orjson refuses
    (integers beyond 64 bits), ``repr`` as the last resort.
    """
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=str, option=_ORJSON_OPTS).decode()
    except (TypeError, orjson.JSONEncodeError):
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            return repr(value)


class TurnIndex:
    """Where each point of the conversation stands: the last user turn and the last
    assistant text before it. Built once per run, for the checks that read turns.

    Positions are indexes into ``run.turns``: position ``k`` means "before turn ``k``"
    (``k == len(turns)``: after the whole conversation).
    """

    __slots__ = ("_steps", "last_said", "last_user", "turns", "users")

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.users = 0
        """How many user turns the run has (0: the conversation shows no user at all)."""
        self.last_user: list[int] = []
        """``last_user[k]``: index of the last user turn before position ``k``, or -1."""
        self.last_said: list[int] = []
        """``last_said[k]``: index of the last assistant turn with text before ``k``, or -1."""
        user = said = -1
        for k, t in enumerate(turns):
            self.last_user.append(user)
            self.last_said.append(said)
            if t.role == "user":
                user = k
                self.users += 1
            elif t.role == "assistant" and t.text:
                said = k
        self.last_user.append(user)
        self.last_said.append(said)
        steps = [t.step_index for t in turns]
        self._steps = steps if all(a <= b for a, b in itertools.pairwise(steps)) else None

    def position_of_step(self, i: int) -> int:
        """The position just before step ``i``: the turns shown or produced by an earlier
        step (a tool call with no ``request_turn`` is placed by its step index)."""
        if self._steps is not None:
            return bisect.bisect_left(self._steps, i)
        return 1 + max((k for k, t in enumerate(self.turns) if t.step_index < i), default=-1)

    def position_of_call(self, i: int, call: ToolCall) -> int:
        """Where the call was asked for: its requesting assistant turn, else its step."""
        k = call.request_turn
        if k is not None and 0 <= k < len(self.turns):
            return k
        return self.position_of_step(i)


class RunContext:
    """A run plus the indexes checks share."""

    __slots__ = (
        "_activation",
        "_texts",
        "_turn_index",
        "_view",
        "baselines",
        "by_name",
        "cases",
        "cel_view",
        "final_index",
        "kinds",
        "memo",
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
        cel_view: ViewSpec | None = None,
        cases: CaseSet | None = None,
    ) -> None:
        self.cel_view = cel_view
        self.cases = cases
        """The cases file the ``case`` check reads (None: the engine was given none)."""
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
        self._texts: dict[int, str] = {}
        self._turn_index: TurnIndex | None = None
        self.memo: dict[str, Any] = {}
        """Per-run values several checks derive the same way (keyed by check module)."""

    def args_text(self, i: int, call: ToolCall) -> str | None:
        """Step ``i``'s arguments as text (canonical JSON), computed once per run."""
        text = self._texts.get(2 * i)
        if text is None and call.arguments is not None:
            v = call.arguments
            text = self._texts[2 * i] = v if isinstance(v, str) else canonical(v)
        return text

    def result_text(self, i: int, call: ToolCall) -> str | None:
        """Step ``i``'s result as text (canonical JSON), computed once per run."""
        text = self._texts.get(2 * i + 1)
        if text is None and call.result is not None:
            v = call.result
            text = self._texts[2 * i + 1] = v if isinstance(v, str) else canonical(v)
        return text

    def turn_index(self) -> TurnIndex:
        """The conversation's positions (last user turn, last assistant text), once per run."""
        if self._turn_index is None:
            self._turn_index = TurnIndex(turns_of(self.run))
        return self._turn_index

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
            self._view = run_view(self.run, self.kinds, self.cel_view)
        return self._view

    def activation(self) -> Any:
        """The CEL activation binding ``run``, built once per run."""
        if self._activation is None:
            self._activation = cel_activation(self.view())
        return self._activation


def ok(call: ToolCall) -> bool:
    """A call counts as successful unless its span or the tool reported an error."""
    return call.status != "error" and call.error_type is None
