"""The HTML page: one well-formed, self-contained document that never lets trace text in raw."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tests.report.report_builders import make_record, make_run
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.report.html import render_html
from tracejudge.report.records import VerdictRecord
from tracejudge.report.summary import summarize
from tracejudge.report.text import eval_table, summary_text
from tracejudge.report.timeline import build_rows

VOID = {"meta", "br", "hr", "img", "input", "link"}
SVG_EMPTY = {"line", "rect", "path"}
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


class _Checker(HTMLParser):
    """Tracks open tags to prove nesting is balanced and records every tag and attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _evil_page() -> str:
    finding = Finding("NO_REFUND", "fail", "outcome", "r", ("b" * 16,), EVIL)
    verdict = Verdict(
        f"{1:032x}",
        f"{1:016x}",
        "fail",
        {"outcome": "fail"},
        agent=EVIL,
        case_id=EVIL,
        variant=EVIL,
        primary=finding,
        findings=[finding],
    )
    records = [VerdictRecord.from_verdict(verdict), make_record(2, variant="B")]
    run = make_run(1, tool_status="error")
    run.steps[1].name = EVIL  # type: ignore[union-attr]
    rows, missing = build_rows(records, [run])
    assert len(missing) == 1
    return render_html(summarize(records), rows, title=EVIL, undrawn=len(missing))


def test_page_is_well_formed_and_self_contained() -> None:
    """Balanced tags, no script, no external asset: it opens anywhere, offline, safely."""
    checker = _Checker()
    checker.feed(_evil_page())
    checker.close()
    assert checker.problems == []
    assert checker.stack == []
    assert "script" not in checker.tags
    assert "img" not in checker.tags
    for name, value in checker.attrs:
        assert not name.startswith("on"), name
        if name in {"src", "href"}:
            assert value is not None
            assert value.startswith("#"), value


def test_untrusted_text_is_escaped_everywhere() -> None:
    """Agent names, cases, tool names and explanations come from traces: no HTML injection."""
    page = _evil_page()
    assert "<script>" not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    checker = _Checker()
    checker.feed(page)
    assert any(EVIL in t for t in checker.text)  # shown to the reader as text


def test_findings_are_marked_on_their_step_with_a_tooltip() -> None:
    """A finding on the tool span shows on that tool's box, code and explanation in the title."""
    finding = Finding("REFUND_FAILED", "fail", "outcome", "r", ("b" * 16,), "refund errored")
    verdict = Verdict(f"{1:032x}", f"{1:016x}", "fail", {}, primary=finding, findings=[finding])
    record = VerdictRecord.from_verdict(verdict)
    (row,), _ = build_rows([record], [make_run(1, tool_status="error")])
    assert [s.kind for s in row.steps] == ["model", "tool", "model"]
    assert row.steps[1].findings == record.findings
    assert row.steps[1].status == "error"
    assert row.run_findings == []
    assert (row.steps[0].start, row.duration) == (10_000_000, 1_000_000_000)
    page = render_html(summarize([record]), [row])
    assert "<title>REFUND_FAILED (fail): refund errored</title>" in page


def test_text_tables_strip_control_characters() -> None:
    """Escape sequences in trace text must not reach the terminal; rows stay one line."""
    finding = Finding("X", "fail", "outcome", "r", (), "line one\nline two \x1b[31mred")
    verdict = Verdict(f"{1:032x}", f"{1:016x}", "fail", {}, primary=finding, findings=[finding])
    records = [VerdictRecord.from_verdict(verdict)]
    table = eval_table(records, colour=False, width=None)
    assert "\x1b" not in table
    assert len(table.splitlines()) == 3
    assert "line one line two [31mred" in table
    assert "\x1b" not in summary_text(summarize(records))


def test_finding_markers_are_drawn_after_every_step_box() -> None:
    """A marker sits above its step, inside the lane of the step before it; drawn early it
    was painted over by later boxes (regression). Short tool calls keep a visible width."""
    finding = Finding("REFUND_FAILED", "fail", "outcome", "r", ("b" * 16,), "refund errored")
    verdict = Verdict(f"{1:032x}", f"{1:016x}", "fail", {}, primary=finding, findings=[finding])
    record = VerdictRecord.from_verdict(verdict)
    (row,), _ = build_rows([record], [make_run(1, tool_status="error")])
    page = render_html(summarize([record]), [row])
    marker = page.index("<title>REFUND_FAILED (fail)")
    svg = page[page.rfind("<svg", 0, marker) : page.index("</svg>", marker)]
    assert svg.rfind("<rect") < svg.index("<title>REFUND_FAILED (fail)")
    widths = [float(w) for w in re.findall(r'<rect x="[^"]+" y="\d+" width="([^"]+)"', svg)]
    assert widths
    assert min(widths) >= 8.0
