"""The ``tracejudge`` command line. Each subcommand lives in its own module.

Subcommands are imported only when they run: ``serve`` pulls in grpcio and aiohttp, and
``eval`` in CI should not pay for them.
"""

from __future__ import annotations

import importlib

import click

from tracejudge import __version__

# name -> "module:attribute"; keep sorted.
_COMMANDS = {
    "baseline": "tracejudge.cli.baseline:baseline_group",
    "cases": "tracejudge.cli.cases:cases_group",
    "compare": "tracejudge.cli.compare:compare_command",
    "demo": "tracejudge.cli.demo:demo",
    "eval": "tracejudge.cli.eval:eval_command",
    "gate": "tracejudge.cli.gate:gate_command",
    "queue": "tracejudge.cli.queue:queue_group",
    "report": "tracejudge.cli.report:report_command",
    "rules": "tracejudge.cli.rules:rules_group",
    "serve": "tracejudge.cli.serve:serve",
    "validate": "tracejudge.cli.validate:validate_command",
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracejudge")
def main() -> None:
    """Judge what AI agents did, not what they said."""
