"""Queued payloads follow their target's name, not its URL (issue 12, defect 5, second part).

The disk queue bound each payload to the exact forward URL: after the backend's port
changed, every payload queued for it stayed on disk forever ("payloads for targets no
longer configured are kept on disk"), reported by nothing but one log line. Now a row
carries the target's name, a removed name is reported (log, ``/metrics``) and
``tracejudge queue`` lists, drains or drops its rows. Real collectors, a real OTLP
receiver (``Sink``) and the real ``tracejudge`` command line throughout.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.ports import ReservedPort
from tracejudge.cli import main
from tracejudge.collector import Collector
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.exporters.targets import TargetSpec, target_specs
from tracejudge.collector.storage.store import DiskStore


def _queue_traces(c: Collector, n: int) -> set[bytes]:
    """Post ``n`` two-span traces and wait until all are judged and queued for forwarding."""
    tids = set()
    for _ in range(n):
        tid, rid = new_ids()
        body = make_request([make_span(tid, rid), make_span(tid, parent=rid)])
        assert post(c.http_port, body.SerializeToString())[0] == 200
        tids.add(tid)
    wait_for(lambda: c.stats.traces_decided == n, what="decisions")
    return tids


def test_a_changed_backend_port_gets_every_queued_payload(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
) -> None:
    """The backend is down while 5 traces are queued, then comes back on another port: the
    restarted collector (same unnamed target, new URL) delivers all of them there. Before,
    the rows were keyed by the old URL and stayed on disk."""
    qdir = tmp_path / "q"
    first = collector_factory(forward=[reserve_port().url], queue_dir=qdir)
    tids = _queue_traces(first, 5)
    lt.run(first.stop(timeout=0.5))

    second = collector_factory(forward=[sink.http_url], queue_dir=qdir)
    wait_for(lambda: len(sink.spans()) == 10, what="the queued payloads at the new port")
    assert {s.trace_id for s in sink.spans()} == tids
    assert second.removed_targets == []
    assert second.snapshot()["disk_queue"]["removed_targets"] == {}


def test_a_named_target_keeps_its_rows_when_the_order_and_address_change(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    tmp_path: Path,
) -> None:
    """Two named backends, both down; only ``b`` has rows left when the collector stops
    (``a`` came back first). Restarted with the list reordered and both addresses changed,
    ``b``'s rows reach ``b``'s new address and none reaches ``a`` (which a match by
    position would have sent them to)."""
    qdir = tmp_path / "q"
    sink_a, sink_b = Sink(), Sink()
    lt.run(sink_a.start())
    lt.run(sink_b.start())
    try:
        first = collector_factory(
            forward=[f"a={sink_a.http_url}", f"b={reserve_port().url}"],
            queue_dir=qdir,
        )
        tids = _queue_traces(first, 3)
        wait_for(lambda: len(sink_a.spans()) == 6, what="a's copies")
        lt.run(first.stop(timeout=0.5))
        sink_a.requests.clear()

        collector_factory(
            forward=[f"b={sink_b.grpc_url}", f"a={sink_a.grpc_url}"],
            queue_dir=qdir,
        )
        wait_for(lambda: len(sink_b.spans()) == 6, what="b's rows at b's new address")
        assert {s.trace_id for s in sink_b.spans()} == tids
        assert sink_a.spans() == []
    finally:
        lt.run(sink_a.stop())
        lt.run(sink_b.stop())


def test_rows_written_before_names_are_matched_by_url(
    collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """A queue from an older version keys rows by URL: they still reach the target that has
    that URL now (whatever its name)."""
    qdir = tmp_path / "q"
    tid, rid = new_ids()
    payload = make_request([make_span(tid, rid)]).SerializeToString()  # one framed ResourceSpans
    store = DiskStore(qdir)
    store.accept([], [(sink.http_url, payload, 1, 1)])
    store.close()
    collector_factory(forward=[f"main={sink.http_url}"], queue_dir=qdir)
    wait_for(lambda: len(sink.spans()) == 1, what="the old row")
    assert sink.spans()[0].trace_id == tid


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_removed_target_is_reported_and_drained(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Target ``old`` is gone from the configuration: its 4 payloads are neither sent to
    ``new`` nor forgotten. Start-up logs them with a count, ``/metrics`` shows them, ``queue
    list`` says ``removed``, and ``queue drain --to`` (while serve runs) delivers them."""
    qdir = tmp_path / "q"
    dead = reserve_port().url
    first = collector_factory(forward=[f"old={dead}"], queue_dir=qdir)
    tids = _queue_traces(first, 4)
    lt.run(first.stop(timeout=0.5))

    other = Sink()
    lt.run(other.start())
    try:
        with caplog.at_level(logging.WARNING, logger="tracejudge.collector"):
            second = collector_factory(forward=[f"new={other.http_url}"], queue_dir=qdir)
        warnings = [r.getMessage() for r in caplog.records if "removed target" in r.getMessage()]
        assert len(warnings) == 1
        assert "4 payloads (8 spans)" in warnings[0]
        assert "'old'" in warnings[0]
        assert "tracejudge queue drain" in warnings[0]
        removed = second.snapshot()["disk_queue"]["removed_targets"]
        assert removed == {"old": {"url": dead, "payloads": 4, "spans": 8}}
        assert other.spans() == []

        code, out = _cli("queue", "list", "--queue-dir", str(qdir))
        assert code == 0, out
        lines = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
        assert lines["old"][1:4] == ["removed", "4", "8"]
        assert lines["new"][1:4] == ["configured", "0", "0"]

        code, out = _cli(
            "queue", "drain", "--queue-dir", str(qdir), "--target", "old", "--to", sink.grpc_url
        )
        assert code == 0, out
        assert "old: 4 payloads (8 spans) delivered" in out
        wait_for(lambda: len(sink.spans()) == 8, what="the drained rows")
        assert {s.trace_id for s in sink.spans()} == tids
        assert other.spans() == []
        code, out = _cli("queue", "list", "--queue-dir", str(qdir))
        assert "old" not in out
    finally:
        lt.run(other.stop())


