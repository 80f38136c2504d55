"""Helpers for the logs tests: a real OTLP logs receiver standing in for a logs backend,
and log-record builders.

The sink is a real grpc.aio + aiohttp OTLP logs receiver that records what reaches it (the
e2e test uses the real OpenTelemetry Collector instead).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from aiohttp import web
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs

from tracejudge.otlp.records import any_value_to_python, attributes_to_dict


@dataclass
class LogsSink:
    """A real OTLP logs receiver (gRPC + HTTP ``/v1/logs``) recording every request."""

    requests: list[ExportLogsServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    grpc_port: int = 0
    http_port: int = 0
    _server: Any = None
    _runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Bind both servers on free ports."""

        async def export(data: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            self.paths.append("grpc")
            self.requests.append(ExportLogsServiceRequest.FromString(data))
            out: bytes = ExportLogsServiceResponse().SerializeToString()
            return out

        self._server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.logs.v1.LogsService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},
        )
        self._server.add_generic_rpc_handlers((handler,))
        self.grpc_port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()

        async def post(request: web.Request) -> web.Response:
            self.paths.append(request.path)
            self.requests.append(ExportLogsServiceRequest.FromString(await request.read()))
            return web.Response(
                body=ExportLogsServiceResponse().SerializeToString(),
                content_type="application/x-protobuf",
            )

        app = web.Application()
        app.router.add_post("/v1/logs", post)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.http_port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Shut both servers down."""
        if self._server is not None:
            await self._server.stop(0)
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"grpc://127.0.0.1:{self.grpc_port}"

    def records(self, event: str | None = None) -> list[LogRecord]:
        """Every record received (with ``event``: only that event name)."""
        return [
            r
            for req in list(self.requests)
            for rl in req.resource_logs
            for sl in rl.scope_logs
            for r in sl.log_records
            if event is None or r.event_name == event
        ]


def record_attrs(record: LogRecord) -> dict[str, Any]:
    """A record's attributes as plain values."""
    return attributes_to_dict(record.attributes)


def record_body(record: LogRecord) -> Any:
    """A record's body as a plain value (None when it has none)."""
    return any_value_to_python(record.body) if record.HasField("body") else None


def log_record(
    trace_id: bytes,
    span_id: bytes,
    event: str,
    attributes: dict[str, str] | None = None,
    body: str | None = None,
) -> LogRecord:
    """A log record on a span, with string attributes and an optional string body."""
    now = time.time_ns()
    rec = LogRecord(
        time_unix_nano=now,
        observed_time_unix_nano=now,
        trace_id=trace_id,
        span_id=span_id,
        event_name=event,
    )
    for k, v in (attributes or {}).items():
        rec.attributes.append(KeyValue(key=k, value=AnyValue(string_value=v)))
    if body is not None:
        rec.body.string_value = body
    return rec


def logs_request(records: list[LogRecord], service: str = "agent-svc") -> ExportLogsServiceRequest:
    """One request holding ``records`` under one resource and scope."""
    rl = ResourceLogs()
    rl.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=service))
    )
    sl = rl.scope_logs.add()
    sl.scope.name = "test"
    sl.log_records.extend(records)
    return ExportLogsServiceRequest(resource_logs=[rl])


def random_ids() -> tuple[bytes, bytes]:
    """A random (trace id, span id)."""
    return os.urandom(16), os.urandom(8)
