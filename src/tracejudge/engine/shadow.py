"""Shadow runs: a candidate answering a copy of a real request, compared with the stable run.

A run is a shadow when its agent span sets ``tracejudge.run.shadow``; the stable run and
its shadow carry the same ``tracejudge.request.id``. Once both are judged, the shadow's
trajectory is diffed against the stable run's exactly as a run is diffed against its
case's baseline (``engine.trajectory.diff_trajectory``: one code path), and the result is
a ``ShadowReport`` of its own, with ``F-SHADOW-*`` findings: the shadow's verdict is its own
judgement, the report is how it differs from what users got.

Outcomes: ``paired`` (the trajectories agree), ``diverged`` (they differ), ``unpaired``
(no stable run of the request was judged in time, or the shadow names no request, or one
of the two could not be judged). The collector pairs as verdicts are decided and reports a
shadow unpaired after ``shadow_wait`` (``collector/processors/shadow.py``); ``tracejudge
eval`` pairs over the runs of its files (``pair_verdicts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from tracejudge.engine.rules import RuleSet
from tracejudge.engine.trajectory import ArgRule, DivergenceKind, diff_trajectory
from tracejudge.engine.verdict import Finding, Severity, Verdict, clip_explanation

ShadowOutcome: TypeAlias = Literal["paired", "diverged", "unpaired"]
OUTCOMES: tuple[ShadowOutcome, ...] = ("paired", "diverged", "unpaired")
SHADOW_RULE_ID = "tracejudge.shadow"
"""The rule id on shadow findings (they come from pairing, not from a rule of the file)."""
RECORD = "shadow"
"""The ``record`` key of a shadow report's JSON line (verdict lines have no ``record``)."""
UNPAIRED = "F-SHADOW-UNPAIRED"

_CODES: dict[DivergenceKind, str] = {
    "missing_call": "F-SHADOW-MISSING_CALL",
    "unexpected_call": "F-SHADOW-UNEXPECTED_CALL",
    "arg_drift": "F-SHADOW-ARG_DRIFT",
    "terminal_action": "F-SHADOW-TERMINAL_ACTION",
}
CODES: tuple[str, ...] = (*_CODES.values(), UNPAIRED)
"""Every code a shadow report can carry (the failure-code reference documents them)."""


@dataclass(slots=True)
class ShadowReport:
    """What pairing one shadow run found."""

    outcome: ShadowOutcome
    shadow: Verdict
    stable: Verdict | None = None
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""
    """Why an unpaired shadow is unpaired (empty when paired)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON line written beside the verdict lines (``record: "shadow"``)."""
        out: dict[str, Any] = {
            "record": RECORD,
            "request_id": self.shadow.request_id,
            "outcome": self.outcome,
            "shadow": _side(self.shadow),
            "stable": None if self.stable is None else _side(self.stable),
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.reason:
            out["reason"] = self.reason
        return out


def _side(v: Verdict) -> dict[str, Any]:
    return {
        "trace_id": v.trace_id,
        "root_span_id": v.root_span_id,
        "agent": v.agent,
        "variant": v.variant,
        "agent_version": v.agent_version,
        "verdict": v.verdict,
    }


def compare(
    shadow: Verdict, stable: Verdict, arguments: Mapping[str, Mapping[str, ArgRule]]
) -> ShadowReport:
    """Diff the shadow's trajectory against the stable run's (a missing call or another
    terminal action is a ``fail`` finding, an extra call or drifted arguments a ``warn``)."""
    if shadow.trajectory is None or stable.trajectory is None:
        which = "shadow" if shadow.trajectory is None else "stable"
        return unpaired(
            shadow, f"the {which} run of request {shadow.request_id} could not be judged", stable
        )
    diffs = diff_trajectory(
        shadow.trajectory,
        stable.trajectory.expected_calls(),
        stable.trajectory.terminal_action,
        arguments,
        "stable run",
    )
    findings = [
        Finding(
            code=_CODES[d.kind],
            severity=_severity(d.soft),
            layer="trajectory",
            rule_id=SHADOW_RULE_ID,
            span_ids=tuple(s.lower() for s in d.span_ids if s),
            explanation=clip_explanation(d.explanation),
            step_index=d.step_index,
            absent=d.absent,
        )
        for d in diffs
    ]
    return ShadowReport("diverged" if findings else "paired", shadow, stable, findings)


def _severity(soft: bool) -> Severity:
    return "warn" if soft else "fail"


def unpaired(shadow: Verdict, reason: str, stable: Verdict | None = None) -> ShadowReport:
    """A shadow that could not be compared, with one ``F-SHADOW-UNPAIRED`` finding."""
    finding = Finding(
        code=UNPAIRED,
        severity="warn",
        layer="trajectory",
        rule_id=SHADOW_RULE_ID,
        span_ids=(shadow.root_span_id.lower(),) if shadow.root_span_id else (),
        explanation=clip_explanation(reason),
        absent=True,
    )
    return ShadowReport("unpaired", shadow, stable, [finding], reason)


def no_request(shadow: Verdict) -> ShadowReport:
    """The report of a shadow that names no request id (its verdict says why too:
    ``F-EVIDENCE-SHADOW_NO_REQUEST``)."""
    return unpaired(shadow, "shadow run without a request id: nothing to pair it with")


def pair_verdicts(
    verdicts: Sequence[Verdict], arguments: Mapping[str, Mapping[str, ArgRule]]
) -> list[ShadowReport]:
    """Pair every shadow verdict with the first stable verdict of its request (the offline
    form: every run of the files is there, so a missing partner is unpaired at once)."""
    stable: dict[str, Verdict] = {}
    for v in verdicts:
        if not v.shadow and v.request_id is not None:
            stable.setdefault(v.request_id, v)
    out: list[ShadowReport] = []
    for v in verdicts:
        if not v.shadow:
            continue
        if v.request_id is None:
            out.append(no_request(v))
            continue
        partner = stable.get(v.request_id)
        if partner is None:
            out.append(unpaired(v, f"no stable run of request {v.request_id} in the input"))
        else:
            out.append(compare(v, partner, arguments))
    return out


def shadow_arguments(ruleset: RuleSet | None) -> dict[str, dict[str, ArgRule]]:
    """The argument rules (``ignore`` / tolerances) of the rule set's ``baseline`` rule, so
    a shadow is compared with the same allowances as a baseline; none without one."""
    if ruleset is None:
        return {}
    for rule in ruleset.rules:
        args = getattr(rule.check, "arguments", None) if rule.check_type == "baseline" else None
        if isinstance(args, dict):
            return args
    return {}


def summary(reports: Sequence[ShadowReport]) -> dict[str, int]:
    """How many reports per outcome (every outcome present, 0 when none)."""
    counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for r in reports:
        counts[r.outcome] += 1
    return counts


def shadow_lines(reports: Sequence[ShadowReport]) -> list[str]:
    """The text form (``eval``'s table): a count line, then one line per shadow that did
    not agree with its stable run, naming its first finding. Nothing without shadows."""
    if not reports:
        return []
    counts = summary(reports)
    out = ["shadow runs: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)]
    for r in reports:
        if r.outcome == "paired":
            continue
        first = r.findings[0] if r.findings else None
        what = f"{first.code}: {first.explanation}" if first is not None else r.reason
        more = f" (+{len(r.findings) - 1} more)" if len(r.findings) > 1 else ""
        out.append(
            f"  {r.outcome} shadow {r.shadow.trace_id[:12]} of request "
            f"{r.shadow.request_id or '-'}: {what}{more}"
        )
    return out
