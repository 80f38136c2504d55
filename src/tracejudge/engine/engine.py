"""The engine: every rule over a run, then one verdict with its earliest causal failure.

Hard gates and soft checks are kept apart: any hard (severity ``fail``) finding fails the
run, whatever else passed; soft findings can only make it ``warn``. Nothing is averaged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from tracejudge.engine.checks.case import CASE_RULE_ID, CaseCheck
from tracejudge.engine.context import Item, Report, RunContext
from tracejudge.engine.evidence import EVIDENCE_RULE_ID, evidence_findings
from tracejudge.engine.rules import Rule, RuleSet, Selector
from tracejudge.engine.trajectory import trajectory_of
from tracejudge.engine.verdict import (
    LAYERS,
    Finding,
    Layer,
    LayerResult,
    Overall,
    RuleOutcome,
    RuleResult,
    Verdict,
    clip_explanation,
)
from tracejudge.model.build import build_runs
from tracejudge.model.conversation import merge_conversations
from tracejudge.model.run import Run

if TYPE_CHECKING:
    from tracejudge.engine.baseline import BaselineStore
    from tracejudge.engine.cases import CaseSet
    from tracejudge.model.spans import SpanRecord

log = logging.getLogger(__name__)
_GIL_SLICE = 0.002
"""Judging longer than this (2 ms) offers the GIL to other threads between rules."""
_LAYER_RANK = {"trajectory": 0, "policy": 1, "outcome": 2, "budget": 3}


class JudgeTimeout(Exception):
    """Judging took more of its thread's CPU time than ``judge_spans_within`` allowed."""


@dataclass(frozen=True, slots=True)
class Budget:
    """The CPU time one ``judge_spans_within`` call may take."""

    deadline: float
    """``time.thread_time()`` past which judging stops."""
    seconds: float
    """The budget as given (quoted in the verdict)."""


