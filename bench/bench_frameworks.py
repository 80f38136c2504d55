"""Per-run overhead of instrumenting agent frameworks, tracejudge vs the peers.

One run is a whole agent run (two model calls, one tool execution), on the OpenAI Agents
SDK and on LangGraph (``create_react_agent`` over ``ChatOpenAI``), against an in-process
mock transport (``_framework_worker.py`` says how each configuration is measured: its own
interpreter, ABBA blocks of runs with the instrumentation on and off, the median paired
difference). Rounds repeat every configuration in a rotated order; the table shows the
median over rounds and the spread.

Peers, in the same run: the official OpenTelemetry instrumentation for the Agents SDK
(``opentelemetry-instrumentation-openai-agents-v2``) and OpenInference's Agents SDK and
LangChain instrumentors. ``*-bare`` is the method's own noise (both halves uninstrumented).
``x tracejudge`` divides each peer's overhead by tracejudge's on the same framework (above
1: the peer costs more). Spans per run are reported, not compared: the instrumentations
shape a run differently (tracejudge records each model call once, from the client patch).

Usage: ``make bench-frameworks`` (sets up .venv-bench with the peers), or
``.venv-bench/bin/python bench/bench_frameworks.py --rounds 5 --runs 200``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _harness import rounds

CONFIGS = [
    "agents-bare",
    "agents-tracejudge",
    "agents-otel",
    "agents-openinference",
    "langgraph-bare",
    "langgraph-tracejudge",
    "langgraph-openinference",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the peers")
    parser.add_argument("--runs", type=int, default=200, help="measured runs per state")
    parser.add_argument("--block", type=int, default=10, help="runs per block")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", nargs="*", default=CONFIGS)
    args = parser.parse_args()

    over, base, spans = rounds(
        args.python, "_framework_worker.py", args.configs, args.rounds, args.runs, args.block
    )
    print(
        f"{'config':<25}{'run us':>9}{'overhead us':>13}{'spread (min-max)':>20}"
        f"{'x tracejudge':>14}{'spans/run':>11}"
    )
    for c in args.configs:
        med = statistics.median(over[c])
        ours = f"{c.split('-')[0]}-tracejudge"
        mine = statistics.median(over[ours]) if ours in over else float("nan")
        is_peer = not (c.endswith("-bare") or c == ours)
        ratio = f"{med / mine:.2f}" if is_peer and mine > 0 else "-"
        spread = f"{min(over[c]):.0f}..{max(over[c]):.0f}"
        print(
            f"{c:<25}{statistics.median(base[c]):>9.0f}{med:>13.0f}{spread:>20}"
            f"{ratio:>14}{statistics.median(spans[c]):>11.1f}"
        )
    print(
        f"(median of {args.rounds} rounds; each: median of {args.runs // args.block} paired "
        f"{args.block}-run blocks on/off in one process)"
    )
    silent = [c for c in args.configs if not c.endswith("-bare") and min(spans[c]) == 0]
    if silent:
        print(f"FAIL: no spans from {', '.join(silent)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
