"""``/metrics`` (and ``/healthz``) as the sum of the collector's components' snapshots.

Each component says what it counts (``snapshot()``: its top-level entries, always the same
keys): the counters (``Stats``), the listeners, the decision stage (what waits in its
``TraceHold``, the judging, each forward target's ``TargetQueue``), the processors of the
decided edge (logs, graders), the dead-letter file. ``merge`` sums them, refusing two
components that claim one key; ``disk_entry`` and ``judging_entry`` are the entries of the
disk queue and of the judging side, which are read from several objects. Before start only
the components that exist are summed (no decision stage: none of its entries).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.processors.cost import CostWatch, RuleCost
from tracejudge.collector.processors.worker import AdaptiveJudging
from tracejudge.collector.storage.headroom import Room
from tracejudge.collector.storage.store import DiskStore, QueuedTarget
from tracejudge.collector.telemetry.health import disk_refusal

__all__ = ["Judging", "JudgingLimits", "disk_entry", "judging_entry", "merge"]


class JudgingLimits(Protocol):
    """The judging bounds ``/metrics`` reports (the decision stage's ``DecisionConfig``)."""

    @property
    def max_rule_cost(self) -> float | None:
        """The per-run judging budget (None or 0: off)."""
        ...

    @property
    def max_judge_lag(self) -> float:
        """The judge lag admission pushes back at."""
        ...


class Judging(Protocol):
    """The judging side of the decision stage, as ``/metrics`` reads it."""

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


def merge(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The components' snapshots as one: their entries side by side, in order. Two
    components claiming one key is a bug in the graph (``ValueError`` naming it)."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key in out:
                raise ValueError(f"/metrics entry {key!r} reported by two components")
            out[key] = value
    return out


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
    config: JudgingLimits, rule_cost: RuleCost | None, judging: Judging | None
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
