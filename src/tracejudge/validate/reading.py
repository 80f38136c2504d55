"""What a judge said of one run on one axis: ``pass``, ``fail``, ``undecided`` or
``not_evaluated``.

A judge is anything that produces verdicts: the deterministic rules, the cases file, a
grader check, or verdicts written earlier (``eval --output``, the collector's JSON lines).
``validate`` compares its reading on each axis with the labels. An axis reads either the
whole verdict or the findings of some of its rules (``AxisReading``), so one judged run can
be measured on the policy axis by its rules and on task success by its case.

- ``fail``: a hard finding (severity ``fail``) among those the axis reads;
- ``undecided``: none, but a heuristic (or grader) said it could not decide;
- ``not_evaluated``: the run could not be judged (``verdict: error``): never a pass;
- ``pass``: otherwise (``warn`` findings that are not undecided included, as ``eval``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

Outcome: TypeAlias = Literal["pass", "fail", "undecided", "not_evaluated"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "undecided", "not_evaluated")


class FindingLike(Protocol):
    """What a reading needs of a finding (``engine.verdict.Finding`` or one read back)."""

    @property
    def rule_id(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def undecided(self) -> bool: ...


@dataclass(slots=True, frozen=True)
class JudgedRun:
    """One run as judged by some verdict source, reduced to what validation reads."""

    run: str
    """The run id (or trace id when the run has none): what labels name."""
    trace_id: str
    verdict: str
    """``pass``, ``warn``, ``fail`` or ``error``."""
    findings: tuple[FindingLike, ...]
    case_id: str | None = None
    primary: str | None = None
    """The primary finding as ``severity CODE (rule) span``, for the disagreement list."""
    version: str = ""
    """The judge's version stamped on the verdict (``rules_version``): figures hold for it."""


class AxisReading(Protocol):
    """How one axis reads a judged run."""

    def read(self, run: JudgedRun) -> Outcome: ...

    def describe(self) -> str: ...


def _outcome(verdict: str, findings: Iterable[FindingLike]) -> Outcome:
    if verdict == "error":
        return "not_evaluated"
    undecided = False
    for f in findings:
        if f.severity == "fail":
            return "fail"
        undecided = undecided or f.undecided
    return "undecided" if undecided else "pass"


@dataclass(slots=True, frozen=True)
class WholeVerdict:
    """The axis reads the whole verdict: every finding of every rule."""

    def read(self, run: JudgedRun) -> Outcome:
        return _outcome(run.verdict, run.findings)

    def describe(self) -> str:
        return "the whole verdict"


@dataclass(slots=True, frozen=True)
class RuleFindings:
    """The axis reads only the findings of rules whose id matches one of ``patterns``
    (shell-style: ``confirm-*``), or, with ``exclude``, of every other rule."""

    patterns: tuple[str, ...]
    exclude: bool = False
    label: str = ""

    def matches(self, rule_id: str) -> bool:
        hit = any(fnmatch.fnmatchcase(rule_id, p) for p in self.patterns)
        return hit != self.exclude

    def read(self, run: JudgedRun) -> Outcome:
        return _outcome(run.verdict, (f for f in run.findings if self.matches(f.rule_id)))

    def describe(self) -> str:
        if self.label:
            return self.label
        which = ", ".join(self.patterns)
        return f"findings of rules other than {which}" if self.exclude else f"rules {which}"


def parse_reading(text: str, case_rules: tuple[str, ...]) -> AxisReading:
    """An ``--axis`` value's reading: ``all`` (the whole verdict), ``rules`` (every rule
    but the case checks), ``cases`` (the case checks: ``case_rules``), or comma-separated
    rule-id patterns (``confirm-*,no-*``). Raises ``ValueError`` on an empty value."""
    text = text.strip()
    if text == "all":
        return WholeVerdict()
    if text == "rules":
        return RuleFindings(case_rules, exclude=True, label="the rules (not the cases)")
    if text == "cases":
        return RuleFindings(case_rules, label="the cases")
    patterns = tuple(p.strip() for p in text.split(",") if p.strip())
    if not patterns:
        raise ValueError("an axis reading is all, rules, cases or rule-id patterns")
    return RuleFindings(patterns)
