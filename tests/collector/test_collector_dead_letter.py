"""Batches a backend refused for good go to ``--dead-letter FILE`` (issue 12, defect 9).

A non-retryable answer (HTTP 400, gRPC ``INVALID_ARGUMENT``...) dropped the batch with a log
line, even with ``--queue-dir``: the spans were gone. Now they are kept as OTLP/JSON lines
with the target, status and reason, counted per target in ``/metrics``, and read back by
``tracejudge eval``, the OTLP/JSON decoder and the collector's own OTLP/HTTP receiver. Real
collectors and a real OTLP receiver (``Sink``) that answers the refusals.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from tests.collector.collector_support import (
    Sink,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tracejudge.cli import main
from tracejudge.collector import Collector
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.storage.store import DiskStore
from tracejudge.otlp.records import spans_from_json

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
"""A key the shared detectors recognise, quoted by the backend's refusal text."""


def _trace() -> tuple[bytes, bytes]:
    tid, rid = new_ids()
    body = make_request([make_span(tid, rid), make_span(tid, parent=rid)]).SerializeToString()
    return tid, body


def _dropped(c: Collector, spans: int) -> Callable[[], bool]:
    return lambda: c.stats.spans["dropped"] == spans


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    ("via", "status"),
    [("http", "HTTP 400"), ("grpc", "gRPC INVALID_ARGUMENT")],
)
def test_a_refused_batch_is_dead_lettered_and_counted(
    via: str,
    status: str,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
) -> None:
    """The backend refuses the first batch: it is one line of the dead-letter file (the
    spans as OTLP/JSON, the target's name and URL, the status, the scrubbed reason), it
    leaves the disk queue (a restart does not resend it), ``/metrics`` counts it for that
    target, and the next trace is delivered."""
    dead = tmp_path / "dead.jsonl"
    sink.fail_http = [400]
    sink.fail_body = f"invalid span: api_key={SECRET}".encode()
    sink.fail_grpc = [grpc.StatusCode.INVALID_ARGUMENT]
    url = sink.http_url if via == "http" else sink.grpc_url
    qdir = tmp_path / "q"
    c = collector_factory(forward=[url], queue_dir=qdir, dead_letter=dead)
    tid, body = _trace()
    assert post(c.http_port, body)[0] == 200
    wait_for(lambda: c.stats.spans["dead_lettered"] == 2, what="the dead-lettered batch")

    (line,) = _lines(dead)
    info = line["deadLetter"]
    assert info["target"] == via
    assert info["url"] == url
    assert info["status"] == status
    assert info["spans"] == 2
    assert isinstance(info["time_unix"], float)
    if via == "http":
        assert "invalid span: api_key=" in info["reason"]
        assert SECRET not in dead.read_text(encoding="utf-8")
    else:
        assert info["reason"] == "test failure"
    assert {s.trace_id for s in spans_from_json(line)} == {tid.hex()}

    status_code, _, raw = post(c.http_port, b"", method="GET", path="/metrics")
    assert status_code == 200
    metrics = json.loads(raw)
    target = metrics["targets"][url]
    assert target["dead_lettered"] == 2
    assert target["dead_lettered_batches"] == 1
    assert metrics["spans"]["dead_lettered"] == 2
    assert metrics["spans"]["dropped"] == 0
    assert metrics["dead_letter"]["written"] == 1
    assert metrics["dead_letter"]["errors"] == 0

    tid2, body2 = _trace()
    assert post(c.http_port, body2)[0] == 200
    wait_for(lambda: len(sink.spans()) == 2, what="the next trace")
    assert {s.trace_id for s in sink.spans()} == {tid2}
    store = DiskStore(qdir)  # the refused batch's row is gone, as the delivered one's
    try:
        wait_for(lambda: store.load_outbox() == [], what="an empty outbox")
    finally:
        store.close()


