"""Run the eval cases of an existing agent and write one OTLP/JSON trace file per case.

    python examples/ci_eval/run_evals.py --out eval-traces
    tracejudge eval --rules examples/refund/rules.yaml eval-traces/*.json   # exit 1 on a fail

The only tracejudge line that touches the agent is ``tracejudge.instrument(...)`` below.
Spans are kept in memory and written as OTLP/JSON (the file format ``tracejudge eval``
reads); in production the same line exports OTLP to ``tracejudge serve`` instead.

The model here is tracejudge's local scripted server, so the example runs in CI with no key.
With a real model, drop the server and build the client as usual (key from a CI secret).
``--variant`` picks which scripted behaviour plays the model; ``silent_failure`` shows what a
regression looks like in CI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import openai
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support_agent import handle_ticket

import tracejudge
from tracejudge import semconv
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts
from tracejudge.demo.world import World


def main(argv: list[str] | None = None) -> int:
    """Run the cases; write ``<out>/<case>.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("eval-traces"))
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--cases", type=int, default=3, help="how many times to run the case")
    args = parser.parse_args(argv)

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracejudge.instrument(tracer_provider=provider, capture_content=True)  # <- the one line

    # One span per case so that the case's model calls share a trace (in production, the
    # request span of your web framework plays this part). This is harness code, not agent code.
    tracer = provider.get_tracer("eval-harness")
    with ScriptedModelServer(refund_scripts()) as server:
        client = openai.OpenAI(base_url=server.openai_base_url(args.variant), api_key="ci")
        for case in range(1, args.cases + 1):
            memory.clear()
            world = World()
            with tracer.start_as_current_span(f"eval case duplicate-charge-{case}") as span:
                span.set_attribute(semconv.USER_ID, world.customer_id)  # who the case acts for
                answer = handle_ticket(client, world)
            path = args.out / f"duplicate-charge-{case}.json"
            write_otlp_json(path, memory.get_finished_spans())
            print(f"{path}: {answer[:70]}")
    tracejudge.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
