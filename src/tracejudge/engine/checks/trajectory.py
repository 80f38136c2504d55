"""Trajectory checks: was the path competent (order, entities, references, loops, retries)?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.engine.checks.base import (
    ATTEMPTS,
    Check,
    CheckSpec,
    check_params,
    names,
    ref,
    short,
    successful_only,
)
from tracejudge.engine.compile import CelExpr, Compiler, Regex, cel_activation
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok
from tracejudge.model.run import ToolCall

DEFAULT_ERROR_REPORT = (
    r"(?i)\b(sorry|unable|could not|couldn't|cannot|can't|failed|error|problem|unavailable)\b"
)


@dataclass(slots=True, frozen=True)
class _Step:
    kind: str | None
    tool: str | None

    def matches(self, call: ToolCall, kind: str | None) -> bool:
        return (self.tool is None or call.name == self.tool) and (
            self.kind is None or kind == self.kind
        )

    def label(self) -> str:
        return self.tool or f"a {self.kind} step"


class StepPattern:
    """Ordered step kinds (lookup, mutate, notify...) must occur in order."""

    def __init__(
        self, steps: list[_Step], mutation_requires_lookup: bool, successful_only: bool = False
    ) -> None:
        self.steps = steps
        self.mutation_requires_lookup = mutation_requires_lookup
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One pass: advance through the pattern; note mutations before any lookup.

        Where the pattern stalls, the step it waited for either ran in its turn and failed
        (``F-ACTION-MISSING_STEP`` citing the failed attempt), ran only out of turn
        (``F-ACTION-ORDER`` citing it), or never ran (``F-ACTION-MISSING_STEP``, root).
        """
        pos = 0
        seen_lookup = False
        first_match: dict[int, tuple[int, ToolCall]] = {}
        failed_in_turn: dict[int, tuple[int, ToolCall]] = {}
        for i, call in ctx.tool_index:
            kind = ctx.kinds[i]
            for p, step in enumerate(self.steps):
                if p not in first_match and step.matches(call, kind):
                    first_match[p] = (i, call)
            if pos < len(self.steps) and self.steps[pos].matches(call, kind):
                if ok(call):
                    pos += 1
                elif pos not in failed_in_turn:
                    failed_in_turn[pos] = (i, call)
            if (
                kind == "mutate"
                and self.mutation_requires_lookup
                and not seen_lookup
                and (ok(call) or not self.successful_only)
            ):
                report.fail(
                    "F-ACTION-ORDER",
                    (call.span_id,),
                    f"{call.name} changed state before any successful lookup",
                    i,
                )
            if kind == "lookup" and ok(call):
                seen_lookup = True
        if pos >= len(self.steps):
            return
        want = self.steps[pos]
        pattern = [s.label() for s in self.steps]
        if pos in failed_in_turn:
            i, call = failed_in_turn[pos]
            report.fail(
                "F-ACTION-MISSING_STEP",
                (call.span_id,),
                f"{want.label()} ran in order (step {i}) but failed "
                f"({call.error_type or 'error'}) and never succeeded (pattern {pattern})",
                i,
            )
        elif pos in first_match:
            i, call = first_match[pos]
            failed = "" if ok(call) else " (and failed)"
            report.fail(
                "F-ACTION-ORDER",
                (call.span_id,),
                f"{want.label()} ran (step {i}){failed} but not in the required order {pattern}",
                i,
            )
        else:
            report.fail(
                "F-ACTION-MISSING_STEP",
                ctx.root,
                f"no successful {want.label()} (pattern {pattern})",
                ctx.final_index,
                absent=True,
            )


