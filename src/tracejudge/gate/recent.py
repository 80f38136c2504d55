"""The verdicts a running collector decided, kept for ``GET /v1/gate``: bounded, in memory.

Only what the gate reads is kept (``GateRun``: agent, variant, passed, policy failure code,
time, trace id), never content, so the store holds no secret and costs a few hundred bytes
a run. It keeps the newest ``max_runs`` runs and forgets runs older than ``max_age``
seconds; a gate window longer than what is kept sees fewer runs (the answer's ``runs`` says
how many), which can only make it inconclusive, never wrongly pass.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from tracejudge.engine.verdict import Verdict
from tracejudge.gate.decision import GateDecision, GateRun, decide
from tracejudge.gate.params import policy_from_query

DEFAULT_MAX_RUNS = 50_000
DEFAULT_MAX_AGE = 24 * 3600.0


def hard_gate_code(v: Verdict) -> str | None:
    """The failure code of the hard-gate policy failure that fails the gate at once (None:
    none); also the ``tracejudge.hard_gate.failures`` metric's failure code."""
    if v.verdict != "fail":
        return None
    for f in v.findings:  # a loop, not next(genexpr): this runs for every failed run
        if f.layer == "policy" and f.severity == "fail":
            return f.code
    if v.layers.get("policy") == "fail":
        return v.primary.code if v.primary is not None else "policy"
    return None


def run_of_verdict(v: Verdict, time: float) -> GateRun:
    """The gate's view of an engine verdict (the same rules as ``run_of`` on its JSON)."""
    return GateRun(
        agent=v.agent,
        variant=v.variant,
        passed=v.verdict in ("pass", "warn"),
        policy_failure=hard_gate_code(v),
        time=time,
        trace_id=v.trace_id,
    )


class RecentVerdicts:
    """The newest decided runs, oldest first."""

    def __init__(self, max_runs: int = DEFAULT_MAX_RUNS, max_age: float = DEFAULT_MAX_AGE) -> None:
        self.max_age = max_age
        self._runs: deque[GateRun] = deque(maxlen=max_runs)
        self._shadow: deque[GateRun] = deque(maxlen=max_runs)
        """Paired shadow runs, as the candidate's evidence for ``shadow=include`` only."""

    def add(self, v: Verdict, time: float) -> None:
        """Remember a decided verdict (runs without an agent cannot be gated, and shadow
        runs are not user traffic: skipped)."""
        if v.agent is None or v.shadow:
            return
        self._runs.append(run_of_verdict(v, time))
        self._expire(time)

    def add_shadow(self, v: Verdict, diverged_hard: bool, time: float) -> None:
        """Remember a shadow run paired with its stable run: it passed unless pairing
        found a hard divergence (a missing call, another terminal action). Unpaired
        shadows are no evidence either way and are never added."""
        if v.agent is None:
            return
        run = GateRun(v.agent, v.variant, not diverged_hard, None, time, v.trace_id)
        self._shadow.append(run)
        self._expire(time)

    def _expire(self, now: float) -> None:
        for runs in (self._runs, self._shadow):
            while runs and (runs[0].time or 0.0) < now - self.max_age:
                runs.popleft()

    def __len__(self) -> int:
        return len(self._runs)

    def answer(self, query: Mapping[str, str], now: float) -> GateDecision:
        """The gate's decision for a ``GET /v1/gate`` query at ``now`` (Unix seconds);
        ``ParamError`` for a malformed query."""
        policy = policy_from_query(query)
        self._expire(now)
        runs = list(self._runs)
        candidate = [*runs, *self._shadow] if policy.shadow else runs
        return decide(candidate, runs, policy, now=now)
