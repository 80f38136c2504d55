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
or, with ``--trace-out FILE``, are appended to FILE as OTLP/JSON lines (``instrument(file=...)``,
the OTLP file exporter) that ``tracejudge eval`` judges. When nothing listens at the
endpoint, one note says so and the spans stay local (quick and quiet, rather than seconds of
export retries).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import openai

import tracejudge
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.refund_agent import run_refund_agent
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts


def main(argv: list[str] | None = None) -> int:
    """Run the agent once and print its answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="healthy")
    parser.add_argument(
        "--trace-out", type=Path, help="append the run's spans to this file as OTLP/JSON lines"
    )
    parser.add_argument("--stream", action="store_true", help="use streamed completions")
    args = parser.parse_args(argv)

    if args.trace_out:
        tracejudge.instrument(file=args.trace_out)  # the one line: spans appended to a file
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
    tracejudge.uninstrument()  # flushes the spans still batched
    if args.trace_out:
        print(f"spans: appended to {args.trace_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
