"""Conversations of several traces, held and judged as one run, on a manual clock.

Each turn is one trace emitted by the real OTel SDK and encoded by the exporter's own
encoder (``conversation_support.Recorder``); the judge is the real engine with one
``user_confirmation`` rule, so "judged as one merged run" is visible in the verdict: turn 3
of ``CONFIRMED`` fails alone and passes merged. ``drive`` plays the collector's timer loop
on the manual clock (as in test_collector_timing.py): exact times, no sleeps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.collector.collector_support import decision_stage, make_request, make_span
from tests.collector.conversation_support import (
    ALONE,
    CONFIRMED,
    UNCONFIRMED,
    Recorder,
    engine,
)
from tests.collector.test_collector_timing import ListSink, drive
from tracejudge.collector import CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.config import ConfigError
from tracejudge.collector.consumer import Throttled
from tracejudge.collector.processors.admission import Admission
from tracejudge.collector.processors.decision import DecisionStage
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats

WAITS: dict[str, Any] = {
    "decision_wait_after_root": 0.5,
    "decision_wait": 5.0,
    "tick": 0.25,
    "conversation_wait": 30.0,
}


def _pipeline(
    clock: ManualClock, store: DiskStore | None = None, **overrides: Any
) -> tuple[DecisionStage, Admission, ListSink]:
    cfg = CollectorConfig(**{"forward": [], "grpc_port": 0, "http_port": 0, **overrides})
    sink = ListSink(clock)
    p = decision_stage(cfg.validate(), engine(), [], [sink], Stats([]), store, clock)
    p.arm_timer()
    return p, admission_for(cfg, p), sink


def _by_trace(sink: ListSink) -> dict[str, tuple[float, dict[str, Any]]]:
    return {r["trace_id"]: (at, r) for at, r in sink.records}


def _code(record: dict[str, Any]) -> str | None:
    primary = record.get("primary")
    return None if primary is None else str(primary["code"])


def test_a_conversation_is_held_until_quiet_then_judged_once_as_one_run() -> None:
    """Three turns 10 s apart are one verdict, 30 s after the last turn was assembled: the
    user's yes (turn 2) confirms the cancellation (turn 3). A trace without a conversation
    id, sent meanwhile, is judged at its usual time."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS)
    rec = Recorder()
    t0 = clock.now()

    async def go() -> None:
        turns = []
        for n, turn in enumerate(CONFIRMED):
            trace_id, root, request = rec.turn("conv-A", turn, n)
            turns.append((trace_id, root))
            entry.ingest(request)
            if n == 0:
                await drive(p, clock, 2.0)
                alone, _, request = rec.turn(None, ALONE, 9)
                entry.ingest(request)  # at t0 + 2
                await drive(p, clock, 8.0)
            elif n == 1:
                await drive(p, clock, 10.0)
        # The last turn arrived at t0 + 20 and is assembled at + 20.5.
        await drive(p, clock, 30.4)
        got = _by_trace(sink)
        assert list(got) == [alone]
        assert got[alone][0] - t0 == pytest.approx(2.5)
        assert _code(got[alone][1]) == "F-POLICY-NO_CONFIRMATION"
        assert p.held is not None
        assert len(p.held) == 1
        assert p.buffer.held_traces == 3
        await drive(p, clock, 0.2)
        got = _by_trace(sink)
        first_trace, first_root = turns[0]
        assert set(got) == {alone, first_trace}
        at, record = got[first_trace]
        assert at - t0 == pytest.approx(50.5)
        assert record["verdict"] == "pass"
        assert record["root_span_id"] == first_root
        assert record["trace_ids"] == [t for t, _ in turns]
        # Late spans of any turn get the conversation's verdict.
        for trace_id, _ in turns:
            decision = p.decided.get(bytes.fromhex(trace_id))
            assert decision is not None
            assert decision.verdict == "pass"
        assert p.stats.conversations_decided == 1
        assert p.stats.traces_decided == 4
        assert len(p.held) == 0
        assert p.buffer.held_traces == p.buffer.held_bytes == 0

    asyncio.run(go())


