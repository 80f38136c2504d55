"""The error a command stops on when its input or configuration is wrong.

Click's ``UsageError`` prints the command's usage banner (``Usage: ... Try --help``) above
the message: right for a mistyped option, noise for a rules file that does not exist or a
queue directory with no queue. This one prints ``Error: message`` alone and exits 2, the
status every command gives bad input.
"""

from __future__ import annotations

import click

EXIT_INPUT = 2


class InputError(click.ClickException):
    """Bad input or configuration: ``Error: message`` on stderr, exit status 2."""

    exit_code = EXIT_INPUT
