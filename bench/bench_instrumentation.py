"""Per-call overhead of instrumenting one model call per provider, tracejudge vs peers.

Why paired, in-process blocks: a bare SDK call costs ~1-25 ms here and the telemetry
~0.1-1 ms, while a shared machine's noise between two processes is larger than that. So
each (provider, configuration) runs in its own fresh interpreter (instrumentors patch the
SDK globally) and *inside* it alternates short blocks of calls with its instrumentation
switched on and off (ABBA order); the overhead is the median of the paired block
differences. Rounds repeat every configuration of a provider in a rotated order; the
table shows the median over rounds and their spread (min-max).

Providers and their calls (``_instr_cases.py``): OpenAI ``chat.completions.create`` with a
tool (in-process mock transport), Gemini ``models.generate_content`` with a tool, Bedrock
``converse`` with a tool, Mistral ``chat.complete``, Cohere v2 ``chat`` with tools (those four
over loopback HTTP to the tests' replay server, answering with recorded responses).

Configurations: ``bare`` (both halves uninstrumented: the method's own noise), ``floor``
(OpenAI only: one hand-written SDK span with the same attributes, content serialized with
``json.dumps``), ``tracejudge``, and each peer that instruments the SDK: the official OTel
GenAI instrumentation (``otel-genai``, OpenAI), OpenInference and OpenLLMetry. All capture
message content on span attributes (tracejudge SPAN_ONLY, OTel ``SPAN_ONLY`` + latest
experimental conventions, OpenLLMetry ``TRACELOOP_TRACE_CONTENT=true``, OpenInference's
default) and export through the same discarding exporter; ``spans/call`` must be 1.0 and
``content`` yes (the exported span holds the request's text) for every instrumented one.
``x floor`` divides an overhead by the floor's; ``tj / this`` divides tracejudge's overhead
by the row's (below 1: tracejudge costs less).

Usage: ``make bench-instrumentation`` (sets up .venv-bench with the peers), or
``.venv-bench/bin/python bench/bench_instrumentation.py --providers gemini --rounds 3``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _harness import rounds
from _instr_cases import CASES, configs


def _table(provider: str, names: list[str], results: tuple[dict[str, list[float]], ...]) -> None:
    over, base, spans, content = results
    floor = statistics.median(over["floor"]) if "floor" in over else float("nan")
    tj = statistics.median(over["tracejudge"]) if "tracejudge" in over else float("nan")
    print(f"\n{provider}")
    print(
        f"{'config':<14}{'bare us':>9}{'overhead us':>13}{'spread (min-max)':>19}"
        f"{'x floor':>9}{'tj / this':>11}{'spans/call':>12}{'content':>9}"
    )
    for c in names:
        med = statistics.median(over[c])
        spread = f"{min(over[c]):.1f}..{max(over[c]):.1f}"
        ratio = med / floor if floor > 0 and c not in ("bare", "floor") else float("nan")
        to_peer = tj / med if med > 0 and c not in ("bare", "floor", "tracejudge") else float("nan")
        ratio_s = f"{ratio:.2f}" if ratio == ratio else "-"
        peer_s = f"{to_peer:.2f}" if to_peer == to_peer else "-"
        content_s = "yes" if min(content[c]) == 1.0 else ("-" if c == "bare" else "NO")
        print(
            f"{c:<14}{statistics.median(base[c]):>9.0f}{med:>13.1f}{spread:>19}"
            f"{ratio_s:>9}{peer_s:>11}{min(spans[c]):>12.2f}{content_s:>9}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the peers")
    parser.add_argument("--providers", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--calls", type=int, default=None, help="measured calls per state")
    parser.add_argument("--block", type=int, default=50, help="calls per block")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", nargs="*", default=None, help="a subset, for every provider")
    parser.add_argument("--max-ratio", type=float, default=None, help="fail above (OpenAI floor)")
    args = parser.parse_args()

    bad: list[str] = []
    for provider in args.providers:
        names = [c for c in configs(provider) if args.configs is None or c in args.configs]
        calls = args.calls or CASES[provider].calls
        labels = [f"{provider}/{c}" for c in names]
        res = rounds(
            args.python, "_instr_worker.py", labels, args.rounds, calls, args.block,
            fields=("overhead_us", "bare_us", "spans", "content"),
        )  # fmt: skip
        by_config = tuple({c: r[f"{provider}/{c}"] for c in names} for r in res)
        _table(provider, names, by_config)
        spans, content = by_config[2], by_config[3]
        bad += [f"{provider}/{c}" for c in names if c != "bare" and min(spans[c]) != 1.0]
        bad += [f"{provider}/{c} (content)" for c in names if c != "bare" and min(content[c]) < 1]
        over = by_config[0]
        if args.max_ratio is not None and "floor" in over and "tracejudge" in over:
            ratio = statistics.median(over["tracejudge"]) / statistics.median(over["floor"])
            if ratio > args.max_ratio:
                print(f"FAIL: tracejudge at {ratio:.2f}x the floor > {args.max_ratio}")
                return 1
    print(
        f"\n(median of {args.rounds} rounds; each: median of paired {args.block}-call blocks "
        f"on/off in one process; calls per state: "
        + ", ".join(f"{p} {args.calls or CASES[p].calls}" for p in args.providers)
        + ")"
    )
    if bad:
        print(f"FAIL: not one span with content per call: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
