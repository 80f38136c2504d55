"""The demo's result table: one row per run, readable in a 120-column terminal.

Each row says what the judge concluded and which span proves it; below the table, each run
gets what to change, what the agent answered, why, and its link. The hint text lives here
(keyed by failure code) because it is advice about the demo's refund agent, not part of
the engine's findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.report.text import VERDICT_COLOURS, table

HINTS: dict[str, str] = {
    "F-OUTPUT-UNSUPPORTED_CLAIM": (
        "the answer claims a refund no tool made: call refund_api.create and only confirm "
        "what its result says"
    ),
    "F-ACTION-ARG-ENTITY_BINDING": (
        "refund the order the lookup marked as the duplicate (is_duplicate), not another one"
    ),
    "F-BASELINE-ARG_DRIFT": (
        "the refund amount drifted from the reviewed baseline: refund the full duplicate "
        "charge from the lookup"
    ),
    "F-BASELINE-MISSING_CALL": "a call of the reviewed baseline is missing: restore that step",
}
"""How to fix each failure the refund variants produce."""

PASS_HINT = "nothing to fix: every layer passed"


def hint_for(code: str | None) -> str:
    """The fix hint for a primary failure code (a pointer to the docs for unknown codes)."""
    if code is None:
        return PASS_HINT
    return HINTS.get(code, f"see docs/failure-codes.md#{code.lower()}")


@dataclass(slots=True, frozen=True)
class DemoRow:
    """One judged run of the demo."""

    variant: str
    answer: str
    verdict: str
    code: str | None
    span_name: str | None
    span_id: str | None
    trace_id: str
    explanation: str = ""
    link: str | None = None

    @property
    def hint(self) -> str:
        """How to fix this run."""
        return hint_for(self.code)


def shorten(text: str, width: int) -> str:
    """One line of at most ``width`` characters (``…`` marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _span(row: DemoRow) -> str:
    if row.span_id is None:
        return "-"
    return f"{row.span_name or '?'} ({row.span_id})"


DETAIL_WIDTH = 160
"""The longest detail line (what the agent said, why) when the terminal's width is unknown."""


def render_table(rows: Sequence[DemoRow], *, colour: bool = False, width: int | None = None) -> str:
    """The table as text: a header, one line per run (its verdict coloured when ``colour``),
    then per run the fix hint, what it said, why, and its link. Detail lines are cut to
    ``width`` (the terminal's), or ``DETAIL_WIDTH`` when it is unknown."""
    cells = [(r.variant, r.verdict, r.code or "-", _span(r)) for r in rows]
    colours = [VERDICT_COLOURS.get(r.verdict) for r in rows] if colour else None
    header = ("run", "verdict", "primary failure", "span")
    lines = [table(header, cells, colours=colours, colour_column=1), ""]
    limit = width or DETAIL_WIDTH
    for row in rows:
        lines.append(f"{row.variant}: {row.hint}")
        lines.append(f"    said: {shorten(row.answer, limit - len('    said: '))}")
        if row.explanation:
            lines.append(f"    why: {shorten(row.explanation, limit - len('    why: '))}")
        if row.link:
            lines.append(f"    open: {row.link}")
    return "\n".join(lines)
