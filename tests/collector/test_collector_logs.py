"""Log records in the assembler, on a manual clock: held with their trace, joined to their
span before judging, forwarded after the decision; the rest forwarded at once, counted.

The pipeline is driven as in test_collector_timing.py (no sockets, no sleeps). The judge is
a small recorder of what it was given (rule semantics are tested with the real engine in
tests/sdk_matrix/openai_v2/); the logs queue is the real ``TargetQueue``, not started,
so what it holds is what would be sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.collector.collector_support import (
    StandInJudge,
    decision_stage,
    make_request,
    make_span,
    new_ids,
)
from tests.collector.logs_support import log_record, logs_request
from tests.collector.test_collector_timing import ListSink, drive
from tracejudge import semconv as sc
from tracejudge.collector import CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.component import Discard
from tracejudge.collector.consumer import Throttled
from tracejudge.collector.processors.decided import Decided
from tracejudge.collector.processors.decision import DecisionStage, scrubber_for
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.logs_intake import LogsIntake, logs_intake_for
from tracejudge.collector.processors.logs_join import LogsJoin
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict
from tracejudge.model.spans import SpanRecord


class RecordingJudge(StandInJudge):
    """The stand-in judge, keeping the spans of each call (to see the joined events)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[SpanRecord]] = []

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        self.seen.append(list(spans))
        return super().judge_spans(spans)


def _setup(
    clock: ManualClock, **overrides: Any
) -> tuple[DecisionStage, LogsIntake, ListSink, RecordingJudge]:
    base: dict[str, Any] = {
        "forward": [],
        "grpc_port": 0,
        "http_port": 0,
        "forward_logs": "http://127.0.0.1:9",
        "decision_wait_after_root": 0.5,
        "decision_wait": 3.0,
        "tick": 0.05,
    }
    cfg = CollectorConfig(**{**base, **overrides}).validate()
    sink = ListSink(clock)
    judge = RecordingJudge()
    stats = Stats([])
    hold = TraceHold(cfg, clock)  # shared, as the collector shares it (assembly.build_stages)
    scrubber = scrubber_for(cfg)
    logs = logs_intake_for(cfg, hold, stats, scrubber)
    join = LogsJoin(logs, Discard[Decided]())  # the decided edge's logs join, alone
    p = decision_stage(
        cfg, judge, [], [sink], stats, None, clock, hold=hold, scrubber=scrubber, next=join
    )
    p.arm_timer()
    return p, logs, sink, judge


def _queued(logs: LogsIntake) -> list[LogRecord]:
    assert logs.queue is not None
    out: list[LogRecord] = []
    for item in logs.queue.items:
        req = ExportLogsServiceRequest.FromString(item.payload)
        out.extend(r for rl in req.resource_logs for sl in rl.scope_logs for r in sl.log_records)
    return out


def test_logs_after_the_root_move_the_deadline_and_join_their_span() -> None:
    """A log record arriving after the root span moves the decision as a span would, is
    given to the judge as an event of its span (the builder's one path for event-carried
    messages), and goes to the logs queue only once the trace is decided."""
    clock = ManualClock()
    p, logs, sink, judge = _setup(clock)
    tid, root = new_ids()
    _, chat = new_ids()
    admission_for(logs.config, p).ingest(
        make_request([make_span(tid, root), make_span(tid, chat, parent=root)])
    )

    async def go() -> None:
        await drive(p, clock, 0.4)
        rec = log_record(tid, chat, sc.FOREIGN_GEN_AI_USER_MESSAGE, body="refund order 7")
        result = logs.ingest_logs(logs_request([rec]))
        assert (result.accepted, result.rejected) == (1, 0)
        await drive(p, clock, 0.4)  # 0.8 s after the root, 0.4 s after the log: not yet
        assert not sink.records
        assert not _queued(logs)
        await drive(p, clock, 0.2)

    asyncio.run(go())
    assert len(sink.records) == 1
    assert sink.records[0][0] == pytest.approx(clock.now() - 0.1, abs=0.06)
    (spans,) = judge.seen
    joined = next(s for s in spans if s.span_id == chat.hex())
    assert [(e.name, e.attributes) for e in joined.events] == [
        (sc.FOREIGN_GEN_AI_USER_MESSAGE, {"content": "refund order 7"})
    ]
    (sent,) = _queued(logs)
    assert sent.span_id == chat
    assert sent.body.string_value == "refund order 7"
    assert logs.counts.held == 1
    assert logs.counts.late == 0


