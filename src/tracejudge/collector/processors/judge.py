"""The judge seam: anything that turns a trace's spans into verdicts.

The collector depends on this Protocol, not on the engine, so tests and embedders can
plug in their own; ``load_judge`` builds the real engine from a rules file.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tracejudge.engine.verdict import Verdict
from tracejudge.model.spans import SpanRecord

logger = logging.getLogger(__name__)


class Judge(Protocol):
    """Judges the spans of one finished trace; one verdict per agent run found.

    With ``--conversation-wait`` the spans may be those of several traces, every trace of
    one conversation; runs that share a conversation id are then expected to be judged as
    one run (the engine merges them as ``tracejudge eval`` does)."""

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        """Verdicts for the runs in ``spans`` (may be empty when the trace holds no run)."""
        ...


def load_judge(
    rules: Path,
    baselines: Path | None = None,
    cases: Path | None = None,
    *,
    strict: bool = False,
) -> Judge:
    """The real engine for a rules file (and optional baselines directory and cases file);
    a bad file raises (fail fast at start). ``strict``: undecided findings take their
    rule's severity (``Engine(strict=True)``)."""
    from tracejudge.engine import BaselineStore, Engine, load_cases, load_rules

    store = BaselineStore(baselines) if baselines is not None else None
    ruleset = load_rules(rules)
    for warning in ruleset.warnings:
        logger.warning("tracejudge serve: %s: %s", rules, warning)
    case_set = load_cases(cases) if cases is not None else None
    if case_set is not None:
        for warning in case_set.tool_warnings(ruleset.tools):
            logger.warning("tracejudge serve: %s: %s", cases, warning)
    if store is None:
        from tracejudge.engine.rules import without_baselines_note

        note = without_baselines_note(ruleset)
        if note is not None:
            logger.warning("tracejudge serve: %s; add --baselines DIR", note)
    engine: Judge = Engine(ruleset, store, case_set, strict=strict)
    return engine
