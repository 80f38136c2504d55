"""``tracejudge eval``: judge agent runs from trace files against a rules file.

Exit status is the CI contract: 0 when every run passed (``warn`` included), 1 when any
run failed a hard gate or could not be judged, 2 for usage or input errors (bad rules,
unreadable or malformed trace files, no runs at all). Input errors win over failures so
a broken pipeline is never mistaken for a regression.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracejudge.cli.grader_options import grader_options
from tracejudge.cli.terminal import colour_wanted, terminal_width
from tracejudge.engine.shadow import pair_verdicts, shadow_arguments, shadow_lines
from tracejudge.engine.verdict import Verdict
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs
from tracejudge.report.records import VerdictRecord
from tracejudge.report.summary import summarize
from tracejudge.report.text import eval_footer, eval_table, undecided_lines

if TYPE_CHECKING:
    from tracejudge.engine.rules import RuleSet
    from tracejudge.graders.apply import GraderRule

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2


def error_verdict(run: Run, message: str) -> Verdict:
    """The verdict of a run the engine could not judge: never dropped, never passed."""
    return Verdict(
        trace_id=run.trace_id,
        root_span_id=run.root_span_id,
        verdict="error",
        layers={},
        agent=run.agent_name,
        case_id=run.case_id,
        variant=run.variant_id,
        run_id=run.run_id,
        experiment_id=run.experiment_id,
        error=message,
    )


MAX_ERRORS_SHOWN = 20
"""Problems printed before the rest are only counted: a wrong glob can name thousands of
bad files or lines, and the first few say what is wrong."""


def echo_errors(command: str, errors: list[str], *, limit: int | None = MAX_ERRORS_SHOWN) -> None:
    """Each problem on its own stderr line, prefixed with the command; after ``limit``
    of them, one line counting the rest. ``limit=None`` prints all: a rules file's
    problems are bounded by its size and its author fixes them in one pass."""
    for message in errors if limit is None else errors[:limit]:
        click.echo(f"tracejudge {command}: {message}", err=True)
    if limit is not None and len(errors) > limit:
        click.echo(f"tracejudge {command}: … and {len(errors) - limit} more", err=True)


@click.command("eval")
@click.option(
    "--rules",
    "rules_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Rules file (YAML).",
)
@click.option(
    "--baselines",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of golden trajectories (from `tracejudge baseline record`).",
)
@click.option(
    "--cases",
    "cases_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Cases file (YAML, or JSON lines for .jsonl): per-case expected actions, "
    "forbidden actions, state and information; runs are judged against their case.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "junit", "markdown"]),
    default="table",
    show_default=True,
    help="table: aligned text fitted to the terminal; json: one verdict object per line per "
    "run; junit: JUnit XML for CI test reports; markdown: a table for CI summaries.",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Table and markdown: add the agent, trace id and span id columns.",
)
@click.option(
    "--failures-only",
    is_flag=True,
    help="Print only the runs that did not pass (fail, error); junit and --output keep all.",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Table: print only the count line (and any problems)."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Undecided findings (a confirmation or claim a heuristic could not read) take "
    "their rule's severity: a fail rule's undecided finding fails the run.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Also write the verdicts as JSON lines to this file (input for `tracejudge report`).",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write a self-contained HTML report with each run's trajectory.",
)
@grader_options
@click.option(
    "--validations",
    "validations_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Validation records (validate --record): say, per grader rule, whether its model, "
    "rubric and rendering were validated, and with what figures.",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def eval_command(
    rules_path: Path,
    baselines: Path | None,
    cases_path: Path | None,
    fmt: str,
    wide: bool,
    failures_only: bool,
    quiet: bool,
    strict: bool,
    output: Path | None,
    html_path: Path | None,
    run_graders: bool,
    grader_cache: Path | None,
    grader_workers: int,
    validations_path: Path | None,
    files: tuple[Path, ...],
) -> None:
    """Judge the agent runs in FILES (OTLP/JSON, JSON lines or protobuf; gzipped or not)."""
    from tracejudge.engine import Engine, RulesError, load_rules

    if quiet and fmt != "table":
        raise click.UsageError(f"--quiet goes with --format table, not {fmt}")

    try:
        ruleset = load_rules(rules_path)
    except RulesError as exc:
        echo_errors("eval", [f"{rules_path}: {e}" for e in exc.errors], limit=None)
        sys.exit(EXIT_INPUT)
    except OSError as exc:
        echo_errors("eval", [f"{rules_path}: cannot read rules: {exc.strerror or exc}"])
        sys.exit(EXIT_INPUT)
    for warning in ruleset.warnings:
        click.echo(f"tracejudge eval: warning: {rules_path}: {warning}", err=True)
    store = None
    if baselines is not None:
        from tracejudge.engine import BaselineStore

        store = BaselineStore(baselines)
    else:
        from tracejudge.engine.rules import without_baselines_note

        note = without_baselines_note(ruleset)
        if note is not None:
            click.echo(f"tracejudge eval: note: {note}; add --baselines DIR", err=True)
    cases = None
    if cases_path is not None:
        from tracejudge.engine import CasesError, load_cases

        try:
            cases = load_cases(cases_path)
        except CasesError as exc:
            echo_errors("eval", [f"{cases_path}: {e}" for e in exc.errors])
            sys.exit(EXIT_INPUT)
        for warning in cases.tool_warnings(ruleset.tools):
            click.echo(f"tracejudge eval: warning: {cases_path}: {warning}", err=True)
    engine = Engine(ruleset, baselines=store, cases=cases, strict=strict)
    graders = _graders(ruleset, rules_path, run_graders, grader_cache)
    if validations_path is not None and graders:
        from tracejudge.cli.graders import validation_lines

        for line in validation_lines(graders, validations_path):
            click.echo(f"tracejudge eval: {line}", err=True)

    loaded = load_runs(list(files))
    for line in loaded.summaries:
        click.echo(f"tracejudge eval: {line}", err=True)
    echo_errors("eval", loaded.errors)
    unmatched = None
    if cases is not None and cases_path is not None and loaded.runs:
        unmatched = cases_unmatched(cases_path, len(cases), loaded.runs, set(cases.cases))
    verdicts: list[Verdict] = []
    for run in loaded.runs:
        try:
            verdicts.append(engine.judge(run))
        except Exception as exc:  # one bad run must not stop the others
            verdicts.append(error_verdict(run, f"engine error: {type(exc).__name__}: {exc}"))
    if graders:
        from tracejudge.cli.graders import grade_all, summary_lines

        verdicts = grade_all(verdicts, loaded.runs, graders, grader_workers)
        for line in summary_lines(verdicts, graders):
            click.echo(f"tracejudge eval: {line}", err=True)
    records = [VerdictRecord.from_verdict(v) for v in verdicts]
    # shadow runs paired with the stable run of their request (the collector's comparison)
    shadows = pair_verdicts(verdicts, shadow_arguments(ruleset))

    lines = [json.dumps(v.to_dict(), ensure_ascii=False, sort_keys=False) for v in verdicts]
    lines += [json.dumps(r.to_dict(), ensure_ascii=False, sort_keys=False) for r in shadows]
    _print(fmt, records, lines, shadow_lines(shadows), wide, failures_only, quiet)
    if output is not None:
        _write(output, "".join(line + "\n" for line in lines))
    if html_path is not None:
        from tracejudge.report.html import render_html
        from tracejudge.report.timeline import build_rows

        rows, missing = build_rows(records, loaded.runs)
        page = render_html(summarize(records), rows, undrawn=len(missing))
        _write(html_path, page)
        click.echo(f"HTML report written to {html_path}", err=True)

    if not loaded.runs and not loaded.errors:
        echo_errors("eval", ["no agent runs found in the given files"])
    if unmatched is not None:
        message, matched_none = unmatched
        echo_errors("eval", [message])
        if matched_none:  # the cases file judged nothing: a wrong file, not a pass
            sys.exit(EXIT_INPUT)
    if loaded.errors or not loaded.runs:
        sys.exit(EXIT_INPUT)
    sys.exit(EXIT_FAILED if any(not r.passed for r in records) else EXIT_OK)


def _graders(
    ruleset: RuleSet, rules_path: Path, run_graders: bool, cache: Path | None
) -> list[GraderRule]:
    """The graders to run (none with ``--no-graders``, said once); exits on a problem."""
    from tracejudge.engine.rules import without_graders_note

    if not run_graders:
        note = without_graders_note(ruleset)
        if note is not None:
            click.echo(f"tracejudge eval: note: {note} (--no-graders)", err=True)
        return []
    from tracejudge.cli.graders import build_graders
    from tracejudge.graders.telemetry import judge_runtime

    # each model call a chat span to the global tracer provider: nowhere unless one is set
    graders, problems = build_graders(ruleset, rules_path, os.environ, cache, judge_runtime())
    if problems:
        echo_errors("eval", problems, limit=None)
        sys.exit(EXIT_INPUT)
    return graders


CASE_IDS_SHOWN = 5


def cases_unmatched(
    cases_path: Path, count: int, runs: list[Run], case_ids: set[str]
) -> tuple[str, bool] | None:
    """What to say when runs have no entry in the cases file: ``(message, none matched)``,
    or None when every run has one. A cases file that matches no run at all judged
    nothing, which ``eval`` treats as an input error."""
    missing = [r for r in runs if r.case_id is None or r.case_id not in case_ids]
    if not missing:
        return None
    seen = sorted({r.case_id or "(none)" for r in missing})
    shown = ", ".join(seen[:CASE_IDS_SHOWN]) + (" …" if len(seen) > CASE_IDS_SHOWN else "")
    if len(missing) == len(runs):
        return (
            f"{cases_path}: none of its {count} case(s) matches a run; the runs' case ids "
            f"(tracejudge.case.id) are: {shown}",
            True,
        )
    return (
        f"note: {len(missing)} of {len(runs)} runs have no case in {cases_path} "
        f"(case ids: {shown})",
        False,
    )


def _print(
    fmt: str,
    records: list[VerdictRecord],
    lines: list[str],
    shadows: list[str],
    wide: bool,
    failures_only: bool,
    quiet: bool,
) -> None:
    """The verdicts on stdout in ``fmt``; ``lines`` are their JSON lines (with the shadow
    pairing lines after them), ``shadows`` the pairing as text."""
    shown = [r for r in records if not r.passed] if failures_only else records
    if fmt == "json":
        keep = {r.key for r in shown}
        for line, record in zip(lines, records, strict=False):
            if record.key in keep:
                click.echo(line)
        for line in lines[len(records) :]:
            click.echo(line)
    elif fmt == "junit":
        from tracejudge.report.junit import junit_xml

        click.echo(junit_xml(records), nl=False)
    elif fmt == "markdown":
        from tracejudge.report.markdown import markdown_table

        click.echo(markdown_table(shown, wide=wide, total=records))
    elif records:
        if not quiet:
            if shown:
                table = eval_table(shown, colour=colour_wanted(), width=terminal_width(), wide=wide)
                click.echo(table)
            else:
                click.echo("no run failed")
        if not quiet:
            for line in undecided_lines(shown):
                click.echo(line)
        click.echo(eval_footer(records))
        for line in shadows:
            click.echo(line)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        echo_errors("eval", [f"{path}: cannot write: {exc.strerror or exc}"])
        sys.exit(EXIT_INPUT)
