"""Budget checks: steps, calls, wall time, tokens and cost against declared limits."""

from __future__ import annotations

from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params, ref
from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta
from tracejudge.model.run import ModelCall

_MODEL_LIMITS = (
    ("max_model_calls", "F-BUDGET-MODEL_CALLS", "model calls"),
    ("max_input_tokens", "F-BUDGET-TOKENS", "input tokens"),
    ("max_output_tokens", "F-BUDGET-TOKENS", "output tokens"),
    ("max_total_tokens", "F-BUDGET-TOKENS", "total tokens"),
    ("max_cost_usd", "F-BUDGET-COST", "USD"),
)


class Budget:
    """Every limit in one pass over the steps; the step that crossed a limit is cited."""

    def __init__(self, limits: dict[str, float]) -> None:
        self.limits = limits
        self.model_limits = any(k in limits for k, _, _ in _MODEL_LIMITS)
        self.token_limits = any(k in limits for k in _TOKEN_LIMITS)

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Count as we go so each finding points at the step where the budget ran out."""
        lim = self.limits
        steps = ctx.run.steps
        n_steps = len(steps)
        if "max_steps" in lim and n_steps > lim["max_steps"]:
            k = int(lim["max_steps"])
            report.fail(
                "F-BUDGET-STEPS",
                (steps[k].span_id,),
                f"{n_steps} steps (at most {k})",
                k,
            )
        if "max_tool_calls" in lim and len(ctx.tool_index) > lim["max_tool_calls"]:
            k = int(lim["max_tool_calls"])
            i, call = ctx.tool_index[k]
            report.fail(
                "F-BUDGET-STEPS",
                (call.span_id,),
                f"{len(ctx.tool_index)} tool calls (at most {k})",
                i,
            )
        if "max_duration_s" in lim:
            self._time(ctx, report, lim["max_duration_s"])
        if self.model_limits:
            self._model(ctx, report)

    def _time(self, ctx: RunContext, report: Report, limit: float) -> None:
        run = ctx.run
        if run.end_ns <= 0 or run.start_ns <= 0:
            report.insufficient("F-EVIDENCE-NO_TIMING", ctx.root, "the run has no timestamps")
            return
        secs = run.duration_ns / 1e9
        if secs <= limit:
            return
        cutoff = run.start_ns + int(limit * 1e9)
        at = next((i for i, s in enumerate(run.steps) if s.end_ns > cutoff), ctx.final_index)
        sid = run.steps[at].span_id if at < len(run.steps) else run.root_span_id
        report.fail("F-BUDGET-TIME", (sid,), f"ran {secs:.3f}s (at most {limit:g}s)", at)

    def _model(self, ctx: RunContext, report: Report) -> None:
        """One pass for totals; a second only to find where an exceeded limit was crossed."""
        lim = self.limits
        calls, tin, tout, cost, missing_tokens, missing_price = _totals(ctx)
        totals = {
            "max_model_calls": float(calls),
            "max_input_tokens": float(tin),
            "max_output_tokens": float(tout),
            "max_total_tokens": float(tin + tout),
            "max_cost_usd": cost,
        }
        over = [w for w in _MODEL_LIMITS if w[0] in lim and totals[w[0]] > lim[w[0]]]
        if over:
            self._locate(ctx, report, over)
        if self.token_limits and missing_tokens is not None:
            report.insufficient(
                "F-EVIDENCE-NO_TOKENS",
                (missing_tokens,),
                "a model call has no token usage; token and cost budgets are incomplete",
            )
        if "max_cost_usd" in lim and missing_price is not None:
            report.insufficient(
                "F-EVIDENCE-NO_PRICE",
                ctx.root,
                f"no price for model {missing_price!r} in the rules file; cost is incomplete",
            )

    def _locate(self, ctx: RunContext, report: Report, over: list[tuple[str, str, str]]) -> None:
        lim = self.limits
        calls = tin = tout = 0
        cost = 0.0
        pending = list(over)
        for i, step in enumerate(ctx.run.steps):
            if not isinstance(step, ModelCall):
                continue
            calls += 1
            if step.input_tokens is not None and step.output_tokens is not None:
                tin += step.input_tokens
                tout += step.output_tokens
                model = step.response_model or step.request_model or ""
                price = ctx.prices.get(model) or ctx.prices.get(step.request_model or "")
                if price is not None:
                    cost += (
                        step.input_tokens * price.input + step.output_tokens * price.output
                    ) / 1e6
            now = {
                "max_model_calls": float(calls),
                "max_input_tokens": float(tin),
                "max_output_tokens": float(tout),
                "max_total_tokens": float(tin + tout),
                "max_cost_usd": cost,
            }
            for w in list(pending):
                key, code, label = w
                if now[key] > lim[key]:
                    pending.remove(w)
                    shown = f"{now[key]:.4f}" if key == "max_cost_usd" else f"{now[key]:.0f}"
                    report.fail(code, (step.span_id,), f"{shown} {label} (at most {lim[key]:g})", i)
            if not pending:
                return


_Totals = tuple[int, int, int, float, "str | None", "str | None"]


def _totals(ctx: RunContext) -> _Totals:
    """Model calls, tokens, cost and the first gaps in them; computed once per run.

    Rule sets usually have a hard and a soft budget rule: both read the same totals.
    """
    memo: _Totals | None = ctx.memo.get("budget.totals")
    if memo is not None:
        return memo
    calls = tin = tout = 0
    cost = 0.0
    missing_tokens: str | None = None
    missing_price: str | None = None
    prices = ctx.prices
    for step in ctx.run.steps:
        if not isinstance(step, ModelCall):
            continue
        calls += 1
        if step.input_tokens is None or step.output_tokens is None:
            missing_tokens = missing_tokens or step.span_id
            continue
        tin += step.input_tokens
        tout += step.output_tokens
        model = step.response_model or step.request_model or ""
        price = prices.get(model) or prices.get(step.request_model or "")
        if price is None:
            missing_price = missing_price or model or "<unknown model>"
        else:
            cost += (step.input_tokens * price.input + step.output_tokens * price.output) / 1e6
    out = (calls, tin, tout, cost, missing_tokens, missing_price)
    ctx.memo["budget.totals"] = out
    return out


_TOKEN_LIMITS = ("max_input_tokens", "max_output_tokens", "max_total_tokens", "max_cost_usd")


def build_budget(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``budget``."""
    return Budget({k: float(v) for k, v in p.items() if k != "type"})


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="budget",
        doc="Steps, calls, wall time, tokens and cost stay within the given limits.",
        params=check_params(
            {
                "max_steps": ref("posint"),
                "max_model_calls": ref("posint"),
                "max_tool_calls": ref("posint"),
                "max_duration_s": ref("posnum"),
                "max_input_tokens": ref("posint"),
                "max_output_tokens": ref("posint"),
                "max_total_tokens": ref("posint"),
                "max_cost_usd": ref("posnum"),
            },
            minProperties=2,
        ),
        factory=build_budget,
        codes=(
            "F-BUDGET-STEPS",
            "F-BUDGET-MODEL_CALLS",
            "F-BUDGET-TIME",
            "F-BUDGET-TOKENS",
            "F-BUDGET-COST",
            "F-EVIDENCE-NO_TIMING",
            "F-EVIDENCE-NO_TOKENS",
            "F-EVIDENCE-NO_PRICE",
        ),
    ),
)
"""The budget check type, declared once (see ``tracejudge.engine.checks``)."""
