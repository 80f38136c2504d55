"""The ``grader`` check: a rubric a model answers, above the deterministic checks.

The engine never calls a model. On its own pass a grader rule is ``not_applicable`` (the
CLI says so once when graders are not run); ``tracejudge.graders.apply_graders`` runs it
afterwards on the runs its ``when`` picks and writes its outcome and findings, with the
codes declared here.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params
from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta
from tracejudge.graders.spec import PARAMS_PROPERTIES, GraderSpec

PROPERTY_FAILED = "F-GRADER-PROPERTY_FAILED"
"""The judge answered no to a property, citing the spans that show it."""
GRADER_INSUFFICIENT = "F-EVIDENCE-GRADER_INSUFFICIENT"
"""The judge said the evidence cannot decide a property (or split, or cited nothing real)."""
GRADER_NOT_EVALUATED = "F-EVIDENCE-GRADER_NOT_EVALUATED"
"""No readable answer (malformed, refusal, timeout, 429): never a pass, never a zero."""


class GraderCheck:
    """Holds the grader's spec; judged later by ``apply_graders``, never by the engine."""

    def __init__(self, spec: GraderSpec, path: str) -> None:
        self.spec = spec
        self.path = path
        """Where the check sits in its rules file (``rules[3].check``), for later errors."""

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """``not_applicable`` until ``apply_graders`` judges it."""
        report.not_applicable = True


def _grader(
    p: dict[str, Any], path: str, comp: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    props = p.get("properties") or []
    if not props:
        comp.error(
            f"{path}.properties",
            "a grader needs at least one property (a yes/no question with an observable "
            "anchor, such as 'every claimed action is backed by a successful tool result')",
        )
        return None
    seen: set[str] = set()
    for k, item in enumerate(props):
        if item["id"] in seen:
            comp.error(f"{path}.properties[{k}].id", f"duplicate property id {item['id']!r}")
        seen.add(item["id"])
    bad = len(seen) < len(props)
    if p.get("when") == "sampled" and "fraction" not in p:
        comp.error(f"{path}.fraction", "when: sampled needs a fraction (0 < fraction <= 1)")
        bad = True
    for k, pattern in enumerate(p.get("redact") or ()):
        try:
            re.compile(pattern)
        except re.error as exc:
            comp.error(f"{path}.redact[{k}]", f"invalid regular expression: {exc}")
            bad = True
    if bad:
        return None
    return GraderCheck(GraderSpec.from_params(p), path)


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="grader",
        doc="A model answers a rubric of yes/no properties about the run, citing span ids "
        "(run by eval with graders, above the deterministic checks).",
        params=check_params(PARAMS_PROPERTIES, ("model", "properties")),
        factory=_grader,
        codes=(PROPERTY_FAILED, GRADER_INSUFFICIENT, GRADER_NOT_EVALUATED),
    ),
)
