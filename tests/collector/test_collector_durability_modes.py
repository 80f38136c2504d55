"""The durability seam (collector/storage/durability.py) on a real, size-capped SQLite disk queue:
what ``OnDisk`` does when the disk refuses, without receivers, sockets or a judge."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.consumer import Throttled
from tracejudge.collector.exporters.file_target import FileTarget
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.storage.durability import InMemory, OnDisk, durability_for
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats

CAP = 96 * 1024


def _queue(tmp_path: Path, store: DiskStore) -> TargetQueue:
    return TargetQueue(
        FileTarget(tmp_path / "out.jsonl"),
        stats=Stats([]),
        store=store,
        max_batch_bytes=1 << 20,
        retry_initial=0.1,
        retry_max=1.0,
    )


def test_a_refused_accept_is_throttled_and_writes_nothing(tmp_path: Path) -> None:
    store = DiskStore(tmp_path / "q", max_bytes=CAP)
    d = OnDisk(store, retry_after=2.0)
    big = TraceFragment(os.urandom(16), os.urandom(4 * CAP), 1, True)
    with pytest.raises(Throttled) as refused:
        d.accept([big], [])
    assert refused.value.retry_after == 2.0
    assert store.load_inbox() == []


def test_a_refused_commit_keeps_the_inbox_until_every_copy_is_settled(tmp_path: Path) -> None:
    """The decision's payload does not fit the capped file: it travels in memory with a
    ``Release``, the trace's inbox row stays (a crash would replay it), and the last
    settled copy frees the row."""
    store = DiskStore(tmp_path / "q", max_bytes=CAP)
    d = OnDisk(store, retry_after=1.0)
    tid = os.urandom(16)
    d.accept([TraceFragment(tid, b"fragment", 1, True)], [])
    q = _queue(tmp_path, store)
    rows = [(q, Item(os.urandom(4 * CAP), 1, 1, None)), (q, Item(b"x", 1, 0, None))]
    d.commit(rows, [tid], [Decision(verdict="pass")])
    release = rows[0][1].release
    assert release is not None
    assert release is rows[1][1].release
    assert [row for _, row in store.load_inbox()] == [b"fragment"]
    release.done()
    assert store.load_inbox() != []  # one copy still unsettled
    release.done()
    assert store.load_inbox() == []


def test_in_memory_persists_nothing_and_is_not_durable(tmp_path: Path) -> None:
    assert isinstance(durability_for(None, 1.0), InMemory)
    store = DiskStore(tmp_path / "q")
    on_disk = durability_for(store, 1.0)
    assert on_disk.durable
    assert not durability_for(None, 1.0).durable
    assert durability_for(None, 1.0).keep_unparsed(os.urandom(16), [b"junk"]) == ""
    assert "kept in" in on_disk.keep_unparsed(os.urandom(16), [b"junk"])
