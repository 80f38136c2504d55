"""Modes and outputs: --drop-content, --passthrough, webhook, metrics, config validation."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    StandInJudge,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.guards import PROCESS_S
from tracejudge import semconv as sc
from tracejudge.cli import main
from tracejudge.collector import Collector, ConfigError, build_config
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.model.spans import SpanRecord


class RecordingJudge(StandInJudge):
    """The stand-in judge, also keeping the spans it was shown."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[SpanRecord] = []

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        """Record, then judge like the stand-in."""
        self.seen.extend(spans)
        return super().judge_spans(spans)


def test_drop_content_strips_after_judging(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """--drop-content: the judge still sees the messages, the backend never does."""
    judge = RecordingJudge()
    c = collector_factory(judge=judge, drop_content=True)
    tid, rid = new_ids()
    span = make_span(
        tid,
        rid,
        attributes={
            sc.GEN_AI_INPUT_MESSAGES: '[{"role":"user"}]',
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"card":"4111"}',
            sc.FOREIGN_LLM_INPUT_MESSAGES + ".0.message.content": "secret",
            sc.GEN_AI_REQUEST_MODEL: "gpt-x",
        },
    )
    ev = span.events.add(name=sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS)
    ev.attributes.append(
        KeyValue(key=sc.GEN_AI_OUTPUT_MESSAGES, value=AnyValue(string_value="answer"))
    )
    kept = span.events.add(name="exception")
    kept.attributes.append(
        KeyValue(key=sc.GEN_AI_TOOL_CALL_RESULT, value=AnyValue(string_value="payload"))
    )
    post(c.http_port, make_request([span]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 1, what="forwarded span")
    out = sink.spans()[0]
    got = attrs(out)
    assert sc.GEN_AI_INPUT_MESSAGES not in got
    assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in got
    assert not any(k.startswith(sc.FOREIGN_LLM_INPUT_MESSAGES) for k in got)
    assert got[sc.GEN_AI_REQUEST_MODEL] == "gpt-x"
    assert got[sc.TRACEJUDGE_CONTENT_DROPPED] is True
    assert got[sc.TRACEJUDGE_VERDICT] == "pass"
    names = [e.name for e in out.events]
    assert sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS not in names
    exc = next(e for e in out.events if e.name == "exception")
    assert [kv.key for kv in exc.attributes] == []
    assert judge.seen[0].attributes[sc.GEN_AI_INPUT_MESSAGES] == '[{"role":"user"}]'


def test_passthrough_forwards_at_once_then_adds_verdict_span(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """--passthrough: spans reach the backend before judging; the verdict follows as a child
    span of the run root in the same trace."""
    c = collector_factory(passthrough=True, decision_wait_after_root=1.0, decision_wait=2.0)
    tid, rid = new_ids()
    bad = make_span(tid, parent=rid, error=True)
    post(c.http_port, make_request([make_span(tid, rid), bad]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 2, what="immediate forward")
    assert all(sc.TRACEJUDGE_VERDICT not in attrs(s) for s in sink.spans())
    wait_for(lambda: len(sink.spans()) == 3, what="verdict span")
    vspan = sink.spans()[2]
    assert vspan.trace_id == tid
    assert vspan.parent_span_id == rid
    got = attrs(vspan)
    assert got[sc.TRACEJUDGE_VERDICT] == "fail"
    assert got[sc.TRACEJUDGE_JUDGED_SPAN_ID] == rid.hex()
    assert got[sc.TRACEJUDGE_FINDING_CODES] == ["F-TEST-ERROR"]
    assert [e.name for e in vspan.events] == [sc.EVENT_GEN_AI_EVALUATION_RESULT]


def test_passthrough_with_drop_content_strips_before_forwarding(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """In passthrough mode spans leave before judging, so content is stripped on the way
    in; the judge still sees it from the buffered copy."""
    judge = RecordingJudge()
    c = collector_factory(judge=judge, passthrough=True, drop_content=True)
    tid, rid = new_ids()
    span = make_span(tid, rid, attributes={sc.GEN_AI_OUTPUT_MESSAGES: "the answer"})
    post(c.http_port, make_request([span]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 2, what="span and verdict span")
    forwarded = next(s for s in sink.spans() if s.span_id == rid)
    assert sc.GEN_AI_OUTPUT_MESSAGES not in attrs(forwarded)
    assert attrs(forwarded)[sc.TRACEJUDGE_CONTENT_DROPPED] is True
    assert judge.seen[0].attributes[sc.GEN_AI_OUTPUT_MESSAGES] == "the answer"


def test_webhook_receives_each_verdict(
    lt: LoopThread, collector_factory: Callable[..., Collector]
) -> None:
    """Every verdict is POSTed to the webhook as its public JSON form, after a retry."""
    got: list[dict[str, Any]] = []
    answers = [503]

    async def hook(request: web.Request) -> web.Response:
        if answers:
            return web.Response(status=answers.pop())
        got.append(await request.json())
        return web.Response(status=204)

    async def start() -> tuple[web.AppRunner, int]:
        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, int(runner.addresses[0][1])

    runner, port = lt.run(start())
    try:
        c = collector_factory(webhook=f"http://127.0.0.1:{port}/hook")
        tid, rid = new_ids()
        post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())
        wait_for(lambda: len(got) == 1, what="webhook call")
        assert got[0]["trace_id"] == tid.hex()
        assert got[0]["verdict"] == "pass"
    finally:
        lt.run(runner.cleanup())


def test_metrics_count_runs_findings_and_spans() -> None:
    """tracejudge.runs / tracejudge.findings / tracejudge.collector.spans reach a real
    MeterProvider with the documented attributes."""
    reader = InMemoryMetricReader()
    stats = Stats([reader])
    finding = Finding("F-X", "fail", "outcome", "r", ("01" * 8,), "why")
    stats.verdict(
        Verdict("ab" * 16, "01" * 8, "fail", {}, agent="refund", variant="v2", findings=[finding])
    )
    stats.count("received", 7)
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                points[m.name] = list(m.data.data_points)
    run = points[sc.METRIC_TRACEJUDGE_RUNS][0]
    assert run.value == 1
    identity = {
        sc.GEN_AI_AGENT_NAME: "refund",
        sc.TRACEJUDGE_VARIANT_ID: "v2",
        sc.GEN_AI_AGENT_VERSION: "",
        sc.TRACEJUDGE_CASE_SLICE: "",
    }
    assert dict(run.attributes) == {**identity, sc.TRACEJUDGE_VERDICT: "fail"}
    finding_point = points[sc.METRIC_TRACEJUDGE_FINDINGS][0]
    assert dict(finding_point.attributes) == {**identity, sc.TRACEJUDGE_FAILURE_CODE: "F-X"}
    # An outcome-layer failure is not a hard-gate (policy) failure: nothing counted there.
    assert not points.get(sc.METRIC_TRACEJUDGE_HARD_GATE_FAILURES)
    spans = points[sc.METRIC_TRACEJUDGE_COLLECTOR_SPANS][0]
    assert spans.value == 7
    assert spans.attributes[sc.TRACEJUDGE_COLLECTOR_SPAN_STATE] == "received"
    stats.shutdown()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"output": "/nonexistent-dir/judged.jsonl"}, "not a file in an existing directory"),
        ({"output": "/tmp/same.jsonl", "verdicts_jsonl": "/tmp/same.jsonl"}, "same file"),
        (
            {"forward": "ftp://x"},
            r"no exporter for 'ftp' URLs \(known: http, https, grpc, grpcs, file\)",
        ),
        ({"forward": "http://a:1", "decision_wait": "soon"}, "expected a duration"),
        ({"forward": "http://a:1", "max_request_bytes": "lots"}, "expected a size"),
        ({"forward": "http://a:1", "decison_wait": "1s"}, "unknown key 'decison_wait'"),
        ({"forward": "http://a:1", "grpc_port": 70000}, "not a port number"),
        (
            {"forward": "http://a:1", "decision_wait": "1s", "decision_wait_after_root": "5s"},
            "must not exceed",
        ),
        ({"forward": "http://a:1", "drop_content": "yes"}, "expected true or false"),
    ],
)
def test_bad_config_fails_fast(values: dict[str, Any], message: str) -> None:
    """Every bad value is refused at start with the key's name (no silent defaults)."""
    with pytest.raises(ConfigError, match=message):
        build_config(values, {})


