"""Plain-text tables for the terminal: the ``eval`` verdict table and the ``report`` summary.

Aligned columns by hand (no table library for a few dozen lines). Colour is decided by
the caller (only on a TTY) and applied with click's ``style`` so pipes get plain text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import click

from tracejudge.report.records import VerdictRecord
from tracejudge.report.stats import Interval
from tracejudge.report.summary import GroupRate, Summary, case_of, variant_of

VERDICT_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "error": "magenta"}
EVAL_HEADERS = ("run", "agent", "case", "variant", "verdict", "primary", "span", "explanation")
RUN_ID_CHARS = 32
"""Trace ids are shown whole: generators such as X-Ray put a timestamp in the leading
bytes and counters leave leading zeros, so a prefix would not tell runs apart."""


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    colours: Sequence[str | None] | None = None,
    colour_column: int | None = None,
    max_last: int | None = None,
) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded.

    ``colours[i]`` colours row i's ``colour_column`` cell (padding stays uncoloured so
    alignment survives). ``max_last`` cuts the last column to that many characters.
    """
    cells = [[_one_line(c) for c in row] for row in rows]
    if max_last is not None:
        for row in cells:
            if row and len(row[-1]) > max_last:
                row[-1] = row[-1][: max(1, max_last - 1)] + "…"
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
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


def eval_table(records: Sequence[VerdictRecord], *, colour: bool, width: int | None) -> str:
    """One row per judged run: who, which case, the verdict and its primary failure."""
    rows = []
    for r in records:
        primary = r.primary
        explanation = r.error or (primary.explanation if primary is not None else "")
        rows.append(
            (
                r.trace_id[:RUN_ID_CHARS],
                r.agent or "-",
                r.case_id or "-",
                r.variant or "-",
                r.verdict,
                primary.code if primary is not None else "-",
                (primary.span_id or "-") if primary is not None else "-",
                explanation or "-",
            )
        )
    max_last = None
    if width is not None and rows:
        used = sum(
            max(len(h), *(len(row[i]) for row in rows)) + 2 for i, h in enumerate(EVAL_HEADERS[:-1])
        )
        max_last = max(20, width - used)
    colours = [VERDICT_COLOURS.get(r.verdict) for r in records] if colour else None
    return table(EVAL_HEADERS, rows, colours=colours, colour_column=4, max_last=max_last)


def eval_footer(records: Sequence[VerdictRecord]) -> str:
    """A one-line count of verdicts."""
    counts = {v: sum(r.verdict == v for r in records) for v in VERDICT_COLOURS}
    parts = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return f"{len(records)} run(s): {parts or 'none'}"


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
                        r.trace_id[:RUN_ID_CHARS],
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
