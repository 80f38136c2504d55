"""Reproducible OTLP/JSON: seeded ids, rank-normalised times, the OTLP/JSON id encoding."""

from __future__ import annotations

import time
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge.demo.recording import EPOCH_NS, STEP_NS, SeededIdGenerator, write_otlp_json
from tracejudge.model.files import load_spans


def _record(seed: str) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=SeededIdGenerator(seed))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("parent") as parent:
        parent.add_event("started")
        time.sleep(0.002)
        with tracer.start_as_current_span("child"):
            time.sleep(0.002)
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_same_seed_same_file_different_seed_different_ids(tmp_path: Path) -> None:
    """Two recordings of the same run must be byte-identical; another seed must not collide."""
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    write_otlp_json(a, _record("run-1"), normalize_times=True)
    write_otlp_json(b, _record("run-1"), normalize_times=True)
    write_otlp_json(c, _record("run-2"), normalize_times=True)
    assert a.read_bytes() == b.read_bytes()
    ids_a = {s.span_id for s in load_spans(a)}
    ids_c = {s.span_id for s in load_spans(c)}
    assert not ids_a & ids_c


def test_normalised_times_keep_order_and_nesting(tmp_path: Path) -> None:
    """Rules read order and containment from times; normalising must keep both."""
    path = tmp_path / "t.json"
    write_otlp_json(path, _record("nesting"), normalize_times=True)
    spans = {s.name: s for s in load_spans(path)}
    parent, child = spans["parent"], spans["child"]
    assert child.parent_span_id == parent.span_id
    assert parent.start_ns == EPOCH_NS
    assert parent.start_ns < parent.events[0].time_ns < child.start_ns
    assert child.start_ns < child.end_ns < parent.end_ns
    assert all((t - EPOCH_NS) % STEP_NS == 0 for t in (child.start_ns, parent.end_ns))


def test_ids_are_written_as_otlp_json_hex(tmp_path: Path) -> None:
    """OTLP/JSON carries ids as hex strings, not protobuf-JSON base64."""
    path = tmp_path / "t.json"
    spans = _record("hex")
    write_otlp_json(path, spans)
    text = path.read_text()
    for span in spans:
        assert span.context is not None
        assert f'"spanId": "{span.context.span_id:016x}"' in text
        assert f'"traceId": "{span.context.trace_id:032x}"' in text
