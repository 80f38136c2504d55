"""A Markdown table of judged runs (``tracejudge eval --format markdown``).

For CI summaries and pull-request comments (GitHub's ``$GITHUB_STEP_SUMMARY``, GitLab
notes): the terminal table's columns, never cut, with the count below it. Trace text is
untrusted: pipes are escaped and lines joined, so a finding cannot break the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracejudge.report.records import VerdictRecord
from tracejudge.report.text import EVAL_HEADERS, WIDE_HEADERS, eval_footer, eval_rows

_CODE_COLUMNS = ("code", "trace", "span")


def markdown_table(
    records: Sequence[VerdictRecord], *, wide: bool = False, total: Sequence[VerdictRecord] = ()
) -> str:
    """The runs as a Markdown table, then the count of ``total`` (default: ``records``)."""
    headers = WIDE_HEADERS if wide else EVAL_HEADERS
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in eval_rows(records, wide=wide):
        cells = [
            f"`{_cell(c)}`" if h in _CODE_COLUMNS and c != "-" else _cell(c)
            for h, c in zip(headers, row, strict=True)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if not records:
        lines = ["No runs to show."]
    lines += ["", f"**{eval_footer(total or records)}**"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