def test_interleaved_conversations_stay_separate() -> None:
    """Two conversations whose turns alternate are two runs: the unconfirmed one fails on
    its own (merged with the other's yes it would pass)."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS)
    rec = Recorder()
    order = [
        ("conv-A", CONFIRMED[0]),
        ("conv-B", UNCONFIRMED[0]),
        ("conv-A", CONFIRMED[1]),
        ("conv-B", UNCONFIRMED[1]),
        ("conv-A", CONFIRMED[2]),
    ]

    async def go() -> None:
        traces: dict[str, list[str]] = {"conv-A": [], "conv-B": []}
        for n, (cid, turn) in enumerate(order):
            trace_id, _, request = rec.turn(cid, turn, n)
            traces[cid].append(trace_id)
            entry.ingest(request)
            await drive(p, clock, 3.0)
        await drive(p, clock, 40.0)
        got = _by_trace(sink)
        assert set(got) == {traces["conv-A"][0], traces["conv-B"][0]}
        a = got[traces["conv-A"][0]][1]
        b = got[traces["conv-B"][0]][1]
        assert (a["verdict"], a["trace_ids"]) == ("pass", traces["conv-A"])
        assert (b["verdict"], b["trace_ids"]) == ("fail", traces["conv-B"])
        assert _code(b) == "F-POLICY-NO_CONFIRMATION"

    asyncio.run(go())


def test_off_by_default_each_turn_is_judged_alone() -> None:
    """Without ``conversation_wait`` nothing is held: each turn gets its verdict at its
    decision time, and turn 3, alone, fails."""
    clock = ManualClock()
    p, entry, sink = _pipeline(
        clock, **{k: v for k, v in WAITS.items() if k != "conversation_wait"}
    )
    assert p.held is None
    rec = Recorder()

    async def go() -> None:
        ids = []
        for n, turn in enumerate(CONFIRMED):
            trace_id, _, request = rec.turn("conv-A", turn, n)
            ids.append(trace_id)
            entry.ingest(request)
            await drive(p, clock, 1.0)
        got = _by_trace(sink)
        assert [got[t][1]["verdict"] for t in ids] == ["pass", "pass", "fail"]
        assert all("trace_ids" not in r for _, r in sink.records)

    asyncio.run(go())


def test_a_turn_marked_as_the_end_judges_the_conversation_when_assembled() -> None:
    """``tracejudge.conversation.end`` on the last turn's agent span: no quiet time."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS)
    rec = Recorder()
    t0 = clock.now()

    async def go() -> None:
        for n, turn in enumerate(CONFIRMED):
            _, _, request = rec.turn("conv-A", turn, n, end=n == len(CONFIRMED) - 1)
            entry.ingest(request)
            await drive(p, clock, 10.0)
        ((at, record),) = sink.records
        assert at - t0 == pytest.approx(20.5)
        assert record["verdict"] == "pass"
        assert len(record["trace_ids"]) == 3

    asyncio.run(go())


def test_a_conversation_that_never_goes_quiet_is_judged_at_the_longest_hold() -> None:
    """Turns every 20 s never leave 30 s of quiet; ``conversation_max_hold`` (45 s after
    the first turn was held) bounds the wait, with the turns held by then."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS, conversation_max_hold=45.0)
    rec = Recorder()
    t0 = clock.now()

    async def go() -> None:
        for n in range(4):
            _, _, request = rec.turn("conv-A", CONFIRMED[min(n, 2)], n)
            entry.ingest(request)
            await drive(p, clock, 20.0)
            if n == 1:
                assert sink.records == []  # at + 40
        at, record = sink.records[0]
        assert at - t0 == pytest.approx(45.5)
        assert len(record["trace_ids"]) == 3
        # The fourth turn (arrived at + 60) starts a new hold of the conversation.
        assert p.held is not None
        assert len(p.held) == 1

    asyncio.run(go())


def test_a_span_of_a_held_trace_joins_it_and_restarts_the_quiet_time() -> None:
    """A span that arrives for a trace already held is kept with the conversation (not
    buffered as a new trace, not forwarded as late) and counts as activity."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS)
    rec = Recorder()
    t0 = clock.now()

    async def go() -> None:
        trace_id, root, request = rec.turn("conv-A", CONFIRMED[0], 0)
        entry.ingest(request)
        await drive(p, clock, 20.0)
        assert p.buffer.held_spans == 2
        straggler = make_span(bytes.fromhex(trace_id), parent=bytes.fromhex(root))
        entry.ingest(make_request([straggler]))  # at t0 + 20
        assert not p.buffer.traces
        assert p.buffer.held_spans == 3
        await drive(p, clock, 29.9)
        assert sink.records == []
        await drive(p, clock, 0.2)
        ((at, record),) = sink.records
        assert at - t0 == pytest.approx(50.0)
        assert record["trace_ids"] == [trace_id]
        assert p.stats.spans["late"] == 0

    asyncio.run(go())


