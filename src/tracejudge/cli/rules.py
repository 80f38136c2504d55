"""``tracejudge rules check``: validate rules files before they judge anything.

Rule authors fix a file in one pass when they see every problem at once, each with the
path of the offending field, so this prints all errors of all files, not the first one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

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


def _count_rules(ruleset: object) -> int:
    """How many rules a loaded rule set holds (0 when it does not say)."""
    rules = getattr(ruleset, "rules", None)
    try:
        return len(rules) if rules is not None else 0
    except TypeError:
        return 0
