"""The cost of reading conversations: ``user_confirmation`` and ``completion_claims`` on real runs.

Run: ``.venv/bin/python bench/bench_conversation.py [--trials 5]``. Judges the 100 tau-bench
airline dev conversations (examples/airline/tau-bench-dev/) with the airline rules file's
conversation rules (its ``user_confirmation`` and ``completion_claims`` rules), then with the
whole file. Conversations are built before timing, so the figures are the checks' reading
of replies, proposals and claims. Prints CPU µs per run (best of the trials, one core) and
µs per user reply for the confirmation rules.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from tracejudge.engine import Engine, RuleSet, load_rules
from tracejudge.model.conversation import turns_of
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = ROOT / "examples" / "airline"
DATA = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"


def measure(engine: Engine, runs: list[Run], trials: int) -> float:
    """Best CPU µs per run over ``trials`` passes over every run."""
    best = float("inf")
    for _ in range(trials):
        t0 = time.process_time()
        for run in runs:
            engine.judge(run)
        best = min(best, (time.process_time() - t0) / len(runs) * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args(argv)
    loaded = load_runs([DATA])
    if loaded.errors:
        raise SystemExit("\n".join(loaded.errors))
    runs = loaded.runs
    replies = sum(1 for run in runs for t in turns_of(run) if t.role == "user")
    full = load_rules(AIRLINE / "rules.yaml")
    sets: list[tuple[str, RuleSet]] = []
    for kind in ("user_confirmation", "completion_claims"):
        picked = tuple(r for r in full.rules if r.check_type == kind)
        sets.append((f"{kind} ({len(picked)} rules)", dataclasses.replace(full, rules=picked)))
    sets.append((f"the whole rules file ({len(full.rules)} rules)", full))
    print(
        f"{len(runs)} airline dev runs, {replies} user replies; python "
        f"{sys.version.split()[0]}, one core, CPU time, best of {args.trials}"
    )
    for label, ruleset in sets:
        us = measure(Engine(ruleset), runs, args.trials)
        line = f"  {label:42} {us:9.1f} us/run"
        if label.startswith("user_confirmation"):
            line += f"  {us * len(runs) / replies:6.1f} us/reply"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
