"""The HTML report: one self-contained page (inline CSS and SVG, no script, no assets).

A single file can be attached to a CI run or mailed around and opens anywhere, offline.
Tooltips are SVG ``<title>`` elements and the filter by verdict and code is radio buttons
and generated CSS (``report.conversation_view``), so no JavaScript is needed. Each run
view is its timeline with the conversation under it (``report.conversation``), findings
anchored at the turn or call where they happened. Trace content is untrusted (model
output, tool arguments, agent names): every piece of text goes through ``_e`` before it
reaches the page.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Sequence

from tracejudge.report import conversation_view as cv
from tracejudge.report.conversation import TurnView
from tracejudge.report.records import FindingRecord, VerdictRecord
from tracejudge.report.summary import Comparison, GroupRate, Summary, case_of, variant_of
from tracejudge.report.text import interval_text, p_value_text, percent
from tracejudge.report.timeline import TimelineRow, TimelineStep, duration_text

MAX_TIMELINES = 500
"""More rows than this make the page slow to open; the rest are counted, not drawn."""
MAX_FAILURE_ROWS = 1000
"""Failing runs listed on the page; the text report lists them all."""
TIMELINE_WIDTH = 880
LANE_HEIGHT = 18
LANE_LABEL = 44
"""Width of the lane labels (model, tool) left of the time axis."""
STATUS_FILL = cv.STATUS_FILL
STATUS_LABEL = cv.STATUS_LABEL
SEVERITY_FILL = cv.SEVERITY_FILL
VERDICT_ORDER = {"fail": 0, "error": 1, "warn": 2, "pass": 3}

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#212121}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:4px 0} td,th{padding:3px 10px;text-align:left;
border-bottom:1px solid #eee;vertical-align:top;white-space:nowrap} th{background:#f5f5f5}
td:last-child{white-space:normal}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.v{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
.v-pass{background:#43a047}.v-warn{background:#f9a825}.v-fail{background:#e53935}
.v-error{background:#8e24aa} .muted{color:#757575} code{font-size:12px}
.row{margin:10px 0;padding:6px 0;border-bottom:1px solid #eee}
.row .head{margin-bottom:2px} .legend span{margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
svg text{font:11px system-ui,sans-serif}
"""


