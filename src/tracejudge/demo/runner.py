"""``tracejudge demo`` end to end: scripted model, instrumented agent, embedded collector.

The demo runs the production path on one machine with no key and no network:

1. an embedded ``Collector`` (ephemeral loopback ports) loaded with the refund rules and
   baselines, forwarding to ``--forward`` targets when given;
2. an SDK ``TracerProvider`` exporting OTLP/HTTP to it, handed to the one
   ``tracejudge.instrument(...)`` line;
3. the scripted model server, and the refund agent (real OpenAI SDK) once per variant;
4. the verdicts the collector emits, joined with the spans for names, as ``DemoRow``s.

A variant whose agent fails, or whose verdict does not arrive in time, still gets a row
that says so; nothing is dropped silently.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.collector import CollectorConfig, Judge
from tracejudge.demo.embedded import EmbeddedCollector
from tracejudge.demo.model_server import ScriptedModelServer
from tracejudge.demo.refund_agent import AgentResult, run_refund_agent
from tracejudge.demo.refund_scripts import VARIANTS, refund_scripts
from tracejudge.demo.table import DemoRow
from tracejudge.engine import BaselineStore, Engine, load_rules

SERVICE_NAME = "refund-agent"


@dataclass(slots=True)
class DemoOptions:
    """What ``tracejudge demo`` was asked to do."""

    rules: Path
    baselines: Path | None = None
    forward: list[str] = field(default_factory=list)
    ui_url: str | None = None
    stream: bool = False
    variants: Sequence[str] = VARIANTS
    verdict_timeout: float = 15.0
    judge: Judge | None = None
    """A judge to use instead of the one built from ``rules`` (tests, embedders)."""


@dataclass(slots=True)
class DemoOutcome:
    """What the demo produced: rows to print, raw verdict records, spans, timings."""

    rows: list[DemoRow]
    records: list[dict[str, Any]]
    spans: list[ReadableSpan]
    elapsed_s: float
    collector_stats: dict[str, Any] = field(default_factory=dict)


def default_ui_url(forward: Sequence[str]) -> str | None:
    """Jaeger's UI on the host of the first forward target (``http://host:16686``)."""
    if not forward:
        return None
    host = urlsplit(forward[0]).hostname or "localhost"
    return f"http://{host}:16686"


def trace_link(ui_url: str | None, trace_id: str) -> str | None:
    """The UI link of one trace (Jaeger's ``/trace/<id>`` form)."""
    return None if ui_url is None else f"{ui_url.rstrip('/')}/trace/{trace_id}"


def _collector_config(options: DemoOptions) -> CollectorConfig:
    config = CollectorConfig(rules=options.rules, forward=list(options.forward))
    config.decision_wait_after_root = 0.2
    config.tick = 0.02
    config.shutdown_timeout = 5.0
    return config


def build_judge(rules: Path, baselines: Path | None) -> Judge:
    """The engine for ``rules``, with the baselines the ``baseline`` rule diffs against.

    A bad rules file raises ``RulesError`` listing every problem (fail fast, before
    anything runs).
    """
    store = BaselineStore(baselines) if baselines is not None else None
    engine: Judge = Engine(load_rules(rules), baselines=store)
    return engine


def _judge(options: DemoOptions) -> Judge:
    if options.judge is not None:
        return options.judge
    return build_judge(options.rules, options.baselines)


def _run_variant(
    server: ScriptedModelServer, variant: str, stream: bool
) -> tuple[AgentResult | None, str | None]:
    client = openai.OpenAI(
        base_url=server.openai_base_url(variant), api_key="demo-no-key", max_retries=0
    )
    try:
        result = run_refund_agent(
            client, variant_id=variant, run_id=f"demo-{variant}", stream=stream
        )
    except Exception as exc:  # one broken variant must not hide the others' verdicts
        return None, f"{type(exc).__name__}: {exc}"
    return result, None


def _row(
    variant: str,
    result: AgentResult | None,
    error: str | None,
    record: dict[str, Any] | None,
    names: dict[str, str],
    ui_url: str | None,
) -> DemoRow:
    trace_id = result.trace_id if result is not None and result.trace_id else ""
    answer = result.answer if result is not None else f"(agent failed: {error})"
    if record is None:
        why = error or "no verdict arrived from the collector in time"
        return DemoRow(variant, answer, "error", None, None, None, trace_id, why)
    primary = record.get("primary") or {}
    span_id = primary.get("span_id")
    return DemoRow(
        variant=variant,
        answer=answer,
        verdict=str(record.get("verdict")),
        code=primary.get("code"),
        span_name=names.get(span_id) if span_id else None,
        span_id=span_id,
        trace_id=trace_id,
        explanation=str(primary.get("explanation") or record.get("error") or ""),
        link=trace_link(ui_url, trace_id) if trace_id else None,
    )


def run_demo(options: DemoOptions) -> DemoOutcome:
    """Run every variant through the embedded collector and return the judged rows."""
    started = time.perf_counter()
    memory = InMemorySpanExporter()
    with EmbeddedCollector(_collector_config(options), _judge(options)) as collector:
        provider = TracerProvider(resource=Resource({"service.name": SERVICE_NAME}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        exporter = OTLPSpanExporter(endpoint=collector.otlp_http_traces_url, timeout=10)
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
        tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
        try:
            with ScriptedModelServer(refund_scripts()) as server:
                results = {v: _run_variant(server, v, options.stream) for v in options.variants}
        finally:
            tracejudge.uninstrument()
            provider.force_flush()
            provider.shutdown()
        trace_ids = {r.trace_id for r, _ in results.values() if r is not None and r.trace_id}
        records = collector.verdicts(trace_ids, options.verdict_timeout)
    stats = collector.snapshot()  # after close: forwarding has been flushed
    spans = list(memory.get_finished_spans())
    names = {format(s.context.span_id, "016x"): s.name for s in spans if s.context is not None}
    by_trace = {str(r.get("trace_id")): r for r in records}
    ui_url = options.ui_url or default_ui_url(options.forward)
    rows = [
        _row(
            variant,
            result,
            error,
            by_trace.get(result.trace_id) if result is not None and result.trace_id else None,
            names,
            ui_url,
        )
        for variant, (result, error) in results.items()
    ]
    return DemoOutcome(rows, records, spans, time.perf_counter() - started, stats)
