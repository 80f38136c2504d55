"""Shadow pairing in the collector's pipeline, on a manual clock: no sockets, no sleeps.

The runs are made by the real instrumentation (tests/support/shadow_runs.py), encoded by
the OTel OTLP exporter's own encoder and ingested as requests; the judge is the real
engine. ``drive`` (test_collector_timing.py) plays the collector's timer loop.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.collector.collector_support import decision_stage
from tests.collector.test_collector_timing import ListSink, drive
from tests.support import shadow_runs
from tests.support.shadow_runs import Shape, run_once
from tracejudge.collector import Collector, CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.processors.decision import scrubber_for
from tracejudge.collector.processors.shadow import shadow_pairs_for
from tracejudge.collector.telemetry.exposition import render
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine import Engine, load_rules_text
from tracejudge.gate.recent import RecentVerdicts

pytestmark = pytest.mark.usefixtures("instrumented")
RULESET = load_rules_text(shadow_runs.RULES)
WAIT = 60.0


class Rig:
    """A pipeline with the real engine, the gate's window and shadow pairing, built as the
    collector builds them (``assembly.build_stages``)."""

    def __init__(self, exporter: InMemorySpanExporter, **overrides: Any) -> None:
        self.exporter = exporter
        self.clock = ManualClock()
        cfg = CollectorConfig(
            **{
                "forward": [],
                "grpc_port": 0,
                "http_port": 0,
                "decision_wait_after_root": 0.1,
                "decision_wait": 1.0,
                "tick": 0.05,
                "shadow_wait": WAIT,
                **overrides,
            }
        ).validate()
        self.sink = ListSink(self.clock)
        self.recent = RecentVerdicts()
        self.stats = Stats([])
        scrubber = scrubber_for(cfg)
        self.pairs = shadow_pairs_for(cfg, self.stats, [self.sink], scrubber, RULESET)
        self.decision = decision_stage(
            cfg,
            Engine(RULESET),
            [],
            [self.sink],
            self.stats,
            None,
            self.clock,
            [self.recent, self.pairs],
            scrubber=scrubber,
            shadow=self.pairs,
        )
        self.decision.arm_timer()
        self.admission = admission_for(cfg, self.decision)
        self._sent = 0

    def send(self, shape: Shape, request_id: str | None, shadow: bool = False) -> None:
        """Make one run and ingest its trace (only the spans not sent before)."""
        run_once(shape, request_id=request_id, shadow=shadow, variant="v2" if shadow else "v1")
        spans = list(self.exporter.get_finished_spans())[self._sent :]
        self._sent += len(spans)
        self.admission.ingest(_request(spans))

    def run(self, seconds: float) -> None:
        asyncio.run(drive(self.decision, self.clock, seconds))

    def shadow_lines(self) -> list[tuple[float, dict[str, Any]]]:
        return [(t, r) for t, r in self.sink.records if r.get("record") == "shadow"]

    def verdict_lines(self) -> list[dict[str, Any]]:
        return [r for _, r in self.sink.records if "record" not in r]


def _request(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    by_trace: dict[int, list[ReadableSpan]] = defaultdict(list)
    for s in spans:
        by_trace[s.context.trace_id].append(s)
    assert len(by_trace) == 1, "one run, one trace"
    return encode_spans(spans)


def test_stable_then_diverging_shadow(span_exporter: InMemorySpanExporter) -> None:
    """Both decided: one diverged report with the F-SHADOW findings; the shadow's verdict
    line says shadow; it counts in the shadow series, not in tracejudge.runs nor in the
    gate's window."""
    rig = Rig(span_exporter)
    rig.send("refund", "r-1")
    rig.run(0.5)
    rig.send("no_refund", "r-1", shadow=True)
    rig.run(0.5)
    ((_, line),) = rig.shadow_lines()
    assert line["outcome"] == "diverged"
    assert [f["code"] for f in line["findings"]] == [
        "F-SHADOW-MISSING_CALL",
        "F-SHADOW-TERMINAL_ACTION",
    ]
    assert line["request_id"] == "r-1"
    assert line["stable"]["variant"] == "v1"
    assert line["shadow"]["variant"] == "v2"
    assert "decided_at" in line
    stable, shadow = rig.verdict_lines()
    assert "shadow" not in stable
    assert shadow["shadow"] is True
    assert [k[0][1] for k in rig.stats.run_keys] == ["v1"]  # user traffic: the stable run
    assert [(k[0][1], k[1]) for k in rig.stats.shadow_run_keys] == [("v2", "pass")]
    assert list(rig.stats.shadow_pair_keys.values()) == [1]
    assert [k[1] for k in rig.stats.shadow_pair_keys] == ["diverged"]
    assert rig.stats.runs == {"pass": 1}
    assert len(rig.recent) == 1  # the gate never sees the shadow
    text = render(rig.stats)
    assert 'tracejudge_shadow_pairs_total{gen_ai_agent_name="support"' in text
    assert 'tracejudge_shadow_outcome="diverged"} 1' in text
    assert rig.stats.snapshot()["shadow"] == {
        "runs": {"pass": 1},
        "pairs": {"diverged": 1},
        "pending": 0,
    }


