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

from tracejudge.engine.baseline import BaselineError
from tracejudge.engine.checks.base import Check, CheckSpec, check_params, ref
from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta
from tracejudge.engine.trajectory import ArgRule, DivergenceKind, diff_trajectory, trajectory_of


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
        # one diff for baselines and shadow runs (tracejudge.engine.trajectory)
        calls = base["calls"]
        for d in diff_trajectory(
            trajectory_of(ctx), calls, base.get("terminal_action"), self.arguments, "baseline"
        ):
            report.fail(
                _CODES[d.kind],
                d.span_ids,
                d.explanation,
                d.step_index,
                soft=d.soft,
                absent=d.absent,
            )


_CODES: dict[DivergenceKind, str] = {
    "missing_call": "F-BASELINE-MISSING_CALL",
    "unexpected_call": "F-BASELINE-UNEXPECTED_CALL",
    "arg_drift": "F-BASELINE-ARG_DRIFT",
    "terminal_action": "F-BASELINE-TERMINAL_ACTION",
}


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