class ToolsPresence:
    """``required_steps`` (each tool must run) or ``forbidden_steps`` (none may run)."""

    def __init__(self, tools: frozenset[str], required: bool, require_success: bool) -> None:
        self.tools = tools
        self.required = required
        self.require_success = require_success
        """Required: a failed call does not count. Forbidden: only a successful call is
        a violation (``attempts: successful``)."""

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Required: look each tool up in the index. Forbidden: flag every call of one."""
        if self.required:
            for name in sorted(self.tools):
                calls = ctx.by_name.get(name, [])
                if not any(ok(c) or not self.require_success for _, c in calls):
                    what = "no successful call" if calls else "no call"
                    report.fail(
                        "F-ACTION-MISSING_STEP",
                        ctx.root,
                        f"{what} of {name}",
                        ctx.final_index,
                        absent=True,
                    )
            return
        for i, call in ctx.tool_index:
            if call.name in self.tools and (ok(call) or not self.require_success):
                report.fail(
                    "F-ACTION-FORBIDDEN_STEP", (call.span_id,), f"forbidden step {call.name}", i
                )


class NoDuplicateSideEffect:
    """The same write (tool + arguments) twice without an idempotency key."""

    def __init__(self, tools: frozenset[str], successful_only: bool = True) -> None:
        self.tools = tools
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One pass keyed by tool name and canonical arguments; failed writes don't count
        unless ``attempts: all`` (a write that timed out may still have happened)."""
        seen: dict[str, int] = {}
        for i, call in ctx.tool_index:
            if self.tools:
                if call.name not in self.tools:
                    continue
            elif ctx.kinds[i] != "mutate":
                continue
            if (self.successful_only and not ok(call)) or _idempotency_key(ctx, call) is not None:
                continue
            key = f"{call.name}\0{ctx.args_text(i, call)}"
            if key in seen:
                report.fail(
                    "F-ACTION-DUPLICATE_SIDE_EFFECT",
                    (call.span_id,),
                    f"{call.name} repeated with the same arguments as step {seen[key]} "
                    "and no idempotency key",
                    i,
                )
            else:
                seen[key] = i


def _idempotency_key(ctx: RunContext, call: ToolCall) -> Any:
    if call.idempotency_key:
        return call.idempotency_key
    meta = ctx.tools.get(call.name)
    if meta and meta.idempotency_argument and isinstance(call.arguments, dict):
        return call.arguments.get(meta.idempotency_argument) or None
    return None


class NoLoop:
    """The same tool with the same arguments ``max_repeats`` times."""

    def __init__(self, max_repeats: int) -> None:
        self.max_repeats = max_repeats

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Count calls per (tool, arguments); report each looping call once."""
        counts: dict[str, int] = {}
        for i, call in ctx.tool_index:
            key = f"{call.name}\0{ctx.args_text(i, call)}"
            n = counts.get(key, 0) + 1
            counts[key] = n
            if n == self.max_repeats:
                report.fail(
                    "F-ACTION-LOOP",
                    (call.span_id,),
                    f"{call.name} called {n} times with the same arguments",
                    i,
                )


class Recovery:
    """A failed call must be followed by a retry of the tool or an answer reporting the error."""

    def __init__(self, tools: frozenset[str], error_report: Regex) -> None:
        self.tools = tools
        self.error_report = error_report

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Walk backwards once, remembering which tools were called later."""
        later: set[str] = set()
        unrecovered: list[tuple[int, ToolCall]] = []
        for i, call in reversed(ctx.tool_index):
            relevant = not self.tools or call.name in self.tools
            if relevant and not ok(call) and call.name not in later:
                unrecovered.append((i, call))
            later.add(call.name)
        if not unrecovered:
            return
        answer = ctx.run.final_answer
        if answer is None:
            i, call = unrecovered[-1]
            report.insufficient(
                "F-EVIDENCE-NO_FINAL_ANSWER",
                (call.span_id,),
                f"{call.name} failed and was not retried; no final answer to show it was reported",
                i,
            )
            return
        if self.error_report.test(answer):
            return
        for i, call in reversed(unrecovered):
            report.fail(
                "F-ACTION-NO_RECOVERY",
                (call.span_id,),
                f"{call.name} failed ({call.error_type or 'error'}); no retry and the answer "
                "does not report it",
                i,
            )


ARG_MODES = ("exact", "ignore", "subset")


def _eq(a: Any, b: Any) -> bool:
    """JSON equality; Python's deep ``==`` first (cheap), canonical text as the fallback."""
    return bool(a == b) or canonical(a) == canonical(b)


