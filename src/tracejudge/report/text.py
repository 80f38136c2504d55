"""Plain-text tables for the terminal: the ``eval`` verdict table and the ``report`` summary.

Aligned columns by hand (no table library for a few dozen lines). Colour is decided by
the caller (only on a TTY) and applied with click's ``style`` so pipes get plain text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import click

from tracejudge.engine.verdict import Finding, Verdict, clip_explanation
from tracejudge.report.records import VerdictRecord
from tracejudge.report.stats import Interval
from tracejudge.report.summary import GroupRate, Summary, case_of, variant_of

VERDICT_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}
EVAL_HEADERS = ("run", "verdict", "rule", "code", "explanation")
WIDE_HEADERS = ("run", "agent", "verdict", "rule", "code", "trace", "span", "explanation")
MIN_LAST = 24
"""The last column (an explanation) keeps at least this many characters, and a third of
the width, when a table is fitted to a width: the columns marked ``shrink`` give up room
first."""
MIN_SHRUNK = 10
TRACE_TAIL = 8
"""Characters of the trace id that tell two runs with the same label apart: the tail, since
generators such as X-Ray put a timestamp in the leading bytes and counters leading zeros."""


def cut(text: str, width: int, *, middle: bool = False) -> str:
    """``text`` in at most ``width`` characters, a cut marked with ``…``: at the end, or
    in the ``middle`` (names whose start and end both tell them apart, such as
    ``case/variant``)."""
    if len(text) <= width:
        return text
    if middle and width >= 5:
        head = (width - 1) // 2
        return text[:head] + "…" + text[len(text) - (width - 1 - head) :]
    return text[: max(0, width - 1)] + "…"


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    colours: Sequence[str | None] | None = None,
    colour_column: int | None = None,
    width: int | None = None,
    shrink: Sequence[int] = (),
    middle: Sequence[int] = (),
) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded.

    ``colours[i]`` colours row i's ``colour_column`` cell (padding stays uncoloured so
    alignment survives). ``width`` is the longest line allowed: the last column gets what
    the others leave; while that is under ``MIN_LAST``, the ``shrink`` columns, widest
    first, give up room down to their header (or ``MIN_SHRUNK``). Cut cells end in ``…``,
    or have it in the ``middle`` for those columns.
    """
    cells = [[_one_line(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    if width is not None and widths:
        _fit(widths, headers, width, shrink)
        for row in cells:
            for i, cell in enumerate(row):
                row[i] = cut(cell, widths[i], middle=i in middle)
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r, row in enumerate(cells):
        parts = []
        for i, cell in enumerate(row):
            padded = cell if i == len(row) - 1 else cell.ljust(widths[i])
            colour = colours[r] if colours is not None and i == colour_column else None
            if colour is not None:
                padded = click.style(cell, fg=colour) + padded[len(cell) :]
            parts.append(padded)
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _fit(widths: list[int], headers: Sequence[str], width: int, shrink: Sequence[int]) -> None:
    """Narrow ``widths`` in place so a row fits in ``width`` (see ``table``)."""
    last = len(widths) - 1
    floors = {i: min(widths[i], max(len(headers[i]), MIN_SHRUNK)) for i in shrink if i != last}
    want_last = min(widths[last], max(MIN_LAST, width // 3))
    while sum(widths[:last]) + 2 * last + want_last > width:
        roomy = [i for i in floors if widths[i] > floors[i]]
        if not roomy:
            break
        widest = max(roomy, key=lambda i: widths[i])
        widths[widest] -= 1
    widths[last] = max(1, min(widths[last], width - sum(widths[:last]) - 2 * last))


def run_labels(records: Sequence[VerdictRecord]) -> list[str]:
    """What names each run in a table: ``case/variant`` (the parts it has; the agent when
    it has neither). Runs that would read the same get their run id (``case/variant/run``),
    and then their trace id's tail (and root span's, for two runs of one trace):
    ``refund-ok/canary …4736``."""
    labels = []
    for r in records:
        parts = [p for p in (r.case_id, r.variant) if p]
        labels.append("/".join(parts) if parts else (r.agent or "run"))
    seen = Counter(labels)
    labels = [
        f"{label}/{r.run_id}" if seen[label] > 1 and r.run_id else label
        for label, r in zip(labels, records, strict=True)
    ]
    seen = Counter(labels)
    tailed = [
        f"{label} …{r.trace_id[-TRACE_TAIL:]}" if seen[label] > 1 else label
        for label, r in zip(labels, records, strict=True)
    ]
    seen = Counter(tailed)
    return [
        f"{label}:{r.root_span_id[-4:]}" if seen[label] > 1 else label
        for label, r in zip(tailed, records, strict=True)
    ]


def eval_rows(records: Sequence[VerdictRecord], *, wide: bool = False) -> list[tuple[str, ...]]:
    """The cells of ``eval``'s table (``EVAL_HEADERS``, or ``WIDE_HEADERS``), one per run."""
    rows: list[tuple[str, ...]] = []
    for r, label in zip(records, run_labels(records), strict=True):
        primary = r.primary
        finding = r.primary_finding
        rule = (finding.rule if finding is not None else None) or "-"
        code = primary.code if primary is not None else "-"
        explanation = r.error or (primary.explanation if primary is not None else "") or "-"
        if wide:
            span = (primary.span_id if primary is not None else None) or "-"
            rows.append(
                (label, r.agent or "-", r.verdict, rule, code, r.trace_id, span, explanation)
            )
        else:
            rows.append((label, r.verdict, rule, code, explanation))
    return rows


def eval_table(
    records: Sequence[VerdictRecord], *, colour: bool, width: int | None, wide: bool = False
) -> str:
    """One row per judged run: which run, its verdict, the rule and code of its primary
    (first causal) failure and as much of the explanation as ``width`` leaves. ``wide``
    adds the agent, trace id and span id, and cuts nothing (lines may exceed ``width``)."""
    headers = WIDE_HEADERS if wide else EVAL_HEADERS
    colours = [VERDICT_COLOURS.get(r.verdict) for r in records] if colour else None
    return table(
        headers,
        eval_rows(records, wide=wide),
        colours=colours,
        colour_column=headers.index("verdict"),
        width=None if wide else width,
        shrink=(0, 2),
        middle=(0,),
    )


def verdict_line(r: VerdictRecord) -> str:
    """One judged run on one line, for a log or a terminal that scrolls (``serve``):
    verdict, run (case/variant/run id), primary code, rule and explanation, trace id."""
    primary = None
    if r.primary is not None:
        finding = r.primary_finding
        rule = finding.rule if finding is not None else None
        primary = (r.primary.code, rule, r.primary.explanation)
    labels = (r.case_id, r.variant, r.run_id, r.agent)
    return _run_line(r.verdict, r.shadow, labels, primary, r.error, r.trace_id)


def engine_verdict_line(v: Verdict) -> str:
    """``verdict_line`` of ``v``'s record (``VerdictRecord.from_verdict(v)``), read from the
    verdict itself: the collector's line per run, without writing the verdict's JSON form
    and reading it back for every run."""
    primary = None
    p = v.primary
    if p is not None:
        span_id = p.span_ids[0].lower() if p.span_ids else None
        rule = _primary_rule(v.findings, p.code, span_id)
        primary = (p.code, rule, clip_explanation(p.explanation))
    labels = (v.case_id, v.variant, v.run_id, v.agent)
    return _run_line(v.verdict, v.shadow, labels, primary, v.error, v.trace_id.lower())


def _primary_rule(findings: Sequence[Finding], code: str, span_id: str | None) -> str | None:
    """The rule of the finding the primary failure is (``VerdictRecord.primary_finding``)."""
    first: Finding | None = None
    for f in findings:
        if f.code != code:
            continue
        if span_id is None or span_id in (s.lower() for s in f.span_ids):
            return f.rule_id
        if first is None:
            first = f
    return first.rule_id if first is not None else None


def _run_line(
    verdict: str,
    shadow: bool,
    labels: tuple[str | None, str | None, str | None, str | None],
    primary: tuple[str, str | None, str] | None,
    error: str | None,
    trace_id: str,
) -> str:
    """The line's one format: ``labels`` are case, variant, run id (joined) and agent (when
    none of those); ``primary`` the primary failure's code, rule and explanation."""
    case_id, variant, run_id, agent = labels
    parts = [p for p in (case_id, variant, run_id) if p]
    label = "/".join(parts) if parts else (agent or "(unnamed run)")
    line = f"{verdict:<5} {'shadow ' if shadow else ''}{_one_line(label)}"
    if primary is not None:
        code, rule, explanation = primary
        shown = f" [{rule}]" if rule else ""
        line += f"  {code}{shown}: {_one_line(explanation)}"
    elif error:
        line += f"  {_one_line(error)}"
    return f"{line}  (trace {trace_id})"


def eval_footer(records: Sequence[VerdictRecord]) -> str:
    """A one-line count of verdicts, and of undecided findings when there are any (a
    heuristic that could not decide is never a silent pass)."""
    counts = {v: sum(r.verdict == v for r in records) for v in VERDICT_COLOURS}
    parts = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    line = f"{len(records)} run(s): {parts or 'none'}"
    undecided = [r.undecided for r in records if r.undecided]
    if undecided:
        line += f"; {sum(undecided)} undecided finding(s) in {len(undecided)} run(s)"
    return line


def undecided_lines(records: Sequence[VerdictRecord]) -> list[str]:
    """One line per undecided finding: the run, the rule and code, and the sentence cited."""
    out: list[str] = []
    for r, label in zip(records, run_labels(records), strict=True):
        for f in r.findings:
            if f.undecided:
                rule = f" [{f.rule}]" if f.rule else ""
                out.append(f"undecided {label}  {f.code}{rule}: {_one_line(f.explanation)}")
    return out


def percent(value: float | None) -> str:
    """A rate as a percentage, or ``-`` when it is unknown."""
    if value is None or math.isnan(value):
        return "-"
    return f"{100 * value:.1f}%"


def interval_text(iv: Interval) -> str:
    """``80.0% [49.0%, 94.3%]``."""
    return f"{percent(iv.rate)} [{percent(iv.low)}, {percent(iv.high)}]"


def p_value_text(p: float) -> str:
    """A p-value with enough digits to read small ones."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.2e}"


def summary_text(summary: Summary, *, colour: bool = False) -> str:
    """The whole report as text, sections in the order a reader acts on them."""
    out: list[str] = []
    total = summary.overall
    out.append(
        f"{total.trials} run(s), {total.successes} passed: {interval_text(total)} (Wilson 95%)"
    )
    if summary.duplicates:
        out.append(f"{summary.duplicates} duplicate record(s) replaced by a later one")
    out.extend(f"note: {n}" for n in summary.notes)
    out += ["", "Pass rate by variant", _rate_table("variant", summary.by_variant)]
    out += ["", "Pass rate by case", _rate_table("case", summary.by_case)]
    out += ["", "Repetitions (unbiased pass@k and pass^k)", _repetition_table(summary)]
    if summary.comparison is not None:
        c = summary.comparison
        res = c.result
        out += [
            "",
            f"Paired comparison: {c.variant_a} (A) vs {c.variant_b} (B), by case and repetition",
            f"{res.pairs} pair(s): A wins {res.wins}, B wins {res.losses}, ties {res.ties} "
            f"({res.ties_pass} both pass, {res.ties_fail} both fail); "
            f"exact McNemar p = {p_value_text(res.p_value)}"
            + (f"; {c.unpaired} unpaired run(s)" if c.unpaired else ""),
            table(
                ("case", "A passed", "B passed", "A wins", "B wins", "ties"),
                [
                    (
                        k.case_id,
                        f"{k.a_passed}/{k.a_runs}",
                        f"{k.b_passed}/{k.b_runs}",
                        str(k.result.wins),
                        str(k.result.losses),
                        str(k.result.ties),
                    )
                    for k in c.cases
                ],
            ),
        ]
    out += ["", "Runs that did not pass (hard-gate failures first)"]
    if summary.failures:
        out.append(
            table(
                ("verdict", "case", "variant", "run", "primary", "explanation"),
                [
                    (
                        r.verdict,
                        case_of(r),
                        variant_of(r),
                        r.trace_id,
                        r.primary.code if r.primary else "-",
                        r.error or (r.primary.explanation if r.primary else "-"),
                    )
                    for r in summary.failures
                ],
                colours=[VERDICT_COLOURS.get(r.verdict) for r in summary.failures]
                if colour
                else None,
                colour_column=0,
            )
        )
    else:
        out.append("none")
    out += ["", "Failure codes by frequency"]
    if summary.codes:
        out.append(
            table(
                ("code", "severity", "runs", "occurrences"),
                [(c.code, c.severity, str(c.runs), str(c.occurrences)) for c in summary.codes],
            )
        )
    else:
        out.append("none")
    return "\n".join(out)


def _rate_table(label: str, rates: Sequence[GroupRate]) -> str:
    return table(
        (label, "runs", "passed", "pass rate [95% CI]", "hard fails", "errors"),
        [
            (
                g.name,
                str(g.interval.trials),
                str(g.interval.successes),
                interval_text(g.interval),
                str(g.hard_failures),
                str(g.errors),
            )
            for g in rates
        ],
    )


def _repetition_table(summary: Summary) -> str:
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
            rep.case_id,
            rep.variant,
            str(rep.n),
            str(rep.c),
            *(percent(rep.pass_at[k]) for k in ks),
            *(percent(rep.pass_hat[k]) for k in ks),
        )
        for rep in summary.repetitions
    ]
    return table(headers, rows)


def _one_line(text: str) -> str:
    """Trace text is untrusted: newlines would break alignment, escape codes the terminal."""
    if text.isprintable():
        return text
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
