"""The gate's decision over judged runs: pass, fail or inconclusive, with its evidence.

Rules, in order (docs/baselines-and-canary.md, "The canary gate"):

1. Any hard-gate *policy* failure in the candidate fails at once, whatever the volume: a
   policy violation (a forbidden tool, data leaving the tenant) is not a rate to estimate.
2. No candidate run at all (an unknown agent or variant, or an empty window):
   inconclusive, with a reason naming the agent and variant.
3. Fewer than ``min_runs`` candidate runs (or baseline runs, when comparing): inconclusive.
4. Otherwise the candidate's pass rate, as a Wilson 95% interval, is held against a bar:
   ``threshold`` (absolute), or the baseline's observed pass rate minus ``margin`` (a
   non-inferiority margin). Pass when the interval's lower bound clears the bar; fail when
   its upper bound is below it (the candidate is worse beyond doubt); in between the data
   cannot tell yet: inconclusive, and a rollout controller keeps measuring.

"Passed" means what it means in ``tracejudge report``: a ``pass`` or ``warn`` verdict
(only soft checks failed); an ``error`` verdict (the run could not be judged) counts as a
run that did not pass, so an unjudgeable variant never looks healthy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracejudge.report.records import VerdictRecord
from tracejudge.report.stats import wilson_interval

Decision = Literal["pass", "fail", "inconclusive"]


@dataclass(slots=True)
class GateRun:
    """What the gate needs of one judged run. Not frozen: the collector makes one per
    verdict it decides, and a frozen dataclass's ``__init__`` costs several times more.
    Treat it as read-only."""

    agent: str | None
    variant: str | None
    passed: bool
    policy_failure: str | None
    """The failure code of a hard-gate policy failure in this run (None: none)."""
    time: float | None = None
    """When it was decided (Unix seconds), for the window; None: unknown."""
    trace_id: str = ""


def run_of(record: VerdictRecord, time: float | None = None) -> GateRun:
    """The gate's view of a verdict record (``time`` overrides the record's own)."""
    code = None
    if record.verdict == "fail":
        code = next(
            (f.code for f in record.findings if f.layer == "policy" and f.severity == "fail"),
            None,
        )
        if code is None and record.layers.get("policy") == "fail":
            code = record.primary.code if record.primary is not None else "policy"
    return GateRun(
        agent=record.agent,
        variant=record.variant,
        passed=record.passed,
        policy_failure=code,
        time=record.decided_at if time is None else time,
        trace_id=record.trace_id,
    )


@dataclass(slots=True, frozen=True)
class GatePolicy:
    """What the candidate is judged against (defaults: docs/baselines-and-canary.md)."""

    agent: str
    variant: str
    baseline: str | None = None
    """The stable variant to compare with; None: compare with ``threshold``."""
    window: float | None = None
    """Only runs decided in the last ``window`` seconds count (None: all given)."""
    min_runs: int = 20
    threshold: float = 0.9
    margin: float = 0.05
    shadow: bool = False
    """Also count the candidate's shadow runs paired with the stable run of their request
    (``GET /v1/gate?shadow=include``): a hard divergence counts as a failed run."""

    def __post_init__(self) -> None:
        if self.min_runs < 1:
            raise ValueError(f"min_runs must be at least 1, got {self.min_runs}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be within [0, 1], got {self.threshold}")
        if not 0.0 <= self.margin <= 1.0:
            raise ValueError(f"margin must be within [0, 1], got {self.margin}")
        if self.window is not None and not self.window > 0:
            raise ValueError(f"window must be positive, got {self.window}")


@dataclass(slots=True, frozen=True)
class Side:
    """One variant's counts in the window, with the Wilson 95% interval of its pass rate."""

    variant: str
    runs: int
    passes: int
    pass_rate: float | None
    lower_bound: float
    upper_bound: float
    hard_failures: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "runs": self.runs,
            "passes": self.passes,
            "pass_rate": self.pass_rate,
            "lower_bound": self.lower_bound,
            "upper_bound": self.upper_bound,
            "hard_failures": self.hard_failures,
        }


@dataclass(slots=True, frozen=True)
class GateDecision:
    """The answer, with what it rests on (the ``GET /v1/gate`` JSON, ``to_dict``)."""

    decision: Decision
    agent: str
    candidate: Side
    baseline: Side | None
    bar: float | None
    """The pass rate the candidate was held against (None: not reached)."""
    reason: str
    hard_failure_traces: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "decision": self.decision,
            "agent": self.agent,
            "variant": c.variant,
            "runs": c.runs,
            "passes": c.passes,
            "pass_rate": c.pass_rate,
            "lower_bound": c.lower_bound,
            "upper_bound": c.upper_bound,
            "hard_failures": c.hard_failures,
            "bar": self.bar,
            "baseline": self.baseline.to_dict() if self.baseline is not None else None,
            "reason": self.reason,
        }


