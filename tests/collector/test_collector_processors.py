"""The processor contract and registry (issue 20): every processor on the decided edge is
built by a factory registered by kind, in its declared order, so adding one is one module
plus one registry line; every registered kind obeys the contract.

Real parts throughout: the real ``Collector`` receiving OTLP/HTTP on a ``ManualClock``, the
real logs intake and graders processors; the judge is the suite's stand-in. The ``tally``
kind below is a real processor defined here to show what adding one takes (its factory,
then ``with_factory``), not a stand-in for one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from tests.collector.collector_support import (
    LoopThread,
    StandInJudge,
    advance,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tracejudge.collector import Collector, CollectorConfig
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.component import (
    ComponentStopped,
    Consumer,
    Lifecycle,
    ProcessorFactory,
    ProcessorRegistry,
)
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.decided import Context, Decided, DecidedTrace
from tracejudge.collector.processors.decision import scrubber_for
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.logs_intake import logs_intake_for
from tracejudge.collector.processors.registry import PROCESSORS
from tracejudge.collector.telemetry.snapshot import merge
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict


@dataclass(frozen=True)
class TallyConfig:
    keep_verdicts: bool = True


class Tally:
    """Keeps the trace ids and verdicts of every batch it is given, then hands it on."""

    kind = "tally"

    def __init__(self, config: TallyConfig, next: Consumer[Decided]) -> None:
        self.config = config
        self.next = next
        self.state = Lifecycle(self.kind)
        self.batches: list[list[str]] = []
        self.verdicts: dict[str, str] = {}

    def start(self) -> None:
        self.state.start()

    def consume(self, batch: Decided) -> None:
        self.state.check()
        self.batches.append([d.trace.trace_id.hex() for d in batch])
        if self.config.keep_verdicts:
            for d in batch:
                for v in d.verdicts:
                    self.verdicts[v.trace_id] = v.verdict
        self.next.consume(batch)

    def shutdown(self) -> None:
        self.state.shutdown()

    def snapshot(self) -> Mapping[str, Any]:
        return {"tally": {"batches": len(self.batches)}}


class TallyFactory:
    kind = "tally"

    def __init__(self) -> None:
        self.built: list[Tally] = []

    def default_config(self) -> TallyConfig:
        return TallyConfig()

    def config_for(self, settings: CollectorConfig) -> TallyConfig:
        return self.default_config()

    def create(self, config: TallyConfig, next: Consumer[Decided], context: Context) -> Tally:
        tally = Tally(config, next)
        self.built.append(tally)
        return tally


class Recorder:
    """The next consumer in the contract tests: the batches it was handed."""

    def __init__(self) -> None:
        self.batches: list[Decided] = []

    def consume(self, batch: Decided) -> None:
        self.batches.append(batch)


def test_the_default_kinds_in_their_declared_order() -> None:
    """The registration order is the chain's: the logs join, then the graders."""
    assert PROCESSORS.kinds() == ["logs_join", "graders"]
    with pytest.raises(ValueError, match=r"no processor kind 'kafka' \(known: logs_join, graders"):
        PROCESSORS.get("kafka")
    with pytest.raises(ValueError, match="processor kinds registered twice"):
        PROCESSORS.with_factory(TallyFactory()).with_factory(TallyFactory())
    assert PROCESSORS.with_factory(TallyFactory()).kinds() == ["logs_join", "graders", "tally"]
    placed = PROCESSORS.with_factory(TallyFactory(), after="logs_join")
    assert placed.kinds() == ["logs_join", "tally", "graders"]
    with pytest.raises(ValueError, match="no processor kind 'nope'"):
        PROCESSORS.with_factory(TallyFactory(), after="nope")


def _traced_request() -> tuple[str, bytes]:
    trace_id, root = new_ids()
    spans = [make_span(trace_id, root, name="agent"), make_span(trace_id, parent=root)]
    return trace_id.hex(), make_request(spans).SerializeToString()


