"""The demo's result table: one row per run, readable in an 100-column terminal.

Each row says what the agent answered, what the judge concluded, which span proves it and
what to change. The hint text lives here (keyed by failure code) because it is advice about
the demo's refund agent, not part of the engine's findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


def render_table(rows: Sequence[DemoRow], answer_width: int = 60) -> str:
    """The table as text: a header, one line per run, then the hint and link lines."""
    header = ("run", "final answer", "verdict", "primary failure", "span")
    cells = [
        (
            r.variant,
            shorten(r.answer, answer_width),
            r.verdict,
            r.code or "-",
            _span(r),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for cell in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip())
    lines.append("")
    for row in rows:
        lines.append(f"{row.variant}: {row.hint}")
        if row.explanation:
            lines.append(f"    why: {shorten(row.explanation, 160)}")
        if row.link:
            lines.append(f"    open: {row.link}")
    return "\n".join(lines)
