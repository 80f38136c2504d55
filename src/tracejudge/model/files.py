"""Load trace files for the offline tools: OTLP/JSON, OTLP protobuf, JSON lines, gzipped.

``tracejudge eval`` reads whatever people have lying around: an OTLP/JSON export, the
OpenTelemetry Collector file exporter's output (one request per line, often named
``.json``; in its proto format, requests framed by a 4-byte big-endian size), a binary
``.pb`` dump, chat transcripts and benchmark results (tau-bench records,
``model.transcripts``; tau2-bench results files, ``model.tau2``), any of them gzipped.
Gzip is detected by its magic bytes (so a ``.json`` that is really gzipped still loads);
JSON vs protobuf by the extension, falling back to sniffing the first byte when the
extension says nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.spans import SpanRecord
from tracejudge.model.tau2 import is_tau2_results, spans_from_tau2
from tracejudge.model.transcripts import is_transcript, spans_from_transcript_doc
from tracejudge.otlp.records import spans_from_json, spans_from_proto_request

__all__ = ["group_by_trace", "load_spans", "load_traces", "read_spans"]

_GZIP_MAGIC = b"\x1f\x8b"
_PROTO_SUFFIXES = {".pb", ".binpb", ".protobuf", ".otlp"}
_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}


def group_by_trace(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """Group spans by trace id, keeping first-seen trace order and span order within a trace."""
    out: dict[str, list[SpanRecord]] = {}
    for span in spans:
        bucket = out.get(span.trace_id)
        if bucket is None:
            out[span.trace_id] = [span]
        else:
            bucket.append(span)
    return out


def _format_of(path: Path, data: bytes) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    last = suffixes[-1] if suffixes else ""
    if last in _PROTO_SUFFIXES:
        return "proto"
    if last in _JSON_SUFFIXES:
        return "json"
    # No telling extension: OTLP/JSON starts with '{' (after whitespace); protobuf with a
    # field tag (0x0a for resource_spans).
    head = data.lstrip()[:1]
    return "json" if head in (b"{", b"[") else "proto"


def _length_prefixed(data: bytes) -> list[bytes] | None:
    """Split the Collector file exporter's protobuf framing (each request preceded by its
    size as a 4-byte big-endian integer); None when the bytes are not framed that way.

    A plain serialized request cannot be mistaken for it: its first byte is a field tag
    (0x0a), which would announce a frame of at least 160 MiB.
    """
    frames: list[bytes] = []
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            return None
        size = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        if pos + size > len(data):
            return None
        frames.append(data[pos : pos + size])
        pos += size
    return frames or None


def _decode_doc(doc: object, where: str = "") -> list[SpanRecord]:
    """One parsed JSON document: chat transcripts and tau-bench records become the spans an
    instrumented agent would have emitted (``model.transcripts``, ``model.tau2``); anything
    else is OTLP."""
    if is_tau2_results(doc):
        read = spans_from_tau2(doc)
        if read.problems:
            raise read.problems[0]
        return read.spans
    if is_transcript(doc):
        return spans_from_transcript_doc(doc, where)
    return spans_from_json(doc)


def _json_problem(exc: json.JSONDecodeError, text: str, *, one_line: bool = False) -> str:
    """What is wrong with ``text`` (a document, or one JSON line), said where it is.

    A truncated document (an export cut short, a copy interrupted) fails where the text
    ends, or inside a string that never closes: that is reported as the end of the text,
    not as the position of the first unfinished value (which is often line 1 column 2).
    """
    end = len(text.rstrip())
    truncated = exc.pos >= end or exc.msg.startswith("Unterminated string")
    pos = end if truncated else exc.pos
    newline = "\n"
    col = pos - text.rfind(newline, 0, pos)
    where = f"column {col}"
    if not one_line:
        where = f"line {text.count(newline, 0, pos) + 1} {where}"
    if truncated:
        what = "the line" if one_line else "the JSON document"
        return f"{what} ends early at {where}, inside an unfinished value (truncated?)"
    return f"invalid JSON at {where}: {exc.msg}"


def _json_object_line(line: str) -> bool:
    """Whether one line holds a whole JSON object by itself."""
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def _is_json_lines(lines: list[tuple[int, str]]) -> bool:
    """JSON lines rather than one (broken) document: the first line is a whole object, or
    at least half of them are. A pretty-printed document's lines are not (``{`` alone)."""
    if len(lines) < 2:
        return False
    if _json_object_line(lines[0][1]):
        return True
    return 2 * sum(_json_object_line(line) for _, line in lines) >= len(lines)