def test_no_backend_is_a_valid_config(tmp_path: Path) -> None:
    """Neither forward nor output: valid (``serve`` then prints the verdicts)."""
    cfg = build_config({}, {"forward": None})
    assert cfg.forward == []
    assert cfg.output is None
    out = build_config({"output": str(tmp_path / "judged.jsonl")}, {})
    assert out.output == tmp_path / "judged.jsonl"


def test_flags_override_file_and_units_parse(tmp_path: Path) -> None:
    """Flags win over the file; durations and sizes accept units."""
    cfg = build_config(
        {"forward": ["http://a:1"], "decision-wait": "1m", "max_request_bytes": "2MiB"},
        {"decision_wait": "45s", "forward": None, "host": None},
    )
    assert cfg.decision_wait == 45.0
    assert cfg.max_request_bytes == 2 * 1024 * 1024
    assert cfg.forward == ["http://a:1"]
    assert cfg.host == "127.0.0.1"


def test_cli_reports_config_errors(tmp_path: Path) -> None:
    """`tracejudge serve` with a bad config exits 2 with a readable message, no traceback."""
    conf = tmp_path / "c.yaml"
    conf.write_text("forward: [http://127.0.0.1:1]\nrules: /nonexistent.yaml\n")
    result = CliRunner().invoke(main, ["serve", "--config", str(conf)])
    assert result.exit_code == 2
    assert "rules: /nonexistent.yaml is not a file" in result.output
    result = CliRunner().invoke(main, ["serve", "--forward", "http://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "rules file is required" in result.output


def test_example_config_is_valid() -> None:
    """The shipped example config parses and validates (docs never drift from the code)."""
    from tracejudge.collector.config import load_config_file

    root = Path(__file__).resolve().parents[2]
    values = load_config_file(root / "collector" / "tracejudge.example.yaml")
    cfg = build_config(values, {})
    assert cfg.forward
    assert cfg.rules is not None
    assert cfg.rules.resolve() == root / "examples" / "refund" / "rules.yaml"


def test_judge_crash_yields_error_verdict(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A judge that raises never stops forwarding: the run is stamped verdict=error."""

    class Broken:
        def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
            raise RuntimeError("rule bug")

    c = collector_factory(judge=Broken())
    tid, rid = new_ids()
    post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 1, what="span despite judge crash")
    got = attrs(sink.spans()[0])
    assert got[sc.TRACEJUDGE_VERDICT] == "error"
    assert "rule bug" in got[sc.TRACEJUDGE_FAILURE_EXPLANATION]
    assert c.stats.judge_errors == 1


@pytest.mark.parametrize(
    ("which", "listener"),
    [
        ("--grpc-port", "OTLP/gRPC"),
        ("--http-port", "OTLP/HTTP"),
        ("--management-port", "management"),
    ],
)
def test_port_in_use_is_a_clear_error(which: str, listener: str) -> None:
    """A taken port stops the real `tracejudge serve` process with exactly one line on
    stderr: no traceback, and no raw gRPC C-core log line before it (that one is written
    to the process's stderr by native code, so only a subprocess can see it)."""
    import socket

    root = Path(__file__).resolve().parents[2]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        ports = {"--grpc-port": "0", "--http-port": "0", which: port}
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("tracejudge")), "serve",
                "--rules", str(root / "examples" / "refund" / "rules.yaml"),
                "--baselines", str(root / "examples" / "refund" / "baselines"),
                *[x for kv in ports.items() for x in kv],
            ],
            capture_output=True, text=True, timeout=PROCESS_S, check=False,
        )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: cannot start: cannot bind {listener} on 127.0.0.1:{port}: Address already in use"
    ]
    assert done.stdout == ""


