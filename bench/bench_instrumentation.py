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
Each overhead is given twice: wall-clock, and process CPU time (``time.process_time``, the
replay server's thread included, alike in both halves), which a loaded machine's waiting for
a core does not inflate. ``tj / this`` divides tracejudge's overhead by the row's (below 1:
tracejudge costs less); ``x floor`` divides a wall-clock overhead by the floor's.

Usage: ``make bench-instrumentation`` (sets up .venv-bench with the peers), or
``.venv-bench/bin/python bench/bench_instrumentation.py --providers gemini --rounds 3``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _harness import rounds
from _instr_cases import CASES, configs


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}..{max(values):.0f})"


def _ratio(num: float, den: float) -> str:
    return f"{num / den:.2f}" if den > 0 and num == num else "-"


def _table(provider: str, names: list[str], results: tuple[dict[str, list[float]], ...]) -> None:
    over, base, spans, content, cpu = results
    floor = statistics.median(over["floor"]) if "floor" in over else float("nan")
    tj = statistics.median(over.get("tracejudge", [float("nan")]))
    tj_cpu = statistics.median(cpu.get("tracejudge", [float("nan")]))
    print(f"\n{provider}")
    print(
        f"{'config':<14}{'bare us':>8}{'overhead us (min..max)':>24}{'tj / this':>10}"
        f"{'cpu us (min..max)':>22}{'tj / this':>10}{'x floor':>8}{'spans':>7}{'content':>8}"
    )
    for c in names:
        peer = c not in ("bare", "floor", "tracejudge")
        med, med_cpu = statistics.median(over[c]), statistics.median(cpu[c])
        content_s = "yes" if min(content[c]) == 1.0 else ("-" if c == "bare" else "NO")
        print(
            f"{c:<14}{statistics.median(base[c]):>8.0f}{_cell(over[c]):>24}"
            f"{_ratio(tj, med) if peer else '-':>10}{_cell(cpu[c]):>22}"
            f"{_ratio(tj_cpu, med_cpu) if peer else '-':>10}"
            f"{_ratio(med, floor) if c not in ('bare', 'floor') else '-':>8}"
            f"{min(spans[c]):>7.2f}{content_s:>8}"
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
            fields=("overhead_us", "bare_us", "spans", "content", "cpu_overhead_us"),
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
