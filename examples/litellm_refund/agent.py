"""The refund agent on LiteLLM: ``python examples/litellm_refund/agent.py``.

Same world, tools and variants as ``examples/refund``; the model is reached through the real
``litellm`` package (``litellm.completion`` with ``anthropic/claude-haiku-4-5``: LiteLLM's own
Anthropic Messages client, tool calls in OpenAI's shapes) against the Anthropic-compatible
endpoint of tracejudge's local scripted model server. No key, no network.
``instrument(...)`` traces each LiteLLM call as one ``chat`` span, provider ``anthropic``, so
the judge sees the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.recording import write_otlp_json
from tracejudge.demo.refund_agent_litellm import run_refund_agent_litellm
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument("--trace-out", type=Path, help="write the run's spans as OTLP/JSON")
    args = parser.parse_args(argv)

    # No network: LiteLLM reads its model price list from the package, not from the web.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    memory = InMemorySpanExporter()
    if args.trace_out:
        provider = TracerProvider(resource=Resource({"service.name": "refund-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracejudge.instrument(tracer_provider=provider)  # the one line, with a local provider
    else:
        # the one line: OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (one warning if nothing listens)
        tracejudge.instrument()

    # LiteLLM imported at start, as an application does: its import takes seconds, which are
    # the process's, not the judged run's (the rules' max_duration_s)
    import litellm  # noqa: F401

    with ScriptedModelServer(refund_scripts()) as server:
        result = run_refund_agent_litellm(
            server.anthropic_base_url(args.variant),
            variant_id=args.variant,
            run_id=f"{args.variant}-litellm-1",
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