def test_queue_command_errors_are_clear_and_keep_the_rows(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
) -> None:
    """No queue, a configured target, an unknown one, a bad URL: exit 2 with the reason; a
    backend that is down: exit 1 and the rows stay; ``drop`` then discards them."""
    qdir = tmp_path / "q"
    first = collector_factory(forward=[f"old={reserve_port().url}"], queue_dir=qdir)
    _queue_traces(first, 2)
    lt.run(first.stop(timeout=0.5))
    lt.run(collector_factory(forward=[f"live={sink.http_url}"], queue_dir=qdir).stop())
    q = str(qdir)

    code, out = _cli("queue", "list", "--queue-dir", str(tmp_path / "nothing"))
    assert code == 2
    assert "no disk queue in" in out
    assert not (tmp_path / "nothing").exists()
    code, out = _cli("queue", "drain", "--queue-dir", q, "--target", "live", "--to", sink.http_url)
    assert code == 2
    assert "'live' was configured at serve's last start" in out
    code, out = _cli("queue", "drop", "--queue-dir", q, "--target", "nope")
    assert code == 2
    assert "no payloads queued for a removed target 'nope'" in out
    assert "removed targets: old" in out
    code, out = _cli("queue", "drain", "--queue-dir", q, "--to", "ftp://x")
    assert code == 2
    assert "--to" in out

    down = reserve_port().url
    code, out = _cli("queue", "drain", "--queue-dir", q, "--to", down, "--tries", "2")
    assert code == 1
    assert "is not accepting" in out
    assert "stays queued" in out
    store = DiskStore(qdir)
    try:
        assert [(r.key, r.payloads) for r in store.removed_targets(store.recorded_targets())] == [
            ("old", 2)
        ]
    finally:
        store.close()

    code, out = _cli("queue", "drop", "--queue-dir", q)
    assert code == 0
    assert "old: 2 payloads (4 spans) dropped" in out
    code, out = _cli("queue", "list", "--queue-dir", q)
    assert "old" not in out
    assert "live" in out
    assert sink.spans() == []


def test_default_names_follow_the_protocol() -> None:
    """Unnamed targets are named after their protocol (https is http: a move to TLS keeps
    the rows), the second of a protocol ``-2``; explicit names are never taken by them."""
    specs = target_specs(
        ["grpc://a:1", "https://b:2", "grpc-2=grpc://c:3", "grpc://d:4", "http://e:5"],
        Path("out.jsonl"),
    )
    assert specs == [
        TargetSpec("grpc", "grpc://a:1"),
        TargetSpec("http", "https://b:2"),
        TargetSpec("grpc-2", "grpc://c:3"),
        TargetSpec("grpc-3", "grpc://d:4"),
        TargetSpec("http-2", "http://e:5"),
        TargetSpec("output", "file:out.jsonl"),
    ]


@pytest.mark.parametrize(
    ("forward", "message"),
    [
        (["a=grpc://x:1", "a=grpc://y:2"], "the same target name is given twice"),
        (["grpc://x:1", "grpc://x:1"], "the same URL is listed twice"),
        (["bad name=grpc://x:1"], "is not a target name"),
        (["a=ftp://x:1"], "no exporter for 'ftp' URLs (known: http, https, grpc, grpcs, file)"),
        (["grpc://x"], "'grpc://x': needs a port"),
        (["http://:80"], "needs a host"),
        (["file:"], "needs a path: file:PATH"),
        (["output=grpc://x:1"], "the --output file's"),
    ],
)
def test_bad_target_names_stop_the_start(forward: list[str], message: str, tmp_path: Path) -> None:
    """A duplicate, malformed or reserved name fails at start with the key's name."""
    with pytest.raises(ConfigError, match=r"forward(\[\d+\])?: ") as err:
        build_config({"forward": forward, "output": str(tmp_path / "o.jsonl")}, {})
    assert message in str(err.value)


def test_yaml_forward_may_map_names_to_urls(tmp_path: Path) -> None:
    """``forward: {main: URL}`` in the config file is ``--forward main=URL``."""
    cfg = build_config({"forward": {"main": "grpc://x:1", "audit": "http://y:2"}}, {})
    assert target_specs(cfg.forward) == [
        TargetSpec("main", "grpc://x:1"),
        TargetSpec("audit", "http://y:2"),
    ]
    assert json.dumps(cfg.forward)  # still plain strings
