"""Engine throughput: a realistic rule set (>= 20 rules) over synthetic runs of 10/100/1,000 spans.

Run: ``.venv/bin/python bench/bench_engine.py [--seconds 2]``. Prints runs/s and µs/run per
run size, and µs per span (the engine's cost should be linear in spans). One core, one
process: the engine is pure Python plus RE2/cel-cpp calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tracejudge._build import build_kind
from tracejudge.engine import BaselineStore, Engine, RuleSet, load_rules_text
from tracejudge.engine.celview import ViewSpec
from tracejudge.model.run import ModelCall, Run, Step, ToolCall

ROOT = Path(__file__).resolve().parents[1]
EXTRA_RULES = """
  - id: reference-path
    layer: trajectory
    severity: warn
    check:
      type: reference
      mode: superset
      args_mode: subset
      calls:
        - {tool: lookup_order, args: {customer_id: u1}}
        - {tool: refund_api.create, args: {order_id: B-200}}
  - id: never-delete
    layer: policy
    check: {type: forbidden_steps, tools: [delete_account, wire_transfer]}
  - id: must-email
    layer: trajectory
    severity: warn
    check: {type: required_steps, tools: [send_email]}
  - id: no-test-orders
    layer: policy
    check:
      type: forbidden_arguments
      tool: refund_api.create
      argument: order_id
      pattern: "^TEST-"
  - id: few-errors
    layer: trajectory
    severity: warn
    check: {type: cel, expr: "run.tools.filter(t, !t.ok).size() <= 2"}
"""


def ruleset() -> RuleSet:
    """The refund example rules plus five more: 24 rules over all four layers."""
    text = (ROOT / "examples" / "refund" / "rules.yaml").read_text() + EXTRA_RULES
    rs = load_rules_text(text, "bench")
    assert len(rs.rules) >= 20, len(rs.rules)
    return rs


def synthetic_run(n_spans: int, seq: int) -> Run:
    """A refund-agent-shaped run with ``n_spans`` steps (model and tool calls alternating)."""
    orders = {
        "orders": [{"id": "A-100", "is_duplicate": False}, {"id": "B-200", "is_duplicate": True}]
    }
    cycle: list[tuple[str, Any, Any]] = [
        ("lookup_order", {"customer_id": "u1", "page": 0}, orders),
        ("check_policy", {"order_id": "B-200"}, {"approved": True}),
        (
            "refund_api.create",
            {"order_id": "B-200", "amount": 40.0, "idempotency_key": "k"},
            {"id": "re_ABC12345", "status": "succeeded"},
        ),
        ("send_email", {"to": "u1", "body": "Your refund is on its way."}, {"sent": True}),
    ]
    steps: list[Step] = []
    t0 = 1_700_000_000_000_000_000
    k = 0
    for i in range(n_spans):
        sid = f"{seq:08x}{i:08x}"
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
        else:
            name, args, result = cycle[k % len(cycle)]
            args = dict(args)
            if name == "lookup_order":
                args["page"] = k  # long runs page through orders (no accidental loops)
            steps.append(
                ToolCall(
                    span_id=sid,
                    name=name,
                    arguments=args,
                    result=result,
                    status="ok",
                    start_ns=start,
                    end_ns=end,
                )
            )
            k += 1
    return Run(
        trace_id=f"{seq:032x}",
        root_span_id=f"{seq:016x}",
        agent_name="support-agent",
        case_id="dup-charge-1",
        user_id="u1",
        steps=steps,
        final_answer="I've issued a refund of $40.00 for order B-200 (refund id re_ABC12345).",
        final_answer_span_id=f"{seq:08x}ffffffff",
        start_ns=t0,
        end_ns=t0 + (n_spans + 1) * 1_000_000,
    )


def measure(engine: Engine, n_spans: int, seconds: float, trials: int) -> tuple[float, str]:
    """Best µs/run over ``trials`` timed loops (CPU time of this process).

    CPU time, best of several trials: the figure is the engine's cost on one core, not
    how busy the machine happens to be (shared CI boxes are).
    """
    runs = [synthetic_run(n_spans, s) for s in range(16)]
    verdict = engine.judge(runs[0]).verdict
    best = float("inf")
    for _ in range(trials):
        done = 0
        t0 = time.process_time()
        deadline = time.perf_counter() + seconds / trials
        while time.perf_counter() < deadline or done == 0:
            for run in runs:
                engine.judge(run)
            done += len(runs)
        best = min(best, (time.process_time() - t0) / done * 1e6)
    return best, verdict


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args(argv)
    full = ruleset()
    no_cel = dataclasses.replace(
        full,
        rules=tuple(r for r in full.rules if r.check_type != "cel"),
        cel_view=ViewSpec(frozenset()),
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = BaselineStore(tmp)
        store.record(synthetic_run(10, 0), full.tools)
        print(
            f"tracejudge {build_kind()} build, python {sys.version.split()[0]}, one core, "
            f"CPU time, best of {args.trials}"
        )
        for label, rs in (("all rules", full), ("without the CEL rules", no_cel)):
            engine = Engine(rs, store)
            print(f"\n{label}: {len(rs.rules)} rules")
            print(f"{'spans':>6} {'runs/s':>10} {'us/run':>10} {'us/span':>8}  verdict")
            for size in (int(s) for s in args.sizes.split(",")):
                us, verdict = measure(engine, size, args.seconds, args.trials)
                print(f"{size:>6} {1e6 / us:>10,.0f} {us:>10,.1f} {us / size:>8.2f}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
