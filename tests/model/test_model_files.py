"""Trace files: every shape people export traces in loads to the same spans."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.model.model_helpers import recorder
from tracejudge.model import (
    OtlpDecodeError,
    load_spans,
    load_traces,
    read_spans,
    spans_from_proto_request,
)
from tracejudge.otlp.json_encode import request_to_otlp_json


def _two_traces() -> tuple[ExportTraceServiceRequest, ExportTraceServiceRequest]:
    with recorder() as rec:
        with rec.tracer.start_as_current_span("a"), rec.tracer.start_as_current_span("a.child"):
            pass
        first = rec.request()
        rec.exporter.clear()
        with rec.tracer.start_as_current_span("b"):
            pass
        second = rec.request()
    return first, second


@pytest.mark.parametrize(
    ("name", "kind", "gz"),
    [
        ("t.json", "json", False),
        ("t.json.gz", "json", True),
        ("t.pb", "proto", False),
        ("t.pb.gz", "proto", True),
        ("gzipped-but-named.json", "json", True),
        ("no-extension", "proto", False),
        ("no-extension-json", "json", False),
    ],
)
def test_single_request_files(tmp_path: Path, name: str, kind: str, gz: bool) -> None:
    """JSON and protobuf, plain or gzipped (detected by magic bytes, not only by name)."""
    first, _ = _two_traces()
    data = (
        json.dumps(request_to_otlp_json(first)).encode()
        if kind == "json"
        else first.SerializeToString()
    )
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    assert load_spans(path) == spans_from_proto_request(first)


def test_json_lines_group_by_trace(tmp_path: Path) -> None:
    """The Collector file exporter writes one request per line (often named .json);
    spans come back grouped by trace id in first-seen order."""
    first, second = _two_traces()
    lines = [json.dumps(request_to_otlp_json(r)) for r in (first, second)]
    path = tmp_path / "export.json"
    path.write_text("\n".join(lines) + "\n\n")
    traces = load_traces(path)
    expected_first = spans_from_proto_request(first)
    expected_second = spans_from_proto_request(second)
    assert list(traces) == [expected_first[0].trace_id, expected_second[0].trace_id]
    assert traces[expected_first[0].trace_id] == expected_first
    assert len(traces[expected_second[0].trace_id]) == 1


def test_collector_file_exporter_proto_framing(tmp_path: Path) -> None:
    """The Collector file exporter's proto format frames each request with its 4-byte
    big-endian size; every frame is read."""
    first, second = _two_traces()
    blob = b"".join(
        len(m).to_bytes(4, "big") + m for m in (r.SerializeToString() for r in (first, second))
    )
    path = tmp_path / "traces.pb"
    path.write_bytes(blob)
    expected = spans_from_proto_request(first) + spans_from_proto_request(second)
    assert load_spans(path) == expected


def test_bad_files_name_the_file_and_line(tmp_path: Path) -> None:
    """A broken line, corrupt gzip or bad protobuf raises OtlpDecodeError naming where."""
    first, _ = _two_traces()
    good = json.dumps(request_to_otlp_json(first))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good + "\n" + '{"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}\n')
    with pytest.raises(OtlpDecodeError) as info:
        load_spans(bad)
    assert str(info.value) == (
        f"{bad}: line 2: resourceSpans[0].scopeSpans[0].spans[0].traceId: missing"
    )
    corrupt = tmp_path / "c.json.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    with pytest.raises(OtlpDecodeError, match="corrupt gzip"):
        load_spans(corrupt)
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    with pytest.raises(OtlpDecodeError, match="empty file"):
        load_spans(empty)
    junk = tmp_path / "j.pb"
    junk.write_bytes(b"\x0a\xff\xff\xff\xff")
    with pytest.raises(OtlpDecodeError, match="invalid protobuf"):
        load_spans(junk)


def test_a_bad_line_is_reported_and_the_good_lines_read(tmp_path: Path) -> None:
    """JSON lines: each bad line is one error naming its line, and every good line is read
    (one bad line used to reject the whole file)."""
    first, second = _two_traces()
    good_a, good_b = (json.dumps(request_to_otlp_json(r)) for r in (first, second))
    cut = good_b[: len(good_b) // 2].rstrip()
    path = tmp_path / "export.jsonl"
    path.write_text(
        "\n".join(
            [
                good_a,
                '{"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}',
                "",
                '{"resourceSpans": [], oops}',
                good_b,
                cut,  # the last line cut short, as a crash leaves it
            ]
        )
        + "\n"
    )
    spans, problems = read_spans(path)
    assert spans == spans_from_proto_request(first) + spans_from_proto_request(second)
    assert [str(p) for p in problems] == [
        f"{path}: line 2: resourceSpans[0].scopeSpans[0].spans[0].traceId: missing",
        f"{path}: line 4: invalid JSON at column 23: "
        "Expecting property name enclosed in double quotes",
        f"{path}: line 6: the line ends early at column {len(cut) + 1}, inside an "
        "unfinished value (truncated?)",
    ]
    with pytest.raises(OtlpDecodeError) as info:
        load_spans(path)  # the strict reader: the first problem
    assert info.value.path == f"{path}: line 2: resourceSpans[0].scopeSpans[0].spans[0].traceId"


def test_a_truncated_document_is_reported_where_it_ends(tmp_path: Path) -> None:
    """A pretty-printed export cut short is one broken document, reported at its end (it
    used to be taken for JSON lines and reported at "line 1 column 2")."""
    first, _ = _two_traces()
    text = json.dumps(request_to_otlp_json(first), indent=1)
    cut = text[: len(text) * 2 // 3].rstrip()
    path = tmp_path / "export.json"
    path.write_text(cut + "\n")
    lines = cut.splitlines()
    with pytest.raises(OtlpDecodeError) as info:
        read_spans(path)
    assert str(info.value) == (
        f"{path}: the JSON document ends early at line {len(lines)} column "
        f"{len(lines[-1]) + 1}, inside an unfinished value (truncated?)"
    )
    one_line = tmp_path / "one.json"
    one_line.write_text(json.dumps(request_to_otlp_json(first))[:50])
    with pytest.raises(OtlpDecodeError, match=r"ends early at line 1 column 51"):
        read_spans(one_line)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "resourceSpans": [\n    1 2\n  ]\n}\n')
    with pytest.raises(OtlpDecodeError) as info:
        read_spans(broken)
    assert info.value.reason == "invalid JSON at line 3 column 7: Expecting ',' delimiter"


def test_a_bad_protobuf_message_is_reported_and_the_others_read(tmp_path: Path) -> None:
    """The Collector's framed protobuf: a bad message is one error, the others are read."""
    first, second = _two_traces()
    messages = [first.SerializeToString(), b"\x0a\xff\xff\xff\xff", second.SerializeToString()]
    path = tmp_path / "traces.pb"
    path.write_bytes(b"".join(len(m).to_bytes(4, "big") + m for m in messages))
    spans, problems = read_spans(path)
    assert spans == spans_from_proto_request(first) + spans_from_proto_request(second)
    assert len(problems) == 1
    assert problems[0].path == f"{path}: message 2"
    assert problems[0].reason.startswith("invalid protobuf")
