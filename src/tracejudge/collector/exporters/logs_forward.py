"""Where log records go after judging: the logs endpoint, its content filter, and the
evaluation results as OTLP log records.

``--forward-logs URL`` is its own target (Jaeger takes no logs, so it cannot share
``--forward``): OTLP/HTTP ``POST /v1/logs`` or OTLP/gRPC ``LogsService/Export``, the same
retry and refusal rules as the trace targets (``forward.py``'s classes with the logs path
and method). Forwarded records pass the same content filter as forwarded spans
(``--drop-content``, ``--redact-attributes``).

``--evaluation-logs`` adds one ``gen_ai.evaluation.result`` log record per rule outcome,
the log-record form the GenAI conventions define (semconv/upstream/gen-ai/events.yaml):
parented to the evaluated span (the span its span-event copy is on), with exactly the
attributes of that copy (``stamp.outcome_event_bytes``), from verdicts already scrubbed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from urllib.parse import urlsplit

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, SeverityNumber
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracejudge import __version__
from tracejudge import semconv as sc
from tracejudge.collector.codec.otlp import frame
from tracejudge.collector.exporters.forward import ForwardTarget, GrpcTarget, HttpTarget
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.stamp import outcome_event_bytes
from tracejudge.collector.security.tls import TargetOptions
from tracejudge.content import (
    LOG_BODIES_ARE_CONTENT,
    is_content_event,
    is_content_event_field,
    is_content_key,
)
from tracejudge.engine.verdict import Verdict
from tracejudge.model.log_events import event_name

__all__ = [
    "GrpcLogsTarget",
    "HttpLogsTarget",
    "LogContentFilter",
    "evaluation_records",
    "make_logs_target",
]

LOGS_EXPORT_METHOD = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"

_SEVERITY = {
    "fail": SeverityNumber.SEVERITY_NUMBER_ERROR,
    "error": SeverityNumber.SEVERITY_NUMBER_ERROR,
    "warn": SeverityNumber.SEVERITY_NUMBER_WARN,
}
"""Severity per outcome (the conventions set none; INFO otherwise), so a log backend can
filter failures without parsing attributes."""


class HttpLogsTarget(HttpTarget):
    """OTLP/HTTP protobuf logs: ``POST {url}/v1/logs`` (added when the URL has no path)."""

    signal_path = "/v1/logs"


class GrpcLogsTarget(GrpcTarget):
    """OTLP/gRPC logs: ``LogsService/Export`` with the payload bytes as they are."""

    export_method = LOGS_EXPORT_METHOD


def make_logs_target(
    url: str, timeout: float, options: TargetOptions | None = None
) -> ForwardTarget:
    """The target for ``--forward-logs`` (``grpc(s)://`` or ``http(s)://``), with the
    forward headers and TLS options the trace targets get."""
    if urlsplit(url).scheme in ("grpc", "grpcs"):
        return GrpcLogsTarget(url, timeout, options)
    return HttpLogsTarget(url, timeout, options)


class LogContentFilter:
    """``--drop-content`` and ``--redact-attributes`` for forwarded log records: what
    leaves the collector as a log says no more than what leaves it as a span."""

    def __init__(self, drop: bool, redact: bool, scrubber: Scrubber) -> None:
        self.drop = drop
        self.redact = redact
        self.scrubber = scrubber
        self.active = drop or redact

    def apply(self, data: bytes) -> bytes:
        """The filtered form of one serialized ``ResourceLogs`` (``data`` when inactive)."""
        if not self.active:
            return data
        rl = ResourceLogs.FromString(data)
        changed = False
        for sl in rl.scope_logs:
            for record in sl.log_records:
                if self.drop and _drop_content(record):
                    changed = True
                if self.redact:
                    n = self.scrubber.values(record.attributes)
                    if record.HasField("body"):
                        n += self.scrubber.value(record.body)
                    if n:
                        changed = True
                        _add_count(record, n)
        return rl.SerializeToString() if changed else data


def _drop_content(record: LogRecord) -> bool:
    """Strip what ``tracejudge.content`` declares content from one record: its body
    (every body is), its content attributes, and, on a content event, the fields its
    message is in when an SDK wrote them as attributes; the record keeps its name, time
    and trace context, and is marked ``tracejudge.content.dropped``."""
    dropped = False
    content = is_content_event_field if is_content_event(event_name(record)) else is_content_key
    found = [i for i, kv in enumerate(record.attributes) if content(kv.key)]
    for i in reversed(found):
        del record.attributes[i]
        dropped = True
    if LOG_BODIES_ARE_CONTENT and record.HasField("body"):
        record.ClearField("body")
        dropped = True
    if dropped:
        record.attributes.add(key=sc.TRACEJUDGE_CONTENT_DROPPED).value.bool_value = True
    return dropped


def _add_count(record: LogRecord, n: int) -> None:
    for kv in record.attributes:
        if kv.key == sc.TRACEJUDGE_CONTENT_REDACTED:
            kv.value.int_value = kv.value.int_value + n
            return
    record.attributes.add(key=sc.TRACEJUDGE_CONTENT_REDACTED).value.int_value = n


def evaluation_records(verdicts: Sequence[Verdict], now_ns: int | None = None) -> tuple[bytes, int]:
    """One ``gen_ai.evaluation.result`` log record per rule outcome of ``verdicts``, as a
    framed ``ResourceLogs`` (a logs request body), and how many records it holds.

    Each record has the trace id of its run and the span id its span-event copy is on
    (the outcome's span, else the run root); an outcome whose ids are not valid hex is
    left out (it has no span to be parented to, and its span-event copy was not written
    either)."""
    when = time.time_ns() if now_ns is None else now_ns
    rl = ResourceLogs()
    rl.resource.attributes.add(key="service.name").value.string_value = "tracejudge"
    sl = rl.scope_logs.add()
    sl.scope.name = "tracejudge.collector"
    sl.scope.version = __version__
    for v in verdicts:
        try:
            trace_id = bytes.fromhex(v.trace_id)
        except ValueError:
            continue
        if len(trace_id) != 16:
            continue
        for o in v.outcomes:
            try:
                span_id = bytes.fromhex(o.span_id or v.root_span_id)
            except ValueError:
                continue
            if len(span_id) != 8:
                continue
            event = Span.Event.FromString(outcome_event_bytes(o))
            record = sl.log_records.add(
                time_unix_nano=when,
                observed_time_unix_nano=when,
                severity_number=_SEVERITY.get(o.result, SeverityNumber.SEVERITY_NUMBER_INFO),
                trace_id=trace_id,
                span_id=span_id,
                event_name=sc.EVENT_GEN_AI_EVALUATION_RESULT,
            )
            record.attributes.extend(event.attributes)
    n = len(sl.log_records)
    return (frame(rl.SerializeToString()) if n else b""), n
