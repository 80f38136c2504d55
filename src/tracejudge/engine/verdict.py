"""Verdicts: what the engine concludes about one run, and how it is written out.

The JSON shape of ``Verdict.to_dict`` is a public contract (``tracejudge eval --format
json``, the collector's JSON-lines stream): keep the names stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from tracejudge.engine.trajectory import Trajectory
from tracejudge.model.spans import AttrValue
from tracejudge.semconv import (
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
)

Layer: TypeAlias = Literal["outcome", "trajectory", "policy", "budget"]
LAYERS: tuple[Layer, ...] = ("outcome", "trajectory", "policy", "budget")
LayerResult: TypeAlias = Literal["pass", "warn", "fail", "not_applicable"]
Overall: TypeAlias = Literal["pass", "warn", "fail", "error"]
Severity: TypeAlias = Literal["fail", "warn"]
"""``fail``: a hard gate failed. ``warn``: a soft check failed or evidence was insufficient."""
RuleResult: TypeAlias = Literal[
    "pass", "fail", "warn", "not_applicable", "insufficient_evidence", "undecided"
]
"""``undecided``: a heuristic of the rule could not decide (see ``Finding.undecided``)."""

EXPLANATION_MAX_BYTES = 512
"""Tempo truncates long attributes; explanations are cut to this many UTF-8 bytes."""


def clip_explanation(text: str, limit: int = EXPLANATION_MAX_BYTES) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes without splitting a character."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    cut = raw[: limit - 3].decode("utf-8", errors="ignore")
    return cut + "..."


@dataclass(slots=True, frozen=True)
class Finding:
    """One thing wrong with a run, with the spans that prove it."""

    code: str
    severity: Severity
    layer: Layer
    rule_id: str
    span_ids: tuple[str, ...]
    explanation: str
    step_index: int | None = None
    """Index in ``Run.steps`` of the step where the failure happened (orders causality)."""
    absent: bool = False
    """About something that never happened (a missing call) or the run as a whole: it has
    no step of its own, so it ranks after failures observed at a step."""
    undecided: bool = False
    """A heuristic could not decide (an ambiguous yes, a claim whose backing is unclear):
    ``warn``, or ``fail`` when the engine is strict. Its explanation cites the sentence."""

    def to_dict(self) -> dict[str, Any]:
        """The public JSON form (``undecided: true`` only on undecided findings)."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "layer": self.layer,
            "rule": self.rule_id,
            "span_ids": list(self.span_ids),
            "explanation": clip_explanation(self.explanation),
        }
        if self.undecided:
            out["undecided"] = True
        return out


@dataclass(slots=True)
class RuleOutcome:
    """The result of one rule on one run; becomes one ``gen_ai.evaluation.result`` event.

    Not frozen: one is built per rule per run on the collector's hot path, and a frozen
    dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
    (4x the cost in the compiled build: docs/performance.md). Treat it as read-only:
    a changed one is made with ``dataclasses.replace``.
    """

    rule_id: str
    layer: Layer
    result: RuleResult
    span_id: str
    score: float | None = None
    explanation: str = ""
    attributes: tuple[tuple[str, AttrValue], ...] = ()
    """Further attributes of its ``gen_ai.evaluation.result`` (a grader's identity and
    version, ``tracejudge.grader.*``); empty for the deterministic checks."""


@dataclass(slots=True)
class Verdict:
    """The judgement of one run.

    Not frozen: one is built per run on the collector's hot path, and a frozen
    dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
    (4x the cost in the compiled build: docs/performance.md). Treat it as read-only:
    a changed one is made with ``dataclasses.replace``.
    """

    trace_id: str
    root_span_id: str
    verdict: Overall
    layers: dict[str, LayerResult]
    agent: str | None = None
    case_id: str | None = None
    variant: str | None = None
    run_id: str | None = None
    experiment_id: str | None = None
    primary: Finding | None = None
    findings: list[Finding] = field(default_factory=list)
    outcomes: list[RuleOutcome] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    rules_version: str = ""
    error: str | None = None
    agent_version: str | None = None
    """``gen_ai.agent.version`` of the run's agent (a label of the verdict metrics)."""
    request_id: str | None = None
    """``tracejudge.request.id`` of the run (pairs a shadow run with its stable run)."""
    shadow: bool = False
    """The run is a shadow: never counted as user traffic (gate window, ``tracejudge.runs``)."""
    trajectory: Trajectory | None = None
    """What shadow pairing compares (successful calls, terminal action), kept only for runs
    with a request id; not part of the JSON form."""

    def to_dict(self) -> dict[str, Any]:
        """The public JSON form (one line per run in ``--format json``)."""
        primary = None
        if self.primary is not None:
            primary = {
                "code": self.primary.code,
                "span_id": self.primary.span_ids[0] if self.primary.span_ids else None,
                "explanation": clip_explanation(self.primary.explanation),
            }
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "root_span_id": self.root_span_id,
            "agent": self.agent,
            "case_id": self.case_id,
            "variant": self.variant,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "verdict": self.verdict,
            "layers": dict(self.layers),
            "primary": primary,
            "findings": [f.to_dict() for f in self.findings],
            "metrics": dict(self.metrics),
            "rules_version": self.rules_version,
        }
        undecided = sum(1 for f in self.findings if f.undecided)
        if undecided:
            out["undecided"] = undecided  # additive: the count of undecided findings
        if self.agent_version is not None:
            out["agent_version"] = self.agent_version  # additive: only when the run names one
        if self.request_id is not None:
            out["request_id"] = self.request_id  # additive, like agent_version
        if self.shadow:
            out["shadow"] = True
        if self.error is not None:
            out["error"] = self.error
        graded = [o for o in self.outcomes if o.attributes]
        if graded:  # additive: the graders' outcomes, as their gen_ai.evaluation.result
            out["evaluations"] = [evaluation_attributes(o) for o in graded]
        return out


def evaluation_attributes(o: RuleOutcome) -> dict[str, Any]:
    """The attributes of an outcome's ``gen_ai.evaluation.result`` (the semconv keys)."""
    out: dict[str, Any] = {GEN_AI_EVALUATION_NAME: o.rule_id}
    if o.score is not None:
        out[GEN_AI_EVALUATION_SCORE_VALUE] = o.score
    out[GEN_AI_EVALUATION_SCORE_LABEL] = o.result
    if o.explanation:
        out[GEN_AI_EVALUATION_EXPLANATION] = clip_explanation(o.explanation)
    for key, value in o.attributes:
        out[key] = list(value) if isinstance(value, tuple | list) else value
    return out
