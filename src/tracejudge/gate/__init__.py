"""The canary gate: should this agent variant be promoted, on the verdicts it got?

``decide`` is pure (records and a policy in, a ``GateDecision`` out); ``tracejudge gate``
runs it over verdict JSON lines and ``tracejudge serve`` answers ``GET /v1/gate`` with it
over the verdicts it decided (``RecentVerdicts``). See docs/baselines-and-canary.md.
"""

from __future__ import annotations

from tracejudge.gate.decision import GateDecision, GatePolicy, GateRun, Side, decide, run_of

__all__ = ["GateDecision", "GatePolicy", "GateRun", "Side", "decide", "run_of"]