class Reference:
    """agentevals-style reference trajectory match, with per-run accuracy metrics."""

    def __init__(
        self,
        mode: str,
        calls: list[tuple[str, Any]],
        args_mode: str,
        overrides: dict[str, str | CelExpr],
        successful_only: bool = False,
    ) -> None:
        self.successful_only = successful_only
        self.mode = mode
        self.calls = calls
        self.args_mode = args_mode
        self.overrides = overrides

    def _args_ok(self, name: str, actual: Any, expected: Any) -> bool:
        mode = self.overrides.get(name, self.args_mode)
        if isinstance(mode, CelExpr):
            # predicates see ``value`` only (binding the whole run per call would be costly)
            value, err = mode.evaluate(
                cel_activation(None, {"actual": actual, "expected": expected})
            )
            return err is None and value is True
        if mode == "ignore" or expected is None:
            return True
        if mode == "subset" and isinstance(expected, dict) and isinstance(actual, dict):
            return all(_eq(actual.get(k), v) for k, v in expected.items())
        return _eq(actual, expected)

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Match calls, then judge by mode; metrics are written even when the check passes."""
        actual = ctx.tool_index
        if self.successful_only:
            actual = [(i, c) for i, c in actual if ok(c)]
        used: set[int] = set()
        pairs: list[tuple[int, int]] = []  # (expected index, actual position)
        name_hits = 0
        name_used: set[int] = set()
        for e, (name, args) in enumerate(self.calls):
            for pos, (_, call) in enumerate(actual):
                if pos not in name_used and call.name == name:
                    name_used.add(pos)
                    name_hits += 1
                    break
            strict_pos = e if self.mode == "strict" else None
            for pos, (_, call) in enumerate(actual):
                if strict_pos is not None and pos != strict_pos:
                    continue
                if pos in used or call.name != name:
                    continue
                if self._args_ok(name, call.arguments, args):
                    used.add(pos)
                    pairs.append((e, pos))
                    break
        n_exp = len(self.calls)
        report.metrics["tool_selection_accuracy"] = name_hits / n_exp
        report.metrics["argument_correctness"] = len(pairs) / name_hits if name_hits else 0.0
        report.metrics["excess_step_ratio"] = max(0, len(actual) - n_exp) / n_exp
        matched = {e for e, _ in pairs}
        missing = [e for e in range(n_exp) if e not in matched]
        extra = [pos for pos in range(len(actual)) if pos not in used]
        need_all = self.mode in ("strict", "unordered", "superset")
        no_extra = self.mode in ("strict", "unordered", "subset")
        if no_extra:
            for pos in extra:
                i, call = actual[pos]
                report.fail(
                    "F-ACTION-REFERENCE_MISMATCH",
                    (call.span_id,),
                    f"{call.name} at step {i} does not match the reference ({self.mode})",
                    i,
                )
        if need_all:
            for e in missing:
                name, args = self.calls[e]
                report.fail(
                    "F-ACTION-REFERENCE_MISMATCH",
                    ctx.root,
                    f"reference call #{e} {name}({short(args, 40)}) has no match ({self.mode})",
                    ctx.final_index,
                    absent=True,
                )


def build_step_pattern(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``step_pattern``."""
    steps = [_Step(s.get("kind"), s.get("tool")) for s in p["steps"]]
    return StepPattern(steps, bool(p.get("mutation_requires_lookup", True)), successful_only(p))


