"""The decision stage as a processor (issue 20): its factory, config, lifecycle and next.

No sockets: the stage is built through ``DecisionFactory`` as ``assembly.build_stages``
builds it, fed by admission on a ``ManualClock``, and driven by awaiting ``consume`` with
the hold's due traces (what the hold's timer does, ``TraceHold.hand_due``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
from typing import Any

import pytest

from tests.collector.collector_support import StandInJudge, make_request, make_span
from tests.collector.test_collector_timing import ListSink
from tests.support.guards import WAIT_S
from tracejudge.collector import CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.component import ComponentStopped
from tracejudge.collector.processors.admission import Admission
from tracejudge.collector.processors.decided import Decided, DecidedTrace
from tracejudge.collector.processors.decision import (
    DecisionConfig,
    DecisionContext,
    DecisionFactory,
    DecisionStage,
    scrubber_for,
)
from tracejudge.collector.processors.hold import DueDecisions, TraceHold
from tracejudge.collector.processors.modes import forward_mode
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict

CHANGED: dict[str, Any] = {
    "max_judge_time": 2.5,
    "max_rule_cost": 0.25,
    "max_judge_lag": 9.0,
    "max_batch_bytes": 3 * 1024**2,
    "max_queue_bytes": 48 * 1024**2,
    "retry_after_hint": 4.0,
}
"""A value other than the default for each key the stage reads (``CollectorConfig``'s
field of the same name)."""


class Recorder:
    """The next consumer (the decided edge's first processor): the batches it was handed."""

    def __init__(self) -> None:
        self.batches: list[Decided] = []

    def consume(self, batch: Decided) -> None:
        self.batches.append(batch)


class Seen:
    """A verdict observer: the verdict objects the stage decided, in order."""

    def __init__(self) -> None:
        self.verdicts: list[Verdict] = []

    def add(self, v: Verdict, time: float) -> None:
        self.verdicts.append(v)


@dataclasses.dataclass
class Rig:
    stage: DecisionStage
    admission: Admission
    clock: ManualClock
    after: Recorder
    seen: Seen
    sink: ListSink


def _rig(**overrides: Any) -> Rig:
    cfg = CollectorConfig(
        **{
            "forward": [],
            "grpc_port": 0,
            "http_port": 0,
            "decision_wait_after_root": 0.5,
            "decision_wait": 1.0,
            **overrides,
        }
    ).validate()
    clock = ManualClock()
    scrubber = scrubber_for(cfg)
    after, seen, sink = Recorder(), Seen(), ListSink(clock)
    context = DecisionContext(
        clock,
        Stats([]),
        StandInJudge(),
        TraceHold(cfg, clock),
        scrubber,
        forward_mode(cfg, scrubber),
        [],
        [sink],
        None,
        [seen],
    )
    factory = DecisionFactory()
    stage = factory.create(factory.config_for(cfg), after, context)
    return Rig(stage, admission_for(cfg, stage), clock, after, seen, sink)


def _ingest(rig: Rig, traces: int) -> list[bytes]:
    """``traces`` one-span traces admitted, then the clock past their deadline."""
    tids = [os.urandom(16) for _ in range(traces)]
    for tid in tids:
        rig.admission.ingest(make_request([make_span(tid, os.urandom(8))]))
    rig.clock.advance(5.0)
    return tids


def test_the_factory_builds_the_stage_from_its_own_frozen_config() -> None:
    """``default_config`` is ``config_for`` of the default collector config; the config is
    frozen; the stage has its factory's kind and is what the hold's timer hands due traces
    to (``DueDecisions``)."""
    factory = DecisionFactory()
    config = factory.default_config()
    assert factory.config_for(CollectorConfig()) == config
    defaults = CollectorConfig()
    assert {f.name: getattr(config, f.name) for f in dataclasses.fields(config)} == {
        name: getattr(defaults, name) for name in CHANGED
    }
    for field in dataclasses.fields(config):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field.name, getattr(config, field.name))
    stage = _rig().stage
    decisions: DueDecisions = stage
    assert decisions is stage
    assert stage.kind == factory.kind == "decision"
    assert isinstance(stage.config, DecisionConfig)


