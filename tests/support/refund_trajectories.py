"""The refund agent's recorded trajectories, for replaying them through other frameworks.

Why: "each framework's agent, judged with the refund rules, gets the same verdicts as the
plain-SDK refund agent" (issue 10) is only meaningful if each framework does *what the
plain agent did*. The recorded traces in examples/refund/traces/ (the real OpenAI SDK
under ``tracejudge.instrument()``) are read back here into tool steps, request and
answer, so a framework test scripts its model with them and its tools return the
recorded results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.engine import Engine, load_rules
from tracejudge.model import build_runs, load_traces
from tracejudge.model.run import ModelCall, Run

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund"


@dataclass(frozen=True)
class Step:
    """One tool execution of a recorded refund trajectory."""

    name: str
    call_id: str
    arguments: Any
    result: Any


@dataclass(frozen=True)
class Trajectory:
    """What the refund agent did in one recorded variant (read back from its trace)."""

    user_id: str
    system: str
    request: str
    steps: tuple[Step, ...]
    answer: str


def recorded(variant: str) -> Trajectory:
    """The trajectory of examples/refund/traces/<variant>.json (the plain-SDK agent)."""
    traces = load_traces(REFUND / "traces" / f"{variant}.json")
    (run,) = build_runs(next(iter(traces.values())))
    first = next(s for s in run.steps if isinstance(s, ModelCall))
    texts = [p["content"] for m in first.input_messages or [] for p in m["parts"]]
    steps = tuple(Step(t.name, t.call_id or "", t.arguments, t.result) for t in run.tool_calls)
    assert run.user_id
    assert run.final_answer
    return Trajectory(run.user_id, texts[0], texts[1], steps, run.final_answer)


def judge(run: Run) -> tuple[str, set[str]]:
    """The refund rules' verdict and the ids of the failing rules."""
    verdict = Engine(load_rules(REFUND / "rules.yaml")).judge(run)
    assert verdict.error is None
    failed = {f.rule_id for f in verdict.findings if f.severity == "fail"}
    return verdict.verdict, failed
