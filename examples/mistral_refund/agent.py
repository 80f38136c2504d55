"""The refund agent on Mistral AI: ``python examples/mistral_refund/agent.py``.

Same world, tools and variants as ``examples/refund``; the model is reached through the real
``mistralai`` SDK (``chat.complete``, tool calls and tool messages) against the OpenAI-compatible
endpoint of tracejudge's local scripted model server (Mistral's chat API has OpenAI's shapes).
No key, no network. ``instrument(...)`` patches the client the same way it patches OpenAI's,
so the judge sees the same run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_agent_mistral import run_refund_agent_mistral
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--trace-out", type=Path, help="write the run's spans as OTLP/JSON")
    args = parser.parse_args(argv)

    memory = InMemorySpanExporter()
    if args.trace_out:
        provider = TracerProvider(resource=Resource({"service.name": "refund-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracejudge.instrument(tracer_provider=provider)  # the one line, with a local provider
    else:
        # the one line: OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (one warning if nothing listens)
        tracejudge.instrument()

    try:  # mistralai 2.0 and later; 1.x: ``from mistralai import Mistral``
        from mistralai.client import Mistral
    except ImportError:
        from mistralai import Mistral  # type: ignore[attr-defined,no-redef]

    with ScriptedModelServer(refund_scripts()) as server:
        client = Mistral(api_key="unused", server_url=server.mistral_server_url(args.variant))
        result = run_refund_agent_mistral(
            client, variant_id=args.variant, run_id=f"{args.variant}-mistral-1"
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