def build_required(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``required_steps``."""
    return ToolsPresence(names(p["tools"]), True, bool(p.get("require_success", True)))


def build_forbidden(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``forbidden_steps``."""
    return ToolsPresence(names(p["tools"]), False, successful_only(p))


def build_reference(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``reference``."""
    overrides: dict[str, str | CelExpr] = {}
    for name, mode in (p.get("overrides") or {}).items():
        if isinstance(mode, dict):
            expr = c.cel(f"{path}.overrides.{name}.predicate", mode["predicate"])
            if expr is not None:
                overrides[name] = expr
        else:
            overrides[name] = mode
    calls = [(e["tool"], e.get("args")) for e in p["calls"]]
    return Reference(
        p.get("mode", "strict"),
        calls,
        p.get("args_mode", "exact"),
        overrides,
        successful_only(p),
    )


def build_no_dup(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``no_duplicate_side_effect``."""
    return NoDuplicateSideEffect(names(p.get("tools")), successful_only(p, "successful"))


def build_no_loop(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``no_loop``."""
    return NoLoop(int(p.get("max_repeats", 3)))


def build_recovery(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``recovery``."""
    rx = c.regex(f"{path}.error_report", p.get("error_report", DEFAULT_ERROR_REPORT))
    return None if rx is None else Recovery(names(p.get("tools")), rx)


_KINDS = {"enum": ["lookup", "mutate", "notify", "approval"]}
_TOOLS_LIST = check_params(
    {"tools": ref("names"), "require_success": {"type": "boolean"}}, ("tools",)
)

SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="step_pattern",
        doc="Steps (by kind or tool) must succeed in the given order.",
        params=check_params(
            {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 100,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "minProperties": 1,
                        "properties": {"kind": _KINDS, "tool": ref("name")},
                    },
                },
                "mutation_requires_lookup": {"type": "boolean"},
                "attempts": ATTEMPTS,
            },
            ("steps",),
        ),
        factory=build_step_pattern,
        codes=("F-ACTION-ORDER", "F-ACTION-MISSING_STEP"),
        tool_fields=("steps[].tool",),
    ),
    CheckSpec(
        name="required_steps",
        doc="Each listed tool must run (successfully, by default).",
        params=_TOOLS_LIST,
        factory=build_required,
        codes=("F-ACTION-MISSING_STEP",),
        tool_fields=("tools[]",),
    ),
    CheckSpec(
        name="forbidden_steps",
        doc="None of the listed tools may run.",
        params=check_params({"tools": ref("names"), "attempts": ATTEMPTS}, ("tools",)),
        factory=build_forbidden,
        codes=("F-ACTION-FORBIDDEN_STEP",),
        forbids_tools=("tools[]",),
    ),
    CheckSpec(
        name="reference",
        doc="The tool calls must match a reference trajectory in the chosen mode.",
        params=check_params(
            {
                "mode": {"enum": ["strict", "unordered", "subset", "superset"]},
                "args_mode": ref("argMode"),
                "overrides": {
                    "type": "object",
                    "maxProperties": 200,
                    "additionalProperties": {
                        "oneOf": [
                            ref("argMode"),
                            {
                                "type": "object",
                                "required": ["predicate"],
                                "additionalProperties": False,
                                "properties": {"predicate": ref("cel")},
                            },
                        ]
                    },
                },
                "calls": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 500,
                    "items": {
                        "type": "object",
                        "required": ["tool"],
                        "additionalProperties": False,
                        "properties": {"tool": ref("name"), "args": {}},
                    },
                },
                "attempts": ATTEMPTS,
            },
            ("calls",),
        ),
        factory=build_reference,
        codes=("F-ACTION-REFERENCE_MISMATCH",),
        tool_fields=("calls[].tool", "overrides{}"),
    ),
    CheckSpec(
        name="no_duplicate_side_effect",
        doc="The same write (tool + arguments) must not succeed twice without an idempotency key.",
        params=check_params({"tools": ref("names"), "attempts": ATTEMPTS}),
        factory=build_no_dup,
        codes=("F-ACTION-DUPLICATE_SIDE_EFFECT",),
        tool_fields=("tools[]",),
    ),
    CheckSpec(
        name="no_loop",
        doc="The same tool with the same arguments must not run `max_repeats` times.",
        params=check_params({"max_repeats": {"type": "integer", "minimum": 2, "maximum": 10000}}),
        factory=build_no_loop,
        codes=("F-ACTION-LOOP",),
    ),
    CheckSpec(
        name="recovery",
        doc="A failed call must be retried or reported in the final answer.",
        params=check_params({"tools": ref("names"), "error_report": ref("regex")}),
        factory=build_recovery,
        codes=("F-ACTION-NO_RECOVERY", "F-EVIDENCE-NO_FINAL_ANSWER"),
        tool_fields=("tools[]",),
    ),
)
"""The trajectory check types, declared once (see ``tracejudge.engine.checks``)."""
