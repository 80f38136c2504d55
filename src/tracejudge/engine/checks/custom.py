"""Custom predicates: a CEL expression over the run's dict view must be true."""

from __future__ import annotations

from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params, ref, short
from tracejudge.engine.compile import CelExpr, Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta


class CelPredicate:
    """``true``: pass; ``false``: fail; an error or a non-boolean: insufficient evidence."""

    def __init__(self, expr: CelExpr, message: str | None) -> None:
        self.expr = expr
        self.message = message

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Evaluate against the run's shared activation (built once per run)."""
        value, err = self.expr.evaluate(ctx.activation())
        if err is not None or not isinstance(value, bool):
            why = err if err is not None else f"returned {short(value)}, not a bool"
            report.insufficient(
                "F-EVIDENCE-CEL_ERROR", ctx.root, f"predicate could not be decided: {why}"
            )
            return
        if not value:
            text = self.message or f"predicate is false: {self.expr.source}"
            report.fail("F-CUSTOM-PREDICATE", ctx.root, text, ctx.final_index, absent=True)


def build_cel(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``cel``."""
    expr = c.cel(f"{path}.expr", p["expr"])
    return None if expr is None else CelPredicate(expr, p.get("message"))


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="cel",
        doc="A CEL expression over the run must be true.",
        params=check_params(
            {"expr": ref("cel"), "message": {"type": "string", "maxLength": 500}}, ("expr",)
        ),
        factory=build_cel,
        codes=("F-CUSTOM-PREDICATE", "F-EVIDENCE-CEL_ERROR"),
    ),
)
"""The ``cel`` check type, declared once (see ``tracejudge.engine.checks``)."""
