"""``tracejudge baseline record``: keep a reviewed run as the golden trajectory of a case.

Trajectory rules compare new runs against a baseline; recording one is a deliberate,
reviewed act, so the command refuses to guess when the files hold several runs and prints
the stored path for the reviewer to read and commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracejudge.cli.eval import EXIT_INPUT, EXIT_OK, echo_errors
from tracejudge.report.loading import load_runs


@click.group("baseline")
def baseline_group() -> None:
    """Record golden trajectories."""


@baseline_group.command("record")
@click.option("--case", "case_id", required=True, help="Case whose golden trajectory this is.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Baselines directory (the one `tracejudge eval --baselines` reads).",
)
@click.option(
    "--trace-id",
    default=None,
    help="Pick the run of this trace (needed when FILES hold several runs).",
)
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Rules file whose `tools:` kinds and categories the baseline should use.",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def record_command(
    case_id: str,
    out_dir: Path,
    trace_id: str | None,
    rules_path: Path | None,
    files: tuple[Path, ...],
) -> None:
    """Store the one run in FILES as the baseline of CASE; print the path to review."""
    from tracejudge.engine import BaselineStore, RulesError, load_rules

    tools = None
    if rules_path is not None:
        try:
            tools = load_rules(rules_path).tools
        except RulesError as exc:
            echo_errors("baseline record", [f"{rules_path}: {e}" for e in exc.errors], limit=None)
            sys.exit(EXIT_INPUT)
    loaded = load_runs(list(files))
    if loaded.errors:
        echo_errors("baseline record", loaded.errors)
        sys.exit(EXIT_INPUT)
    runs = loaded.runs
    if trace_id is not None:
        wanted = trace_id.strip().lower()
        runs = [r for r in runs if r.trace_id == wanted]
        if not runs:
            echo_errors("baseline record", [f"no run with trace id {wanted} in the given files"])
            sys.exit(EXIT_INPUT)
    if len(runs) != 1:
        found = ", ".join(f"{r.trace_id} (case {r.case_id or '-'})" for r in runs[:20])
        problem = (
            "no agent runs found in the given files"
            if not runs
            else f"{len(runs)} runs found, pick one with --trace-id: {found}"
        )
        echo_errors("baseline record", [problem])
        sys.exit(EXIT_INPUT)
    run = runs[0]
    if run.case_id != case_id:
        said = f"case {run.case_id!r}" if run.case_id is not None else "no case id"
        echo_errors(
            "baseline record",
            [
                f"warning: the run carries {said}; recorded as case {case_id!r}, the "
                f"baseline is compared only with runs of case {case_id!r}"
                + (f" (--case {run.case_id} matches this run)" if run.case_id else "")
            ],
        )
    run.case_id = case_id
    try:
        path = BaselineStore(out_dir).record(run, tools)
    except (OSError, ValueError) as exc:
        echo_errors("baseline record", [f"{out_dir}: cannot record baseline: {exc}"])
        sys.exit(EXIT_INPUT)
    click.echo(f"recorded baseline for case {case_id} (trace {run.trace_id}): {path}")
    click.echo("review it and commit it with your rules", err=True)
    sys.exit(EXIT_OK)
