"""The evaluator seam: one small class per check type, built from its rules-file params."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta


class Check(Protocol):
    """Evaluates one rule's check against one run, writing findings into ``report``.

    Implementations precompile everything in their factory and keep ``evaluate`` to one
    pass over the run's steps where they can.
    """

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Judge ``ctx.run``; record failures and missing evidence in ``report``."""


Factory = Callable[[dict[str, Any], str, Compiler, dict[str, ToolMeta]], Check | None]
"""``(params, path, compiler, tools) -> Check`` (None after recording errors on ``compiler``)."""


def names(value: Any) -> frozenset[str]:
    """A name or a list of names as a set."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    return frozenset(str(v) for v in value)


def short(value: Any, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters, for explanations."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
