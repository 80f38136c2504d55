"""The refund agent, runnable: ``python examples/refund/agent.py --variant healthy``.

A support agent asked to refund a duplicate charge. It uses the real OpenAI SDK; with no
``--base-url`` it talks to tracejudge's local scripted model server, so it runs with no key
and no network. ``--variant`` picks what the scripted model does (healthy, silent_failure,
wrong_order, half_amount).

The agent loop and its tools live in ``tracejudge.demo.refund_agent`` and
``tracejudge.demo.refund_tools`` (one copy, shared with ``tracejudge demo``); this file is
what an application around it looks like: one ``tracejudge.instrument(...)`` line, a client,
a run.

Spans go to the OTLP endpoint in ``OTEL_EXPORTER_OTLP_ENDPOINT`` (e.g. ``tracejudge serve``),
or, with ``--trace-out FILE``, into an OTLP/JSON file that ``tracejudge eval`` judges. When
nothing listens at the endpoint, one note says so and the spans stay local (quick and quiet,
rather than seconds of export retries).
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

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_agent import run_refund_agent
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--trace-out", type=Path, help="write the run's spans as OTLP/JSON")
    parser.add_argument("--stream", action="store_true", help="use streamed completions")
    args = parser.parse_args(argv)

    memory = InMemorySpanExporter()
    if args.trace_out:
        provider = TracerProvider(resource=Resource({"service.name": "refund-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracejudge.instrument(tracer_provider=provider)  # the one line, with a local provider
    else:
        # the one line: OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (one warning if nothing listens)
        tracejudge.instrument()

    with ScriptedModelServer(refund_scripts()) as server:
        client = openai.OpenAI(base_url=server.openai_base_url(args.variant), api_key="unused")
        result = run_refund_agent(
            client, variant_id=args.variant, run_id=f"{args.variant}-1", stream=args.stream
        )

    print(f"answer: {result.answer}")
    print(f"refunds made: {result.world.refunds or 'none'}")
    print(f"trace: {result.trace_id}")
    if args.trace_out:
        write_otlp_json(args.trace_out, memory.get_finished_spans())
        print(f"spans: {len(memory.get_finished_spans())} written to {args.trace_out}")
    tracejudge.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main())
