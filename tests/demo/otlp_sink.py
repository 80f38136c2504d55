"""A minimal OTLP/HTTP protobuf receiver for tests that forward judged traces.

The end-to-end tests under ``tests/e2e`` forward to a real Jaeger; this sink stands in for
it where no Jaeger runs (the unit suite must pass on a bare machine). It is a real HTTP
server decoding real ``ExportTraceServiceRequest`` bodies with the OTLP protobuf classes,
so what the demo's collector sends is checked on the wire.
"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.guards import WAIT_S
from tracejudge.model.spans import SpanRecord
from tracejudge.otlp.records import spans_from_proto_request


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        with self.server.lock:
            self.server.spans.extend(spans_from_proto_request(request))
            self.server.paths.append(self.path)
        data = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.spans: list[SpanRecord] = []
        self.paths: list[str] = []


class OtlpSink:
    """Started on enter; ``url`` is the OTLP/HTTP endpoint, ``spans`` what arrived."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpSink:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=WAIT_S)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the collector appends ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def spans(self) -> list[SpanRecord]:
        """Every span received so far."""
        with self._server.lock:
            return list(self._server.spans)
