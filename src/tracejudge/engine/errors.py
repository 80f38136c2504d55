"""The error a rules file raises: every problem at once, each with its path."""

from __future__ import annotations


class RulesError(ValueError):
    """A rules file is invalid; ``errors`` lists every problem as ``path: message``.

    Rule authors fix files in one pass when they see all problems together, so the loader
    never stops at the first one.
    """

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = list(errors)
        shown = "\n  ".join(self.errors)
        super().__init__(f"{source}: {len(self.errors)} error(s) in rules file:\n  {shown}")
