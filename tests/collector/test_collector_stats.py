"""The decision-latency sample behind /metrics p50/p99."""

from __future__ import annotations

import random

from tracejudge.collector.telemetry.stats import Stats


def test_percentiles_over_unsorted_arrivals_and_the_cap() -> None:
    """Latencies arrive in any order and the sample is halved at its cap; the reported
    percentiles must still be those of the kept values in sorted order."""
    stats = Stats([])
    rng = random.Random(7)
    values = [rng.random() for _ in range(1000)]
    for v in values:
        stats.latency(v)
    ordered = sorted(values)
    assert stats.percentile(0.5) == ordered[500]
    assert stats.percentile(0.99) == ordered[990]
    stats.latency(2.0)  # arrives after a read: must be sorted in before the next one
    assert stats.percentile(1.0) == 2.0
    for _ in range(100_000):
        stats.latency(rng.random())
    kept = stats.snapshot()["decision_latency_s"]["count"]
    assert 50_000 <= kept <= 100_000
    p50 = stats.percentile(0.5)
    assert p50 is not None
    assert 0.45 < p50 < 0.55
    stats.shutdown()