def _side(variant: str, runs: Sequence[GateRun]) -> Side:
    passes = sum(1 for r in runs if r.passed)
    iv = wilson_interval(passes, len(runs))
    return Side(
        variant=variant,
        runs=len(runs),
        passes=passes,
        pass_rate=None if math.isnan(iv.rate) else iv.rate,
        lower_bound=iv.low,
        upper_bound=iv.high,
        hard_failures=sum(1 for r in runs if r.policy_failure is not None),
    )


def _select(
    runs: Iterable[GateRun], agent: str, variant: str, since: float | None
) -> list[GateRun]:
    return [
        r
        for r in runs
        if r.agent == agent
        and r.variant == variant
        and (since is None or (r.time is not None and r.time >= since))
    ]


SEEN_SHOWN = 5
"""Agents, and variants per agent, named when the asked-for ones have no runs."""


def _seen(runs: Sequence[GateRun]) -> str:
    """What the runs hold instead: ``seen: agent 'a' (variants 'x', 'y'), ...``, so a
    misspelt agent or variant is plain to see."""
    by_agent: dict[str | None, dict[str | None, None]] = {}
    for r in runs:
        by_agent.setdefault(r.agent, {})[r.variant] = None
    if not by_agent:
        return "no runs at all"

    def names(values: Iterable[str | None], noun: str) -> str:
        shown = sorted(repr(v) if v is not None else f"no {noun}" for v in values)
        more = f", … {len(shown) - SEEN_SHOWN} more" if len(shown) > SEEN_SHOWN else ""
        return ", ".join(shown[:SEEN_SHOWN]) + more

    parts = [
        f"agent {repr(a) if a is not None else '(none)'} (variants {names(variants, 'variant')})"
        for a, variants in sorted(by_agent.items(), key=lambda kv: str(kv[0]))
    ]
    more = f"; … {len(parts) - SEEN_SHOWN} more agents" if len(parts) > SEEN_SHOWN else ""
    return f"seen: {'; '.join(parts[:SEEN_SHOWN])}{more}"


def decide(
    candidate: Iterable[GateRun],
    baseline: Iterable[GateRun] | None,
    policy: GatePolicy,
    now: float | None = None,
) -> GateDecision:
    """The gate's answer for ``policy.variant`` of ``policy.agent``.

    ``candidate`` and ``baseline`` may be the same iterable of mixed runs: each side keeps
    the runs of its agent and variant. With a window, runs decided before ``now -
    window`` (and runs with no time) are left out; ``now`` defaults to the newest run's
    time, so a verdict file gives the same answer whenever it is read.
    """
    cand_all = list(candidate)
    base_all = list(baseline) if baseline is not None else []
    since = None
    if policy.window is not None:
        if now is None:
            times = [r.time for r in (*cand_all, *base_all) if r.time is not None]
            now = max(times) if times else 0.0
        since = now - policy.window
    cand = _select(cand_all, policy.agent, policy.variant, since)
    c = _side(policy.variant, cand)
    base: Side | None = None
    if policy.baseline is not None:
        base = _side(policy.baseline, _select(base_all, policy.agent, policy.baseline, since))
    who = f"agent {policy.agent!r} variant {policy.variant!r}"

    def answer(
        decision: Decision, reason: str, bar: float | None = None, hard: Sequence[str] = ()
    ) -> GateDecision:
        return GateDecision(decision, policy.agent, c, base, bar, reason, tuple(hard))

    hard = [r for r in cand if r.policy_failure is not None]
    if hard:
        codes = sorted({r.policy_failure for r in hard if r.policy_failure is not None})
        first = hard[0].trace_id or "?"
        return answer(
            "fail",
            f"{len(hard)} hard-gate policy failure(s) in {who}: {', '.join(codes)} "
            f"(first in trace {first})",
            hard=[r.trace_id for r in hard],
        )
    span = f" in the last {policy.window:g}s" if policy.window is not None else ""
    if c.runs == 0:
        return answer("inconclusive", f"no judged runs of {who}{span}; {_seen(cand_all)}")
    if c.runs < policy.min_runs:
        return answer(
            "inconclusive", f"{c.runs} runs of {who}{span}, fewer than min_runs={policy.min_runs}"
        )
    if base is not None:
        if base.runs < policy.min_runs:
            return answer(
                "inconclusive",
                f"{base.runs} runs of baseline {policy.baseline!r}{span}, "
                f"fewer than min_runs={policy.min_runs}",
            )
        assert base.pass_rate is not None
        bar = max(0.0, base.pass_rate - policy.margin)
        against = (
            f"baseline {policy.baseline!r} pass rate {base.pass_rate:.3f} "
            f"minus margin {policy.margin:g} = {bar:.3f}"
        )
    else:
        bar = policy.threshold
        against = f"threshold {bar:g}"
    interval = (
        f"{c.passes}/{c.runs} passed, 95% interval [{c.lower_bound:.3f}, {c.upper_bound:.3f}]"
    )
    if c.lower_bound >= bar:
        return answer("pass", f"{interval}: lower bound clears {against}", bar)
    if c.upper_bound < bar:
        return answer("fail", f"{interval}: upper bound below {against}", bar)
    return answer("inconclusive", f"{interval} straddles {against}: more runs needed", bar)
