"""One OTLP codec (issue 20): the same OTLP/JSON bytes through every entry give the same
protobuf, the same records and, for malformed input, the same error at the same path.

The entries: the collector's receivers (``/v1/traces`` hands the body to
``json_to_proto_partial``, ``/v1/logs`` to ``logs_from_json``), ``json_to_proto`` (a whole
request, as the bench's load generator converts one), and ``tracejudge eval``'s file reader
(``read_spans``: one document per file, or JSON lines). Each malformation is applied to the
second span of a request and to the second log record of a logs request with the same
fields; the first is good and must come through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.otlp.json_cases import (
    MALFORMED,
    RECORD_PATH,
    SPAN_PATH,
    TID,
    attr,
    body,
    expected_logs,
    expected_traces,
    logs_doc,
    nested,
    record_doc,
    span_doc,
    traces_doc,
)
from tracejudge.model import OtlpDecodeError, read_spans
from tracejudge.otlp.json_logs import logs_from_json
from tracejudge.otlp.json_traces import json_to_proto, json_to_proto_partial
from tracejudge.otlp.records import spans_from_proto_request

# --- good documents -----------------------------------------------------------------------


def _snake(doc: Any) -> Any:
    """``doc`` with every key in its original proto (snake_case) spelling."""
    if isinstance(doc, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_snake(v) for v in doc]
    return doc


def _with_unknown_fields(doc: Any) -> Any:
    """``doc`` with a field no OTLP message has, in every object (values' objects too)."""
    if isinstance(doc, dict):
        return {**{k: _with_unknown_fields(v) for k, v in doc.items()}, "futureField": [1]}
    if isinstance(doc, list):
        return [_with_unknown_fields(v) for v in doc]
    return doc


SPELLINGS: dict[str, Callable[[Any], Any]] = {
    "camelCase": lambda doc: doc,
    "snake_case": _snake,
    "unknown fields": _with_unknown_fields,
}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_entry_gives_the_same_protobuf_and_records(spelling: str, tmp_path: Path) -> None:
    """A good request, however spelled, is the same protobuf, byte for byte, from the
    collector's receiver and from ``json_to_proto``; ``eval`` reads exactly the records of
    that protobuf, from a document and from JSON lines."""
    data = body(SPELLINGS[spelling](traces_doc(span_doc("second"))))
    want = expected_traces("good", "second").SerializeToString()
    partial = json_to_proto_partial(data)
    assert partial.rejected == []
    assert partial.request.SerializeToString() == want
    assert json_to_proto(data).SerializeToString() == want
    records = spans_from_proto_request(want)
    assert [r.trace_id for r in records] == [TID.lower()] * 2
    assert records[1].attributes["a"] == [1, None]
    assert records[1].attributes["k"] == {"in": None}
    file = tmp_path / "traces.json"
    file.write_bytes(data)
    assert read_spans(file) == (records, [])
    lines = tmp_path / "traces.jsonl"
    lines.write_bytes(data + b"\n" + data + b"\n")
    assert read_spans(lines) == (records * 2, [])


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_logs_receiver_gives_the_same_protobuf(spelling: str) -> None:
    """Log records follow the same rules: the same protobuf, byte for byte."""
    request, rejected = logs_from_json(body(SPELLINGS[spelling](logs_doc(record_doc("second")))))
    assert rejected == []
    assert request.SerializeToString() == expected_logs("good", "second").SerializeToString()


# --- malformed input: one rule, one error, every entry ----------------------------------


def _bad_span(span_field: str, value: Any) -> dict[str, Any]:
    return {**span_doc("bad"), span_field: value}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_span_is_the_same_error_from_every_entry(case: str, tmp_path: Path) -> None:
    """The collector leaves the span out with this reason (partial success, the good span
    kept); a whole-request conversion and ``eval`` refuse with the same text at the same
    path (``eval`` prefixed with its file, and its line for JSON lines)."""
    span_field, _, value, relative = MALFORMED[case]
    data = body(traces_doc(_bad_span(span_field, value)))
    message = f"{SPAN_PATH}.{relative.format(field=span_field)}"
    partial = json_to_proto_partial(data)
    assert partial.rejected == [message]
    assert partial.request.SerializeToString() == expected_traces("good").SerializeToString()
    with pytest.raises(OtlpDecodeError) as whole:
        json_to_proto(data)
    assert str(whole.value) == message
    file = tmp_path / "traces.json"
    file.write_bytes(data)
    with pytest.raises(OtlpDecodeError) as read:
        read_spans(file)
    assert str(read.value) == f"{file}: {message}"
    good = body(traces_doc(span_doc("second")))
    lines = tmp_path / "traces.jsonl"
    lines.write_bytes(good + b"\n" + data + b"\n")
    spans, problems = read_spans(lines)
    assert [s.name for s in spans] == ["good", "second"]
    assert [str(p) for p in problems] == [f"{lines}: line 2: {message}"]


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_log_record_is_the_same_error(case: str) -> None:
    """The logs receiver leaves the record out with the traces' reason, at its path."""
    _, log_field, value, relative = MALFORMED[case]
    request, rejected = logs_from_json(body(logs_doc({**record_doc("bad"), log_field: value})))
    assert rejected == [f"{RECORD_PATH}.{relative.format(field=log_field)}"]
    assert request.SerializeToString() == expected_logs("good").SerializeToString()


STRUCTURE: dict[str, tuple[Any, Any, str]] = {
    "not JSON": (b"{nope", b"{nope", "invalid JSON: "),
    "not an object": (5, 5, "expected an OTLP/JSON object, got int"),
    "resources not an array": (
        {"resourceSpans": {}},
        {"resourceLogs": {}},
        "{top}: expected an array, got dict",
    ),
    "scope not an object": (
        {"resourceSpans": [{"scopeSpans": [{"scope": "s"}]}]},
        {"resourceLogs": [{"scopeLogs": [{"scope": "s"}]}]},
        "{top}[0].{scopes}[0].scope: expected an object, got str",
    ),
    "resource attribute nested too deep": (
        {"resourceSpans": [{"resource": {"attributes": attr(nested(60))}}]},
        {"resourceLogs": [{"resource": {"attributes": attr(nested(60))}}]},
        "{top}[0].resource.attributes[0].value"
        + ".arrayValue.values[0]" * 48
        + ": values nested too deeply (protobuf decoders refuse messages nested deeper "
        "than 100 levels)",
    ),
}


def _error(convert: Callable[[bytes], object], data: bytes) -> str:
    with pytest.raises(OtlpDecodeError) as info:
        convert(data)
    return str(info.value)


@pytest.mark.parametrize("case", STRUCTURE)
def test_a_malformed_request_is_refused_whole_alike(case: str, tmp_path: Path) -> None:
    """A malformed structure (not one span or record) refuses the whole request, in the
    same words for traces and logs, and from ``eval``."""
    traces, logs, template = STRUCTURE[case]
    traces_data = traces if isinstance(traces, bytes) else json.dumps(traces).encode()
    logs_data = logs if isinstance(logs, bytes) else json.dumps(logs).encode()
    message = template.format(top="resourceSpans", scopes="scopeSpans")
    assert _error(json_to_proto_partial, traces_data).startswith(message)
    assert _error(json_to_proto, traces_data).startswith(message)
    logs_message = template.format(top="resourceLogs", scopes="scopeLogs")
    assert _error(logs_from_json, logs_data).startswith(logs_message)
    if case == "not JSON":
        return  # eval says where the text breaks (line and column): tests/model/test_model_files
    file = tmp_path / "traces.json"
    file.write_bytes(traces_data)
    assert _error(read_spans, file) == f"{file}: {message}"  # type: ignore[arg-type]
