"""OTLP logs on the wire: parse, split by trace, partial-success answers.

Log records join the trace they belong to (``LogRecord.trace_id``), so the receiver splits
a request the way ``otlp.split_by_trace`` splits spans: one serialized ``ResourceLogs`` per
trace (held with the trace in the assembler), and the records with no trace id apart
(forwarded as they are). ``ExportLogsServiceRequest`` has one repeated field, like the
trace request, so framed fragments concatenate into one valid request for a forward.

A record is refused (partial success, ``rejected_log_records``) only when its ids are
malformed: a trace id that is neither absent nor 16 bytes, a span id neither absent nor
8 bytes. An absent or all-zero trace id is legal OTLP (a log line outside any trace).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from tracejudge.collector.codec.otlp import frame

__all__ = [
    "LogFragment",
    "LogSplit",
    "logs_response_bytes",
    "parse_logs_request",
    "record_count",
    "split_logs",
]

_REASONS = 3
"""Rejection reasons quoted in a partial-success message (the rest are counted)."""


@dataclass(slots=True)
class LogFragment:
    """The log records of one trace from one ``ResourceLogs`` of one request."""

    trace_id: bytes
    data: bytes
    """A serialized ``ResourceLogs`` (unframed)."""
    records: int


@dataclass(slots=True)
class LogSplit:
    """A logs request split per trace, the records outside any trace, and the refused."""

    fragments: list[LogFragment] = field(default_factory=list)
    orphans: bytes = b""
    """Framed ``ResourceLogs`` of the records with no trace id (a request body as is)."""
    orphan_records: int = 0
    accepted: int = 0
    rejected: int = 0
    error_message: str = ""


def parse_logs_request(data: bytes) -> ExportLogsServiceRequest:
    """Parse protobuf bytes; raises ``ValueError`` with a readable reason when undecodable."""
    try:
        return ExportLogsServiceRequest.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"undecodable ExportLogsServiceRequest: {exc}") from exc


def record_count(rl: ResourceLogs) -> int:
    """Log records in one ``ResourceLogs``."""
    return sum(len(sl.log_records) for sl in rl.scope_logs)


def _bad_ids(record: LogRecord) -> str:
    tid, sid = record.trace_id, record.span_id
    if len(tid) not in (0, 16):
        return f"invalid trace_id {tid.hex()!r} (must be 16 bytes or absent)"
    if len(sid) not in (0, 8):
        return f"invalid span_id {sid.hex()!r} (must be 8 bytes or absent)"
    return ""


def split_logs(request: ExportLogsServiceRequest, decode_rejects: Sequence[str] = ()) -> LogSplit:
    """Group valid records by trace id; records with malformed ids are rejected.

    ``decode_rejects`` are records the OTLP/JSON converter already left out (counted as
    rejected, their reasons first). Each output ``ResourceLogs`` keeps its resource,
    scopes and schema URLs, so what is forwarded says what the sender said.
    """
    out = LogSplit(rejected=len(decode_rejects))
    reasons: list[str] = list(decode_rejects[:_REASONS])
    orphans: list[bytes] = []
    for rl in request.resource_logs:
        per_trace: dict[bytes, ResourceLogs] = {}
        lone: ResourceLogs | None = None
        for sl in rl.scope_logs:
            scopes: dict[bytes, ScopeLogs] = {}
            for record in sl.log_records:
                why = _bad_ids(record)
                if why:
                    out.rejected += 1
                    if len(reasons) < _REASONS:
                        reasons.append(f"log record: {why}")
                    continue
                tid = record.trace_id
                key = b"" if tid == bytes(16) else tid  # all-zero: no trace, as absent
                found = lone if not key else per_trace.get(key)
                if found is None:
                    found = ResourceLogs(resource=rl.resource, schema_url=rl.schema_url)
                    if key:
                        per_trace[key] = found
                    else:
                        lone = found
                target = found
                scope = scopes.get(key)
                if scope is None:
                    scope = target.scope_logs.add(scope=sl.scope, schema_url=sl.schema_url)
                    scopes[key] = scope
                scope.log_records.append(record)
        for tid, part in per_trace.items():
            n = record_count(part)
            out.fragments.append(LogFragment(tid, part.SerializeToString(), n))
            out.accepted += n
        if lone is not None:
            n = record_count(lone)
            orphans.append(frame(lone.SerializeToString()))
            out.orphan_records += n
            out.accepted += n
    out.orphans = b"".join(orphans)
    if out.rejected:
        more = "" if out.rejected <= len(reasons) else f" (and {out.rejected - len(reasons)} more)"
        out.error_message = "; ".join(reasons) + more
    return out


def logs_response_bytes(rejected: int = 0, message: str = "") -> bytes:
    """A serialized ``ExportLogsServiceResponse`` (partial success when rejecting)."""
    if not rejected and not message:
        return ExportLogsServiceResponse().SerializeToString()
    ps = ExportLogsPartialSuccess(rejected_log_records=rejected, error_message=message)
    return ExportLogsServiceResponse(partial_success=ps).SerializeToString()


def logs_response_json(raw: bytes) -> dict[str, Any]:
    """The OTLP/JSON form of a serialized response."""
    out: dict[str, Any] = json_format.MessageToDict(ExportLogsServiceResponse.FromString(raw))
    return out
