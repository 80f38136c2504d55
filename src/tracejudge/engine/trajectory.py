"""A run's trajectory as baselines and shadow runs compare it, and the one diff they share.

Why one module: a baseline (a reviewed run of a case, kept as JSON) and a shadow run's
stable partner (a live run of the same request) are the same comparison: align the run's
successful tool calls with the other's, in order, by tool name; report calls missing from
the run, calls the other did not make, drifted arguments and another terminal action. The
``baseline`` check (``engine.checks.baseline``) and shadow pairing (``engine.shadow``) both
call ``diff_trajectory`` and only name the differences with their own codes.

A ``Trajectory`` is small (the successful calls, their kinds, the terminal action), so the
collector can keep one per tagged run while it waits for the run's partner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from tracejudge.engine.baseline import terminal_action
from tracejudge.engine.checks.base import short
from tracejudge.engine.context import RunContext, canonical, ok
from tracejudge.model.run import ToolCall

ArgRule: TypeAlias = str | float
"""Per argument: ``"ignore"`` or a relative tolerance for numbers."""
DivergenceKind: TypeAlias = Literal[
    "missing_call", "unexpected_call", "arg_drift", "terminal_action"
]
_MEMO = "tracejudge.engine.trajectory"
SOFT_KINDS: frozenset[str] = frozenset({"unexpected_call", "arg_drift"})
"""Differences that are often harmless variation: warnings, whatever the rule's severity."""


@dataclass(slots=True, frozen=True)
class Divergence:
    """One difference between a run and what it is compared with."""

    kind: DivergenceKind
    span_ids: tuple[str, ...]
    explanation: str
    step_index: int | None
    absent: bool = False
    """About a call that never happened (it has no span of its own)."""

    @property
    def soft(self) -> bool:
        """True for an extra call or drifted arguments (see ``SOFT_KINDS``)."""
        return self.kind in SOFT_KINDS


class Trajectory:
    """A run's successful tool calls (with their step indexes and kinds) and its terminal
    action: what ``diff_trajectory`` reads of the run."""

    __slots__ = ("calls", "final_index", "kinds", "root_span_id", "terminal_action")

    def __init__(
        self,
        root_span_id: str,
        calls: list[tuple[int, ToolCall]],
        kinds: list[str | None],
        terminal_action: str,
        final_index: int,
    ) -> None:
        self.root_span_id = root_span_id
        self.calls = calls
        self.kinds = kinds
        self.terminal_action = terminal_action
        self.final_index = final_index

    def expected_calls(self) -> list[dict[str, Any]]:
        """The calls in a baseline file's form, for comparing another run with this one."""
        return [{"tool": c.name, "arguments": c.arguments} for _, c in self.calls]


def trajectory_of(ctx: RunContext) -> Trajectory:
    """The trajectory of ``ctx.run`` (its successful calls, kinds from the rules file),
    built once per run (the baseline check and shadow pairing may both want it)."""
    memo = ctx.memo.get(_MEMO)
    if isinstance(memo, Trajectory):
        return memo
    calls = [(i, c) for i, c in ctx.tool_index if ok(c)]
    kinds: list[str | None] = [ctx.kinds[i] for i, _ in calls]
    got = terminal_action([(c, k) for (_, c), k in zip(calls, kinds, strict=True)], ctx.tools)
    out = Trajectory(ctx.run.root_span_id, calls, kinds, got, ctx.final_index)
    ctx.memo[_MEMO] = out
    return out


def diff_trajectory(
    run: Trajectory,
    expected: Sequence[Any],
    want_terminal: str | None,
    arguments: Mapping[str, Mapping[str, ArgRule]],
    other: str,
) -> list[Divergence]:
    """The differences between ``run`` and the ``expected`` calls (dicts with ``tool`` and
    ``arguments``) and terminal action; ``other`` names what it is compared with in the
    explanations (``baseline``, ``stable run``). Missing calls and the terminal action are
    hard differences; extra calls and argument drift soft (``Divergence.soft``)."""
    out: list[Divergence] = []
    root = (run.root_span_id,)
    actual = run.calls
    cursor = 0
    matched: set[int] = set()
    n = len(actual)
    for e in expected:
        if not isinstance(e, dict):
            continue
        name = e.get("tool")
        pos = cursor
        while pos < n and actual[pos][1].name != name:
            pos += 1
        if pos == n:
            at = actual[cursor][0] if cursor < n else run.final_index
            msg = f"{other} call {name} is missing from the run"
            out.append(Divergence("missing_call", root, msg, at, absent=True))
            continue
        matched.add(pos)
        cursor = pos + 1
        i, call = actual[pos]
        _drift(out, i, call, e.get("arguments"), arguments.get(call.name, {}), other)
    for p, (i, call) in enumerate(actual):
        if p not in matched:
            msg = f"{call.name} is not in the {other}"
            out.append(Divergence("unexpected_call", (call.span_id,), msg, i))
    got = run.terminal_action
    if want_terminal is not None and got != want_terminal:
        pairs = zip(reversed(actual), reversed(run.kinds), strict=True)
        last = next(((i, c) for (i, c), k in pairs if k == "mutate"), None)
        sid, at = ((last[1].span_id,), last[0]) if last else (root, run.final_index)
        msg = f"terminal action {got!r}, {other} {want_terminal!r}"
        out.append(Divergence("terminal_action", sid, msg, at, absent=last is None))
    return out


def _drift(
    out: list[Divergence],
    i: int,
    call: ToolCall,
    expected: Any,
    rules: Mapping[str, ArgRule],
    other: str,
) -> None:
    actual = call.arguments
    if actual == expected:
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            rule = rules.get(key)
            if rule == "ignore":
                continue
            a, b = actual.get(key), expected.get(key)
            if _same(a, b, rule):
                continue
            msg = f"{call.name}.{key}={short(a, 40)}, {other} {short(b, 40)}"
            out.append(Divergence("arg_drift", (call.span_id,), msg, i))
    elif canonical(actual) != canonical(expected):
        msg = f"{call.name} arguments {short(actual, 40)}, {other} {short(expected, 40)}"
        out.append(Divergence("arg_drift", (call.span_id,), msg, i))


def _same(a: Any, b: Any, rule: ArgRule | None) -> bool:
    num = (int, float)
    if isinstance(rule, float) and isinstance(a, num) and isinstance(b, num):
        if isinstance(a, bool) or isinstance(b, bool):
            return a == b
        return abs(a - b) <= rule * abs(b)
    return bool(a == b) or canonical(a) == canonical(b)
