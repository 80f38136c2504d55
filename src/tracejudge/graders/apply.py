"""Graders over verdicts: after the deterministic checks, on the runs ``when`` picks.

A grader adds; it never removes. Its ``no`` answers become ``F-GRADER-PROPERTY_FAILED``
findings at its rule's severity, its undecidable properties ``F-EVIDENCE-GRADER_*``
warnings; every deterministic finding stays, so a hard gate that failed still fails the
run whatever the grader said, and a grader's ``yes`` turns nothing into a pass. The
grader rule's outcome (``not_applicable`` from the engine) is replaced by the grader's,
carrying its identity and version as ``tracejudge.grader.*`` attributes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tracejudge import semconv as sc
from tracejudge.engine.checks.grader import (
    GRADER_INSUFFICIENT,
    GRADER_NOT_EVALUATED,
    PROPERTY_FAILED,
    GraderCheck,
)
from tracejudge.engine.engine import order_findings
from tracejudge.engine.rules import Rule, RuleSet
from tracejudge.engine.verdict import (
    LAYERS,
    Finding,
    LayerResult,
    RuleOutcome,
    RuleResult,
    Verdict,
    clip_explanation,
)
from tracejudge.graders.grade import Grader, GraderResult
from tracejudge.graders.spec import GraderSpec
from tracejudge.graders.vote import PropertyVote
from tracejudge.model.run import Run

_RANK: dict[LayerResult, int] = {"not_applicable": 0, "pass": 1, "warn": 2, "fail": 3}
_LAYER: tuple[LayerResult, ...] = ("not_applicable", "pass", "warn", "fail")


@dataclass(frozen=True, slots=True)
class GraderRule:
    """A grader rule of a rule set and the grader that judges it."""

    rule: Rule
    grader: Grader


def grader_specs(ruleset: RuleSet) -> list[tuple[Rule, GraderSpec, str]]:
    """The rule set's grader rules: ``(rule, spec, path in the rules file)``."""
    return [
        (r, r.check.spec, r.check.path) for r in ruleset.rules if isinstance(r.check, GraderCheck)
    ]


def picked(spec: GraderSpec, rule_id: str, run: Run, verdict: Verdict) -> str | None:
    """None when the grader judges ``run``; else why not (its outcome's explanation)."""
    return picked_ids(spec, rule_id, run.trace_id, run.root_span_id, verdict)


def picked_ids(
    spec: GraderSpec, rule_id: str, trace_id: str, root_span_id: str, verdict: Verdict
) -> str | None:
    """``picked`` from the run's ids alone (``when`` reads nothing else of the run)."""
    if verdict.verdict == "error":
        return "not run: the run could not be judged"
    if spec.when == "always":
        return None
    if spec.when == "undecided":
        if any(f.undecided for f in verdict.findings):
            return None
        return "not run: the deterministic checks left nothing undecided (when: undecided)"
    h = hashlib.sha256(f"{rule_id}\x1f{trace_id}\x1f{root_span_id}".encode()).digest()
    if int.from_bytes(h[:8], "big") < spec.fraction * 2**64:
        return None
    return f"not run: outside the sampled fraction {spec.fraction:g} (when: sampled)"


def apply_graders(verdict: Verdict, run: Run, graders: Sequence[GraderRule]) -> Verdict:
    """``verdict`` with each grader that picks ``run`` judged and added (a new ``Verdict``)."""
    if not graders:
        return verdict
    findings = list(verdict.findings)
    outcomes = list(verdict.outcomes)
    tool_names = {s.name for s in run.steps if s.kind == "tool"}
    changed = False
    for g in graders:
        rule = g.rule
        k = next((i for i, o in enumerate(outcomes) if o.rule_id == rule.id), None)
        if k is None:
            continue
        if rule.selector is not None and not rule.selector.matches(run, tool_names):
            continue
        why = picked(g.grader.spec, rule.id, run, verdict)
        if why is not None:
            o = outcomes[k]
            outcomes[k] = RuleOutcome(rule.id, rule.layer, "not_applicable", o.span_id, None, why)
            continue
        result = g.grader.grade(run)
        found = _findings(rule, g.grader.spec, result, run)
        outcomes[k] = _outcome(rule, result, found, run.root_span_id)
        findings.extend(found)
        changed = True
    if not changed:
        return replace(verdict, findings=findings, outcomes=outcomes)
    return _settled(verdict, findings, outcomes, run)


