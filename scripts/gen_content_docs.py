"""Write (or with ``--check`` verify) docs/privacy.md's table of what counts as content.

The table is generated from the one declaration, ``tracejudge.content.DECLARATION``, so
the page says exactly what ``serve --drop-content`` drops; it sits between two markers in
the page and the rest of the page is left alone.

Usage: ``python scripts/gen_content_docs.py [--check]`` (``make content-docs`` /
``make content-docs-check``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tracejudge.content import DECLARATION, ContentItem

PAGE = Path(__file__).resolve().parents[1] / "docs" / "privacy.md"
BEGIN = "<!-- content table: generated from src/tracejudge/content.py by make content-docs -->"
END = "<!-- end of content table -->"

_WHAT = {
    "attribute": "removed, with `{}.*`",
    "event": "span event removed; on a log record, its body and message fields",
    "event field": "removed from a log record of a content event",
    "log body": "cleared on every record, named event or plain line",
}


def _row(item: ContentItem) -> str:
    what = _WHAT[item.kind].format(item.name) if item.kind == "attribute" else _WHAT[item.kind]
    return f"| `{item.name}` | {item.kind} | {item.source} | {what} |"


def table() -> str:
    """The generated block, markers included."""
    rows = [_row(item) for item in DECLARATION]
    head = ["| Name | Kind | Written by | Under `--drop-content` |", "|---|---|---|---|"]
    return "\n".join([BEGIN, *head, *rows, END])


def render(page: str) -> str:
    """``page`` with its content table replaced by the generated one."""
    start, end = page.find(BEGIN), page.find(END)
    if start == -1 or end == -1:
        raise SystemExit(f"{PAGE}: the content table markers are missing ({BEGIN!r})")
    return page[:start] + table() + page[end + len(END) :]


def main(argv: list[str]) -> int:
    """Write the table, or with ``--check`` exit 1 when the page is out of date."""
    current = PAGE.read_text(encoding="utf-8")
    fresh = render(current)
    if "--check" in argv:
        if fresh != current:
            print(f"{PAGE}: the content table is out of date; run make content-docs")
            return 1
        return 0
    if fresh != current:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"content-docs: wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
