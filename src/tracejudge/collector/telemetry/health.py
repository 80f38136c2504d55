"""What ``/healthz`` says beyond ``ok``: why the collector is degraded, and, when the disk
queue refuses requests, why and what makes it accept them again.

A probe or a person reading ``/healthz`` during an outage should not have to correlate
``/metrics`` counters to learn that the disk queue is full and that it is waiting for a
backend (or for space on its volume). The texts are built from what ``/metrics`` already
holds; a backend's error text is scrubbed where it is recorded (``TargetQueue.last_error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.storage.store import DiskStore, Refusal


def disk_refusal(
    store: DiskStore, queues: Sequence[TargetQueue], retry_after: float
) -> dict[str, Any] | None:
    """``{"reason", "accepts_again", "retry_after_s"}`` while the disk queue refuses
    requests (its last write that would grow it failed), else None."""
    r = store.refusal
    if r is None:
        return None
    return {
        "reason": _reason(r, store),
        "accepts_again": _accepts_again(r, store, queues),
        "retry_after_s": retry_after,
    }


def _reason(r: Refusal, store: DiskStore) -> str:
    if r.cause == "cap":
        return f"disk queue full: the database is at its cap of {store.max_bytes} bytes"
    if r.cause == "volume":
        return (
            f"disk queue full: its volume has {r.free_bytes} bytes free, and the queue keeps "
            f"{r.reserve_bytes} bytes in reserve for deleting delivered rows"
        )
    return f"disk queue failing: {store.last_error}"


def _accepts_again(r: Refusal, store: DiskStore, queues: Sequence[TargetQueue]) -> str:
    waiting = [q for q in queues if q.spans]
    if r.cause == "volume":
        return (
            f"when the volume of {store.path.parent} has more than {r.reserve_bytes} bytes "
            "free plus room for the request"
        )
    if r.cause == "error":
        return "when a write to the disk queue succeeds again (each request retries it)"
    if not waiting:
        return "as the traces it holds are judged and delivered, freeing their rows"
    parts = []
    for q in waiting:
        state = f", failing: {q.last_error}" if q.last_error else ", being delivered"
        parts.append(f"{q.name}: {q.spans} spans waiting{state}")
    return "as the backends take what waits and its rows are deleted (" + "; ".join(parts) + ")"


def degraded_reasons(targets: dict[str, dict[str, Any]], disk: dict[str, Any] | None) -> list[str]:
    """Why ``status`` is ``degraded``: failing backends with data waiting, a disk queue
    that refuses or fails (empty when healthy)."""
    out = [
        f"backend {t['name']} failing with {t['queued_spans']} spans waiting: {t['last_error']}"
        for t in targets.values()
        if t["last_error"] and t["queued_spans"]
    ]
    if disk is not None:
        refusing = disk.get("refusing")
        if refusing is not None:
            out.append(f"{refusing['reason']}; accepts again {refusing['accepts_again']}")
        elif disk["last_error"]:
            out.append(f"disk queue: {disk['last_error']}")
    return out
