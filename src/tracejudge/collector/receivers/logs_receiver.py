"""OTLP logs receivers: gRPC ``LogsService/Export`` and HTTP ``POST /v1/logs``.

The same rules as the trace receivers (``http_receiver.py``), on the same ports: protobuf or
JSON in, the answer in the request's encoding, gzip read as a stream with the request
cap (413 past it), 400 with a ``google.rpc.Status`` body for undecodable data, 415 / 405
for a wrong type / method, 503 + Retry-After (gRPC: UNAVAILABLE with ``RetryInfo``) when
the collector is full, and partial success (``rejected_log_records``) for records with
malformed ids. They hand parsed requests to a ``LogsConsumer`` (``logs_intake.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import grpc
import grpc.aio
from aiohttp import web
from google.rpc import code_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from tracejudge.collector.clock import Clock
from tracejudge.collector.codec.logs import (
    logs_response_bytes,
    logs_response_json,
    parse_logs_request,
)
from tracejudge.collector.consumer import IngestResult, Throttled
from tracejudge.collector.receivers.grpc_receiver import export_method
from tracejudge.collector.receivers.http_receiver import (
    JSON,
    PROTOBUF,
    read_otlp_body,
    status_response,
)
from tracejudge.collector.receivers.inflight import InflightBytes
from tracejudge.collector.security.auth import Authenticator
from tracejudge.otlp.json_logs import logs_from_json

__all__ = ["LogsConsumer", "logs_grpc_handler", "logs_http_handler"]

_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"


class LogsConsumer(Protocol):
    """Takes parsed OTLP logs requests from the receivers (``TraceConsumer``'s twin)."""

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when no request should be parsed now."""
        ...

    def ingest_logs(
        self, request: ExportLogsServiceRequest, decode_rejects: Sequence[str] = ()
    ) -> IngestResult:
        """Admit a request (``decode_rejects``: records the JSON decoder refused)."""
        ...

    def throttled(self) -> None:
        """Count a request refused with "retry later"."""
        ...


def logs_grpc_handler(
    consumer: LogsConsumer, budget: InflightBytes, cap: int, auth: Authenticator | None = None
) -> grpc.GenericRpcHandler[bytes, bytes]:
    """A generic handler for ``LogsService/Export`` on raw bytes, admitted like the trace
    service's (``grpc_receiver.export_method``: the bearer token, capacity and the in-flight
    budget before the message is read; on HTTP the OTLP app's middleware covers
    ``/v1/logs``)."""

    def ingest(request: ExportLogsServiceRequest, _raw: bytes) -> IngestResult:
        return consumer.ingest_logs(request)

    method = export_method(
        consumer, auth, budget, cap, parse_logs_request, ingest, logs_response_bytes
    )
    return grpc.method_handlers_generic_handler(_SERVICE, {"Export": method})


def logs_http_handler(
    consumer: LogsConsumer, cap: int, body_timeout: float, clock: Clock | None = None
) -> Callable[[web.Request], Any]:
    """The ``/v1/logs`` handler."""

    async def handle(request: web.Request) -> web.StreamResponse:
        got = await read_otlp_body(request, consumer, cap, body_timeout, clock=clock)
        if isinstance(got, web.StreamResponse):
            return got
        body, ctype = got
        try:
            if ctype == JSON:
                parsed, rejects = logs_from_json(body)
            else:
                parsed, rejects = parse_logs_request(body), []
        except (ValueError, UnicodeDecodeError) as exc:
            return status_response(400, code_pb2.INVALID_ARGUMENT, str(exc)[:500], ctype)
        try:
            result = consumer.ingest_logs(parsed, rejects)
        except Throttled as exc:
            consumer.throttled()
            return status_response(503, code_pb2.UNAVAILABLE, str(exc), ctype, exc.retry_after)
        raw = logs_response_bytes(result.rejected, result.error_message)
        if ctype == JSON:
            return web.json_response(logs_response_json(raw))
        return web.Response(body=raw, content_type=PROTOBUF)

    return handle
