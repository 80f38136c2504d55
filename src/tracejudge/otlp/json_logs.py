"""OTLP/JSON logs -> ``ExportLogsServiceRequest``, with partial-success rejects."""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

__all__ = ["logs_from_json"]


def _hex_to_b64(value: Any, size: int, path: str) -> str:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping wants base64."""
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected a hex string, got {type(value).__name__}")
    if value == "":
        return ""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{path}: {value!r} is not hex") from None
    if len(raw) != size:
        raise ValueError(f"{path}: {value!r} is not {size} bytes")
    return base64.b64encode(raw).decode()


def logs_from_json(doc: Any) -> tuple[ExportLogsServiceRequest, list[str]]:
    """Convert a parsed OTLP/JSON logs request; a record whose ids or fields cannot be
    converted is left out with its reason (partial success), a malformed structure raises
    ``ValueError``."""
    if not isinstance(doc, dict):
        raise ValueError(f"expected an ExportLogsServiceRequest object, got {type(doc).__name__}")
    rejects: list[str] = []
    request = ExportLogsServiceRequest()
    resource_logs = doc.get("resourceLogs", doc.get("resource_logs", []))
    if not isinstance(resource_logs, list):
        raise ValueError("resourceLogs: expected an array")
    for ri, rl in enumerate(resource_logs):
        if not isinstance(rl, dict):
            raise ValueError(f"resourceLogs[{ri}]: expected an object")
        scopes = rl.get("scopeLogs", rl.get("scope_logs", []))
        if not isinstance(scopes, list):
            raise ValueError(f"resourceLogs[{ri}].scopeLogs: expected an array")
        shell = {k: v for k, v in rl.items() if k not in ("scopeLogs", "scope_logs")}
        out_rl = request.resource_logs.add()
        _parse_into(shell, out_rl, f"resourceLogs[{ri}]")
        for si, sl in enumerate(scopes):
            if not isinstance(sl, dict):
                raise ValueError(f"resourceLogs[{ri}].scopeLogs[{si}]: expected an object")
            records = sl.get("logRecords", sl.get("log_records", []))
            if not isinstance(records, list):
                where = f"resourceLogs[{ri}].scopeLogs[{si}].logRecords"
                raise ValueError(f"{where}: expected an array")
            scope_shell = {k: v for k, v in sl.items() if k not in ("logRecords", "log_records")}
            out_sl = out_rl.scope_logs.add()
            _parse_into(scope_shell, out_sl, f"resourceLogs[{ri}].scopeLogs[{si}]")
            for i, rec in enumerate(records):
                path = f"resourceLogs[{ri}].scopeLogs[{si}].logRecords[{i}]"
                try:
                    out_sl.log_records.append(_record(rec, path))
                except ValueError as exc:
                    rejects.append(str(exc)[:300])
    return request, rejects


def _record(rec: Any, path: str) -> LogRecord:
    if not isinstance(rec, dict):
        raise ValueError(f"{path}: expected a LogRecord object")
    fixed = dict(rec)
    for camel, snake, size in (("traceId", "trace_id", 16), ("spanId", "span_id", 8)):
        for key in (camel, snake):
            if key in fixed:
                fixed[key] = _hex_to_b64(fixed[key], size, f"{path}.{camel}")
    out = LogRecord()
    _parse_into(fixed, out, path)
    return out


def _parse_into(obj: dict[str, Any], message: Any, path: str) -> None:
    try:
        json_format.ParseDict(obj, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, RecursionError) as exc:
        raise ValueError(f"{path}: {exc}") from None
