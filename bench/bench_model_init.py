"""Constructor cost of the run model and verdict types, in µs per object on one core.

Why: the collector builds one ``SpanRecord`` per span, one step per model or tool span, one
``RuleOutcome`` per rule and one ``Verdict`` per run, and these are plain dataclasses with
the ``__init__`` that ``dataclasses`` generates (interpreted code, also in the compiled
build). Run it with each build's Python to compare builds or commits:

``.venv/bin/python bench/bench_model_init.py`` (pure) and
``.venv-compiled/bin/python bench/bench_model_init.py`` (mypyc). CPU time, best of 5.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from tracejudge._build import build_kind
from tracejudge.engine.verdict import RuleOutcome, Verdict
from tracejudge.model.run import ModelCall, Note, ToolCall
from tracejudge.model.spans import SpanRecord

ATTRS: dict[str, Any] = {"gen_ai.operation.name": "chat"}


def cases() -> dict[str, Callable[[], object]]:
    """Each type built as the decoder, run builder and engine build it."""
    return {
        "SpanRecord (13 positional)": lambda: SpanRecord(
            "t", "s", "p", "chat", 1, 2, 3, 0, "", ATTRS, [], ATTRS, "scope"
        ),
        "ModelCall (8 keywords)": lambda: ModelCall(
            span_id="s",
            operation="chat",
            provider="openai",
            request_model="m",
            input_tokens=1,
            output_tokens=2,
            start_ns=1,
            end_ns=2,
        ),
        "ToolCall (8 keywords)": lambda: ToolCall(
            span_id="s",
            name="lookup",
            call_id="c",
            arguments=ATTRS,
            result=ATTRS,
            status="ok",
            start_ns=1,
            end_ns=2,
        ),
        "RuleOutcome (5 positional)": lambda: RuleOutcome("rule", "policy", "pass", "s", 1.0),
        "Note (3 positional)": lambda: Note("orphan_span", ("s",), "text"),
        "Verdict (4 positional, 4 keywords)": lambda: Verdict(
            "t", "s", "pass", {}, agent="a", findings=[], outcomes=[], metrics={}
        ),
    }


def best_us(make: Callable[[], object], n: int, trials: int) -> float:
    """Best CPU µs per call over ``trials`` loops of ``n`` calls."""
    best = float("inf")
    for _ in range(trials):
        t0 = time.process_time()
        for _ in range(n):
            make()
        best = min(best, (time.process_time() - t0) / n * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    """Print one line per type."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"tracejudge {build_kind()} build, CPU time, best of {args.trials}")
    for name, make in cases().items():
        print(f"{name:36} {best_us(make, args.n, args.trials):6.3f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