def test_shadow_first_is_paired_when_its_stable_run_is_decided(
    span_exporter: InMemorySpanExporter,
) -> None:
    """The shadow waits (pending), then its stable run pairs it: paired, no findings."""
    rig = Rig(span_exporter)
    rig.send("refund", "r-2", shadow=True)
    rig.run(0.5)
    assert rig.shadow_lines() == []
    assert rig.pairs.pending() == 1
    rig.send("refund", "r-2")
    rig.run(0.5)
    ((_, line),) = rig.shadow_lines()
    assert (line["outcome"], line["findings"]) == ("paired", [])
    assert rig.pairs.pending() == 0


def test_a_shadow_without_partner_is_unpaired_after_the_wait(
    span_exporter: InMemorySpanExporter,
) -> None:
    """No stable run: reported unpaired by the timer once ``shadow_wait`` has passed (not
    before), with the reason; a stable run after that is ordinary traffic."""
    rig = Rig(span_exporter)
    rig.send("refund", "r-3", shadow=True)
    rig.run(0.5)
    ((decided, _),) = rig.sink.records  # when the shadow's verdict was decided
    rig.run(WAIT - 1.0)
    assert rig.shadow_lines() == []
    rig.run(1.0)  # 0.6 s past the wait
    ((at, line),) = rig.shadow_lines()
    assert at - decided == pytest.approx(WAIT, abs=0.06)
    assert line["outcome"] == "unpaired"
    assert line["stable"] is None
    assert line["reason"] == "no stable run of request r-3 within 60s"
    assert [f["code"] for f in line["findings"]] == ["F-SHADOW-UNPAIRED"]
    assert [k[1] for k in rig.stats.shadow_pair_keys] == ["unpaired"]
    rig.send("refund", "r-3")
    rig.run(0.5)
    assert len(rig.shadow_lines()) == 1


def test_a_shadow_without_request_id_is_reported_at_once(
    span_exporter: InMemorySpanExporter,
) -> None:
    """The issue's bad input: its verdict carries F-EVIDENCE-SHADOW_NO_REQUEST and an
    unpaired report follows at once (no wait: there is nothing to wait for)."""
    rig = Rig(span_exporter)
    rig.send("refund", None, shadow=True)
    rig.run(0.5)
    (verdict,) = rig.verdict_lines()
    assert [f["code"] for f in verdict["findings"]] == ["F-EVIDENCE-SHADOW_NO_REQUEST"]
    ((_, line),) = rig.shadow_lines()
    assert line["outcome"] == "unpaired"
    assert "without a request id" in line["reason"]
    assert rig.pairs.pending() == 0
    assert rig.stats.run_keys == {}


def test_shutdown_reports_waiting_shadows(span_exporter: InMemorySpanExporter) -> None:
    """A collector stopping before the partner arrived says so for each waiting shadow."""
    rig = Rig(span_exporter)
    rig.send("refund", "r-4", shadow=True)
    rig.run(0.5)
    asyncio.run(rig.decision.decide_all())
    ((_, line),) = rig.shadow_lines()
    assert line["outcome"] == "unpaired"
    assert "collector stopped" in line["reason"]


def test_a_full_table_gives_way_with_a_report(span_exporter: InMemorySpanExporter) -> None:
    """Bounded memory: beyond ``shadow_max_pending`` requests the oldest waiting shadow is
    reported unpaired (not dropped silently)."""
    rig = Rig(span_exporter, shadow_max_pending=1)
    rig.send("refund", "r-5", shadow=True)
    rig.send("refund", "r-6", shadow=True)
    rig.run(0.5)
    ((_, line),) = rig.shadow_lines()
    assert line["request_id"] == "r-5"
    assert "pairing table was full" in line["reason"]
    assert rig.pairs.pending() == 1


def test_shadow_wait_is_a_checked_duration() -> None:
    """``--shadow-wait 5m`` (or ``shadow_wait:`` in the file) is a duration; zero is refused
    (a shadow must get some time to meet its stable run); the default is five minutes."""
    assert build_config({}, {}).shadow_wait == 300.0
    assert build_config({"shadow_wait": "90s"}, {"shadow_wait": "5m"}).shadow_wait == 300.0
    with pytest.raises(ConfigError, match="shadow_wait: must be positive"):
        build_config({}, {"shadow_wait": "0s"})
    with pytest.raises(ConfigError, match="shadow_max_pending: must be positive"):
        build_config({"shadow_max_pending": 0}, {})


def test_shadow_pairing_is_registered_as_an_observer_when_the_graph_is_built(
    collector_factory: Callable[..., Collector],
) -> None:
    """The assembly registers the gate's window and shadow pairing as the pipeline's
    observers, in that order; the pipeline adds none itself, so shadow pairing given
    for its timer but left out of the observers (it would never see a verdict) is refused."""
    c = collector_factory()
    assert c.decision is not None
    assert c.decision.shadow is not None
    assert c.decision.observers == (c.recent, c.decision.shadow)
    cfg = CollectorConfig(forward=[], grpc_port=0, http_port=0).validate()
    stats = Stats([])
    pairs = shadow_pairs_for(cfg, stats, [], scrubber_for(cfg), RULESET)
    with pytest.raises(ValueError, match="shadow pairing is given verdicts as one of the obs"):
        decision_stage(cfg, Engine(RULESET), [], [], stats, None, ManualClock(), [], shadow=pairs)
