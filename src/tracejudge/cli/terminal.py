"""What the terminal the commands print to can take: colour, and its width.

Colour only on a terminal, and never when ``NO_COLOR`` is set to anything but the empty
string (https://no-color.org); the width only on a terminal, so piped output is whole.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import click


def colour_wanted(stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to ``stream`` (default stdout)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    out = sys.stdout if stream is None else stream
    return out.isatty()


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The columns of the terminal ``stream`` (default stdout) is, or None when it is not a
    terminal (a pipe or a file gets whole lines)."""
    out = sys.stdout if stream is None else stream
    if not out.isatty():
        return None
    return shutil.get_terminal_size().columns


def text_or_json(json_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--format text|json`` option (parameter ``fmt``) of a command whose text is for
    people and whose JSON is for programs; ``json_help`` says what the JSON is."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=f"json: {json_help}",
    )
