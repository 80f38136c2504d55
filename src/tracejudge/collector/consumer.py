"""The seam between receivers and what processes their data: the trace consumer.

Receivers (gRPC, HTTP) depend on this Protocol only, as the OpenTelemetry Collector's
receivers depend on ``consumer.Traces``: they parse and validate bytes, ask the consumer
for room, hand it the request and translate its answer (``IngestResult``) or refusal
(``Throttled``) into their protocol's status. Anything with these three methods can sit
behind a receiver: the pipeline, or a test's consumer that needs no decisions at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Throttled(Exception):
    """The collector is full; the client should retry after ``retry_after`` seconds."""

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(slots=True)
class IngestResult:
    """What a receiver tells the client (OTLP partial success)."""

    accepted: int
    rejected: int
    error_message: str


class TraceConsumer(Protocol):
    """Takes parsed OTLP trace requests from the receivers."""

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when no request should be parsed now (cheap, before parsing)."""
        ...

    def ingest(
        self,
        request: ExportTraceServiceRequest,
        raw: bytes | None = None,
        decode_rejects: Sequence[str] = (),
    ) -> IngestResult:
        """Admit a request (``raw``: the protobuf body it was parsed from, if any;
        ``decode_rejects``: spans the decoder refused); raise ``Throttled`` to refuse it."""
        ...

    def throttled(self) -> None:
        """Count a request the receiver refused with "retry later"."""
        ...


class Admits(Protocol):
    """What the OTLP intake (HTTP and gRPC) asks of a consumer (traces or logs)."""

    def check_capacity(self) -> None: ...

    def throttled(self) -> None: ...
