"""Per-call overhead of instrumenting ``chat.completions.create``, tracejudge vs peers.

Runs every configuration in its own process, interleaved over several rounds, and reports
the median cost per call. Overhead = config - bare SDK; the ratio column divides each
overhead by the floor (one bare SDK span with the same attributes), so 1.0x means "as cheap
as creating the span by hand". Usage: ``make bench-instrumentation`` (sets up .venv-bench
with the peers: opentelemetry-instrumentation-openai-v2, OpenLLMetry, OpenInference).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CONFIGS = ["bare", "floor", "tracejudge", "otel-genai", "openinference", "openllmetry"]
HERE = Path(__file__).resolve().parent


def run_one(python: str, config: str, calls: int) -> dict[str, float]:
    out = subprocess.run(
        [python, str(HERE / "_instr_worker.py"), config, str(calls)],
        check=True,
        capture_output=True,
        text=True,
    )
    line = out.stdout.strip().splitlines()[-1]
    result: dict[str, float] = json.loads(line)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the peers")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", nargs="*", default=CONFIGS)
    args = parser.parse_args()

    samples: dict[str, list[float]] = {c: [] for c in args.configs}
    spans: dict[str, float] = {}
    for _ in range(args.rounds):
        for config in args.configs:
            r = run_one(args.python, config, args.calls)
            samples[config].append(r["us_per_call"])
            spans[config] = r["spans"]
    med = {c: statistics.median(v) for c, v in samples.items()}
    bare = med.get("bare", 0.0)
    floor = med.get("floor", bare) - bare
    print(f"{'config':<14}{'us/call':>10}{'overhead us':>13}{'x floor':>9}{'spans/call':>12}")
    for c in args.configs:
        over = med[c] - bare
        ratio = over / floor if floor > 0 else float("nan")
        print(f"{c:<14}{med[c]:>10.1f}{over:>13.1f}{ratio:>9.2f}{spans[c]:>12.1f}")
    print(
        f"(median of {args.rounds} interleaved rounds x {args.calls} calls; floor = one bare span)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
