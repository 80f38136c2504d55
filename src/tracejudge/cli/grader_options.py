"""The grader options ``eval`` and ``validate`` share, declared once (a light module: the
commands import the graders themselves only when they run them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


def grader_options(command: F) -> F:
    """``--graders/--no-graders``, ``--grader-cache DIR``, ``--grader-workers N``."""
    options = (
        click.option(
            "--graders/--no-graders",
            "run_graders",
            default=True,
            show_default=True,
            help="Run the rules file's grader rules (a model answers their rubric; keys from "
            "the environment, OPENAI_API_KEY/ANTHROPIC_API_KEY or the grader's api_key_env). "
            "--no-graders leaves them not_applicable.",
        ),
        click.option(
            "--grader-cache",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Directory of graders' answers: re-judging the same runs with the same "
            "grader (model, rubric, rendering) reads them instead of asking the model.",
        ),
        click.option(
            "--grader-workers",
            type=click.IntRange(1, 64),
            default=4,
            show_default=True,
            help="Runs judged by graders at a time (their model calls wait on the network).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command