def _decode_json_lines(
    lines: list[tuple[int, str]], problems: list[OtlpDecodeError]
) -> list[SpanRecord]:
    """One request (or transcript) per line; a bad line is a problem, the rest are read."""
    out: list[SpanRecord] = []
    for number, line in lines:
        try:
            out.extend(_decode_doc(json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(
                OtlpDecodeError(f"line {number}", _json_problem(exc, line, one_line=True))
            )
        except OtlpDecodeError as exc:
            path = f"line {number}: {exc.path}" if exc.path else f"line {number}"
            problems.append(OtlpDecodeError(path, exc.reason))
    return out


def _decode_tau2(
    doc: Mapping[str, Any], problems: list[OtlpDecodeError], summaries: list[str]
) -> list[SpanRecord]:
    """A tau2-bench results file: a bad simulation is a problem, the rest are read."""
    read = spans_from_tau2(doc)
    problems.extend(read.problems)
    summaries.append(read.summary())
    return read.spans


def _decode_json_text(
    text: str, problems: list[OtlpDecodeError], summaries: list[str]
) -> list[SpanRecord]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as whole_error:
        # Not one document: JSON lines (one request per line), as the Collector writes.
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if not _is_json_lines(lines):
            raise OtlpDecodeError("", _json_problem(whole_error, text)) from None
        return _decode_json_lines(lines, problems)
    if is_tau2_results(doc):
        return _decode_tau2(doc, problems, summaries)
    if is_transcript(doc):
        return spans_from_transcript_doc(doc)
    if isinstance(doc, list):  # a JSON array of requests
        out = []
        for i, item in enumerate(doc):
            try:
                out.extend(spans_from_json(item))
            except OtlpDecodeError as exc:
                raise OtlpDecodeError(f"[{i}].{exc.path}".rstrip("."), exc.reason) from None
        return out
    return spans_from_json(doc)


def _decode_frames(frames: list[bytes], problems: list[OtlpDecodeError]) -> list[SpanRecord]:
    """The Collector's framed protobuf: a bad message is a problem, the rest are read."""
    out: list[SpanRecord] = []
    for number, frame in enumerate(frames, 1):
        try:
            out.extend(spans_from_proto_request(frame))
        except OtlpDecodeError as exc:
            path = f"message {number}: {exc.path}" if exc.path else f"message {number}"
            problems.append(OtlpDecodeError(path, exc.reason))
    return out


def _decode_file(
    file: Path, data: bytes, problems: list[OtlpDecodeError], summaries: list[str]
) -> list[SpanRecord]:
    if not data.strip():
        raise OtlpDecodeError("", "empty file")
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise OtlpDecodeError("", f"corrupt gzip data: {exc}") from None
    if _format_of(file, data) == "proto":
        frames = _length_prefixed(data)
        if frames is None:
            return spans_from_proto_request(data)
        return _decode_frames(frames, problems)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OtlpDecodeError("", f"not UTF-8 JSON: {exc}") from None
    return _decode_json_text(text, problems, summaries)


def _in_file(file: Path, exc: OtlpDecodeError) -> OtlpDecodeError:
    return OtlpDecodeError(f"{file}: {exc.path}" if exc.path else str(file), exc.reason)


def read_spans(
    path: str | Path, summaries: list[str] | None = None
) -> tuple[list[SpanRecord], list[OtlpDecodeError]]:
    """Every span of one trace file that can be read, and one error per line (JSON lines),
    message (framed protobuf) or simulation (tau2-bench results) that cannot: one bad part
    never hides the good ones. ``summaries`` receives one line per benchmark results file
    counting what was read and what was not (prefixed with the file name).

    A file that cannot be read at all (not JSON, not protobuf, corrupt gzip, a broken
    single document) raises ``OtlpDecodeError``; an unreadable one ``OSError``. Every
    error's path starts with the file name.
    """
    file = Path(path)
    data = file.read_bytes()
    problems: list[OtlpDecodeError] = []
    counts: list[str] = []
    try:
        spans = _decode_file(file, data, problems, counts)
    except OtlpDecodeError as exc:
        raise _in_file(file, exc) from None
    if summaries is not None:
        summaries.extend(f"{file}: {line}" for line in counts)
    return spans, [_in_file(file, p) for p in problems]


def load_spans(path: str | Path) -> list[SpanRecord]:
    """Read every span in one trace file. Raises ``OtlpDecodeError`` (path prefixed with
    the file name) for a malformed file, or for its first bad line, and ``OSError`` for an
    unreadable one; ``read_spans`` keeps the good lines of a file with bad ones."""
    spans, problems = read_spans(path)
    if problems:
        raise problems[0]
    return spans


def load_traces(paths: str | Path | Sequence[str | Path]) -> dict[str, list[SpanRecord]]:
    """Read one or more trace files and group their spans by trace id.

    A trace split across files (or across lines of one file) is merged; the run builder
    drops duplicate span ids with a note.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    spans: list[SpanRecord] = []
    for path in paths:
        spans.extend(load_spans(path))
    return group_by_trace(spans)
