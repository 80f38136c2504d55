"""The verdict metrics in Prometheus text exposition format (version 0.0.4), for a scrape of
``/metrics``.

``/metrics`` has answered JSON since the first collector, and scripts read it with a plain
``curl``; Prometheus asks for ``text/plain`` (or OpenMetrics) in its ``Accept`` header, so
the answer is chosen by content negotiation (``wants_prometheus``) and existing readers keep
JSON. ``?format=prometheus`` / ``?format=json`` force one.

Names follow the OpenTelemetry-to-Prometheus rules, derived from the semconv constants (never
typed here): dots become underscores, a unit ``s`` adds ``_seconds``, a counter ``_total``;
attribute keys become label names the same way (``gen_ai.agent.name`` ->
``gen_ai_agent_name``). So the same series names result whether Prometheus scrapes this
endpoint or receives the OTLP metrics through an OpenTelemetry Collector's Prometheus
exporter, and the shipped rules (collector/prometheus/) work with either.

Written by hand rather than with ``prometheus_client``: the counts already live in plain
dicts (``Stats``), the text format is small and stable, and the output is checked by the
real ``promtool check metrics`` and a real Prometheus scrape in the tests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from tracejudge import semconv as sc
from tracejudge.collector.telemetry.stats import IDENTITY_KEYS, LATENCY_BUCKETS, Identity, Stats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_NOT_LABEL = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(otel_name: str, unit: str = "", counter: bool = False) -> str:
    """The Prometheus name of an OpenTelemetry metric (``tracejudge.runs`` ->
    ``tracejudge_runs_total`` as a counter)."""
    name = _NOT_NAME.sub("_", otel_name)
    if unit == "s":
        name += "_seconds"
    if counter:
        name += "_total"
    return name


def label_name(attribute: str) -> str:
    """The Prometheus label name of an attribute key (``tracejudge.variant.id`` ->
    ``tracejudge_variant_id``)."""
    return _NOT_LABEL.sub("_", attribute)


RUNS = metric_name(sc.METRIC_TRACEJUDGE_RUNS, counter=True)
FINDINGS = metric_name(sc.METRIC_TRACEJUDGE_FINDINGS, counter=True)
HARD_GATE_FAILURES = metric_name(sc.METRIC_TRACEJUDGE_HARD_GATE_FAILURES, counter=True)
SHADOW_RUNS = metric_name(sc.METRIC_TRACEJUDGE_SHADOW_RUNS, counter=True)
SHADOW_PAIRS = metric_name(sc.METRIC_TRACEJUDGE_SHADOW_PAIRS, counter=True)
SPANS = metric_name(sc.METRIC_TRACEJUDGE_COLLECTOR_SPANS, counter=True)
QUEUE_DEPTH = metric_name(sc.METRIC_TRACEJUDGE_COLLECTOR_QUEUE_DEPTH)
DECISION_LATENCY = metric_name(sc.METRIC_TRACEJUDGE_COLLECTOR_DECISION_LATENCY, unit="s")
IDENTITY_LABELS = tuple(label_name(k) for k in IDENTITY_KEYS)
VERDICT_LABEL = label_name(sc.TRACEJUDGE_VERDICT)
CODE_LABEL = label_name(sc.TRACEJUDGE_FAILURE_CODE)
STATE_LABEL = label_name(sc.TRACEJUDGE_COLLECTOR_SPAN_STATE)
OUTCOME_LABEL = label_name(sc.TRACEJUDGE_SHADOW_OUTCOME)


def wants_prometheus(accept: str | None, fmt: str | None = None) -> bool:
    """Whether a ``/metrics`` request asks for the text format: ``?format=`` decides if
    given; otherwise an ``Accept`` naming ``text/plain`` or OpenMetrics and not JSON does.
    A bare ``curl`` (``*/*``) or no header keeps the JSON answer."""
    if fmt is not None:
        return fmt.strip().lower() in ("prometheus", "text")
    if not accept:
        return False
    media = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    if "application/json" in media:
        return False
    return "text/plain" in media or "application/openmetrics-text" in media


def _escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape_value(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _number(x: float) -> str:
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if math.isnan(x):
        return "NaN"
    if float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(float(x))


def _family(out: list[str], name: str, kind: str, help_text: str) -> None:
    out.append(f"# HELP {name} {help_text}")
    out.append(f"# TYPE {name} {kind}")


def _identity_counter(
    out: list[str],
    name: str,
    help_text: str,
    counts: Mapping[tuple[Identity, str], int],
    last: str,
) -> None:
    _family(out, name, "counter", help_text)
    for (ident, value), n in sorted(counts.items()):
        pairs = [*zip(IDENTITY_LABELS, ident, strict=True), (last, value)]
        out.append(f"{name}{_labels(pairs)} {n}")


def render(stats: Stats) -> str:
    """The whole exposition, one family per semconv metric."""
    out: list[str] = []
    _identity_counter(
        out,
        RUNS,
        "Judged runs by agent, variant, agent version, case slice and verdict.",
        dict(stats.run_keys),
        VERDICT_LABEL,
    )
    _identity_counter(
        out,
        FINDINGS,
        "Findings by agent, variant, agent version, case slice and failure code.",
        dict(stats.finding_keys),
        CODE_LABEL,
    )
    _identity_counter(
        out,
        HARD_GATE_FAILURES,
        "Runs failed by a hard-gate policy finding (fail the canary gate at once).",
        dict(stats.hard_gate_keys),
        CODE_LABEL,
    )
    _identity_counter(
        out,
        SHADOW_RUNS,
        "Judged shadow runs (not in the runs counter), by identity and verdict.",
        dict(stats.shadow_run_keys),
        VERDICT_LABEL,
    )
    _identity_counter(
        out,
        SHADOW_PAIRS,
        "Shadow runs by what pairing them with their stable run found.",
        dict(stats.shadow_pair_keys),
        OUTCOME_LABEL,
    )
    _family(out, SPANS, "counter", "Spans seen by the collector, by state.")
    for state, n in stats.spans.items():
        out.append(f"{SPANS}{_labels([(STATE_LABEL, state)])} {n}")
    _family(out, QUEUE_DEPTH, "gauge", "Spans waiting in the forwarding queues.")
    out.append(f"{QUEUE_DEPTH} {stats.queue_depth()}")
    _family(
        out,
        DECISION_LATENCY,
        "histogram",
        "Time from a trace being finished to its verdict being forwarded.",
    )
    cumulative = 0
    buckets = list(stats.latency_buckets)
    for bound, n in zip((*LATENCY_BUCKETS, math.inf), buckets, strict=True):
        cumulative += n
        le = "+Inf" if math.isinf(bound) else repr(bound)
        out.append(f'{DECISION_LATENCY}_bucket{{le="{le}"}} {cumulative}')
    out.append(f"{DECISION_LATENCY}_sum {_number(stats.latency_sum)}")
    out.append(f"{DECISION_LATENCY}_count {cumulative}")
    return "\n".join(out) + "\n"
