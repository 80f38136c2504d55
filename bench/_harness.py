"""What the overhead benchmarks share: the discarding tracer provider every configuration
exports through, and the driver that runs worker processes in rotated rounds.

Workers are separate interpreters (instrumentors patch SDKs globally), so this module is
imported both by the drivers (``bench_instrumentation.py``, ``bench_frameworks.py``) and by
their workers (``_instr_worker.py``, ``_framework_worker.py``) from ``bench/``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def discard_provider() -> Any:
    """A TracerProvider whose exporter counts spans and drops them (``provider.discard.count``;
    ``provider.discard.last``: the last span, to check what it carries): export costs the
    same for every configuration."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        """Counts spans and drops them."""

        count = 0
        last: ReadableSpan | None = None

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            Discard.count += len(spans)
            Discard.last = spans[-1] if spans else Discard.last
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Discard()))
    provider.discard = Discard
    return provider


def run_worker(python: str, worker: str, *args: object) -> dict[str, float]:
    """One worker process (``bench/<worker>``); returns its last stdout line, parsed."""
    out = subprocess.run(
        [python, str(HERE / worker), *map(str, args)], check=True, capture_output=True, text=True
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def rounds(
    python: str,
    worker: str,
    configs: Sequence[str],
    n_rounds: int,
    *args: object,
    fields: Sequence[str] = ("overhead_us", "bare_us", "spans"),
) -> tuple[dict[str, list[float]], ...]:
    """Every configuration once per round, in an order rotated each round (so drifting
    machine load hits all alike): per field of the worker's result (by default its
    ``overhead_us``, ``bare_us`` and ``spans``), per configuration, the rounds' values."""
    out: tuple[dict[str, list[float]], ...] = tuple({c: [] for c in configs} for _ in fields)
    for r in range(n_rounds):
        shift = r % len(configs)
        for config in [*configs[shift:], *configs[:shift]]:
            res = run_worker(python, worker, config, *args)
            for values, name in zip(out, fields, strict=True):
                values[config].append(res[name])
            print(f"  round {r + 1} {config:<24}{res['overhead_us']:>10.1f} us", file=sys.stderr)
    return out
