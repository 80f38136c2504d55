"""The entries of ``/metrics`` (and ``/healthz``) read from the collector's components.

``Collector.snapshot`` puts them beside the counters of ``Stats``: what waits in the
pipeline, each forward target, the disk queue and the judging thread. Each function reads
one component and returns its entry; before start (no pipeline yet) the entries are zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.processors.cost import CostWatch, RuleCost
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.worker import AdaptiveJudging
from tracejudge.collector.storage.headroom import Room
from tracejudge.collector.storage.store import DiskStore, QueuedTarget
from tracejudge.collector.telemetry.health import disk_refusal

__all__ = ["Judging", "disk_entry", "hold_entries", "judging_entry", "target_entries"]


class Judging(Protocol):
    """The judging side of the pipeline, as ``/metrics`` reads it."""

    @property
    def worker(self) -> AdaptiveJudging:
        """Where judging runs (the thread or the loop)."""
        ...

    @property
    def cost(self) -> CostWatch:
        """Judging time per run."""
        ...

    def judge_lag(self) -> float:
        """Seconds judging is behind the traces' deadlines."""
        ...


def hold_entries(hold: TraceHold | None) -> dict[str, Any]:
    """What waits in the pipeline: buffered and held traces, remembered decisions."""
    if hold is None:
        return dict.fromkeys(_HOLD_KEYS, 0)
    buffer = hold.buffer
    return {
        "buffered_traces": len(buffer.traces) + buffer.held_traces,
        "buffered_spans": buffer.spans + buffer.held_spans,
        "buffered_bytes": buffer.used_bytes(),
        "held_conversations": len(hold.held) if hold.held is not None else 0,
        "held_traces": buffer.held_traces,
        "decided_cache": len(hold.decided),
        "decided_cache_bytes": hold.decided.nbytes,
    }


_HOLD_KEYS = (
    "buffered_traces",
    "buffered_spans",
    "buffered_bytes",
    "held_conversations",
    "held_traces",
    "decided_cache",
    "decided_cache_bytes",
)


def target_entries(queues: Sequence[TargetQueue]) -> dict[str, dict[str, Any]]:
    """Each forward target's queue and failures, by URL."""
    return {
        q.target.url: {
            "name": q.name,
            "queued_spans": q.spans,
            "queued_bytes": q.nbytes,
            "peak_bytes": q.peak_bytes,
            "failures": q.failures,
            "worker_restarts": q.restarts,
            "dead_lettered": q.dead_lettered,
            "dead_lettered_batches": q.dead_lettered_batches,
            "last_error": q.last_error,
        }
        for q in queues
    }


def disk_entry(
    store: DiskStore,
    room: Room | None,
    queues: Sequence[TargetQueue],
    removed_targets: Sequence[QueuedTarget],
    retry_after: float,
) -> dict[str, Any]:
    """The disk queue: its size against its cap and reserve, errors, whether it refuses
    requests (and why), and what waits for targets no longer configured."""
    return {
        "file_bytes": store.file_bytes(),
        "wal_bytes": store.wal_bytes(),
        "max_bytes": store.max_bytes,
        "max_bytes_derived": room is not None and room.derived,
        "reserve_bytes": store.reserve.size,
        "reserve_in_place": store.reserve.present,
        "errors": store.errors,
        "last_error": store.last_error,
        "refusing": disk_refusal(store, queues, retry_after),
        "removed_targets": {
            r.key: {"url": r.url, "payloads": r.payloads, "spans": r.spans} for r in removed_targets
        },
    }


def judging_entry(
    config: CollectorConfig, rule_cost: RuleCost | None, judging: Judging | None
) -> dict[str, Any]:
    """The judging thread's state for ``/metrics``: how far behind it is, what the
    rules cost on the synthetic run and per live run, and runs over the budget."""
    budget = config.max_rule_cost
    cost = rule_cost
    out: dict[str, Any] = {
        "lag_s": 0.0,
        "max_lag_s": config.max_judge_lag,
        "rule_cost_ms": round(cost.seconds * 1000, 3) if cost is not None else None,
        "budget_ms": budget * 1000 if budget else None,
        "runs": 0,
        "mean_ms": None,
        "max_ms": None,
        "over_budget": 0,
        "on": None,
        "moves": 0,
    }
    p = judging
    if p is not None:
        out["on"] = "thread" if p.worker.on_thread else "loop"
        out["moves"] = p.worker.moves
        watch = p.cost
        out["lag_s"] = round(p.judge_lag(), 3)
        out["runs"] = watch.runs
        out["over_budget"] = watch.over_budget
        if watch.runs:
            out["mean_ms"] = round(watch.seconds / watch.runs * 1000, 3)
            out["max_ms"] = round(watch.slowest * 1000, 3)
    return out