def test_dead_letter_lines_read_back(
    collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """A recorded refund run (the example's ``wrong_order`` trace, sent as OTLP/JSON) and a
    plain trace are refused: ``tracejudge eval`` judges the dead-letter file as it is (the
    run's verdict and code as for the original file), and each line POSTed back to an
    OTLP/HTTP receiver (here the collector's own) is accepted and forwarded: a replay."""
    dead = tmp_path / "dead.jsonl"
    sink.fail_http = [400, 400]
    c = collector_factory(dead_letter=dead)
    recorded = (ROOT / "examples/refund/traces/wrong_order.json").read_bytes()
    n_recorded = len(spans_from_json(recorded))
    assert post(c.http_port, recorded, content_type="application/json")[0] == 200
    wait_for(lambda: c.stats.spans["dead_lettered"] == n_recorded, what="the run dead-lettered")
    tid, body = _trace()
    assert post(c.http_port, body)[0] == 200
    wait_for(lambda: c.stats.spans["dead_lettered"] == n_recorded + 2, what="the trace")
    lines = dead.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2

    rules = str(ROOT / "examples/refund/rules.yaml")
    (tmp_path / "orig.json").write_bytes(recorded)
    original = CliRunner().invoke(
        main, ["eval", "--rules", rules, "--format", "json", str(tmp_path / "orig.json")]
    )
    again = CliRunner().invoke(main, ["eval", "--rules", rules, "--format", "json", str(dead)])
    assert again.exit_code == original.exit_code == 1, again.output

    def verdicts(output: str) -> list[tuple[str, str, str]]:
        docs = [json.loads(x) for x in output.splitlines() if x.startswith("{")]
        return [(d["trace_id"], d["verdict"], (d["primary"] or {}).get("code", "")) for d in docs]

    (run,) = verdicts(original.output)
    assert run[1:] == ("fail", "F-ACTION-ARG-ENTITY_BINDING")
    read_back = verdicts(again.output)
    assert read_back[0] == run
    assert read_back[1][0] == tid.hex()  # the plain trace: its own run, judged too

    for line in lines:
        assert post(c.http_port, line.encode(), content_type="application/json")[0] == 200
    wait_for(lambda: len(sink.spans()) == n_recorded + 2, what="the replayed batches")
    assert tid in {s.trace_id for s in sink.spans()}


def test_a_dead_letter_write_failure_is_logged_once_and_counted(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The dead-letter file is on a full device (``/dev/full``: every write fails with
    ENOSPC). Refused batches are then dropped and counted, the failure is logged once, and
    the forwarder goes on delivering."""
    sink.fail_http = [400, 400, 400]
    with caplog.at_level(logging.ERROR, logger="tracejudge.collector"):
        c = collector_factory(dead_letter=Path("/dev/full"))
        for n in range(1, 4):  # one at a time, so each is a batch of its own
            assert post(c.http_port, _trace()[1])[0] == 200
            wait_for(_dropped(c, 2 * n), what=f"refusal {n} dropped")
        tid, body = _trace()
        assert post(c.http_port, body)[0] == 200
        wait_for(lambda: len(sink.spans()) == 2, what="the next trace delivered")
        assert {s.trace_id for s in sink.spans()} == {tid}
    lines = [r.getMessage() for r in caplog.records if "dead-letter file" in r.getMessage()]
    assert len(lines) == 1
    assert "cannot write" in lines[0]
    snap = c.snapshot()
    assert snap["dead_letter"]["errors"] == 3
    assert snap["dead_letter"]["written"] == 0
    assert snap["spans"]["dead_lettered"] == 0
    assert c.decision is not None
    assert c.decision.queues[0].restarts == 0


def test_without_a_dead_letter_file_a_refusal_is_a_counted_drop(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """The default keeps the old behaviour: dropped, counted, no dead-letter entry."""
    sink.fail_http = [400]
    c = collector_factory()
    assert post(c.http_port, _trace()[1])[0] == 200
    wait_for(lambda: c.stats.spans["dropped"] == 2, what="the counted drop")
    snap = c.snapshot()
    assert snap["dead_letter"] is None
    assert snap["spans"]["dead_lettered"] == 0


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/dead.jsonl", "is not a file in an existing directory"),
        (".", "is not a file in an existing directory"),
        ("out.jsonl", "the same file as output or verdicts_jsonl"),
    ],
)
def test_a_bad_dead_letter_path_stops_the_start(where: str, message: str, tmp_path: Path) -> None:
    """A file nobody can create, a directory, or the --output file is refused at start."""
    values = {"dead_letter": str(tmp_path / where), "output": str(tmp_path / "out.jsonl")}
    with pytest.raises(ConfigError, match="dead_letter: ") as err:
        build_config(values, {})
    assert message in str(err.value)
