"""Collector health counts, mirrored to OpenTelemetry metrics.

The plain counters back ``/healthz`` and ``/metrics`` (JSON, and the Prometheus text format
of ``exposition.py``); the OTel instruments feed a ``MeterProvider`` whose OTLP exporter is
optional. Counting happens per batch, not per span, to keep the hot path cheap; verdict
labels are bounded by ``metric_labels.MetricLabels``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any, Protocol

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader

from tracejudge import semconv as sc
from tracejudge.collector.telemetry.metric_labels import MetricLabels
from tracejudge.engine.verdict import Verdict
from tracejudge.gate.recent import hard_gate_code

STATES = ("received", "forwarded", "rejected", "late", "dropped", "dead_lettered")
LATENCY_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
"""Upper bounds (seconds) of the decision-latency histogram's buckets (Prometheus ``le``),
from a quarter of a tick (5 ms) to the default decision wait (30 s)."""

Identity = tuple[str, str, str, str]
"""Bounded (agent, variant, agent version, case slice) label values of a verdict."""


class Gauges(Protocol):
    """What the counters read from the built graph when they are collected (the
    ``Collector``: its forward queues and shadow pairing)."""

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues."""
        ...

    def shadow_pending(self) -> int:
        """Shadows waiting for their stable run."""
        ...


class NoGauges:
    """No graph to read (counters used alone, as the logs queue's are): zeros."""

    def queue_depth(self) -> int:
        return 0

    def shadow_pending(self) -> int:
        return 0