class Engine:
    """Judges runs against a compiled ``RuleSet`` (and an optional ``BaselineStore`` and
    ``CaseSet``).

    Given cases and a rule set without a ``case`` rule, the engine judges every run with an
    implicit one (id ``tracejudge.case``, layer outcome, severity fail): handing the engine
    a cases file is asking for runs to be judged against it.

    ``strict``: an undecided finding (a heuristic that could not decide) takes its rule's
    severity instead of ``warn``, so a ``fail`` rule fails the run (``eval --strict``).
    """

    def __init__(
        self,
        ruleset: RuleSet,
        baselines: BaselineStore | None = None,
        cases: CaseSet | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self.ruleset = ruleset
        self.baselines = baselines
        self.cases = cases
        self.strict = strict
        self._plan_of: RuleSet | None = None
        self._plan_cases = False
        self._plan: tuple[_Step, ...] = ()

    def _steps(self) -> tuple[_Step, ...]:
        """Per rule, what the loop reads, looked up once (rebuilt if ``ruleset`` changes)."""
        with_cases = self.cases is not None
        if self._plan_of is not self.ruleset or self._plan_cases != with_cases:
            rules = self.ruleset.rules
            if with_cases and not any(r.check_type == "case" for r in rules):
                rules = (*rules, implicit_case_rule())
            several = sum(1 for r in rules if r.check_type in METRIC_CHECKS) > 1
            self._plan = tuple(
                (r.id, r.layer, r.selector, r.check.evaluate, r, f"{r.id}." if several else "")
                for r in rules
            )
            self._plan_of = self.ruleset
            self._plan_cases = with_cases
        return self._plan

    def judge(self, run: Run, budget: Budget | None = None) -> Verdict:
        """The verdict on one run. Never raises: an internal error is ``verdict="error"``,
        and so is a run not judged within ``budget`` (see ``judge_spans_within``)."""
        try:
            return self._judge(run, budget)
        # Each handler names its exception differently: mypyc types a name once per function,
        # so a second ``as exc`` would be checked as a JudgeTimeout and raise TypeError.
        except JudgeTimeout as timeout:  # expected, and said in the verdict: no traceback
            return self._error(
                run.trace_id,
                run.root_span_id,
                timeout,
                agent=run.agent_name,
                case_id=run.case_id,
                variant=run.variant_id,
                agent_version=run.agent_version,
                request_id=run.request_id,
                shadow=run.shadow,
            )
        except Exception as exc:  # a bug in a check must not take the collector down
            log.exception("tracejudge: judging trace %s failed", getattr(run, "trace_id", "?"))
            return self._error(
                str(getattr(run, "trace_id", "")),
                str(getattr(run, "root_span_id", "")),
                exc,
                agent=getattr(run, "agent_name", None),
                case_id=getattr(run, "case_id", None),
                variant=getattr(run, "variant_id", None),
                agent_version=getattr(run, "agent_version", None),
                request_id=getattr(run, "request_id", None),
                shadow=getattr(run, "shadow", False) is True,
            )

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        """Build the runs in ``spans`` and judge each: one trace's spans, or every trace of
        a conversation the collector held (``--conversation-wait``). Runs that share
        ``gen_ai.conversation.id`` become one run by ``merge_conversations``, exactly as
        ``tracejudge eval`` merges them (``report.loading.load_runs``).

        Never raises either: if the run builder fails, the trace gets one error verdict.
        """
        return self._judge_spans(spans, None)

    def judge_spans_within(self, spans: Sequence[SpanRecord], seconds: float) -> list[Verdict]:
        """``judge_spans`` within ``seconds`` of this thread's CPU time (the collector's
        ``max_judge_time``): a run still being judged then, and every run after it, gets
        ``verdict="error"`` saying so. Checked before each run and between rules, every
        2 ms of judging, so one rule (bounded by CEL's iteration budget) may overrun it."""
        return self._judge_spans(spans, Budget(time.thread_time() + seconds, seconds))

    def _judge_spans(self, spans: Sequence[SpanRecord], budget: Budget | None) -> list[Verdict]:
        try:
            runs = merge_conversations(build_runs(spans))
        except Exception as exc:
            trace_id = spans[0].trace_id if spans else ""
            log.exception("tracejudge: building runs of trace %s failed", trace_id)
            roots = [s.span_id for s in spans if s.parent_span_id is None]
            root = roots[0] if roots else (spans[0].span_id if spans else "")
            return [self._error(trace_id, root, exc)]
        return [self.judge(run, budget) for run in runs]

    def _error(
        self,
        trace_id: str,
        root: str,
        exc: Exception,
        agent: str | None = None,
        case_id: str | None = None,
        variant: str | None = None,
        agent_version: str | None = None,
        request_id: str | None = None,
        shadow: bool = False,
    ) -> Verdict:
        # The run's identity too: the gate and the verdict metrics count an error verdict
        # against its variant (a run that did not pass), and a shadow's stays a shadow's
        # (never user traffic; paired as unjudgeable).
        return Verdict(
            trace_id=trace_id,
            root_span_id=root,
            verdict="error",
            layers=dict.fromkeys(LAYERS, "not_applicable"),
            agent=agent,
            case_id=case_id,
            variant=variant,
            agent_version=agent_version,
            request_id=request_id,
            shadow=shadow,
            rules_version=self.ruleset.version,
            error=clip_explanation(f"{type(exc).__name__}: {exc}"),
        )

    def _over(self, budget: Budget, done: int, rule_id: str) -> None:
        """Raise ``JudgeTimeout`` when this thread's CPU time is past the budget."""
        if time.thread_time() > budget.deadline:
            where = f" (at {rule_id})" if rule_id else ""
            raise JudgeTimeout(
                f"judging took more than max_judge_time ({budget.seconds:g}s of CPU): "
                f"stopped after {done} of {len(self._steps())} rules{where}"
            )

    def _judge(self, run: Run, budget: Budget | None = None) -> Verdict:
        if budget is not None:
            self._over(budget, 0, "")  # building the runs may have taken it all
        ctx = RunContext(
            run,
            self.ruleset.tools,
            self.ruleset.prices,
            self.baselines,
            self.ruleset.cel_view,
            self.cases,
        )
        root = run.root_span_id
        tool_names = ctx.by_name.keys()
        findings: list[Finding] = []
        outcomes: list[RuleOutcome] = []
        metrics: dict[str, float] = {}
        ranks = dict.fromkeys(LAYERS, 0)  # 0 not_applicable, 1 pass, 2 warn, 3 fail
        report = Report()
        add = outcomes.append
        clock = time.perf_counter
        yield_at = clock() + _GIL_SLICE
        done = 0
        for rule_id, layer, selector, evaluate, rule, prefix in self._steps():
            done += 1
            if selector is not None and not selector.matches(run, tool_names):
                add(RuleOutcome(rule_id, layer, "not_applicable", root))
                continue
            evaluate(ctx, report)
            if clock() > yield_at:
                # Compiled, this loop and cel-cpp never reach the interpreter's switch
                # points: judged on the collector's worker thread, costly rules would hold
                # the GIL for the whole run and stall the receivers. Offer it every slice,
                # when another thread could want it: sleep(0) also gives the CPU away, and
                # on a busy machine ``eval`` (one thread) waited 0.8 s of 100 runs on it.
                if threading.active_count() > 1:
                    time.sleep(0)
                yield_at = clock() + _GIL_SLICE
                if budget is not None:
                    self._over(budget, done, rule_id)
            if report.metrics:
                if prefix:
                    metrics.update({prefix + k: v for k, v in report.metrics.items()})
                else:
                    metrics.update(report.metrics)
                report.metrics = {}
            if not report.items and not report.not_applicable:
                add(RuleOutcome(rule_id, layer, "pass", root, 1.0, ""))
                if ranks[layer] < 1:
                    ranks[layer] = 1
            else:
                result, rule_findings = _outcome(rule, report, self.strict)
                findings.extend(rule_findings)
                rank = _RANK[result]
                if ranks[layer] < rank:
                    ranks[layer] = rank
                span = rule_findings[0].span_ids[0] if rule_findings else root
                expl = rule_findings[0].explanation if rule_findings else ""
                score = 0.0 if result == "fail" else None
                add(RuleOutcome(rule_id, layer, result, span, score, expl))
                report = Report()
        evidence = evidence_findings(ctx, findings)
        if evidence:
            findings.extend(evidence)
            for f in evidence:
                if ranks[f.layer] < 2:
                    ranks[f.layer] = 2
            first = evidence[0]
            outcomes.append(
                RuleOutcome(
                    EVIDENCE_RULE_ID,
                    first.layer,
                    "insufficient_evidence",
                    first.span_ids[0] if first.span_ids else root,
                    None,
                    first.explanation,
                )
            )
        if len(findings) > 1:
            findings.sort(key=_order(len(run.steps)))
        hard = any(f.severity == "fail" for f in findings)
        overall: Overall = "fail" if hard else "warn" if findings else "pass"
        return Verdict(
            trace_id=run.trace_id,
            root_span_id=root,
            verdict=overall,
            layers={layer: _LAYER_NAMES[r] for layer, r in ranks.items()},
            agent=run.agent_name,
            case_id=run.case_id,
            variant=run.variant_id,
            run_id=run.run_id,
            experiment_id=run.experiment_id,
            primary=findings[0] if findings else None,
            findings=findings,
            outcomes=outcomes,
            metrics=metrics,
            rules_version=self.ruleset.version,
            agent_version=run.agent_version,
            request_id=run.request_id,
            shadow=run.shadow,
            # kept only for runs that can be paired: a shadow and its stable run
            trajectory=trajectory_of(ctx) if run.request_id is not None else None,
        )


def implicit_case_rule() -> Rule:
    """The ``case`` rule the engine adds when it has cases and the rules name none."""
    return Rule(
        CASE_RULE_ID,
        "outcome",
        "fail",
        "case",
        CaseCheck(),
        None,
        "implicit: the run does what its case in the cases file expects",
    )


_Step: TypeAlias = tuple[
    str, Layer, "Selector | None", Callable[[RunContext, Report], None], Rule, str
]
METRIC_CHECKS = frozenset({"reference"})
"""Check types that write ``Verdict.metrics``. With one such rule in the rule set its
metrics keep their plain names (``tool_selection_accuracy``); with several, each rule's
are keyed ``<rule id>.<name>`` so one rule's values never overwrite another's."""

_RANK: dict[RuleResult, int] = {
    "not_applicable": 0,
    "pass": 1,
    "warn": 2,
    "insufficient_evidence": 2,
    "undecided": 2,
    "fail": 3,
}
_LAYER_NAMES: tuple[LayerResult, ...] = ("not_applicable", "pass", "warn", "fail")


def _outcome(rule: Rule, report: Report, strict: bool) -> tuple[RuleResult, list[Finding]]:
    if report.not_applicable and not report.items:
        return "not_applicable", []
    out = [_finding(rule, item, strict) for item in report.items]
    if any(f.severity == "fail" for f in out):
        return "fail", out
    if any(not item.evidence and not item.undecided for item in report.items):
        return "warn", out
    if any(item.undecided for item in report.items):
        return "undecided", out
    if report.items:
        return "insufficient_evidence", out
    return "pass", out


def _finding(rule: Rule, item: Item, strict: bool) -> Finding:
    soft = item.soft and not (strict and item.undecided)
    severity = "warn" if soft else rule.severity
    return Finding(
        code=item.code,
        severity=severity,
        layer=rule.layer,
        rule_id=rule.id,
        span_ids=tuple(s.lower() for s in item.span_ids if s),
        explanation=clip_explanation(item.explanation),
        step_index=item.step_index,
        absent=item.absent,
        undecided=item.undecided,
    )


def order_findings(findings: list[Finding], n_steps: int) -> None:
    """Sort ``findings`` as the engine does (the primary first), in place: for findings
    added after judging (a grader's)."""
    findings.sort(key=_order(n_steps))


def _order(n_steps: int) -> Callable[[Finding], tuple[int, int, int, int, int]]:
    """Primary first: hard before soft, failures before missing evidence, then earliest step.

    The earliest causal failure is a step that *happened*: findings that cite a span of
    their own (a call, the final answer) are ordered by step, and findings about the run
    as a whole or about something that never happened (a missing call cites the root)
    come after them. So "claims a refund that never happened" puts the claim in the
    answer first and the missing refund call second. Python's stable sort keeps rule
    order for the remaining ties.
    """

    def key(f: Finding) -> tuple[int, int, int, int, int]:
        step = f.step_index if f.step_index is not None else n_steps + 1
        return (
            0 if f.severity == "fail" else 1,
            1 if f.code.startswith("F-EVIDENCE-") else 0,
            1 if f.absent else 0,
            step,
            _LAYER_RANK.get(f.layer, 9),
        )

    return key
