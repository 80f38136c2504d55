"""The error a rules file raises: every problem at once, each with its path."""

from __future__ import annotations


class RulesError(ValueError):
    """A rules file is invalid; ``errors`` lists every problem as ``path: message``.

    ``path`` locates the problem inside the file (``rules[2].check.tool``, ``line 3,
    column 1``); a problem with the file as a whole (unreadable, too big) has no path, so
    callers that prefix the file name print ``rules.yaml: cannot read: ...``.

    Rule authors fix files in one pass when they see all problems together, so the loader
    never stops at the first one.
    """

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = list(errors)
        if len(self.errors) == 1:
            super().__init__(f"{source}: {self.errors[0]}")
            return
        shown = "\n  ".join(self.errors)
        super().__init__(f"{source}: {len(self.errors)} error(s) in rules file:\n  {shown}")