@pytest.mark.parametrize("key", sorted(CHANGED))
def test_config_for_reads_each_key(key: str) -> None:
    """Each field follows its ``CollectorConfig`` setting, and only that field changes."""
    factory = DecisionFactory()
    value = CHANGED[key]
    changed = factory.config_for(CollectorConfig(**{key: value}))
    assert getattr(changed, key) == value
    assert changed == dataclasses.replace(factory.default_config(), **{key: value})


def test_the_stage_reads_its_config_not_the_collectors() -> None:
    """What the stage does with the settings it reads: the fan-out's queue bound, the
    judging budget and lag bound ``/metrics`` reports."""
    rig = _rig(**CHANGED)
    assert rig.stage.config == DecisionFactory().config_for(CollectorConfig(**CHANGED))
    assert rig.stage.fanout.max_queue_bytes == CHANGED["max_queue_bytes"]
    judging = rig.stage.snapshot()["judging"]
    assert judging["budget_ms"] == CHANGED["max_rule_cost"] * 1000
    assert judging["max_lag_s"] == CHANGED["max_judge_lag"]


def test_settled_traces_go_to_the_next_consumer_as_whole_batches() -> None:
    """The stage hands each settled chunk to the ``next`` it was created with, once, as
    one ``Decided`` batch: every trace with the verdicts it was decided with."""
    rig = _rig()
    tids = _ingest(rig, 3)
    due = rig.stage.hold.due(rig.clock.now())
    assert sorted(t.trace_id for t in due) == sorted(tids)
    asyncio.run(rig.stage.consume(due))
    by_trace = {v.trace_id: v for v in rig.seen.verdicts}
    assert len(by_trace) == 3
    expected = tuple(DecidedTrace(t, [by_trace[t.trace_id.hex()]]) for t in due)
    assert rig.after.batches == [expected]
    assert len(rig.sink.records) == 3
    assert not any(rig.stage.deciding(tid) for tid in tids)
    assert rig.stage.hold.undecided() == 0


def test_start_and_shutdown_are_idempotent_and_shutdown_stops_the_judging_thread() -> None:
    """``start`` twice, ``shutdown`` twice: nothing breaks; the judging thread the first
    batch started (judging starts on the thread) ends at ``shutdown``."""
    rig = _rig()
    rig.stage.start()
    rig.stage.start()
    before = set(threading.enumerate())
    _ingest(rig, 2)
    asyncio.run(rig.stage.consume(rig.stage.hold.due(rig.clock.now())))
    assert rig.stage.worker.on_thread
    judging = [
        t for t in threading.enumerate() if t not in before and t.name.startswith("tracejudge")
    ]
    assert len(judging) == 1
    rig.stage.shutdown()
    rig.stage.shutdown()
    judging[0].join(WAIT_S)
    assert not judging[0].is_alive()
    assert rig.stage.state.stopped


def test_after_shutdown_due_traces_are_refused_and_stay_in_the_hold() -> None:
    """A batch after ``shutdown`` raises ``ComponentStopped`` naming the stage, and its
    traces go back to the hold (not lost, not decided); ``decide_all`` is refused too."""
    rig = _rig()
    tids = _ingest(rig, 2)
    rig.stage.start()
    rig.stage.shutdown()
    due = rig.stage.hold.due(rig.clock.now())
    assert len(due) == 2
    with pytest.raises(ComponentStopped, match="processor 'decision' is shut down"):
        asyncio.run(rig.stage.consume(due))
    assert sorted(rig.stage.buffer.traces) == sorted(tids)
    assert rig.stage.hold.undecided() == 2
    with pytest.raises(ComponentStopped, match="decision"):
        asyncio.run(rig.stage.decide_all())
    assert rig.stage.hold.undecided() == 2
    assert rig.after.batches == []
    assert rig.seen.verdicts == []
    assert not any(rig.stage.deciding(tid) for tid in tids)


def test_the_snapshot_keys_never_change() -> None:
    """Its ``/metrics`` entries have the same keys before and after deciding."""
    rig = _rig()
    keys = set(rig.stage.snapshot())
    _ingest(rig, 1)
    asyncio.run(rig.stage.consume(rig.stage.hold.due(rig.clock.now())))
    assert set(rig.stage.snapshot()) == keys
    assert {"judging", "decisions_waiting", "targets"} <= keys
