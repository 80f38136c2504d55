"""Regenerate ``traces/<variant>.json`` and ``baselines/`` by running the instrumented agent.

    python examples/refund/make_traces.py            # rewrite the committed files
    python examples/refund/make_traces.py --out DIR  # write elsewhere (the tests compare)

The traces are recorded, not written by hand: each variant runs the real refund agent
(real OpenAI SDK against the scripted model server) under ``tracejudge.instrument(...)``.
Reruns are byte-identical: ids come from a seeded id generator, timestamps are replaced
by their rank on a 1 ms grid, and the model server listens on a fixed port (it appears
in the spans as ``server.port``).

The healthy run is also recorded as the case's baseline (``baselines/<case>.json``), the
reviewed golden trajectory that ``F-BASELINE-*`` findings are measured against. Rewriting the
committed files also rewrites the copy that ships with the package for ``tracejudge demo``
(``src/tracejudge/demo/data/baselines/``), which must stay identical.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import openai
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import SeededIdGenerator, write_otlp_json
from tracejudge.demo.refund_agent import run_refund_agent
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts
from tracejudge.engine import BaselineStore, load_rules
from tracejudge.model.build import build_runs
from tracejudge.model.decode_sdk import spans_from_sdk

HERE = Path(__file__).resolve().parent
PACKAGED_BASELINES = HERE.parents[1] / "src" / "tracejudge" / "demo" / "data" / "baselines"
MODEL_SERVER_PORT = 48271


def record(server: ScriptedModelServer, variant: str) -> list[ReadableSpan]:
    """Run one variant under a fresh, seeded provider and return its spans."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource({"service.name": "refund-agent"}),
        id_generator=SeededIdGenerator(f"tracejudge-example-refund/{variant}"),
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
    try:
        client = openai.OpenAI(
            base_url=server.openai_base_url(variant), api_key="unused", max_retries=0
        )
        run_refund_agent(client, variant_id=variant, run_id=f"example-{variant}")
    finally:
        tracejudge.uninstrument()
        provider.shutdown()
    return list(memory.get_finished_spans())


def main(argv: list[str] | None = None) -> int:
    """Write the four traces and the healthy baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="directory to write into")
    args = parser.parse_args(argv)
    with ScriptedModelServer(refund_scripts(), port=MODEL_SERVER_PORT) as server:
        for variant in VARIANTS:
            spans = record(server, variant)
            path = args.out / "traces" / f"{variant}.json"
            write_otlp_json(path, spans, normalize_times=True)
            print(f"{path}: {len(spans)} spans")
            if variant == "healthy":
                (run,) = build_runs(spans_from_sdk(spans))
                tools = load_rules(HERE / "rules.yaml").tools  # kinds and categories
                baseline = BaselineStore(args.out / "baselines").record(run, tools)
                print(f"{baseline}: baseline of case {run.case_id}")
                if args.out.resolve() == HERE:
                    packaged = shutil.copy2(baseline, PACKAGED_BASELINES / baseline.name)
                    print(f"{packaged}: the copy tracejudge demo ships")
    return 0


if __name__ == "__main__":
    sys.exit(main())
