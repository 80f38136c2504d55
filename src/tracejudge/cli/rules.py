"""``tracejudge rules check``: validate rules files before they judge anything; ``rules
init``: a starter file, hooked to the rules JSON Schema for editors.

Rule authors fix a file in one pass when they see every problem at once, each with the
path of the offending field, so this prints all errors of all files, not the first one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracejudge.cli.errors import InputError
from tracejudge.cli.eval import EXIT_FAILED, EXIT_OK, echo_errors


@click.group("rules")
def rules_group() -> None:
    """Work with rules files."""


@rules_group.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def check_command(files: tuple[Path, ...]) -> None:
    """Validate rules FILES; print every error with its path (exit 1 if any)."""
    from tracejudge.engine import RulesError, load_rules

    errors: list[str] = []
    rules = 0
    for path in files:
        try:
            ruleset = load_rules(path)
        except RulesError as exc:
            errors.extend(f"{path}: {e}" for e in exc.errors)
            continue
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        rules += _count_rules(ruleset)
        for warning in ruleset.warnings:
            click.echo(f"tracejudge rules check: warning: {path}: {warning}", err=True)
    if errors:
        echo_errors("rules check", errors, limit=None)
        click.echo(f"{len(errors)} error(s) in {len(files)} file(s)", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"{len(files)} rules file(s) valid, {rules} rule(s)")
    sys.exit(EXIT_OK)


STARTER = Path(__file__).with_name("starter_rules.yaml")
"""The file ``rules init`` writes (after its schema line)."""


@rules_group.command("init")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), default="rules.yaml")
@click.option(
    "--schema",
    "schema_ref",
    metavar="PATH|URL",
    default=None,
    help="What the editor hook points at (default: the JSON Schema installed with "
    "tracejudge, relative to PATH when it lies below PATH's directory).",
)
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
def init_command(path: Path, schema_ref: str | None, force: bool) -> None:
    """Write a starter rules file to PATH (default rules.yaml), hooked to the rules JSON
    Schema for editors (the YAML language server: VS Code, Neovim, JetBrains, Helix)."""
    from tracejudge.engine.ruleschema import OUTPUT as SCHEMA

    if path.exists() and not force:
        raise InputError(f"{path} exists; pass --force to overwrite it")
    ref = schema_ref or schema_reference(SCHEMA, path)
    body = STARTER.read_text(encoding="utf-8").replace("{name}", str(path))
    try:
        path.write_text(f"# yaml-language-server: $schema={ref}\n{body}", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    click.echo(f"wrote {path}; check it with: tracejudge rules check {path}")
    sys.exit(EXIT_OK)


def schema_reference(schema: Path, rules: Path) -> str:
    """The schema as the rules file should name it: relative to the file's directory when
    it lies below it (a project's .venv: the same for everyone who checks it out),
    absolute otherwise."""
    schema = schema.resolve()
    here = rules.resolve().parent
    if schema.is_relative_to(here):
        return schema.relative_to(here).as_posix()
    return schema.as_posix()


def _count_rules(ruleset: object) -> int:
    """How many rules a loaded rule set holds (0 when it does not say)."""
    rules = getattr(ruleset, "rules", None)
    try:
        return len(rules) if rules is not None else 0
    except TypeError:
        return 0
