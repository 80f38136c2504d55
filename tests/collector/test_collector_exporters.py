"""The exporter registry (issue 20): every target ``serve`` exports to is built by a
factory registered by kind, so adding an exporter is one module plus one registry line.

Real parts throughout: real OTLP requests, real files, the real ``Collector``; the judge
is the suite's stand-in (``StandInJudge``), the rules' semantics are not what is tested. The ``spool``
kind below is a real exporter defined here to show what adding one takes (its factory,
then ``with_factory``), not a stand-in for one.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

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
from tracejudge import semconv as sc
from tracejudge.collector import Collector, CollectorConfig
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.component import ComponentStopped
from tracejudge.collector.config import ConfigError
from tracejudge.collector.exporters.exporter import Exporter, QueuedExporter
from tracejudge.collector.exporters.file_target import FileExporterFactory, FileTarget
from tracejudge.collector.exporters.forward import (
    GrpcTarget,
    HttpTarget,
    OtlpGrpcFactory,
    OtlpHttpFactory,
)
from tracejudge.collector.exporters.registry import EXPORTERS, ExporterRegistry
from tracejudge.collector.exporters.targets import target_specs
from tracejudge.model.files import load_traces


def _request() -> tuple[str, bytes]:
    trace_id, root = new_ids()
    spans = [make_span(trace_id, root, name="agent"), make_span(trace_id, parent=root)]
    return trace_id.hex(), make_request(spans).SerializeToString()


def test_the_default_kinds_and_the_schemes_they_serve() -> None:
    assert EXPORTERS.kinds() == ["otlp_http", "otlp_grpc", "file"]
    cfg = CollectorConfig()
    for url, kind, cls in [
        ("http://127.0.0.1:4318", "otlp_http", HttpTarget),
        ("https://otlp.example", "otlp_http", HttpTarget),
        ("grpc://127.0.0.1:4317", "otlp_grpc", GrpcTarget),
        ("grpcs://otlp.example:443", "otlp_grpc", GrpcTarget),
    ]:
        assert EXPORTERS.for_url(url).kind == kind
        assert isinstance(EXPORTERS.build(url, cfg), cls)
    with pytest.raises(ValueError, match=r"no exporter for 'ftp' URLs \(known: http, https"):
        EXPORTERS.for_url("ftp://x:21")
    with pytest.raises(ValueError, match=r"no exporter kind 'kafka' \(known: otlp_http"):
        EXPORTERS.get("kafka")


def test_each_kind_has_a_default_config_the_collector_fills_in(tmp_path: Path) -> None:
    """``default_config()`` is the kind's own frozen config; ``config_for`` fills it from
    the collector's settings (the OpenTelemetry Collector's factory shape)."""
    http = OtlpHttpFactory()
    assert dataclasses.asdict(http.default_config()) == {
        "url": "",
        "timeout": 10.0,
        "options": None,
    }
    cfg = CollectorConfig(forward_timeout=3.0, file_mode=0o640)
    filled = OtlpGrpcFactory().config_for("grpc://127.0.0.1:4317", cfg)
    assert (filled.url, filled.timeout) == ("grpc://127.0.0.1:4317", 3.0)
    out = tmp_path / "out.jsonl"
    file_cfg = FileExporterFactory().config_for(f"file:{out}", cfg)
    assert file_cfg == replace(FileExporterFactory().default_config(), path=out, file_mode=0o640)
    with pytest.raises(dataclasses.FrozenInstanceError):
        file_cfg.path = None  # type: ignore[misc]


CONTRACT_URLS = {
    "otlp_http": "http://127.0.0.1:9",
    "otlp_grpc": "grpc://127.0.0.1:9",
    "file": "file:{tmp}/out.jsonl",
}
"""A target URL of each registered kind (a kind registered without one here fails below)."""


@pytest.mark.parametrize("kind", EXPORTERS.kinds())
def test_every_registered_exporter_obeys_the_contract(kind: str, tmp_path: Path) -> None:
    """For each kind: ``start`` and ``shutdown`` idempotent, and a batch after ``shutdown``
    refused, naming the exporter, instead of reopening what ``shutdown`` closed (the
    ``file`` kind: no line written, the file not reopened)."""
    url = CONTRACT_URLS[kind].format(tmp=tmp_path)
    exporter = EXPORTERS.build(url, CollectorConfig())
    _, payload = _request()

    async def go() -> None:
        await exporter.start()
        await exporter.start()
        await exporter.shutdown()
        await exporter.shutdown()
        with pytest.raises(ComponentStopped, match=r"exporter '.+' is shut down: batch refused"):
            await exporter.consume(payload)

    asyncio.run(go())
    if kind == "file":
        assert (tmp_path / "out.jsonl").read_text() == ""


def test_the_file_kind_writes_what_eval_reads_back(tmp_path: Path) -> None:
    """Built through the registry and consumed through the queue's wrapper, the ``file``
    kind appends OTLP/JSON that ``tracejudge eval``'s loader reads as the same trace."""
    out = tmp_path / "out.jsonl"
    exporter = EXPORTERS.build(f"file:{out}", CollectorConfig())
    assert isinstance(exporter, FileTarget)
    trace_id, payload = _request()

    async def go() -> None:
        await exporter.start()
        await QueuedExporter(exporter).send(payload)
        await QueuedExporter(exporter).close()

    asyncio.run(go())
    traces = load_traces(out)
    assert list(traces) == [trace_id]
    assert sorted(s.name for s in traces[trace_id]) == ["agent", "step"]
    assert (out.stat().st_mode & 0o777) == 0o600


@dataclass(frozen=True)
class SpoolConfig:
    directory: Path | None = None


