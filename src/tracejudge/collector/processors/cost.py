"""The rule-cost budget: what a rules file costs per run, at load and at run time.

A valid rules file can still be too expensive to judge live (1,000 CEL rules: ~2.7 s per
run). At start the collector judges a representative synthetic run (10 spans of a refund
agent: model calls and the four tool calls of the refund example, renamed to the rules
file's own tools when it declares some) and reports the cost per run; a file over
``max_rule_cost`` is refused with the slowest rules named, so an operator learns it
before traffic does. At run time, ``CostWatch`` counts and logs each run judged over the
budget (real runs can be far larger than the synthetic one).

Both are CPU time of the judging thread (``time.thread_time``), as ``decide.py`` measures
live runs: wall time counted whatever else the machine ran, so on a busy host a cheap rules
file looked over budget and ``serve`` refused to start.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

from tracejudge.engine.context import Report, RunContext
from tracejudge.engine.engine import Engine
from tracejudge.model.run import ModelCall, Run, Step, ToolCall

log = logging.getLogger("tracejudge.collector")

SYNTHETIC_SPANS = 10
"""Spans of the synthetic run the cost is measured on (a typical agent run)."""


class RuleCostError(ValueError):
    """The rules file costs more per run than ``max_rule_cost`` (refused at start)."""


@dataclass(slots=True)
class RuleCost:
    """What one synthetic run cost to judge, with the slowest rules."""

    seconds: float
    """The whole judgement of the synthetic run (the best of the timings taken)."""
    rules: int
    slowest: list[tuple[str, float]] = field(default_factory=list)
    """``(rule id, seconds)``, slowest first (filled when the file is over budget)."""

    def describe(self) -> str:
        """``0.4 ms per 10-span run (24 rules)``."""
        return f"{_ms(self.seconds)} per {SYNTHETIC_SPANS}-span run ({self.rules} rules)"


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:,.0f} ms"


_REFUND_CYCLE: list[tuple[str, dict[str, object], object]] = [
    ("lookup_order", {"customer_id": "u1", "page": 0}, {"orders": [{"id": "B-200"}]}),
    ("check_policy", {"order_id": "B-200"}, {"approved": True}),
    (
        "refund_api.create",
        {"order_id": "B-200", "amount": 40.0, "idempotency_key": "k"},
        {"id": "re_ABC12345", "status": "succeeded"},
    ),
    ("send_email", {"to": "u1", "body": "Your refund is on its way."}, {"sent": True}),
]


def synthetic_run(tools: list[str], n_spans: int = SYNTHETIC_SPANS) -> Run:
    """A refund-agent-shaped run of ``n_spans`` steps, model and tool calls alternating
    (the engine benchmark's run); tool calls take the names in ``tools`` when given, so
    rules about the file's own tools apply to it."""
    t0 = 1_700_000_000_000_000_000
    steps: list[Step] = []
    k = 0
    for i in range(n_spans):
        sid = f"{i:016x}"
        start, end = t0 + i * 1_000_000, t0 + (i + 1) * 1_000_000
        if i % 2 == 0:
            steps.append(
                ModelCall(
                    span_id=sid,
                    operation="chat",
                    request_model="gpt-4o-mini",
                    response_model="gpt-4o-mini",
                    input_tokens=300,
                    output_tokens=40,
                    status="ok",
                    start_ns=start,
                    end_ns=end,
                )
            )
            continue
        name, args, result = _REFUND_CYCLE[k % len(_REFUND_CYCLE)]
        if tools:
            name = tools[k % len(tools)]
        steps.append(
            ToolCall(
                span_id=sid,
                name=name,
                arguments=dict(args),
                result=result,
                status="ok",
                start_ns=start,
                end_ns=end,
            )
        )
        k += 1
    return Run(
        trace_id="0" * 31 + "1",
        root_span_id="0" * 15 + "1",
        agent_name="support-agent",
        case_id="synthetic",
        user_id="u1",
        steps=steps,
        final_answer="I've issued a refund of $40.00 for order B-200 (refund id re_ABC12345).",
        final_answer_span_id="f" * 16,
        start_ns=t0,
        end_ns=t0 + (n_spans + 1) * 1_000_000,
    )


def measure(engine: Engine, budget: float | None, slowest: int = 5) -> RuleCost:
    """Judge the synthetic run and time it in CPU time (twice when cheap: the first judgement also
    warms caches). Over ``budget``, time each rule on its own to name the slowest."""
    rs = engine.ruleset
    run = synthetic_run(sorted(rs.tools))
    began = time.thread_time()
    engine.judge(run)
    seconds = time.thread_time() - began
    if seconds < 0.05 or (budget and seconds > budget):
        began = time.thread_time()
        engine.judge(run)
        seconds = min(seconds, time.thread_time() - began)
    cost = RuleCost(seconds, len(rs.rules))
    if budget and seconds > budget:
        cost.slowest = _per_rule(engine, run)[:slowest]
    return cost


def _per_rule(engine: Engine, run: Run) -> list[tuple[str, float]]:
    """Each rule's own evaluation time on ``run`` (the engine's loop, one rule at a time;
    the run's shared indexes are built before, so no rule is charged for them)."""
    rs = engine.ruleset
    ctx = RunContext(run, rs.tools, rs.prices, engine.baselines, rs.cel_view, engine.cases)
    names = ctx.by_name.keys()
    out: list[tuple[str, float]] = []
    for rule in rs.rules:
        if rule.selector is not None and not rule.selector.matches(run, names):
            continue
        best = math.inf
        for _ in range(5):  # the best of five: a disturbed timing must not name a cheap rule
            began = time.thread_time()
            try:
                rule.check.evaluate(ctx, Report())
            except Exception:  # the engine turns these into error verdicts; still a cost
                log.debug("rule %s raised on the synthetic run", rule.id, exc_info=True)
            best = min(best, time.thread_time() - began)
        out.append((rule.id, best))
    out.sort(key=lambda x: -x[1])
    return out


def check_budget(cost: RuleCost, budget: float | None, source: str) -> None:
    """Raise ``RuleCostError`` naming the slowest rules when ``cost`` exceeds ``budget``."""
    if not budget or cost.seconds <= budget:
        return
    rules = ", ".join(f"{rid} ({_ms(s)})" for rid, s in cost.slowest)
    raise RuleCostError(
        f"rules: {source} costs {cost.describe()}, over the budget of {_ms(budget)} "
        f"(max_rule_cost); slowest rules: {rules}. Simplify those rules (filter lists "
        "before nested macros) or raise --max-rule-cost."
    )


class CostWatch:
    """Judging time per run at run time, against the budget; counted for ``/metrics``."""

    def __init__(self, budget: float | None) -> None:
        self.budget = budget
        self.over_budget = 0
        """Runs judged slower than the budget (each logged once, with its trace id)."""
        self.seconds = 0.0
        """Total judging time."""
        self.runs = 0
        self.slowest = 0.0
        """The longest judging time of one run so far."""

    def check(self, trace_id: bytes, seconds: float, runs: int) -> None:
        """Account one judged trace of ``runs`` runs (at least one) that took ``seconds``."""
        runs = max(1, runs)
        self.seconds += seconds
        self.runs += runs
        self.slowest = max(self.slowest, seconds / runs)
        if not self.budget or seconds / runs <= self.budget:
            return
        self.over_budget += runs
        log.warning(
            "judging trace %s took %s for %d run(s), over the rule-cost budget of %s per "
            "run (max_rule_cost)",
            trace_id.hex(),
            _ms(seconds),
            runs,
            _ms(self.budget),
        )