def test_logs_first_open_the_trace_and_count_against_the_buffer() -> None:
    """Records that come before any span open the trace (its bytes are in the buffer's
    count, so the byte limit covers logs too); the spans that follow are judged with them.
    A request that would take the buffer past its byte limit is refused whole."""
    clock = ManualClock()
    p, logs, _sink, judge = _setup(clock, max_buffered_bytes=2000)
    tid, root = new_ids()
    logs.ingest_logs(logs_request([log_record(tid, root, sc.FOREIGN_GEN_AI_CHOICE, body="ok")]))
    assert p.buffer.nbytes > 0
    assert p.buffer.spans == 0
    with pytest.raises(Throttled):
        logs.ingest_logs(logs_request([log_record(tid, root, "x", body="y" * 3000)]))
    admission_for(logs.config, p).ingest(make_request([make_span(tid, root)]))
    asyncio.run(drive(p, clock, 1.0))
    (spans,) = judge.seen
    assert [e.name for e in spans[0].events] == [sc.FOREIGN_GEN_AI_CHOICE]
    assert len(_queued(logs)) == 1
    assert p.buffer.nbytes == 0


def test_untraced_and_late_records_are_forwarded_at_once_and_counted() -> None:
    """A record with no trace id, and one whose trace was already decided, go straight
    to the logs queue as they are, each counted; nothing is held for them."""
    clock = ManualClock()
    p, logs, sink, judge = _setup(clock)
    tid, root = new_ids()
    admission_for(logs.config, p).ingest(make_request([make_span(tid, root)]))
    asyncio.run(drive(p, clock, 1.0))
    assert len(sink.records) == 1
    lone = log_record(b"", b"", "", body="a plain log line")
    late = log_record(tid, root, sc.FOREIGN_GEN_AI_CHOICE, body="too late")
    result = logs.ingest_logs(logs_request([lone, late]))
    assert (result.accepted, result.rejected) == (2, 0)
    assert sorted(r.body.string_value for r in _queued(logs)) == ["a plain log line", "too late"]
    assert (logs.counts.untraced, logs.counts.late, logs.counts.held) == (1, 1, 0)
    assert not p.buffer.traces
    assert len(judge.seen) == 1  # the late record was not judged


def test_without_a_logs_endpoint_records_are_judged_and_counted_not_kept() -> None:
    """No ``forward_logs``: held records still reach the judge; after the decision they
    are counted as not kept (never dropped silently)."""
    clock = ManualClock()
    p, logs, _sink, judge = _setup(clock, forward_logs=None)
    assert logs.queue is None
    tid, root = new_ids()
    logs.ingest_logs(logs_request([log_record(tid, root, sc.FOREIGN_GEN_AI_CHOICE, body="x")]))
    logs.ingest_logs(logs_request([log_record(b"", b"", "", body="untraced")]))
    admission_for(logs.config, p).ingest(make_request([make_span(tid, root)]))
    asyncio.run(drive(p, clock, 1.0))
    assert [e.name for e in judge.seen[0][0].events] == [sc.FOREIGN_GEN_AI_CHOICE]
    assert logs.counts.not_kept == 2
    assert logs.snapshot()["not_kept"] == 2


def test_malformed_ids_are_refused_one_by_one() -> None:
    """Partial success: a record with a 5-byte trace id or a 3-byte span id is refused with
    its reason; the valid ones in the same request are accepted."""
    clock = ManualClock()
    _p, logs, _sink, _judge = _setup(clock)
    tid, sid = new_ids()
    good = log_record(tid, sid, "e")
    bad_trace = log_record(b"\x01" * 5, sid, "e")
    bad_span = log_record(tid, b"\x02" * 3, "e")
    result = logs.ingest_logs(logs_request([good, bad_trace, bad_span]))
    assert (result.accepted, result.rejected) == (1, 2)
    assert "invalid trace_id '0101010101'" in result.error_message
    assert "invalid span_id '020202'" in result.error_message
    assert logs.counts.rejected == 2