class Spool:
    """Each batch as its own protobuf file in a directory: a whole exporter."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.url = f"spool:{directory}"
        self.count = 0

    async def start(self) -> None:
        self.directory.mkdir(exist_ok=True)

    async def consume(self, payload: bytes) -> None:
        self.count += 1
        (self.directory / f"{self.count:06d}.pb").write_bytes(payload)

    async def shutdown(self) -> None:
        pass


class SpoolFactory:
    kind = "spool"
    schemes = ("spool",)
    url_forms = ("spool:DIR",)

    def check_url(self, url: str) -> None:
        if url == "spool:":
            raise ValueError("needs a directory: spool:DIR")

    def default_config(self) -> SpoolConfig:
        return SpoolConfig()

    def config_for(self, url: str, config: CollectorConfig) -> SpoolConfig:
        return replace(self.default_config(), directory=Path(url.removeprefix("spool:")))

    def create(self, config: SpoolConfig) -> Exporter:
        assert config.directory is not None
        return Spool(config.directory)


class FileSpoolFactory(SpoolFactory):
    kind = "file_spool"
    schemes = ("file",)


def test_adding_a_kind_is_its_factory_and_one_registry_line(tmp_path: Path) -> None:
    registry = EXPORTERS.with_factory(SpoolFactory())
    assert registry.kinds() == ["otlp_http", "otlp_grpc", "file", "spool"]
    exporter = registry.build(f"spool:{tmp_path / 'spool'}", CollectorConfig())
    trace_id, payload = _request()

    async def go() -> None:
        await exporter.start()
        await QueuedExporter(exporter).send(payload)

    asyncio.run(go())
    (written,) = (tmp_path / "spool").iterdir()
    request = ExportTraceServiceRequest.FromString(written.read_bytes())
    assert request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() == trace_id
    with pytest.raises(ValueError, match="served by two exporter kinds"):
        registry.with_factory(FileSpoolFactory())
    with pytest.raises(ValueError, match="kinds registered twice"):
        ExporterRegistry((SpoolFactory(), SpoolFactory()))


def test_the_collector_builds_its_targets_from_its_registry(tmp_path: Path) -> None:
    """``--output`` works because the ``file`` kind is registered: a collector given a
    registry without it refuses to start, naming the schemes it has."""
    cfg = CollectorConfig(grpc_port=0, http_port=0, output=tmp_path / "out.jsonl").validate()
    otlp_only = ExporterRegistry((OtlpHttpFactory(), OtlpGrpcFactory()))
    collector = Collector(cfg, StandInJudge(), exporters=otlp_only)
    with pytest.raises(ValueError, match=r"no exporter for 'file' URLs \(known: http, https"):
        asyncio.run(collector.start())


def test_a_registered_kind_receives_judged_traces_end_to_end(
    lt: LoopThread, tmp_path: Path
) -> None:
    """The whole path with the added kind: OTLP/HTTP in, judged on the manual clock, the
    stamped request out through the forward queue into the ``spool`` exporter. The config
    is validated against the same registry, whose kinds check their own URLs; ``serve``'s
    registry refuses the scheme it does not know, naming the ones it does."""
    spool = tmp_path / "spool"
    registry = EXPORTERS.with_factory(SpoolFactory())
    with pytest.raises(ConfigError, match=r"no exporter for 'spool' URLs \(known: http"):
        CollectorConfig(forward=[f"spool:{spool}"]).validate()
    with pytest.raises(ConfigError, match=r"forward\[0\]: 'spool:': needs a directory"):
        CollectorConfig(forward=["spool:"]).validate(registry)
    cfg = CollectorConfig(
        forward=[f"spool:{spool}"],
        grpc_port=0,
        http_port=0,
        decision_wait_after_root=0.02,
        decision_wait=1.0,
        shutdown_timeout=3.0,
    ).validate(registry)
    clock = ManualClock()
    c = Collector(cfg, StandInJudge(), clock, exporters=registry)
    lt.run(c.start())
    try:
        trace_id, payload = _request()
        assert post(c.http_port, payload)[0] == 200
        advance(c, clock, 0.05)
        wait_for(lambda: any(spool.glob("*.pb")), what="the spool exporter's first batch")
    finally:
        lt.run(c.stop())
    spans = [
        span
        for path in sorted(spool.glob("*.pb"))
        for rs in ExportTraceServiceRequest.FromString(path.read_bytes()).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    assert {s.trace_id.hex() for s in spans} == {trace_id}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert attrs(root)[sc.TRACEJUDGE_VERDICT] == "pass"


def test_forward_takes_every_registered_scheme_a_file_included(
    lt: LoopThread, tmp_path: Path
) -> None:
    """``--forward file:PATH`` is the ``file`` kind like ``--output``: validated by the
    kind, named ``file`` when unnamed, and fed the judged traces."""
    out = tmp_path / "judged.jsonl"
    cfg = CollectorConfig(
        forward=[f"file:{out}"],
        grpc_port=0,
        http_port=0,
        decision_wait_after_root=0.02,
        decision_wait=1.0,
        shutdown_timeout=3.0,
    ).validate()
    assert [(s.name, s.url) for s in target_specs(cfg.forward)] == [("file", f"file:{out}")]
    clock = ManualClock()
    c = Collector(cfg, StandInJudge(), clock)
    lt.run(c.start())
    try:
        trace_id, payload = _request()
        assert post(c.http_port, payload)[0] == 200
        advance(c, clock, 0.05)
        wait_for(lambda: out.exists() and out.stat().st_size > 0, what="the file's first batch")
    finally:
        lt.run(c.stop())
    traces = load_traces(out)
    assert list(traces) == [trace_id]
    (root,) = [s for s in traces[trace_id] if s.parent_span_id is None]
    assert root.attributes[sc.TRACEJUDGE_VERDICT] == "pass"
