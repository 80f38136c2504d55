"""``tracejudge validate``: measure a judge against labelled runs.

The runs are judged as ``eval`` judges them (rules, cases, grader checks: whatever the
rules and cases files hold), or read from verdict JSON lines judged earlier
(``--verdicts``); each labelled axis is compared with its label. Exit status: 0 when every
``--gate`` holds (or none is given), 1 when a gate fails, 2 for bad input (a labels file
naming runs that are not there or labels outside an axis's values, a bad rules or cases
file, unreadable runs, a gate naming an axis no run is labelled on).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from tracejudge.cli.eval import echo_errors, error_verdict
from tracejudge.cli.grader_options import grader_options

if TYPE_CHECKING:
    from tracejudge.engine.rules import RuleSet
    from tracejudge.graders.apply import GraderRule
    from tracejudge.validate.reading import JudgedRun

EXIT_OK = 0
EXIT_GATE = 1
EXIT_INPUT = 2


@click.command("validate")
@click.option(
    "--labels",
    "labels_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Labels file (JSON lines: run, labels per axis, optional tags; .gz read as such).",
)
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Rules file (YAML) to judge FILES with; needed unless --verdicts is given.",
)
@click.option(
    "--cases",
    "cases_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Cases file: runs are judged against their case, as in eval.",
)
@click.option(
    "--tools-only",
    is_flag=True,
    help="Keep the rules file's tools: (what writes) but none of its rules, so the cases "
    "alone judge.",
)
@click.option("--strict", is_flag=True, help="As eval --strict: undecided findings fail.")
@click.option(
    "--verdicts",
    "verdict_paths",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Verdict JSON lines judged earlier (eval --output, the collector's stream) instead "
    "of judging FILES; repeatable.",
)
@click.option(
    "--axis",
    "axis_specs",
    multiple=True,
    metavar="AXIS=READ",
    help="What an axis reads: all (the whole verdict, the default), rules (every rule but "
    "the case checks), cases (the case checks) or rule-id patterns (confirm-*,no-*). "
    "Repeatable.",
)
@click.option("--slice", "slice_by", default=None, metavar="TAG", help="Also per value of TAG.")
@click.option(
    "--gate",
    "gate_specs",
    multiple=True,
    metavar="AXIS[@SLICE].METRIC OP LIMIT",
    help="A threshold, e.g. 'policy.false_pass<=0.05' or 'policy@task.false_fail_high<10%'; "
    "repeatable; exit 1 when one fails.",
)
@click.option(
    "--disagreements",
    "shown",
    default="20",
    show_default=True,
    metavar="N|all",
    help="Disagreements listed per axis in the text report (JSON lists all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@grader_options
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append this validation (the judge's version, the labels' hash, the figures) to "
    "FILE, which eval --validations reads.",
)
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def validate_command(
    labels_path: Path,
    rules_path: Path | None,
    cases_path: Path | None,
    tools_only: bool,
    strict: bool,
    verdict_paths: tuple[Path, ...],
    axis_specs: tuple[str, ...],
    slice_by: str | None,
    gate_specs: tuple[str, ...],
    shown: str,
    as_json: bool,
    run_graders: bool,
    grader_cache: Path | None,
    grader_workers: int,
    record_path: Path | None,
    files: tuple[Path, ...],
) -> None:
    """Compare the verdicts on the runs in FILES (as eval reads them) with the labels."""
    from tracejudge.engine.checks.case import CASE_RULE_ID
    from tracejudge.validate.gates import GateError, check_gates, parse_gate
    from tracejudge.validate.labels import LabelsError, load_labels
    from tracejudge.validate.reading import AxisReading, WholeVerdict, parse_reading
    from tracejudge.validate.report import render_text, to_json
    from tracejudge.validate.stats import measure, pair, unlabelled_runs

    limit = _limit(shown)
    try:
        gates = [parse_gate(g) for g in gate_specs]
    except GateError as exc:
        _fail([str(exc)])
    try:
        labels = load_labels(labels_path)
    except LabelsError as exc:
        _fail(exc.errors)
    if verdict_paths and (files or rules_path or cases_path):
        raise click.UsageError("--verdicts replaces FILES, --rules and --cases: give one or other")
    if verdict_paths:
        judged = _read_verdicts(verdict_paths)
        what = "verdicts in " + ", ".join(map(str, verdict_paths))
        case_rules: tuple[str, ...] = (CASE_RULE_ID,)
        cases_version = None
        graders: list[str] = []
    else:
        if rules_path is None or not files:
            raise click.UsageError("give FILES and --rules (or --verdicts)")
        graded = (run_graders, grader_cache, grader_workers)
        judged, case_rules, cases_version, graders = _judge(
            rules_path, cases_path, tools_only, strict, files, graded
        )
        what = f"{rules_path}{' (tools only)' if tools_only else ''}" + (
            f" + {cases_path}" if cases_path else ""
        )
    axes = labels.axes
    if not axes:
        _fail([f"{labels_path}: no run is labelled on any axis"])
    readings: dict[str, AxisReading] = dict.fromkeys(axes, WholeVerdict())
    for spec in axis_specs:
        axis, eq, read = spec.partition("=")
        if not eq or axis not in axes:
            _fail([f"--axis {spec!r}: AXIS=READ with an axis of the labels ({', '.join(axes)})"])
        try:
            readings[axis] = parse_reading(read, case_rules)
        except ValueError as exc:
            _fail([f"--axis {spec!r}: {exc}"])
    if slice_by is not None and slice_by not in labels.tag_names:
        _fail([f"--slice {slice_by!r}: no labelled run has that tag"])
    try:
        pairs = pair(labels, judged)
        results = check_gates(gates, pairs, readings, axes, labels.tag_names)
    except LabelsError as exc:
        _fail(exc.errors)
    except GateError as exc:
        _fail([str(exc)])
    figures = measure(pairs, readings, axes, slice_by)
    extra = unlabelled_runs(labels, judged)
    # what the figures hold for: a changed rules or cases file is a new judge to validate
    version = {"rules": sorted({r.version for r in judged if r.version})}
    if cases_version is not None:
        version["cases"] = [cases_version]
    if graders:
        version["graders"] = graders
    source: dict[str, Any] = {
        "labels": str(labels_path),
        "judge": what,
        "judge_version": version,
        "judged_runs": len(judged),
        "unlabelled_runs": extra,
    }
    document = to_json(source, figures, results)
    if record_path is not None:
        from tracejudge.validate.records import append_record

        try:
            append_record(record_path, version, labels_path, document)
        except OSError as exc:
            _fail([f"--record {record_path}: cannot write: {exc.strerror or exc}"])
        click.echo(f"tracejudge validate: recorded in {record_path}", err=True)
    if as_json:
        click.echo(json.dumps(document, indent=2))
    else:
        header = (
            f"{len(pairs)} labelled runs ({labels_path}) judged by {what}; "
            f"{len(judged)} runs judged, {extra} of them unlabelled\njudge version: "
            + "; ".join(f"{k} {', '.join(v) or '(none stamped)'}" for k, v in version.items())
        )
        click.echo(render_text(header, figures, results, limit))
    sys.exit(EXIT_GATE if any(not r.passed for r in results) else EXIT_OK)


def _fail(errors: list[str]) -> NoReturn:
    echo_errors("validate", errors)
    sys.exit(EXIT_INPUT)


def _limit(shown: str) -> int | None:
    if shown == "all":
        return None
    if shown.isdigit():
        return int(shown)
    raise click.BadParameter(f"{shown!r}: a count or 'all'", param_hint="--disagreements")


def _read_verdicts(paths: tuple[Path, ...]) -> list[JudgedRun]:
    from tracejudge.validate.labels import LabelsError
    from tracejudge.validate.sources import read_verdict_lines

    judged: list[JudgedRun] = []
    errors: list[str] = []
    for path in paths:
        try:
            judged += read_verdict_lines(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            errors.append(f"{path}: cannot read verdicts: {exc.strerror or exc}")
        except LabelsError as exc:
            errors += exc.errors
    if errors:
        _fail(errors)
    return judged


def _judge(
    rules_path: Path,
    cases_path: Path | None,
    tools_only: bool,
    strict: bool,
    files: tuple[Path, ...],
    graded: tuple[bool, Path | None, int],
) -> tuple[list[JudgedRun], tuple[str, ...], str | None, list[str]]:
    """FILES judged as eval judges them (grader rules included unless ``--no-graders``),
    the rule ids of the case checks, the cases file's version and the graders' versions."""
    from tracejudge.engine import Engine, RulesError, load_rules
    from tracejudge.engine.checks.case import CASE_RULE_ID
    from tracejudge.report.loading import load_runs
    from tracejudge.validate.sources import from_verdict

    try:
        ruleset = load_rules(rules_path)
    except RulesError as exc:
        echo_errors("validate", [f"{rules_path}: {e}" for e in exc.errors], limit=None)
        sys.exit(EXIT_INPUT)
    except OSError as exc:
        _fail([f"{rules_path}: cannot read rules: {exc.strerror or exc}"])
    if tools_only:  # another judge than the whole file: its version says so
        ruleset = dataclasses.replace(ruleset, rules=(), version=f"{ruleset.version}+tools-only")
    cases = None
    if cases_path is not None:
        from tracejudge.engine import CasesError, load_cases

        try:
            cases = load_cases(cases_path)
        except CasesError as exc:
            _fail([f"{cases_path}: {e}" for e in exc.errors])
    elif tools_only:
        raise click.UsageError("--tools-only judges by the cases: give --cases")
    engine = Engine(ruleset, cases=cases, strict=strict)
    run_graders, grader_cache, workers = graded
    graders = _graders(ruleset, rules_path, grader_cache) if run_graders else []
    loaded = load_runs(list(files))
    if loaded.errors:
        _fail(loaded.errors)
    if not loaded.runs:
        _fail(["no agent runs found in the given files"])
    verdicts = []
    for run in loaded.runs:
        try:
            verdicts.append(engine.judge(run))
        except Exception as exc:  # one bad run must not stop the others; never a pass
            verdicts.append(error_verdict(run, f"engine error: {exc}"))
    versions: list[str] = []
    if graders:
        from tracejudge.cli.graders import grade_all, summary_lines
        from tracejudge.validate.records import grader_version

        verdicts = grade_all(verdicts, loaded.runs, graders, workers)
        for line in summary_lines(verdicts, graders):
            click.echo(f"tracejudge validate: {line}", err=True)
        versions = [grader_version(g.rule.id, g.grader.identity.version) for g in graders]
    judged = [from_verdict(v) for v in verdicts]
    case_rules = tuple(r.id for r in ruleset.rules if r.check_type == "case")
    cases_version = None if cases is None else cases.version
    return judged, (*case_rules, CASE_RULE_ID), cases_version, versions


def _graders(ruleset: RuleSet, rules_path: Path, cache: Path | None) -> list[GraderRule]:
    """The rules file's graders, built as eval builds them; exits on a problem."""
    from tracejudge.cli.graders import build_graders
    from tracejudge.graders.telemetry import judge_runtime

    graders, problems = build_graders(ruleset, rules_path, os.environ, cache, judge_runtime())
    if problems:
        echo_errors("validate", problems, limit=None)
        sys.exit(EXIT_INPUT)
    return graders
