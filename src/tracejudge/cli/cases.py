"""``tracejudge cases``: validate cases files, and make one from tau-bench task records.

``check`` prints every problem of every file with its line and case, like ``rules check``.
``from-tau-bench`` and ``from-tau2`` are the mechanical translations of
``tracejudge.engine.tau_bench`` and ``tracejudge.engine.tau2``, so a benchmark's expected
actions become a reviewable cases file in one command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tracejudge.cli.eval import EXIT_FAILED, EXIT_INPUT, EXIT_OK, echo_errors


@click.group("cases")
def cases_group() -> None:
    """Work with cases files (per-case expected outcomes)."""


@cases_group.command("check")
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Rules file whose tools: the cases' tool names are checked against (warnings).",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def check_command(rules_path: Path | None, files: tuple[Path, ...]) -> None:
    """Validate cases FILES; print every error with its position (exit 1 if any)."""
    from tracejudge.engine import CasesError, RulesError, load_cases, load_rules

    tools: dict[str, Any] = {}
    if rules_path is not None:
        try:
            tools = dict(load_rules(rules_path).tools)
        except (RulesError, OSError) as exc:
            echo_errors("cases check", [f"{rules_path}: {exc}"])
            sys.exit(EXIT_INPUT)
    errors: list[str] = []
    count = 0
    for path in files:
        try:
            cases = load_cases(path)
        except CasesError as exc:
            errors.extend(f"{path}: {e}" for e in exc.errors)
            continue
        count += len(cases)
        for warning in cases.tool_warnings(tools):
            click.echo(f"tracejudge cases check: warning: {path}: {warning}", err=True)
    if errors:
        echo_errors("cases check", errors)
        click.echo(f"{len(errors)} error(s) in {len(files)} file(s)", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"{len(files)} cases file(s) valid, {count} case(s)")
    sys.exit(EXIT_OK)


@cases_group.command("from-tau-bench")
@click.option("--prefix", default="tau-airline-", show_default=True, help="Case id prefix.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write the JSON-lines cases file here (default: standard output).",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def from_tau_bench_command(prefix: str, output: Path | None, files: tuple[Path, ...]) -> None:
    """Translate tau-bench result FILES (JSON lists of records) into a cases file."""
    from tracejudge.engine.cases import load_cases_text
    from tracejudge.engine.tau_bench import cases_from_tau_bench, dump_jsonl

    records: list[Any] = []
    for path in files:
        try:
            doc = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            echo_errors("cases from-tau-bench", [f"{path}: {exc}"])
            sys.exit(EXIT_INPUT)
        if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
            echo_errors("cases from-tau-bench", [f"{path}: not a JSON list of records"])
            sys.exit(EXIT_INPUT)
        records.extend(doc)
    try:
        text = dump_jsonl(cases_from_tau_bench(records, prefix=prefix))
        n = len(load_cases_text(text, source="<translated>", fmt="jsonl"))
    except ValueError as exc:  # CasesError too: the translation must load, or it is a bug
        echo_errors("cases from-tau-bench", [str(exc)])
        sys.exit(EXIT_INPUT)
    _write_cases("cases from-tau-bench", text, n, output)


def _write_cases(command: str, text: str, n: int, output: Path | None) -> NoReturn:
    """Print the translated cases, or write them to ``output``; exit as a command does."""
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            echo_errors(command, [f"{output}: cannot write: {exc.strerror}"])
            sys.exit(EXIT_INPUT)
        click.echo(f"{n} case(s) written to {output}", err=True)
    sys.exit(EXIT_OK)


def _read_json(path: Path) -> Any:
    """A JSON document, gzipped or not (tau2-bench results are often kept gzipped)."""
    import gzip

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8-sig"))


@cases_group.command("from-tau2")
@click.option(
    "--prefix",
    default=None,
    help="Case id prefix (default: tau2-<domain>-, as eval names the runs' cases).",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write the JSON-lines cases file here (default: standard output).",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def from_tau2_command(prefix: str | None, output: Path | None, files: tuple[Path, ...]) -> None:
    """Translate tau2-bench results FILES (top-level tasks and simulations, gzip or not)
    into a cases file: one case per task; the simulations show which expected actions
    fail in the benchmark's own environment (those are taken out and noted)."""
    import gzip
    import zlib

    from tracejudge.engine.cases import load_cases_text
    from tracejudge.engine.tau2 import cases_from_tau2
    from tracejudge.engine.tau_bench import dump_jsonl
    from tracejudge.model.tau2 import is_tau2_results

    docs: list[Any] = []
    for path in files:
        try:
            doc = _read_json(path)
        except (OSError, ValueError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            echo_errors("cases from-tau2", [f"{path}: {exc}"])
            sys.exit(EXIT_INPUT)
        if not is_tau2_results(doc) or not isinstance(doc.get("tasks"), list):
            echo_errors(
                "cases from-tau2",
                [f"{path}: not a tau2-bench results file (top-level tasks and simulations)"],
            )
            sys.exit(EXIT_INPUT)
        docs.append(doc)
    try:
        made = cases_from_tau2(docs, prefix=prefix)
        text = dump_jsonl(made.cases)
        n = len(load_cases_text(text, source="<translated>", fmt="jsonl"))
    except ValueError as exc:  # CasesError too: the translation must load, or it is a bug
        names = ", ".join(f"file {k + 1} = {p}" for k, p in enumerate(files))
        echo_errors("cases from-tau2", [f"{exc} ({names})"])
        sys.exit(EXIT_INPUT)
    for line in made.without_task:
        click.echo(f"tracejudge cases from-tau2: warning: {line}", err=True)
    for where in made.marked:
        click.echo(
            f"tracejudge cases from-tau2: note: {where}: fails in the benchmark's environment, "
            "so it is not expected (see the case's notes)",
            err=True,
        )
    click.echo(
        f"read {len(files)} file(s): {n} task(s), {made.simulations} simulation(s) "
        f"({len(made.without_task)} naming no task); {len(made.marked)} expected action(s) "
        "noted as failing in the benchmark's environment",
        err=True,
    )
    _write_cases("cases from-tau2", text, n, output)