def test_held_conversations_count_against_the_memory_limits() -> None:
    """Back-pressure sees held traces: with room for two traces, two held turns make the
    receivers answer "retry later" although the assembly buffer is empty."""
    clock = ManualClock()
    p, entry, _ = _pipeline(clock, **WAITS, max_traces=2)
    rec = Recorder()

    async def go() -> None:
        for n, cid in enumerate(("conv-A", "conv-B")):
            entry.ingest(rec.turn(cid, CONFIRMED[0], n)[2])
        await drive(p, clock, 1.0)
        assert not p.buffer.traces
        assert p.buffer.held_traces == 2
        with pytest.raises(Throttled, match="trace buffer full"):
            entry.check_capacity()
        await drive(p, clock, 31.0)  # both judged: room again
        entry.check_capacity()

    asyncio.run(go())


def test_held_bytes_count_against_the_byte_limit() -> None:
    """A request that would take held plus buffered bytes past ``max_buffered_bytes`` is
    refused before anything of it is kept."""
    clock = ManualClock()
    rec = Recorder()
    _, _, first = rec.turn("conv-A", CONFIRMED[0], 0)
    size = first.ByteSize()
    p, entry, _ = _pipeline(clock, **WAITS, max_buffered_bytes=size + size // 2)

    async def go() -> None:
        entry.ingest(first)
        await drive(p, clock, 1.0)
        assert p.buffer.nbytes == 0
        assert p.buffer.used_bytes() > 0
        with pytest.raises(Throttled, match="trace buffer full"):
            entry.ingest(rec.turn("conv-B", CONFIRMED[0], 1)[2])
        assert not p.buffer.traces

    asyncio.run(go())


def test_shutdown_judges_what_is_held() -> None:
    """``decide_all`` (the SIGTERM path) judges held conversations with the traces still
    being assembled: nothing waits for a quiet time that will never come."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, **WAITS)
    rec = Recorder()

    async def go() -> None:
        ids = []
        for n, turn in enumerate(CONFIRMED):
            trace_id, _, request = rec.turn("conv-A", turn, n)
            ids.append(trace_id)
            entry.ingest(request)
            if n < 2:
                await drive(p, clock, 5.0)
        assert len(p.buffer.traces) == 1  # the last turn is not assembled yet
        await p.decide_all()
        ((_, record),) = sink.records
        assert record["verdict"] == "pass"
        assert record["trace_ids"] == ids

    asyncio.run(go())


def test_with_a_disk_queue_held_turns_survive_a_crash(tmp_path: Path) -> None:
    """Held traces stay in the disk queue's inbox until their conversation is decided: a
    collector killed while holding two turns replays them, holds them again, and judges
    them with the third turn as one run."""
    clock = ManualClock()
    store = DiskStore(tmp_path / "q")
    p, entry, _ = _pipeline(clock, store, **WAITS)
    rec = Recorder()

    async def go() -> None:
        ids = []
        for n, turn in enumerate(CONFIRMED[:2]):
            trace_id, _, request = rec.turn("conv-A", turn, n)
            ids.append(trace_id)
            entry.ingest(request)
            await drive(p, clock, 5.0)
        assert p.buffer.held_traces == 2
        store.close()  # the process dies here: nothing was decided
        again = DiskStore(tmp_path / "q")
        p2, entry2, sink = _pipeline(clock, again, **WAITS)
        assert p2.replay_inbox(again.load_inbox()) == 0
        trace_id, _, request = rec.turn("conv-A", CONFIRMED[2], 2)
        ids.append(trace_id)
        entry2.ingest(request)
        await drive(p2, clock, 40.0)
        ((_, record),) = sink.records
        assert record["verdict"] == "pass"
        assert sorted(record["trace_ids"]) == sorted(ids)
        assert again.load_inbox() == []
        again.close()

    asyncio.run(go())


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"conversation_wait": -1.0}, "must not be negative"),
        ({"conversation_wait": 60.0, "conversation_max_hold": 30.0}, "must not exceed"),
        ({"conversation_max_hold": 0.0}, "must be positive"),
    ],
)
def test_bad_conversation_settings_fail_at_start(values: dict[str, Any], message: str) -> None:
    """A wait longer than the cap (or negative) is a configuration error, not a hang."""
    with pytest.raises(ConfigError, match=message):
        CollectorConfig(**values).validate()
