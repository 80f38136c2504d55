"""Per-call overhead of instrumenting ``chat.completions.create``, tracejudge vs peers.

Why paired, in-process blocks: a bare SDK call costs ~1 ms here and the telemetry
~0.1 ms, while a shared machine's noise between two processes is larger than that. So
each configuration runs in its own fresh interpreter (instrumentors patch the SDK
globally) and *inside* it alternates short blocks of calls with its instrumentation
switched on and off (ABBA order); the overhead is the median of the paired block
differences. Rounds repeat every configuration in a rotated order; the table shows
the median over rounds and their spread (min-max).

Configurations: ``bare`` (both halves uninstrumented: the method's own noise),
``floor`` (one hand-written SDK span with the same attributes, content serialized with
``json.dumps``), ``tracejudge``, the official OTel GenAI instrumentation
(``otel-genai``), OpenInference and OpenLLMetry. All capture message content on span
attributes (tracejudge SPAN_ONLY, OTel ``SPAN_ONLY`` + latest experimental conventions,
OpenLLMetry ``TRACELOOP_TRACE_CONTENT=true``, OpenInference's default) and export
through the same discarding exporter; ``spans/call`` must be 1.0 for every
instrumented configuration. ``x floor`` divides an overhead by the floor's.

Usage: ``make bench-instrumentation`` (sets up .venv-bench with the peers), or
``.venv-bench/bin/python bench/bench_instrumentation.py --rounds 5 --calls 3000``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _harness import rounds

CONFIGS = ["bare", "floor", "tracejudge", "otel-genai", "openinference", "openllmetry"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the peers")
    parser.add_argument("--calls", type=int, default=3000, help="measured calls per state")
    parser.add_argument("--block", type=int, default=50, help="calls per block")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", nargs="*", default=CONFIGS)
    parser.add_argument("--max-ratio", type=float, default=None, help="fail above (tracejudge)")
    args = parser.parse_args()

    over, base, spans = rounds(
        args.python, "_instr_worker.py", args.configs, args.rounds, args.calls, args.block
    )
    floor = statistics.median(over["floor"]) if "floor" in over else float("nan")
    print(
        f"{'config':<14}{'bare us':>9}{'overhead us':>13}{'spread (min-max)':>19}"
        f"{'x floor':>9}{'spans/call':>12}"
    )
    for c in args.configs:
        med = statistics.median(over[c])
        spread = f"{min(over[c]):.1f}..{max(over[c]):.1f}"
        ratio = med / floor if floor > 0 and c not in ("bare", "floor") else float("nan")
        ratio_s = f"{ratio:.2f}" if ratio == ratio else "-"
        print(
            f"{c:<14}{statistics.median(base[c]):>9.0f}{med:>13.1f}{spread:>19}"
            f"{ratio_s:>9}{min(spans[c]):>12.2f}"
        )
    print(
        f"(median of {args.rounds} rounds; each: median of {args.calls // args.block} paired "
        f"{args.block}-call blocks on/off in one process)"
    )
    bad = [c for c in args.configs if c != "bare" and min(spans[c]) != 1.0]
    if bad:
        print(f"FAIL: spans/call is not 1.0 for {', '.join(bad)}", file=sys.stderr)
        return 1
    if args.max_ratio is not None and "tracejudge" in over:
        ratio = statistics.median(over["tracejudge"]) / floor
        if ratio > args.max_ratio:
            print(f"FAIL: tracejudge at {ratio:.2f}x the floor > {args.max_ratio}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
