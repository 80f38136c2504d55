"""Custom predicates: a CEL expression over the run's dict view must be true, and an
optional second expression names what the structure of the run cannot decide."""

from __future__ import annotations

from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params, ref, short
from tracejudge.engine.compile import CelExpr, Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta

CITE_FIELDS = "index span_id role kind name"
"""Fields of the run view an ``undecided`` element is cited by, always built when a rule
has one (the view otherwise holds only the names its expressions mention)."""
QUOTE_CHARS = 160
"""How much of a quoted turn an undecided finding shows."""


class CelPredicate:
    """``expr``: ``true`` passes, ``false`` fails; an error or a non-boolean is
    insufficient evidence. ``undecided`` (evaluated only when ``expr`` passed): a list of
    the run's turns or steps the rule cannot decide; each is an ``F-UNDECIDED-PREDICATE``
    citing it, never a silent pass."""

    def __init__(
        self, expr: CelExpr | None, message: str | None, undecided: CelExpr | None, why: str
    ) -> None:
        self.expr = expr
        self.message = message
        self.undecided = undecided
        self.why = why

    @property
    def sources(self) -> tuple[str, ...]:
        """The CEL texts over ``run`` (for the view the rule set builds)."""
        out = tuple(e.source for e in (self.expr, self.undecided) if e is not None)
        return (*out, CITE_FIELDS) if self.undecided is not None else out

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Evaluate against the run's shared activation (built once per run)."""
        if self.expr is not None:
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
                return
        if self.undecided is not None:
            self._undecided(self.undecided, ctx, report)

    def _undecided(self, expr: CelExpr, ctx: RunContext, report: Report) -> None:
        value, err = expr.evaluate(ctx.activation())
        if err is None and not isinstance(value, list):
            err = f"returned {short(value)}, not a list of the run's turns or steps"
        if err is not None:
            report.insufficient(
                "F-EVIDENCE-CEL_ERROR", ctx.root, f"`undecided` could not be evaluated: {err}"
            )
            return
        for item in value:
            element = item.plain_value() if hasattr(item, "plain_value") else item
            cited = _cite(element, ctx)
            if cited is None:
                report.insufficient(
                    "F-EVIDENCE-CEL_ERROR",
                    ctx.root,
                    f"`undecided` returned {short(element)}, not one of run.turns, "
                    "run.tools or run.models",
                )
                continue
            span_id, step, where = cited
            report.undecided("F-UNDECIDED-PREDICATE", (span_id,), f"{self.why}: {where}", step)


def _cite(element: Any, ctx: RunContext) -> tuple[str, int, str] | None:
    """``(span id, step index, what it is)`` for a turn, tool call or model call of the
    view; None for anything else. A step is shown with the user's words before it (the
    first and the last user turn), so the finding carries the request it answered."""
    if not isinstance(element, dict) or not isinstance(element.get("index"), int):
        return None
    index, span_id = element["index"], str(element.get("span_id") or "")
    index_of = ctx.turn_index()
    if element.get("role") is not None:
        if not 0 <= index < len(index_of.turns):
            return None
        turn = index_of.turns[index]
        return turn.span_id or span_id, turn.step_index, f"{turn.role} said {_quote(turn.text)}"
    if element.get("kind") not in ("tool", "model") or not 0 <= index < len(ctx.run.steps):
        return None
    users = [
        t for t in index_of.turns[: index_of.position_of_step(index)] if t.role == "user" and t.text
    ]
    what = f"{element.get('name') or element['kind']} (step {index})"
    if users:
        said = _quote(users[0].text)
        if len(users) > 1:
            said += f" ... {_quote(users[-1].text)}"
        what += f", after the user said {said}"
    else:
        what += ", with no user turn before it"
    return span_id, index, what


def _quote(text: str | None) -> str:
    if not text:
        return "(no text)"
    flat = " ".join(text.split())
    return f"«{flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + '…'}»"


def build_cel(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``cel``."""
    expr = c.cel(f"{path}.expr", p["expr"]) if "expr" in p else None
    undecided = c.cel(f"{path}.undecided", p["undecided"]) if "undecided" in p else None
    if ("expr" in p and expr is None) or ("undecided" in p and undecided is None):
        return None
    why = p.get("undecided_message") or "the run's structure cannot decide this"
    return CelPredicate(expr, p.get("message"), undecided, why)


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="cel",
        doc="A CEL expression over the run must be true; `undecided` names what it cannot decide.",
        params=check_params(
            {
                "expr": ref("cel"),
                "message": {"type": "string", "maxLength": 500},
                "undecided": ref("cel"),
                "undecided_message": {"type": "string", "maxLength": 500},
            },
            anyOf=[{"required": ["expr"]}, {"required": ["undecided"]}],
        ),
        factory=build_cel,
        codes=("F-CUSTOM-PREDICATE", "F-UNDECIDED-PREDICATE", "F-EVIDENCE-CEL_ERROR"),
    ),
)
"""The ``cel`` check type, declared once (see ``tracejudge.engine.checks``)."""