def test_a_registered_processor_placed_in_the_chain_sees_every_batch(lt: LoopThread) -> None:
    """One module (``Tally`` above) plus one registry line: placed after the logs join, it
    is built with the graders as its next, started and shut down with the collector, given
    every settled trace exactly once with its verdict, and its snapshot is part of
    ``/metrics``."""
    factory = TallyFactory()
    registry = PROCESSORS.with_factory(factory, after="logs_join")
    cfg = CollectorConfig(
        forward=[],
        grpc_port=0,
        http_port=0,
        decision_wait_after_root=0.02,
        decision_wait=1.0,
        shutdown_timeout=3.0,
    ).validate()
    clock = ManualClock()
    c = Collector(cfg, StandInJudge(), clock, processors=registry)
    lt.run(c.start())
    try:
        (tally,) = factory.built
        assert [p.kind for p in c.chain] == ["logs_join", "tally", "graders"]
        assert tally.next is c.chain[2]
        assert tally.state.started
        sent = []
        for _ in range(3):  # three requests, decided together
            trace_id, payload = _traced_request()
            sent.append(trace_id)
            assert post(c.http_port, payload)[0] == 200
        advance(c, clock, 0.05)
        trace_id, payload = _traced_request()  # a fourth, decided apart
        sent.append(trace_id)
        assert post(c.http_port, payload)[0] == 200
        advance(c, clock, 0.05)
        wait_for(lambda: c.snapshot()["traces_decided"] == 4, what="four traces decided")
        seen = [t for batch in tally.batches for t in batch]
        assert sorted(seen) == sorted(sent)  # every trace, once
        assert all(tally.batches)  # never an empty batch
        assert tally.verdicts == dict.fromkeys(sent, "pass")
        assert c.snapshot()["tally"] == {"batches": len(tally.batches)}
        assert c.snapshot()["graders"] is None  # the graders after it are still there
    finally:
        lt.run(c.stop())
    assert tally.state.stopped


def _context() -> Context:
    cfg = CollectorConfig(forward=[], grpc_port=0, http_port=0).validate()
    clock = ManualClock()
    stats = Stats([])
    scrubber = scrubber_for(cfg)
    logs = logs_intake_for(cfg, TraceHold(cfg, clock), stats, scrubber)
    return Context(clock, stats, scrubber, [], logs)


def _batch() -> Decided:
    trace_id, _ = new_ids()
    trace = PendingTrace(trace_id, 0.0, 0.0, 0.0, spans=1)
    verdict = Verdict(trace_id.hex(), "01", "pass", {"outcome": "pass"})
    return (DecidedTrace(trace, [verdict]),)


REGISTERED: ProcessorRegistry[Decided, Context] = PROCESSORS.with_factory(TallyFactory())


@pytest.mark.parametrize("kind", REGISTERED.kinds())
def test_every_registered_processor_obeys_the_contract(kind: str) -> None:
    """For each kind: a frozen default config that the collector's defaults fill in the
    same; built with its kind; ``start`` and ``shutdown`` idempotent; each batch handed to
    the next consumer once; after ``shutdown`` a batch is refused, naming the processor,
    and not handed on; the snapshot's keys never change."""
    factory: ProcessorFactory[Any, Decided, Context] = REGISTERED.get(kind)
    config = factory.default_config()
    assert dataclasses.is_dataclass(config)
    assert factory.config_for(CollectorConfig()) == config
    for field in dataclasses.fields(config):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field.name, getattr(config, field.name))
    after = Recorder()
    processor = factory.create(config, after, _context())
    assert processor.kind == kind
    keys = set(processor.snapshot())
    assert keys
    processor.start()
    processor.start()
    batch = _batch()
    processor.consume(batch)
    assert after.batches == [batch]
    assert set(processor.snapshot()) == keys
    processor.shutdown()
    processor.shutdown()
    with pytest.raises(ComponentStopped, match=rf"processor '{kind}' is shut down"):
        processor.consume(_batch())
    assert after.batches == [batch]
    assert set(processor.snapshot()) == keys


def test_metrics_is_the_sum_of_the_components_snapshots(lt: LoopThread) -> None:
    """``/metrics`` holds each component's entries as it reports them, plus the status
    they add up to; a component claiming another's key is refused, naming the key."""
    cfg = CollectorConfig(forward=[], grpc_port=0, http_port=0).validate()
    c = Collector(cfg, StandInJudge(), ManualClock())
    lt.run(c.start())
    try:
        snap = c.snapshot()
        assert c.decision is not None
        assert c.admission is not None
        parts = [
            c.stats.snapshot(),
            c.listeners.snapshot(),
            c.admission.snapshot(),
            c.decision.snapshot(),
            *(p.snapshot() for p in c.chain),
        ]
        for part in parts:
            for key, value in part.items():
                assert snap[key] == value, key
        own = {"status", "reasons", "build", "disk_queue", "dead_letter"}
        assert set(snap) == own.union(*parts)
        assert sum(len(part) for part in parts) + len(own) == len(snap)  # no key twice
    finally:
        lt.run(c.stop())
    with pytest.raises(ValueError, match="/metrics entry 'logs' reported by two components"):
        merge([{"logs": 1}, {"graders": None, "logs": 2}])