class Stats:
    """Counters, a latency reservoir and the OTel instruments."""

    def __init__(
        self,
        readers: Iterable[MetricReader] = (),
        labels: MetricLabels | None = None,
        gauges: Gauges | None = None,
    ) -> None:
        self.gauges: Gauges = NoGauges() if gauges is None else gauges
        """Read at collection time, never set afterwards (``Collector`` passes itself)."""
        self.labels = MetricLabels() if labels is None else labels
        self.spans: dict[str, int] = dict.fromkeys(STATES, 0)
        self.runs: dict[str, int] = {}
        self.findings: dict[str, int] = {}
        self.traces_decided = 0
        self.conversations_decided = 0
        """Held conversations judged as one run (their traces count in ``traces_decided``)."""
        self.traces_truncated = 0
        self.requests_throttled = 0
        self.webhook_dropped = 0
        self.judge_errors = 0
        self.decision_errors = 0
        """Traces whose decision raised (forwarded unjudged with verdict ``error``)."""
        self.quarantined = 0
        """Disk-queue fragments moved aside at start-up because they cannot be replayed."""
        self.judge_timeouts = 0
        """Traces whose judging ran out of ``max_judge_time`` (verdict ``error``)."""
        self._latencies: list[float] = []
        self._unsorted = False
        self.latency_buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        """Per-bucket (not cumulative) counts; the last is above the largest bound."""
        self.latency_sum = 0.0
        self.latency_count = 0
        readers = list(readers)
        self.provider = MeterProvider(metric_readers=readers)
        # The SDK's readers are fixed at construction: with none, nothing can ever read the
        # histogram, so its record (~1.4 us per forwarded trace) is skipped.
        self._record_latency = bool(readers)
        meter = self.provider.get_meter("tracejudge.collector")
        # Counts are kept in plain dicts and reported by observable counters at collection
        # time (the same monotonic sums), so the decision path never enters the metrics SDK.
        self.run_keys: dict[tuple[Identity, str], int] = {}
        """Judged runs by (identity, verdict)."""
        self.finding_keys: dict[tuple[Identity, str], int] = {}
        """Findings by (identity, failure code)."""
        self.hard_gate_keys: dict[tuple[Identity, str], int] = {}
        """Runs failed by a hard-gate policy finding, by (identity, its failure code)."""
        self.shadow_run_keys: dict[tuple[Identity, str], int] = {}
        """Judged shadow runs by (identity, verdict): never in ``run_keys`` (not traffic)."""
        self.shadow_pair_keys: dict[tuple[Identity, str], int] = {}
        """Shadow runs by (identity, pairing outcome: paired, diverged, unpaired)."""
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_RUNS, callbacks=[self._observe_runs], unit="{run}"
        )
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_FINDINGS, callbacks=[self._observe_findings], unit="{finding}"
        )
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_HARD_GATE_FAILURES,
            callbacks=[self._observe_hard_gate],
            unit="{run}",
        )
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_SHADOW_RUNS, callbacks=[self._observe_shadow_runs], unit="{run}"
        )
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_SHADOW_PAIRS,
            callbacks=[self._observe_shadow_pairs],
            unit="{run}",
        )
        meter.create_observable_counter(
            sc.METRIC_TRACEJUDGE_COLLECTOR_SPANS, callbacks=[self._observe_spans], unit="{span}"
        )
        self._latency = meter.create_histogram(
            sc.METRIC_TRACEJUDGE_COLLECTOR_DECISION_LATENCY, unit="s"
        )
        meter.create_observable_gauge(
            sc.METRIC_TRACEJUDGE_COLLECTOR_QUEUE_DEPTH,
            callbacks=[self._observe_queue],
            unit="{span}",
        )

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues (the gauge)."""
        return self.gauges.queue_depth()

    def _observe_queue(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(self.queue_depth())]

    def _observe_runs(self, _options: CallbackOptions) -> Iterable[Observation]:
        return _observations(self.run_keys, sc.TRACEJUDGE_VERDICT)

    def _observe_findings(self, _options: CallbackOptions) -> Iterable[Observation]:
        return _observations(self.finding_keys, sc.TRACEJUDGE_FAILURE_CODE)

    def _observe_hard_gate(self, _options: CallbackOptions) -> Iterable[Observation]:
        return _observations(self.hard_gate_keys, sc.TRACEJUDGE_FAILURE_CODE)

    def _observe_shadow_runs(self, _options: CallbackOptions) -> Iterable[Observation]:
        return _observations(self.shadow_run_keys, sc.TRACEJUDGE_VERDICT)

    def _observe_shadow_pairs(self, _options: CallbackOptions) -> Iterable[Observation]:
        return _observations(self.shadow_pair_keys, sc.TRACEJUDGE_SHADOW_OUTCOME)

    def _observe_spans(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(n, {sc.TRACEJUDGE_COLLECTOR_SPAN_STATE: state})
            for state, n in list(self.spans.items())
            if n
        ]

    def count(self, state: str, n: int) -> None:
        """Add ``n`` spans in ``state`` (one of ``STATES``)."""
        if n:
            self.spans[state] += n

    def verdict(self, v: Verdict) -> None:
        """Count one judged run, its findings and its hard-gate failure (bounded labels).
        A shadow run is not user traffic: it counts in ``tracejudge.shadow.runs`` only."""
        if v.shadow:
            self._count_identity(self.shadow_run_keys, v, v.verdict)
            return
        self.runs[v.verdict] = self.runs.get(v.verdict, 0) + 1
        labels = self.labels
        ident = labels.identity(v.agent, v.variant, v.agent_version, v.case_id)
        key = (ident, v.verdict)
        self.run_keys[key] = self.run_keys.get(key, 0) + 1
        findings, finding_keys, code_label = self.findings, self.finding_keys, labels.code
        for f in v.findings:
            code = f.code
            findings[code] = findings.get(code, 0) + 1
            fkey = (ident, code_label(code))
            finding_keys[fkey] = finding_keys.get(fkey, 0) + 1
        hard = hard_gate_code(v) if v.verdict == "fail" else None
        if hard is not None:
            hkey = (ident, labels.code(hard))
            self.hard_gate_keys[hkey] = self.hard_gate_keys.get(hkey, 0) + 1

    def shadow_pair(self, v: Verdict, outcome: str) -> None:
        """Count what pairing the shadow run ``v`` found (``tracejudge.shadow.pairs``)."""
        self._count_identity(self.shadow_pair_keys, v, outcome)

    def _count_identity(
        self, counts: dict[tuple[Identity, str], int], v: Verdict, value: str
    ) -> None:
        ident = self.labels.identity(v.agent, v.variant, v.agent_version, v.case_id)
        key = (ident, value)
        counts[key] = counts.get(key, 0) + 1

    def latency(self, seconds: float) -> None:
        """Record one trace's time from finished to forwarded."""
        if self._record_latency:
            self._latency.record(seconds)
        self.latency_buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.latency_sum += seconds
        self.latency_count += 1
        # Appended unsorted and sorted when read: inserting in order cost a memmove of the
        # whole sample (~9 us per trace at the 100,000 cap).
        if len(self._latencies) >= 100_000:
            self._latencies.sort()
            self._latencies = self._latencies[::2]
        self._latencies.append(seconds)
        self._unsorted = True

    def percentile(self, q: float) -> float | None:
        """A latency percentile over the kept sample (None before any forward)."""
        if not self._latencies:
            return None
        if self._unsorted:
            self._latencies.sort()
            self._unsorted = False
        i = min(len(self._latencies) - 1, int(q * len(self._latencies)))
        return self._latencies[i]

    def snapshot(self) -> dict[str, Any]:
        """The counters' entries of ``/metrics`` (the first of its components)."""
        p50 = self.percentile(0.5)
        p99 = self.percentile(0.99)
        return {
            "spans": dict(self.spans),
            "runs": dict(self.runs),
            "findings": dict(self.findings),
            "traces_decided": self.traces_decided,
            "conversations_decided": self.conversations_decided,
            "traces_truncated": self.traces_truncated,
            "requests_throttled": self.requests_throttled,
            "webhook_dropped": self.webhook_dropped,
            "judge_errors": self.judge_errors,
            "judge_timeouts": self.judge_timeouts,
            "decision_errors": self.decision_errors,
            "quarantined": self.quarantined,
            "queue_depth": self.queue_depth(),
            "decision_latency_s": {"p50": p50, "p99": p99, "count": len(self._latencies)},
            "shadow": {
                "runs": _totals(self.shadow_run_keys),
                "pairs": _totals(self.shadow_pair_keys),
                "pending": self.gauges.shadow_pending(),
            },
        }

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Flush and stop the metric readers, waiting at most ``timeout_s``."""
        self.provider.shutdown(timeout_millis=max(100.0, timeout_s * 1000))


IDENTITY_KEYS = (
    sc.GEN_AI_AGENT_NAME,
    sc.TRACEJUDGE_VARIANT_ID,
    sc.GEN_AI_AGENT_VERSION,
    sc.TRACEJUDGE_CASE_SLICE,
)
"""The attribute keys of an ``Identity``, in its order."""


def _observations(counts: dict[tuple[Identity, str], int], last: str) -> list[Observation]:
    return [
        Observation(n, {**dict(zip(IDENTITY_KEYS, ident, strict=True)), last: value})
        for (ident, value), n in list(counts.items())
    ]


def _totals(counts: dict[tuple[Identity, str], int]) -> dict[str, int]:
    """Counts summed over the identity labels, by their last label's value."""
    out: dict[str, int] = {}
    for (_ident, value), n in list(counts.items()):
        out[value] = out.get(value, 0) + n
    return out


def otlp_metric_reader(endpoint: str, interval_s: float) -> MetricReader:
    """A periodic OTLP/HTTP metric reader for ``metrics_otlp_endpoint``."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    url = endpoint.rstrip("/")
    if not url.endswith("/v1/metrics"):
        url += "/v1/metrics"
    return PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=url), export_interval_millis=interval_s * 1000
    )