def test_drop_content_strips_message_bodies_from_forwarded_records() -> None:
    """``--drop-content`` applies to log records as to spans: the judge sees the message,
    the forwarded record has no body and says so; ``--redact-attributes`` scrubs secrets
    in what is left."""
    clock = ManualClock()
    p, logs, _sink, judge = _setup(clock, drop_content=True, redact_attributes=True)
    tid, root = new_ids()
    secret = "sk-" + "a1B2c3D4e5" * 4
    user = log_record(tid, root, sc.FOREIGN_GEN_AI_USER_MESSAGE, body="my card 4111")
    other = log_record(tid, root, "app.note", attributes={"key": secret})
    logs.ingest_logs(logs_request([user, other]))
    admission_for(logs.config, p).ingest(make_request([make_span(tid, root)]))
    asyncio.run(drive(p, clock, 1.0))
    events = judge.seen[0][0].events
    assert events[0].attributes == {"content": "my card 4111"}
    first, second = _queued(logs)
    assert not first.HasField("body")
    assert {kv.key: kv.value.bool_value for kv in first.attributes}[sc.TRACEJUDGE_CONTENT_DROPPED]
    values = {kv.key: kv.value for kv in second.attributes}
    assert secret not in values["key"].string_value
    assert values[sc.TRACEJUDGE_CONTENT_REDACTED].int_value == 1


def test_logs_settings_are_checked_at_start() -> None:
    """A bad ``--forward-logs`` URL, or ``--evaluation-logs`` with nowhere to send them,
    stops the start with the key's name (a typo never silently drops the records)."""
    from click.testing import CliRunner

    from tracejudge.cli import main
    from tracejudge.collector.config import ConfigError

    with pytest.raises(ConfigError, match="forward_logs: 'ftp://x:1' is not"):
        CollectorConfig(forward_logs="ftp://x:1").validate()
    with pytest.raises(ConfigError, match="evaluation_logs: needs forward_logs"):
        CollectorConfig(evaluation_logs=True).validate()
    rules = str(Path(__file__).resolve().parents[2] / "examples" / "refund" / "rules.yaml")
    result = CliRunner().invoke(main, ["serve", "--rules", rules, "--evaluation-logs"])
    assert result.exit_code == 2
    assert "evaluation_logs: needs forward_logs" in result.output


def test_records_of_a_held_conversation_travel_with_it() -> None:
    """With ``conversation_wait``, a trace held in its conversation keeps its log records:
    those that came before it was held and those that come while it is held (which count
    against the buffer and restart the quiet time, as its spans do) reach the judge with the
    merged run and the logs queue at the conversation's decision."""
    from tests.collector.conversation_support import CONFIRMED, Recorder

    clock = ManualClock()
    p, logs, sink, judge = _setup(clock, conversation_wait=30.0)
    trace_hex, root_hex, request = Recorder().turn("conv-A", CONFIRMED[0], 0)
    tid, root = bytes.fromhex(trace_hex), bytes.fromhex(root_hex)

    async def go() -> None:
        admission_for(logs.config, p).ingest(request)
        logs.ingest_logs(logs_request([log_record(tid, root, "app.before", body="1")]))
        await drive(p, clock, 1.0)
        assert p.held is not None
        assert len(p.held) == 1
        held_bytes = p.buffer.held_bytes
        logs.ingest_logs(logs_request([log_record(tid, root, "app.during", body="2")]))
        assert not p.buffer.traces  # not a second, log-only entry for the trace
        assert p.buffer.held_bytes > held_bytes
        await drive(p, clock, 29.5)  # quiet time restarted by the second record
        assert not sink.records
        await drive(p, clock, 1.0)

    asyncio.run(go())
    assert len(sink.records) == 1
    (spans,) = judge.seen
    names = [e.name for s in spans if s.span_id == root_hex for e in s.events]
    assert names == ["app.before", "app.during"]
    assert sorted(r.body.string_value for r in _queued(logs)) == ["1", "2"]
    assert p.buffer.held_bytes == 0
