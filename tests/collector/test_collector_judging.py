"""Judging off the event loop: receivers and /healthz answer whatever the rules cost,
judging that falls behind pushes clients back without losing what was accepted, and the
rule-cost budget is checked at load and per live run.

Real sockets throughout (HTTP and gRPC clients against the collector's receivers, a real
OTLP receiver as backend). Nothing here bounds wall-clock time: the judge's lag moves on
the manual clock, a slow judge is one held at a gate, and "does not stall" counts answers
given while a judgement runs (the machine running the tests is shared).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.collector.collector_support import (
    LoopThread,
    StandInJudge,
    advance,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.guards import IO_S, PROCESS_S, WAIT_S
from tracejudge import semconv as sc
from tracejudge.collector import Collector, CollectorConfig, load_judge
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.config import build_config
from tracejudge.collector.processors.buffer import DecisionCache, decision_bytes
from tracejudge.collector.processors.cost import RuleCostError
from tracejudge.collector.processors.decision import CHEAP_JUDGING, LOOP_JUDGING_LIMIT
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.processors.worker import AdaptiveJudging
from tracejudge.engine.verdict import Verdict
from tracejudge.model.spans import SpanRecord

from .collector_support import Sink

ROOT = Path(__file__).resolve().parents[2]
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HEAVY = "run.tools.map(t, run.tools.filter(u, u.name + t.name == 'x').size()).size() > 0"
"""Two nested macros: steps^2 iterations. Over ~100 tool calls each evaluation runs close
to CEL's iteration budget (a few ms, during which cel-cpp holds the GIL)."""


CUBIC = (
    "run.tools.map(t, run.tools.map(u, run.tools.filter(v, v.name + u.name + t.name == 'x')"
    ".size()).size()).size() > 0"
)
"""Three nested macros: on the 10-span synthetic run about 70 µs against 3-7 µs for a cheap
rule, a gap no preemption or cache miss closes (with ``HEAVY``'s two, 15 µs against 3 µs,
a cheap rule was once named among the slowest beside a second ``make test``)."""


def _rules(path: Path, heavy: int, cheap: int = 0, heavy_expr: str = HEAVY) -> Path:
    lines = ["version: 1", "rules:"]
    for i in range(heavy):
        lines += [f"  - id: heavy-{i}", "    layer: policy", "    check:", "      type: cel"]
        lines += [f'      expr: "{heavy_expr} || {i} < 0"']
    for i in range(cheap):
        lines += [f"  - id: cheap-{i}", "    layer: policy", "    check:", "      type: cel"]
        lines += [f'      expr: "run.tools.size() >= {i}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _agent_trace(tools: int) -> tuple[bytes, bytes]:
    """An agent run: an ``invoke_agent`` root and ``tools`` tool calls; (trace id, body)."""
    tid, rid = new_ids()
    spans: list[Span] = [
        make_span(
            tid,
            rid,
            name="invoke_agent support",
            attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "support"},
        )
    ]
    for i in range(tools):
        spans.append(
            make_span(
                tid,
                parent=rid,
                name=f"execute_tool t{i % 7}",
                attributes={
                    sc.GEN_AI_OPERATION_NAME: "execute_tool",
                    sc.GEN_AI_TOOL_NAME: f"t{i % 7}",
                },
            )
        )
    return tid, make_request(spans).SerializeToString()


def _grpc_export(port: int, body: bytes) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        channel.unary_unary(EXPORT, None, None)(body, timeout=IO_S)