def not_graded(verdict: Verdict, graders: Sequence[GraderRule], reason: str) -> list[RuleOutcome]:
    """The outcome of each grader whose ``when`` picks ``verdict``'s run when no model was
    asked (``reason``: ``budget``, ``shutdown``): every property ``not_evaluated``, the
    outcome ``insufficient_evidence`` (never a pass), with the grader's identity. Rule
    selectors are not read (they need the run, which was not built)."""
    root = verdict.root_span_id
    out = []
    for g in graders:
        rule, spec = g.rule, g.grader.spec
        if picked_ids(spec, rule.id, verdict.trace_id, root, verdict) is not None:
            continue
        votes = tuple(
            PropertyVote(p.id, "not_evaluated", 0.0, (), reason, 0) for p in spec.properties
        )
        result = GraderResult(g.grader.identity, votes, 0, 0, 0, "")
        findings = [
            Finding(
                GRADER_NOT_EVALUATED,
                "warn",
                rule.layer,
                rule.id,
                (root,),
                clip_explanation(f"{p.id}: {p.question} (grader: not_evaluated) {reason}"),
                None,
                absent=True,
            )
            for p in spec.properties
        ]
        out.append(_outcome(rule, result, findings, root))
    return out


def _findings(rule: Rule, spec: GraderSpec, result: GraderResult, run: Run) -> list[Finding]:
    steps = {s.span_id.lower(): i for i, s in enumerate(run.steps)}
    root = run.root_span_id
    questions = {p.id: p.question for p in spec.properties}
    out = []
    for v in result.votes:
        said = f"{v.id}: {questions[v.id]}"
        agree = f"{v.agreement:.0%} of {result.samples}"
        if v.label == "no":
            at = [steps[s] for s in v.span_ids if s in steps]
            out.append(
                Finding(
                    PROPERTY_FAILED,
                    rule.severity,
                    rule.layer,
                    rule.id,
                    v.span_ids,
                    clip_explanation(f"{said} (grader: no, {agree}) {v.reason}".strip()),
                    min(at) if at else len(run.steps),
                )
            )
        elif v.label in ("insufficient_evidence", "not_evaluated"):
            code = (
                GRADER_INSUFFICIENT if v.label == "insufficient_evidence" else GRADER_NOT_EVALUATED
            )
            out.append(
                Finding(
                    code,
                    "warn",
                    rule.layer,
                    rule.id,
                    (root,),
                    clip_explanation(f"{said} (grader: {v.label}) {v.reason}".strip()),
                    None,
                    absent=True,
                )
            )
    return out


def _outcome(rule: Rule, result: GraderResult, findings: list[Finding], root: str) -> RuleOutcome:
    ident = result.identity
    labels: RuleResult
    if any(f.code == PROPERTY_FAILED for f in findings):
        labels = "fail" if rule.severity == "fail" else "warn"
    elif findings:
        labels = "insufficient_evidence"
    else:
        labels = "pass"
    score = 1.0 if labels == "pass" else 0.0 if labels == "fail" else None
    first = findings[0] if findings else None
    attrs = (
        (sc.TRACEJUDGE_GRADER_PROVIDER, ident.provider),
        (sc.TRACEJUDGE_GRADER_MODEL, ident.model),
        (sc.TRACEJUDGE_GRADER_PROMPT_HASH, ident.prompt_hash),
        (sc.TRACEJUDGE_GRADER_RENDERING_VERSION, ident.rendering_version),
        (sc.TRACEJUDGE_GRADER_SAMPLES, result.samples),
        (sc.TRACEJUDGE_GRADER_AGREEMENT, min((v.agreement for v in result.votes), default=0.0)),
        (sc.TRACEJUDGE_GRADER_CACHED, result.cached),
        (sc.TRACEJUDGE_GRADER_CITATIONS_DROPPED, result.dropped),
        (sc.TRACEJUDGE_GRADER_PROPERTIES, tuple(f"{v.id}={v.label}" for v in result.votes)),
    )
    span = first.span_ids[0] if first is not None and first.span_ids else root
    expl = first.explanation if first is not None else ""
    return RuleOutcome(rule.id, rule.layer, labels, span, score, expl, attrs)


def _settled(v: Verdict, findings: list[Finding], outcomes: list[RuleOutcome], run: Run) -> Verdict:
    """``v`` with ``findings`` and ``outcomes``, and its layers, overall result and primary
    again from every finding (none removed)."""
    order_findings(findings, len(run.steps))
    ranks = {layer: _RANK[v.layers.get(layer, "not_applicable")] for layer in LAYERS}
    for o in outcomes:
        if o.attributes:  # the graders'
            r = 3 if o.result == "fail" else 2 if o.result != "pass" else 1
            if o.result == "not_applicable":
                r = 0
            ranks[o.layer] = max(ranks[o.layer], r)
    hard = any(f.severity == "fail" for f in findings)
    return replace(
        v,
        findings=findings,
        outcomes=outcomes,
        layers={layer: _LAYER[r] for layer, r in ranks.items()},
        verdict="fail" if hard else "warn" if findings else "pass",
        primary=findings[0] if findings else None,
    )
