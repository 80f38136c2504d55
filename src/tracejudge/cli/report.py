"""``tracejudge report``: statistics over many judged runs, as text and optionally HTML.

Input is verdict JSON lines (``tracejudge eval --output`` / ``--format json``, or the
collector's verdict stream). Verdict lines carry no steps, so trajectories are drawn only
for runs whose trace files are also given with ``--traces``.

``--traces`` takes every file after it up to the next option (``--traces traces/*.json``,
as a shell glob expands it), and may also be repeated: a glob after a one-value option
would otherwise put all but its first file among the verdict files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracejudge.cli.eval import EXIT_INPUT, EXIT_OK, echo_errors
from tracejudge.cli.terminal import colour_wanted, text_or_json
from tracejudge.report.records import VerdictFileError, read_all
from tracejudge.report.summary import DEFAULT_KS, summarize
from tracejudge.report.summary_json import summary_dict
from tracejudge.report.text import summary_text


class _ReportCommand(click.Command):
    """``report``, whose ``--traces`` also takes several files in a row."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_option(args, "--traces"))


def _pairing_counts(outcomes: list[str]) -> dict[str, int]:
    return {o: outcomes.count(o) for o in ("paired", "diverged", "unpaired")}


def shadow_summary(judged: int, outcomes: list[str]) -> str:
    """One line on the shadow runs the summary above leaves out, and their pairing."""
    pairs = ", ".join(f"{n} {o}" for o, n in _pairing_counts(outcomes).items())
    return f"shadow runs (not counted above): {judged} judged; pairing: {pairs}"


def spread_option(args: list[str], option: str) -> list[str]:
    """Rewrite ``OPTION a b c`` as ``OPTION a OPTION b OPTION c``.

    Click options take a fixed number of values; this lets ``option`` take every argument
    after it up to the next one that starts with ``-`` (``--`` ends it too), the way
    ``nargs='+'`` does in argparse, while ``OPTION a OPTION b`` keeps working.
    """
    out: list[str] = []
    greedy = False
    for k, arg in enumerate(args):
        if arg == "--":
            return out + args[k:]  # the rest is positional, whatever it looks like
        if greedy and not arg.startswith("-"):
            if out[-1] != option:
                out.append(option)
            out.append(arg)
            continue
        greedy = arg == option
        out.append(arg)
    return out


@click.command("report", cls=_ReportCommand)
@click.argument("verdicts", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write one self-contained HTML page (bars, tables, trajectories).",
)
@click.option(
    "--variants",
    nargs=2,
    type=str,
    default=None,
    metavar="A B",
    help="Compare variant A against B, paired by case and repetition "
    "(default: the two variants, when there are exactly two).",
)
@click.option(
    "--traces",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="FILE...",
    help="Trace files whose runs the HTML draws as timelines: every file after it up to "
    "the next option (e.g. --traces traces/*.json), or repeated.",
)
@click.option(
    "-k",
    "ks",
    multiple=True,
    type=click.IntRange(min=1),
    help=f"k for pass@k and pass^k (repeatable; default {', '.join(map(str, DEFAULT_KS))}).",
)
@text_or_json("the same numbers as one JSON object (rates as fractions, null if unknown).")
def report_command(
    verdicts: tuple[Path, ...],
    fmt: str,
    html_path: Path | None,
    variants: tuple[str, str] | None,
    traces: tuple[Path, ...],
    ks: tuple[int, ...],
) -> None:
    """Summarize judged runs from VERDICTS (JSON lines, gzipped or not)."""
    if variants is not None and variants[0] == variants[1]:
        raise click.BadParameter("name two different variants", param_hint="--variants")
    pairing: list[str] = []
    try:
        records = read_all(verdicts, pairing)
    except VerdictFileError as exc:
        echo_errors("report", exc.errors)
        sys.exit(EXIT_INPUT)
    shadows = [r for r in records if r.shadow]
    records = [r for r in records if not r.shadow]  # shadow runs are not user traffic
    if not records:
        echo_errors("report", ["no verdicts in the given files"])
        sys.exit(EXIT_INPUT)
    summary = summarize(records, variants=variants or None, ks=tuple(sorted(set(ks))) or DEFAULT_KS)
    if fmt == "json":
        shadow = None
        if shadows or pairing:
            shadow = {"judged": len(shadows), **_pairing_counts(pairing)}
        click.echo(json.dumps(summary_dict(summary, shadow), ensure_ascii=False))
    else:
        click.echo(summary_text(summary, colour=colour_wanted()))
        if shadows or pairing:
            click.echo(shadow_summary(len(shadows), pairing))
    status = EXIT_OK
    if html_path is not None:
        from tracejudge.report.html import render_html
        from tracejudge.report.timeline import TimelineRow, build_rows

        rows: list[TimelineRow] = []
        missing = summary.records
        if traces:
            from tracejudge.report.loading import load_runs

            loaded = load_runs(list(traces))
            if loaded.errors:
                echo_errors("report", loaded.errors)
                status = EXIT_INPUT
            rows, missing = build_rows(summary.records, loaded.runs)
        page = render_html(summary, rows, undrawn=len(missing) if traces else 0)
        try:
            html_path.write_text(page, encoding="utf-8")
        except OSError as exc:
            echo_errors("report", [f"{html_path}: cannot write: {exc.strerror or exc}"])
            sys.exit(EXIT_INPUT)
        click.echo(f"HTML report written to {html_path}", err=True)
    sys.exit(status)
