"""Traces to a file: ``instrument(file=...)`` and ``OTEL_TRACES_EXPORTER=otlp_file`` write
OTLP/JSON lines (the OTLP file exporter), and ``tracejudge eval`` judges them.

End to end in fresh interpreters (the global tracer provider is set once per process): an
instrumented application writes the file with the real SDK and its batching processor, and
the real ``tracejudge eval`` command reads it back.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.guards import PROCESS_S
from tracejudge.instrumentation.file_exporter import OtlpFileSpanExporter, output_path
from tracejudge.model import load_spans, spans_from_sdk

BIN = Path(sys.executable).parent
RULES = """\
version: 1
tools:
  issue_refund: {kind: mutate}
rules:
  - id: refund-issued
    layer: outcome
    check: {type: required_steps, tools: [issue_refund], require_success: true}
"""
APP = """
import sys
import tracejudge

{setup}

@tracejudge.tool(name="issue_refund", effect="write")
def issue_refund(order_id: str) -> dict:
    return {{"refunded": True, "order_id": order_id}}

for case, refund in (("refund-ok", True), ("refund-skipped", False)):
    with tracejudge.agent("refund-agent", case_id=case) as run:
        if refund:
            issue_refund("42")
        run.set_output("Your refund is on its way.")
print("done")
"""


def _app(setup: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the two-run application in a fresh interpreter (exiting flushes the batches)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(APP.format(setup=setup))],
        env={**clean, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )


def _eval(rules: Path, path: Path) -> dict[str, str]:
    done = subprocess.run(
        [str(BIN / "tracejudge"), "eval", "--rules", str(rules), "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # the skipped refund fails
    return {v["case_id"]: v["verdict"] for v in map(json.loads, done.stdout.splitlines())}


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    return path


def test_instrument_file_writes_lines_eval_judges(tmp_path: Path, rules: Path) -> None:
    """``instrument(file=...)``: OTLP/JSON lines, appended (a second run adds to the file),
    and no OTLP exporter (nothing warns that no collector listens)."""
    path = tmp_path / "traces.jsonl"
    setup = f"tracejudge.instrument(file={str(path)!r})"
    first = _app(setup, {}, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""
    lines = path.read_text("utf-8").splitlines()
    assert lines
    assert all(json.loads(line)["resourceSpans"] for line in lines)
    assert _eval(rules, path) == {"refund-ok": "pass", "refund-skipped": "fail"}
    assert _app(setup, {}, tmp_path).returncode == 0
    assert len(path.read_text("utf-8").splitlines()) == 2 * len(lines)
    spans = load_spans(path)
    assert len({s.trace_id for s in spans}) == 4


@pytest.mark.parametrize("prefix", ["", "file://"])
def test_otel_traces_exporter_otlp_file(tmp_path: Path, rules: Path, prefix: str) -> None:
    """``OTEL_TRACES_EXPORTER=otlp_file`` with the file in ``TRACEJUDGE_TRACES_FILE`` (a
    path or a ``file://`` URI, as the declarative configuration's output_stream)."""
    path = tmp_path / "env.jsonl"
    env = {
        "OTEL_TRACES_EXPORTER": "otlp_file",
        "TRACEJUDGE_TRACES_FILE": f"{prefix}{path}",
        "OTEL_SERVICE_NAME": "refund-service",
    }
    done = _app("tracejudge.instrument()", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert _eval(rules, path) == {"refund-ok": "pass", "refund-skipped": "fail"}
    assert {s.resource.get("service.name") for s in load_spans(path)} == {"refund-service"}


def test_otlp_file_without_a_file_writes_stdout(tmp_path: Path) -> None:
    """The specification's default output stream is stdout: the lines follow the app's."""
    done = _app("tracejudge.instrument()", {"OTEL_TRACES_EXPORTER": "otlp_file"}, tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "done"
    assert all("resourceSpans" in json.loads(line) for line in out[1:])
    assert out[1:]


def test_an_unknown_exporter_name_is_said_once(tmp_path: Path) -> None:
    """A name tracejudge does not set up: one warning, and the file exporter still runs."""
    path = tmp_path / "t.jsonl"
    env = {"OTEL_TRACES_EXPORTER": "zipkin,otlp_file", "TRACEJUDGE_TRACES_FILE": str(path)}
    done = _app("tracejudge.instrument()", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "tracejudge: OTEL_TRACES_EXPORTER=zipkin is not an exporter tracejudge sets up "
        "(otlp, otlp_file, otlp_file/development, none); configure the tracer provider yourself"
    ]
    assert path.read_text("utf-8")


def test_file_with_an_application_provider(tmp_path: Path, rules: Path) -> None:
    """``file=`` adds the exporter to the provider the application passes (once, however
    often instrument() is called); an unwritable file is a ValueError before patching."""
    path = tmp_path / "app.jsonl"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        tracejudge.instrument(tracer_provider=provider, file=path)
        tracejudge.instrument(tracer_provider=provider, file=path)
        with tracejudge.agent("refund-agent", case_id="refund-skipped") as run:
            run.set_output("Your refund is on its way.")
        tracejudge.uninstrument()
        assert load_spans(path) == spans_from_sdk(memory.get_finished_spans())
        with pytest.raises(ValueError, match=r"^file: cannot write /proc/version: "):
            tracejudge.instrument(tracer_provider=provider, file="/proc/version")
    finally:
        tracejudge.uninstrument()
        provider.shutdown()


def test_a_failed_write_is_a_warning_not_an_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Telemetry never raises into the application: after shutdown (or a full disk) the
    export fails with one warning."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OtlpFileSpanExporter(tmp_path / "x.jsonl")
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("s"):
        pass
    spans = memory.get_finished_spans()
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert exporter.export(spans) is SpanExportResult.FAILURE
    assert exporter.export(spans) is SpanExportResult.FAILURE
    warnings = [r.getMessage() for r in caplog.records if r.name == "tracejudge"]
    assert warnings == [
        f"tracejudge: cannot write spans to {tmp_path / 'x.jsonl'} (the exporter was shut "
        "down); they are not kept"
    ]
    assert exporter.failed == 2
    assert output_path("stdout") is None
    assert output_path("file:///var/log/t.jsonl") == "/var/log/t.jsonl"


def test_file_goes_to_each_new_provider_where_a_collected_ones_id_is_reused(
    tmp_path: Path,
) -> None:
    """``file=`` remembered its processors by ``(id(provider), path)``: a new provider at a
    collected one's address, writing the same file, got no exporter and its spans were not
    written. Twenty providers made and dropped in turn (CPython reuses the addresses), each
    writing one run to the same file: twenty runs in it."""
    path = tmp_path / "runs.jsonl"
    for i in range(20):
        provider = TracerProvider()
        try:
            tracejudge.instrument(tracer_provider=provider, file=path)
            with tracejudge.agent("refund-agent", case_id=f"case-{i}") as run:
                run.set_output("done")
        finally:
            tracejudge.uninstrument()
            provider.shutdown()
        del provider
        gc.collect()
    cases = [s.attributes.get("tracejudge.case.id") for s in load_spans(path)]
    assert cases == [f"case-{i}" for i in range(20)]
