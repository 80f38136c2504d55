"""The ``baseline`` check: diff a run against its case's reviewed baseline.

A missing call or a different terminal action is a hard failure (the run did not do
what the reviewed run did); an extra call or drifted arguments is a warning (often
harmless variation worth a look).

Without a baseline store the rule is ``not_applicable`` (nobody asked for the comparison;
``eval`` says so once on stderr); with a store that has no readable baseline for the run's
case it is insufficient evidence, ``F-EVIDENCE-NO_BASELINE``: that case was meant to be
compared and could not be.
"""

from __future__ import annotations

from typing import Any

from tracejudge.engine.baseline import BaselineError, terminal_action
from tracejudge.engine.checks.base import Check, CheckSpec, check_params, ref, short
from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok
from tracejudge.model.run import ToolCall

ArgRule = str | float  # "ignore" or a relative tolerance


class BaselineDiff:
    """Align the run's successful calls with the baseline's, in order, by tool name."""

    def __init__(self, arguments: dict[str, dict[str, ArgRule]]) -> None:
        self.arguments = arguments

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Missing/terminal: hard. Unexpected/drift: soft."""
        run = ctx.run
        if not run.case_id:
            # baselines are per case: a run outside any case (most production traffic)
            # has none by design, so the rule does not apply (an explicit outcome, not a pass)
            report.not_applicable = True
            return
        if ctx.baselines is None:
            # no store at all: the caller did not ask for baseline comparison (the offline
            # ``eval`` without --baselines), so the rule does not apply; a store that lacks
            # the case is different: that case was meant to be compared, see below
            report.not_applicable = True
            return
        try:
            base = ctx.baselines.get(run.case_id)
        except BaselineError as exc:
            report.insufficient("F-EVIDENCE-NO_BASELINE", ctx.root, str(exc))
            return
        if base is None:
            report.insufficient(
                "F-EVIDENCE-NO_BASELINE", ctx.root, f"no baseline recorded for case {run.case_id}"
            )
            return
        actual = [(i, c) for i, c in ctx.tool_index if ok(c)]
        expected: list[dict[str, Any]] = [c for c in base["calls"] if isinstance(c, dict)]
        cursor = 0
        matched: set[int] = set()
        n = len(actual)
        for e in expected:
            name = e.get("tool")
            pos = cursor
            while pos < n and actual[pos][1].name != name:
                pos += 1
            if pos == n:
                at = actual[cursor][0] if cursor < len(actual) else ctx.final_index
                report.fail(
                    "F-BASELINE-MISSING_CALL",
                    ctx.root,
                    f"baseline call {name} is missing from the run",
                    at,
                    absent=True,
                )
                continue
            matched.add(pos)
            cursor = pos + 1
            i, call = actual[pos]
            self._drift(report, i, call, e.get("arguments"))
        for p, (i, call) in enumerate(actual):
            if p not in matched:
                report.fail(
                    "F-BASELINE-UNEXPECTED_CALL",
                    (call.span_id,),
                    f"{call.name} is not in the baseline",
                    i,
                    soft=True,
                )
        kinds = [(c, ctx.kinds[i]) for i, c in actual]
        got = terminal_action(kinds, ctx.tools)
        want = base.get("terminal_action")
        if want is not None and got != want:
            last = next(((i, c) for i, c in reversed(actual) if ctx.kinds[i] == "mutate"), None)
            sid, at = ((last[1].span_id,), last[0]) if last else (ctx.root, ctx.final_index)
            report.fail(
                "F-BASELINE-TERMINAL_ACTION",
                sid,
                f"terminal action {got!r}, baseline {want!r}",
                at,
                absent=last is None,
            )

    def _drift(self, report: Report, i: int, call: ToolCall, expected: Any) -> None:
        actual = call.arguments
        if actual == expected:
            return
        rules = self.arguments.get(call.name, {})
        if isinstance(expected, dict) and isinstance(actual, dict):
            for key in sorted(set(expected) | set(actual)):
                rule = rules.get(key)
                if rule == "ignore":
                    continue
                a, b = actual.get(key), expected.get(key)
                if _same(a, b, rule):
                    continue
                report.fail(
                    "F-BASELINE-ARG_DRIFT",
                    (call.span_id,),
                    f"{call.name}.{key}={short(a, 40)}, baseline {short(b, 40)}",
                    i,
                    soft=True,
                )
        elif canonical(actual) != canonical(expected):
            report.fail(
                "F-BASELINE-ARG_DRIFT",
                (call.span_id,),
                f"{call.name} arguments {short(actual, 40)}, baseline {short(expected, 40)}",
                i,
                soft=True,
            )


def _same(a: Any, b: Any, rule: ArgRule | None) -> bool:
    num = (int, float)
    if isinstance(rule, float) and isinstance(a, num) and isinstance(b, num):
        if isinstance(a, bool) or isinstance(b, bool):
            return a == b
        return abs(a - b) <= rule * abs(b)
    return bool(a == b) or canonical(a) == canonical(b)


def build_baseline(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``baseline``."""
    args: dict[str, dict[str, ArgRule]] = {}
    for tool, per in (p.get("arguments") or {}).items():
        args[tool] = {
            k: ("ignore" if v == "ignore" else float(v["tolerance"])) for k, v in per.items()
        }
    return BaselineDiff(args)


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="baseline",
        doc="The run must do what the reviewed baseline run of its case did.",
        params=check_params(
            {
                "arguments": {
                    "type": "object",
                    "maxProperties": 200,
                    "additionalProperties": {
                        "type": "object",
                        "maxProperties": 200,
                        "additionalProperties": {
                            "oneOf": [
                                {"const": "ignore"},
                                {
                                    "type": "object",
                                    "required": ["tolerance"],
                                    "additionalProperties": False,
                                    "properties": {"tolerance": ref("posnum")},
                                },
                            ]
                        },
                    },
                }
            }
        ),
        factory=build_baseline,
        codes=(
            "F-BASELINE-MISSING_CALL",
            "F-BASELINE-TERMINAL_ACTION",
            "F-BASELINE-UNEXPECTED_CALL",
            "F-BASELINE-ARG_DRIFT",
            "F-EVIDENCE-NO_BASELINE",
        ),
        tool_fields=("arguments{}",),
    ),
)
"""The ``baseline`` check type, declared once (see ``tracejudge.engine.checks``)."""
