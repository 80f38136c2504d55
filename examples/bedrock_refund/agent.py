"""The refund agent on AWS Bedrock: ``python examples/bedrock_refund/agent.py``.

Same world, tools and variants as ``examples/refund``; the model is reached through the real
``boto3`` ``bedrock-runtime`` client (Converse API, ``toolUse``/``toolResult`` blocks) against
the Bedrock-compatible endpoint of tracejudge's local scripted model server. No AWS account,
no network (the credentials are placeholders the local server ignores). ``instrument(...)``
patches the client the same way it patches OpenAI's, so the judge sees the same run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import boto3
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_agent_bedrock import run_refund_agent_bedrock
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

    with ScriptedModelServer(refund_scripts()) as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=server.bedrock_endpoint_url(args.variant),
            aws_access_key_id="unused",
            aws_secret_access_key="unused",
        )
        result = run_refund_agent_bedrock(
            client, variant_id=args.variant, run_id=f"{args.variant}-bedrock-1"
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
