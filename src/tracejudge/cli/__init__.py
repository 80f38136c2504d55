"""The ``tracejudge`` command line. Each subcommand lives in its own module."""

from __future__ import annotations

import click

from tracejudge import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracejudge")
def main() -> None:
    """Judge what AI agents did, not what they said."""


# Subcommands register themselves below, one line each (keep sorted).
from tracejudge.cli.serve import serve  # noqa: E402

main.add_command(serve)
from tracejudge.cli.demo import demo  # noqa: E402

main.add_command(demo)
from tracejudge.cli.eval import eval_command  # noqa: E402

main.add_command(eval_command)
from tracejudge.cli.rules import rules_group  # noqa: E402

main.add_command(rules_group)
from tracejudge.cli.baseline import baseline_group  # noqa: E402

main.add_command(baseline_group)
from tracejudge.cli.report import report_command  # noqa: E402

main.add_command(report_command)