def test_metrics_are_exported_over_otlp(
    lt: LoopThread, collector_factory: Callable[..., Collector]
) -> None:
    """--metrics-otlp-endpoint sends the collector's metrics with the real OTLP/HTTP metric
    exporter to <endpoint>/v1/metrics."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    names: set[str] = set()

    async def receive(request: web.Request) -> web.Response:
        req = ExportMetricsServiceRequest.FromString(await request.read())
        for rm in req.resource_metrics:
            for sm in rm.scope_metrics:
                names.update(m.name for m in sm.metrics)
        return web.Response(content_type="application/x-protobuf")

    async def start() -> tuple[web.AppRunner, int]:
        app = web.Application()
        app.router.add_post("/v1/metrics", receive)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner, int(runner.addresses[0][1])

    runner, port = lt.run(start())
    try:
        c = collector_factory(
            metrics_otlp_endpoint=f"http://127.0.0.1:{port}", metrics_interval=0.2
        )
        tid, rid = new_ids()
        post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())
        wait_for(
            lambda: {sc.METRIC_TRACEJUDGE_RUNS, sc.METRIC_TRACEJUDGE_COLLECTOR_SPANS} <= names,
            what="metrics export",
        )
        lt.run(c.stop(timeout=2.0))
    finally:
        lt.run(runner.cleanup())
