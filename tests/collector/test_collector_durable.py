"""Decisions survive a restart with ``--queue-dir`` (issue 12, defect 5, first part).

The decided-trace cache lived only in memory: children of a trace judged before a restart
were taken for a new trace after it and got a second, different verdict (or none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tracejudge import semconv as sc
from tracejudge.collector import Collector
from tracejudge.collector.storage.store import DiskStore


def test_late_span_after_a_restart_gets_the_verdict_from_before(
    lt: LoopThread, collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """A trace is judged ``fail`` (a failing child cites a code), the collector stops and
    a new one starts on the same queue; a late child of that trace is forwarded at once as
    late, with the same verdict and, for a cited span id, its codes; nothing is re-judged."""
    qdir = tmp_path / "q"
    first = collector_factory(queue_dir=qdir)
    tid, rid = new_ids()
    failing = make_span(tid, parent=rid, error=True)
    body = make_request([make_span(tid, rid), failing]).SerializeToString()
    assert post(first.http_port, body)[0] == 200
    wait_for(lambda: len(sink.spans()) == 2, what="the judged trace")
    lt.run(first.stop(timeout=2.0))

    second = collector_factory(queue_dir=qdir)
    late = make_span(tid, parent=rid)
    again = make_span(tid, span_id=failing.span_id, parent=rid)  # a resent copy of the cited span
    assert post(second.http_port, make_request([late, again]).SerializeToString())[0] == 200
    wait_for(lambda: len(sink.spans()) == 4, what="the late spans")
    by_id = {s.span_id: attrs(s) for s in sink.spans()[2:]}
    assert by_id[late.span_id][sc.TRACEJUDGE_LATE] is True
    assert by_id[late.span_id][sc.TRACEJUDGE_VERDICT] == "fail"
    assert by_id[failing.span_id][sc.TRACEJUDGE_FINDING_CODES] == ["F-TEST-ERROR"]
    assert second.stats.traces_decided == 0
    assert second.stats.spans["late"] == 2


def test_remembered_decisions_are_bounded(tmp_path: Path) -> None:
    """The table keeps the newest ``decided_cache_size`` decisions, like the memory cache."""
    store = DiskStore(tmp_path / "q", decided_keep=100)
    try:
        for batch in range(30):
            rows = [(bytes([batch, n]) * 8, "pass", "{}") for n in range(100)]
            store.commit_decisions([], [], rows)
        kept = store.load_decided()
        assert len(kept) == 100
        assert kept[-1][0] == bytes([29, 99]) * 8
        (count,) = store._db.execute("SELECT COUNT(*) FROM decided").fetchone()
        assert count <= 100 + 1024
    finally:
        store.close()
