"""The judging engine: rules over runs, producing verdicts.

``load_rules``/``load_rules_text`` compile a rules file into a ``RuleSet``; ``Engine``
judges ``Run``s (or one trace's spans) into ``Verdict``s; ``BaselineStore`` keeps the
reviewed per-case baselines the ``baseline`` check diffs against; ``load_cases`` compiles a
cases file into the ``CaseSet`` the ``case`` check judges runs against.
"""

from __future__ import annotations

from tracejudge.engine.baseline import BaselineError, BaselineStore
from tracejudge.engine.cases import CasesError, CaseSet, load_cases, load_cases_text
from tracejudge.engine.engine import Engine
from tracejudge.engine.errors import RulesError
from tracejudge.engine.rules import Rule, RuleSet, load_rules, load_rules_text
from tracejudge.engine.verdict import Finding, RuleOutcome, Verdict, clip_explanation

__all__ = [
    "BaselineError",
    "BaselineStore",
    "CaseSet",
    "CasesError",
    "Engine",
    "Finding",
    "Rule",
    "RuleOutcome",
    "RuleSet",
    "RulesError",
    "Verdict",
    "clip_explanation",
    "load_cases",
    "load_cases_text",
    "load_rules",
    "load_rules_text",
]
