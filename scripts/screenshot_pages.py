"""Cut the pages that scripts/screenshots.sh photographs out of a real tracejudge report.

Why a cut and not the whole page: a README picture must be readable at the width GitHub shows
it, so each picture holds one thing (the overview, one timeline, the terminal table). The cut
keeps the report's own markup and stylesheet byte for byte; it only leaves sections out. Every
page also reports its rendered size (see ``MEASURE``) so the shell script can size the browser
window to the content instead of guessing and cropping.

    screenshot_pages.py REPORT_HTML DEMO_STDOUT OUT_DIR

writes OUT_DIR/{overview,timeline,demo-table}.html. If the report's structure is not what this
script expects (a section renamed, no timeline with a finding on a step) it stops with a message
naming what is missing, rather than photographing something else.
"""

from __future__ import annotations

import html
import itertools
import re
import sys
from pathlib import Path

# Runs after the body is parsed; `chromium --dump-dom` then shows the content's size.
MEASURE = (
    "<script>(function(){var b=document.body,s=getComputedStyle(b),"
    "r=b.getBoundingClientRect();b.setAttribute('data-size',"
    "Math.ceil(r.right+parseFloat(s.marginRight))+'x'+"
    "Math.ceil(r.bottom+parseFloat(s.marginBottom)));})();</script>"
)

ROW = re.compile(r'<div class="row" id="run-')
STEP_MARKER = re.compile(r"<path d=\"M[^\"]*Z\" fill=\"#[0-9a-f]{6}\"")


class LayoutError(Exception):
    """The report does not contain what a picture needs."""


def split_report(page: str) -> tuple[str, str, dict[str, str]]:
    """Return (head through <body>, the part before the first <h2>, sections by their title)."""
    head, sep, body = page.partition("<body>")
    if not sep:
        raise LayoutError("no <body> in the report")
    body = body.split("</body>")[0]
    parts = re.split(r"(<h2>[^<]*</h2>)", body)
    sections: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        title = html.unescape(parts[i][4:-5])
        sections[title] = parts[i] + parts[i + 1]
    return head + sep, parts[0], sections


def section(sections: dict[str, str], title: str) -> str:
    """One section by its heading, or a clear error naming the ones there are."""
    if title not in sections:
        raise LayoutError(f"no '{title}' section in the report (have: {', '.join(sections)})")
    return sections[title]


def timeline_rows(trajectories: str) -> tuple[str, list[str]]:
    """Split the Trajectories section into its preamble (heading, legend) and one string per run."""
    starts = [m.start() for m in ROW.finditer(trajectories)]
    if not starts:
        raise LayoutError("the Trajectories section has no run rows")
    bounds = [*starts, len(trajectories)]
    rows = [trajectories[a:b] for a, b in itertools.pairwise(bounds)]
    return trajectories[: starts[0]], rows


def pick_rows(rows: list[str]) -> list[str]:
    """A failed run with a finding marker on one of its steps, then a passed run to compare."""
    failed = [r for r in rows if 'class="v v-fail"' in r and STEP_MARKER.search(r)]
    if not failed:
        raise LayoutError("no failed run has a finding drawn on a step")
    passed = [r for r in rows if 'class="v v-pass"' in r]
    return [failed[0], *passed[:1]]


def terminal_page(stdout: str) -> str:
    """The demo's stdout as a terminal window: what a user sees after `tracejudge demo`."""
    text = html.escape(stdout.rstrip("\n"))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tracejudge demo</title>'
        "<style>html,body{margin:0;background:#1e1e1e}"
        "body{display:inline-block;padding:16px 20px}"
        "pre{margin:0;color:#d4d4d4;"
        "font:13px/1.45 'DejaVu Sans Mono','Liberation Mono',Menlo,Consolas,monospace}"
        ".p{color:#6a9955}</style></head><body>"
        f'<pre><span class="p">$</span> tracejudge demo --html report.html\n{text}</pre>'
        + MEASURE
        + "</body></html>"
    )


def main(argv: list[str]) -> int:
    """Write the three pages; exit 2 with a message when the report lacks what they need."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    report, stdout, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    try:
        head, top, sections = split_report(report.read_text(encoding="utf-8"))
        preamble, rows = timeline_rows(section(sections, "Trajectories"))
        overview = top + section(sections, "Pass rate by variant")
        timeline = preamble + "".join(pick_rows(rows))
    except LayoutError as exc:
        print(f"screenshot_pages: {report}: {exc}", file=sys.stderr)
        return 2
    # An inline-block body lets the measured width follow the content, not the window; the
    # width cap is the timeline's own SVG width, so long explanations wrap as in the report.
    fit = "<style>body{display:inline-block;max-width:880px}h2:first-child{margin-top:0}</style>"
    for name, content in (("overview", overview), ("timeline", timeline)):
        page = head.replace("</head>", fit + "</head>") + content + MEASURE + "</body></html>"
        (out / f"{name}.html").write_text(page, encoding="utf-8")
    (out / "demo-table.html").write_text(
        terminal_page(stdout.read_text(encoding="utf-8")), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