def render_html(
    summary: Summary,
    rows: Sequence[TimelineRow] = (),
    *,
    title: str = "tracejudge report",
    undrawn: int = 0,
) -> str:
    """The whole page. ``undrawn`` counts judged runs whose steps were not available."""
    runs_html, filter_css = _timelines(rows, undrawn)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{CSS}{cv.CSS}{filter_css}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _overview(summary),
        "<h2>Pass rate by variant</h2>",
        _rate_bars(summary.by_variant),
        _rate_table("variant", summary.by_variant),
        "<h2>Pass rate by case</h2>",
        _rate_table("case", summary.by_case),
        "<h2>Repetitions</h2>",
        _repetitions(summary),
    ]
    if summary.comparison is not None:
        parts.append(_comparison(summary.comparison))
    parts += [
        "<h2>Runs that did not pass</h2>",
        _failures(summary.failures),
        "<h2>Failure codes by frequency</h2>",
        _codes(summary),
        "<h2>Trajectories</h2>",
        runs_html,
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _e(value: object) -> str:
    """Escape for both element text and quoted attribute values."""
    return html.escape(str(value), quote=True)


def _anchor(r: VerdictRecord) -> str:
    """Ids are validated hex, but escape anyway: the record may come from any file."""
    return _e(f"run-{r.trace_id}-{r.root_span_id}")


def _badge(verdict: str) -> str:
    return f'<span class="v v-{_e(verdict)}">{_e(verdict)}</span>'


def _overview(summary: Summary) -> str:
    total = summary.overall
    lines = [
        f"<p><b>{total.trials}</b> run(s), <b>{total.successes}</b> passed: "
        f"<b>{_e(interval_text(total))}</b> "
        '<span class="muted">(Wilson 95% interval; <i>warn</i> counts as passed, '
        "<i>error</i> as not passed)</span></p>"
    ]
    if summary.duplicates:
        lines.append(
            f'<p class="muted">{summary.duplicates} duplicate record(s) replaced by a later one</p>'
        )
    lines.extend(f'<p class="muted">note: {_e(n)}</p>' for n in summary.notes)
    return "\n".join(lines)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """``rows`` hold already-escaped HTML cells."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _rate_table(label: str, rates: Sequence[GroupRate]) -> str:
    rows = [
        (
            _e(g.name),
            str(g.interval.trials),
            str(g.interval.successes),
            _e(interval_text(g.interval)),
            str(g.hard_failures),
            str(g.errors),
        )
        for g in rates
    ]
    headers = (label, "runs", "passed", "pass rate [95% CI]", "hard fails", "errors")
    return _table(headers, rows, {1, 2, 4, 5})


def _rate_bars(rates: Sequence[GroupRate]) -> str:
    """Horizontal bars with Wilson-interval whiskers, one per group."""
    if not rates:
        return '<p class="muted">no runs</p>'
    label_w, bar_w, row_h = 180, 420, 26
    height = row_h * len(rates) + 24
    width = label_w + bar_w + 220
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="pass rate by variant">'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_w + bar_w * tick / 100
        out.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 16}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" fill="#757575">'
            f"{tick}%</text>"
        )
    for i, g in enumerate(rates):
        iv = g.interval
        y = i * row_h + 4
        rate = 0.0 if math.isnan(iv.rate) else iv.rate
        lo, hi = label_w + bar_w * iv.low, label_w + bar_w * iv.high
        mid = y + (row_h - 8) / 2
        tip = f"{g.name}: {interval_text(iv)}, {iv.successes}/{iv.trials} passed"
        out.append(
            f"<g><title>{_e(tip)}</title>"
            f'<text x="{label_w - 8}" y="{mid + 4:.1f}" text-anchor="end">{_e(_clip(g.name, 28))}'
            "</text>"
            f'<rect x="{label_w}" y="{y}" width="{bar_w * rate:.1f}" height="{row_h - 8}" '
            'fill="#64b5f6"/>'
            f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" stroke="#0d47a1" '
            'stroke-width="1.5"/>'
            f'<line x1="{lo:.1f}" y1="{y + 3}" x2="{lo:.1f}" y2="{y + row_h - 11}" '
            'stroke="#0d47a1" stroke-width="1.5"/>'
            f'<line x1="{hi:.1f}" y1="{y + 3}" x2="{hi:.1f}" y2="{y + row_h - 11}" '
            'stroke="#0d47a1" stroke-width="1.5"/>'
            f'<text x="{label_w + bar_w + 8}" y="{mid + 4:.1f}">'
            f"{_e(interval_text(iv))} n={iv.trials}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)


def _repetitions(summary: Summary) -> str:
    ks = summary.ks
    headers = (
        "case",
        "variant",
        "runs",
        "passed",
        *(f"pass@{k}" for k in ks),
        *(f"pass^{k}" for k in ks),
    )
    rows = [
        (
            _e(r.case_id),
            _e(r.variant),
            str(r.n),
            str(r.c),
            *(percent(r.pass_at[k]) for k in ks),
            *(percent(r.pass_hat[k]) for k in ks),
        )
        for r in summary.repetitions
    ]
    note = (
        '<p class="muted">Unbiased estimators over the repetitions of each case: '
        "pass@k = 1 &minus; C(n&minus;c,k)/C(n,k) (at least one of k passes), "
        "pass^k = C(c,k)/C(n,k) (all k pass); &ldquo;-&rdquo; where k &gt; runs.</p>"
    )
    return note + _table(headers, rows, set(range(2, len(headers))))


def _comparison(c: Comparison) -> str:
    res = c.result
    head = (
        f"<h2>Paired comparison: {_e(c.variant_a)} (A) vs {_e(c.variant_b)} (B)</h2>"
        f"<p>{res.pairs} pair(s) (same case, same repetition): A wins <b>{res.wins}</b>, "
        f"B wins <b>{res.losses}</b>, ties {res.ties} ({res.ties_pass} both pass, "
        f"{res.ties_fail} both fail); exact McNemar p = <b>{_e(p_value_text(res.p_value))}</b>"
        + (f"; {c.unpaired} unpaired run(s)" if c.unpaired else "")
        + "</p>"
    )
    rows = [
        (
            _e(k.case_id),
            f"{k.a_passed}/{k.a_runs}",
            f"{k.b_passed}/{k.b_runs}",
            str(k.result.wins),
            str(k.result.losses),
            str(k.result.ties),
        )
        for k in c.cases
    ]
    headers = ("case", "A passed", "B passed", "A wins", "B wins", "ties")
    return head + _table(headers, rows, {1, 2, 3, 4, 5})


def _failures(all_failures: Sequence[VerdictRecord]) -> str:
    if not all_failures:
        return '<p class="muted">none</p>'
    failures = all_failures[:MAX_FAILURE_ROWS]
    more = len(all_failures) - len(failures)
    rows = [
        (
            _badge(r.verdict),
            _e(case_of(r)),
            _e(variant_of(r)),
            f'<a href="#{_anchor(r)}"><code>{_e(r.trace_id)}</code></a>',
            f"<code>{_e(r.primary.code)}</code>" if r.primary else "-",
            _e(r.error or (r.primary.explanation if r.primary else "")),
        )
        for r in failures
    ]
    headers = ("verdict", "case", "variant", "trace", "primary", "explanation")
    note = (
        f'<p class="muted">{more} more not listed (the text report lists all)</p>' if more else ""
    )
    return _table(headers, rows, set()) + note


def _codes(summary: Summary) -> str:
    if not summary.codes:
        return '<p class="muted">none</p>'
    rows = [
        (f"<code>{_e(c.code)}</code>", _e(c.severity), str(c.runs), str(c.occurrences))
        for c in summary.codes
    ]
    return _table(("code", "severity", "runs", "occurrences"), rows, {2, 3})


def _timelines(rows: Sequence[TimelineRow], undrawn: int) -> tuple[str, str]:
    """The run views with their filter, and the filter's CSS (for the page's head)."""
    if not rows:
        msg = "no trajectories: pass the trace files (<code>--traces</code>) to draw them"
        if undrawn:
            msg = f"{undrawn} judged run(s) have no trace here to draw"
        return f'<p class="muted">{msg}</p>', ""
    ordered = sorted(rows, key=lambda r: VERDICT_ORDER.get(r.record.verdict, 9))
    drawn = ordered[:MAX_TIMELINES]
    verdicts = Counter(r.record.verdict for r in drawn)
    codes = Counter(code for r in drawn for code in {f.code for f in r.record.findings})
    controls, filter_css, classes = cv.filter_controls(
        dict(verdicts), sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    legend = (
        '<p class="legend">'
        + "".join(
            f'<span><i class="sw" style="background:{fill}"></i>{_e(STATUS_LABEL[status])}</span>'
            for status, fill in STATUS_FILL.items()
        )
        + "<span>upper lane: model calls, lower lane: tool calls; dashed: inferred; "
        "a box links to its turn or call below</span>"
        + "<span>&#9660; finding (hover for code and explanation)</span></p>"
    )
    prompts = cv.SharedPrompts.of(r.conversation for r in drawn if r.conversation is not None)
    parts = [controls, legend, '<div class="runs">']
    parts.extend(_timeline_row(r, classes, prompts) for r in drawn)
    parts.append("</div>")
    omitted = max(0, len(ordered) - MAX_TIMELINES)
    if omitted:
        parts.append(f'<p class="muted">{omitted} more run(s) not drawn</p>')
    if undrawn:
        parts.append(f'<p class="muted">{undrawn} judged run(s) have no trace here to draw</p>')
    parts.append(prompts.html())
    return "\n".join(parts), filter_css


def _timeline_row(
    row: TimelineRow, classes: dict[str, str], prompts: cv.SharedPrompts | None = None
) -> str:
    r = row.record
    prefix = f"conv-{r.trace_id}-{r.root_span_id}"  # ids of the turns and calls (raw)
    code_classes = "".join(f" rc-{classes[c]}" for c in sorted({f.code for f in r.findings}))
    head = (
        f'<div class="run rv-{_e(r.verdict)}{code_classes}"><div class="row" id="{_anchor(r)}">'
        f'<div class="head">{_badge(r.verdict)} <b>{_e(case_of(r))}</b> '
        f"&middot; {_e(variant_of(r))} &middot; {_e(r.agent or '-')} &middot; "
        + (f"run {_e(r.run_id)} &middot; " if r.run_id else "")
        + f'<code class="muted">{_e(r.trace_id)}</code> '
        f'<span class="muted">{_e(duration_text(row.duration))}</span>'
        + (
            f"<br><code>{_e(r.primary.code)}</code>: {_e(r.primary.explanation)}"
            if r.primary is not None
            else (f"<br>{_e(r.error)}" if r.error else "")
        )
        + "</div>"
    )
    height = 2 * LANE_HEIGHT + 30
    axis = TIMELINE_WIDTH - LANE_LABEL
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{TIMELINE_WIDTH}" height="{height}">'
        f'<line x1="{LANE_LABEL}" y1="{height - 14}" x2="{TIMELINE_WIDTH}" y2="{height - 14}" '
        'stroke="#bdbdbd"/>'
        f'<text x="0" y="25" fill="#616161">model</text>'
        f'<text x="0" y="{25 + LANE_HEIGHT + 2}" fill="#616161">tool</text>'
    ]
    for frac in (0.0, 0.5, 1.0):
        x = LANE_LABEL + frac * (axis - 1)
        anchor = {0.0: "start", 0.5: "middle", 1.0: "end"}[frac]
        svg.append(
            f'<text x="{x:.1f}" y="{height - 2}" text-anchor="{anchor}" fill="#757575">'
            f"{_e(duration_text(frac * row.duration))}</text>"
        )
    targets = cv.step_targets(row.conversation, prefix) if row.conversation else {}
    drawn = [
        _step_box(step, i, row.duration, targets.get(i, "")) for i, step in enumerate(row.steps)
    ]
    # Boxes first, finding markers last: a marker sits above its box, inside the lane of
    # the step drawn before it, and must not be painted over by a later box.
    svg.extend(box for box, _ in drawn)
    svg.extend(markers for _, markers in drawn)
    svg.append("</svg>")
    extra = ""
    if row.conversation is not None:
        n = sum(1 for item in row.conversation.items if isinstance(item, TurnView))
        is_open = " open" if r.findings or r.verdict in ("fail", "error") else ""
        extra = (
            f'<details class="conv"{is_open}><summary>conversation: {n} turn(s), '
            f"{len(r.findings)} finding(s)</summary>"
            + cv.conversation_html(row.conversation, prefix, classes, prompts)
            + "</details>"
        )
    elif row.run_findings:
        items = "".join(_finding_item(f) for f in row.run_findings)
        extra = f'<div class="muted">findings not on a step:<ul>{items}</ul></div>'
    if not row.steps:
        extra += '<p class="muted">no model or tool calls in this run</p>'
    elif row.conversation is None:
        extra += '<p class="muted">no conversation captured (no message content on the spans)</p>'
    return head + "".join(svg) + extra + "</div></div>"


MIN_BOX_WIDTH = 8.0
"""Tool calls often take microseconds next to millisecond model calls; keep them visible."""


def _step_box(step: TimelineStep, index: int, duration: int, href: str) -> tuple[str, str]:
    """The step's box (a link to ``href`` when given) and, separately, its finding markers
    (drawn after every box). A box too narrow for its label shows its step number."""
    axis = TIMELINE_WIDTH - LANE_LABEL
    scale = (axis - 2) / duration
    x = LANE_LABEL + 1 + step.start * scale
    w = max(MIN_BOX_WIDTH, (step.end - step.start) * scale)
    x = min(x, TIMELINE_WIDTH - w)
    y = 12 if step.kind == "model" else 12 + LANE_HEIGHT + 2
    fill = STATUS_FILL.get(step.status, STATUS_FILL["unset"])
    dash = ' stroke-dasharray="3,2"' if step.inferred else ""
    tip = (
        f"step {index}: {step.kind} call {step.label}\nstatus: {step.status}"
        f"{' (inferred from a later model input)' if step.inferred else ''}\n"
        f"span {step.span_id}, {duration_text(step.end - step.start)}"
    )
    open_link, close_link = (f'<a href="#{_e(href)}">', "</a>") if href else ("", "")
    parts = [
        f"<g>{open_link}<title>{_e(tip)}</title>"
        f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{LANE_HEIGHT}" rx="2" '
        f'fill="{fill}" fill-opacity="0.85" stroke="#424242"{dash}/>'
    ]
    chars = int(w / 6.5)
    if chars >= 3:
        shown = _e(_clip(step.label, chars))
        parts.append(f'<text x="{x + 3:.1f}" y="{y + 13}" fill="#fff">{shown}</text>')
    elif w >= 5.2 * len(str(index)) + 2:  # too narrow for its name: its step number, smaller
        parts.append(
            f'<text x="{x + w / 2:.1f}" y="{y + 12}" fill="#fff" style="font-size:9px" '
            f'text-anchor="middle">{index}</text>'
        )
    parts.append(f"{close_link}</g>")
    markers: list[str] = []
    for i, f in enumerate(step.findings):
        mx = x + min(w / 2, 6) + i * 10
        colour = SEVERITY_FILL.get(f.severity, SEVERITY_FILL["fail"])
        markers.append(
            f"<g><title>{_e(f'{f.code} ({f.severity}): {f.explanation}')}</title>"
            f'<path d="M{mx - 5:.1f},{y - 10} L{mx + 5:.1f},{y - 10} L{mx:.1f},{y - 1} Z" '
            f'fill="{colour}" stroke="#fff"/></g>'
        )
    return "".join(parts), "".join(markers)


def _finding_item(f: FindingRecord) -> str:
    return f"<li><code>{_e(f.code)}</code> ({_e(f.severity)}): {_e(f.explanation)}</li>"


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(1, chars - 1)] + "…"