def test_expensive_rules_do_not_stall_healthz_or_the_receivers(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A valid rules file of many expensive CEL rules takes on the order of a second of CPU
    per trace here; while one such trace is judged, ``/healthz`` and both receivers keep
    answering: requests asked *and answered* while that one trace was being judged are
    counted (judged on the event loop, none could be: each would wait for the whole
    judgement). Counting answers, not timing them, keeps this true on a busy machine. The
    run over the rule-cost budget is counted and logged once, with its trace id; the
    synthetic 10-span run at load was cheaper than the live 98-tool run (both CPU time)."""
    judge = load_judge(_rules(tmp_path / "heavy.yaml", heavy=150))
    c = collector_factory(judge=judge, decision_wait_after_root=0.05, max_judge_lag=600.0)
    assert c.rule_cost is not None
    p = c.decision
    assert p is not None
    assert p.worker.on_thread  # judging starts on the thread
    tid, body = _agent_trace(tools=98)
    answered = {"healthz": 0, "http": 0, "grpc": 0}
    with caplog.at_level(logging.WARNING, logger="tracejudge.collector"):
        assert post(c.http_port, body)[0] == 200
        wait_for(lambda: p.deciding(tid) or c.stats.traces_decided > 0, what="judging")
        while p.deciding(tid):
            status, _, _ = post(c.http_port, b"", method="GET", path="/healthz")
            assert status == 200
            answered["healthz"] += p.deciding(tid)
            if p.deciding(tid) and answered["healthz"] % 3 == 1:
                _, small = _agent_trace(tools=1)
                _grpc_export(c.grpc_port, small)
                answered["grpc"] += p.deciding(tid)
                assert post(c.http_port, small)[0] == 200
                answered["http"] += p.deciding(tid)
        wait_for(lambda: any(s.trace_id == tid for s in sink.spans()), what="the heavy trace")
    assert answered["healthz"] >= 3, answered
    assert answered["grpc"] >= 1, answered
    assert answered["http"] >= 1, answered
    assert c.rule_cost.seconds < p.cost.slowest
    assert p.cost.over_budget >= 1
    lines = [
        r.getMessage() for r in caplog.records if "over the rule-cost budget" in r.getMessage()
    ]
    assert len([m for m in lines if tid.hex() in m]) == 1
    assert c.snapshot()["judging"]["over_budget"] == p.cost.over_budget


def _grpc_refusal(port: int, body: bytes) -> grpc.RpcError | None:
    """Export over gRPC; the error when refused, None when accepted."""
    try:
        _grpc_export(port, body)
    except grpc.RpcError as err:
        return err
    return None


class GatedJudge:
    """The stand-in judge behind a gate the test opens: a judge that takes as long as the
    test wants (a slow rules file without depending on this machine's speed)."""

    def __init__(self) -> None:
        self.inner = StandInJudge()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        self.entered.set()
        assert self.gate.wait(WAIT_S)
        return self.inner.judge_spans(spans)


def test_judging_behind_pushes_back_and_loses_nothing(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """While the oldest due trace has waited longer than ``max_judge_lag`` to be judged,
    OTLP/HTTP answers 503 with Retry-After and gRPC UNAVAILABLE with RetryInfo; once judging
    catches up requests are accepted again, and every accepted trace reaches the backend
    judged. The lag is moved on the manual clock while the judge is held at its gate."""
    judge = GatedJudge()
    clock = ManualClock()
    c = collector_factory(
        judge=judge, clock=clock, decision_wait_after_root=0.02, max_judge_lag=0.3
    )
    p = c.decision
    assert p is not None
    accepted: list[bytes] = []
    first, first_body = _agent_trace(tools=2)
    assert post(c.http_port, first_body)[0] == 200
    accepted.append(first)
    clock.advance(0.05)  # the first trace is due: the judge takes it and waits at the gate
    assert judge.entered.wait(WAIT_S)
    tid, body = _agent_trace(tools=2)
    assert post(c.http_port, body)[0] == 200  # 0.03 s behind: within max_judge_lag
    accepted.append(tid)
    clock.advance(0.3)  # now 0.33 s behind
    assert p.judge_lag() > 0.3
    status, headers, answer = post(c.http_port, _agent_trace(tools=2)[1])
    assert status == 503
    assert int(headers["retry-after"]) >= 1
    assert "judging is" in status_pb2.Status.FromString(answer).message
    err = _grpc_refusal(c.grpc_port, _agent_trace(tools=2)[1])
    assert err is not None
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    details: dict[str, bytes] = dict(err.trailing_metadata())  # type: ignore[arg-type]
    st = status_pb2.Status.FromString(details["grpc-status-details-bin"])
    assert st.details[0].Unpack(error_details_pb2.RetryInfo())
    assert c.snapshot()["judging"]["lag_s"] > 0.3
    judge.gate.set()
    advance(c, clock, 0.05)  # the first batch ends; the second trace, long due, is judged
    assert p.judge_lag() == 0
    late, body = _agent_trace(tools=2)
    assert post(c.http_port, body)[0] == 200
    accepted.append(late)
    advance(c, clock, 0.05)
    want = set(accepted)
    wait_for(lambda: {s.trace_id for s in sink.spans()} >= want, what="delivery")
    roots = {s.trace_id: attrs(s) for s in sink.spans() if not s.parent_span_id}
    assert all(sc.TRACEJUDGE_VERDICT in roots[t] for t in want)


def test_stop_while_judging_waits_for_the_chunk_and_delivers_it(
    lt: LoopThread, collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A stop that arrives while a trace is being judged lets that judgement finish (it
    used to cancel the timer mid-batch, leaving taken traces nowhere): the trace is
    delivered judged."""
    judge = GatedJudge()
    c = collector_factory(judge=judge, decision_wait_after_root=0.02)
    tid, body = _agent_trace(tools=2)
    assert post(c.http_port, body)[0] == 200
    assert judge.entered.wait(WAIT_S)
    stopping = asyncio.run_coroutine_threadsafe(c.stop(timeout=IO_S), lt.loop)
    wait_for(c.stopping, what="the stop begun")
    assert not stopping.done()  # it waits for the chunk being judged
    judge.gate.set()
    stopping.result(WAIT_S)
    spans = [s for s in sink.spans() if s.trace_id == tid]
    assert len(spans) == 3
    assert [attrs(s)[sc.TRACEJUDGE_VERDICT] for s in spans if not s.parent_span_id] == ["pass"]


def test_an_over_budget_rules_file_is_refused_naming_its_slowest_rules(tmp_path: Path) -> None:
    """At load the rules are judged on the synthetic 10-span run; over ``max_rule_cost``
    the collector refuses to start and names the slowest rules (the heavy ones, not the
    cheap ones); within the budget it starts and reports the cost."""
    rules = _rules(tmp_path / "r.yaml", heavy=100, cheap=20, heavy_expr=CUBIC)
    cfg = CollectorConfig(rules=rules, grpc_port=0, http_port=0, max_rule_cost=0.0005)
    with pytest.raises(RuleCostError) as info:
        Collector(cfg.validate())
    message = str(info.value)
    assert "over the budget of 0.5 ms (max_rule_cost)" in message
    slowest = message.split("slowest rules: ")[1]
    assert slowest.count("heavy-") == 5
    assert "cheap-" not in slowest
    relaxed = CollectorConfig(rules=rules, grpc_port=0, http_port=0, max_rule_cost=0.0)
    assert Collector(relaxed.validate()).rule_cost is not None  # 0: no budget


def test_serve_refuses_an_over_budget_rules_file_with_its_message(tmp_path: Path) -> None:
    """``tracejudge serve --max-rule-cost 500us`` style refusal: exit status 2 and the
    message on stderr, before anything listens."""
    rules = _rules(tmp_path / "r.yaml", heavy=100)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "tracejudge"), "serve", "--rules", str(rules),
            "--grpc-port", "0", "--http-port", "0", "--max-rule-cost", "0.0005",
        ],
        capture_output=True, text=True, timeout=PROCESS_S, env={**os.environ},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "max_rule_cost" in proc.stderr
    assert "heavy-" in proc.stderr
    assert "listening on" not in proc.stderr


def test_decided_cache_evicts_by_bytes() -> None:
    """The decided cache holds its byte cap: plain passes are small, a decision citing many
    spans is large and pushes out several of the oldest; recency is refreshed on a hit."""
    passed = Decision("pass")
    one = decision_bytes(passed)
    cache = DecisionCache(size=1_000_000, max_bytes=10 * one)
    ids = [os.urandom(16) for _ in range(20)]
    for tid in ids:
        cache.put(tid, passed)
    assert len(cache) == 10
    assert cache.nbytes <= 10 * one
    assert cache.get(ids[0]) is None
    assert cache.get(ids[10]) is passed  # now the most recent
    big = Decision("fail", {os.urandom(8): ["F-POLICY-X"] for _ in range(4)})
    assert 4 * one < decision_bytes(big) < 5 * one
    cache.put(os.urandom(16), big)
    assert cache.nbytes <= 10 * one
    assert cache.get(ids[10]) is passed  # refreshed before: survives
    assert cache.get(ids[11]) is None  # the least recently used went first
    assert build_config({"decided_cache_bytes": "1MiB"}, {}).decided_cache_bytes == 1024**2


def test_cheap_rules_are_judged_on_the_loop_until_a_run_is_slow(
    collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """The thread costs more than it saves for cheap rules (GIL hand-offs and a cross-thread
    wake-up per chunk: ~50% more collector CPU per 10-span trace, bench/bench_collector.py),
    so after enough cheap traces in a row judging moves to the loop; one slow trace moves it
    back. Nothing is lost on the way. (The decision reads live traces: the synthetic run at
    load said 3 ms for rules that take a second on a 98-tool trace, the test above.)"""
    judge = load_judge(_rules(tmp_path / "cheap.yaml", heavy=0, cheap=3))
    c = collector_factory(judge=judge, decision_wait_after_root=0.05)
    assert c.decision is not None
    worker_of = c.decision.worker
    worker_of.settle_runs = 5
    states = [worker_of.on_thread]
    sent = []
    for _ in range(8):
        tid, body = _agent_trace(tools=3)
        assert post(c.http_port, body)[0] == 200
        sent.append(tid)
    wait_for(lambda: {s.trace_id for s in sink.spans()} >= set(sent), what="the cheap traces")
    states.append(worker_of.on_thread)
    assert states == [True, False]  # started on the thread; cheap live traces moved it
    worker = AdaptiveJudging(CHEAP_JUDGING, LOOP_JUDGING_LIMIT, settle_runs=2)
    seen: list[bool] = []
    for seconds in (CHEAP_JUDGING / 2, CHEAP_JUDGING * 2, CHEAP_JUDGING / 2, 0.0, 0.0):
        worker.observe(seconds)
        seen.append(worker.on_thread)
    assert seen == [True, True, True, False, False]  # two cheap traces *in a row*
    worker.observe(LOOP_JUDGING_LIMIT * 2)
    assert worker.on_thread  # one slow trace moves it back
    worker.close()


class WaitingJudge(StandInJudge):
    """Spends ``wait`` seconds of each judgement waiting, not computing: what a judge on
    the worker thread does while another thread of the process holds the GIL."""

    def __init__(self, wait: float) -> None:
        super().__init__()
        self.wait = wait

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        time.sleep(self.wait)
        return super().judge_spans(spans)


def test_a_runs_judging_time_is_the_judges_cpu_not_its_waits(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Judging time (adaptive judging, the rule-cost budget, ``/metrics``) is the judge's
    CPU time on its thread, not wall time.

    On the judging thread the wall clock also counted the waits for the GIL while the loop
    ran: under load every trace looked slower than the cheap limit, judging never moved to
    the loop, and the collector spent ~40% more CPU per trace than before the thread existed
    (bench/bench_collector.py). A judge that waits 20 ms per run must still count as cheap
    and move judging to the loop."""
    c = collector_factory(judge=WaitingJudge(0.02), decision_wait_after_root=0.05)
    assert c.decision is not None
    c.decision.worker.settle_runs = 3
    sent = []
    for _ in range(4):
        tid, body = _agent_trace(tools=2)
        assert post(c.http_port, body)[0] == 200
        sent.append(tid)
    wait_for(lambda: {s.trace_id for s in sink.spans()} >= set(sent), what="the traces")
    judging = c.snapshot()["judging"]
    assert judging["runs"] == 4
    assert judging["max_ms"] < 10  # each run waited 20 ms; its CPU was well under that
    assert judging["on"] == "loop"
    assert judging["moves"] == 1
