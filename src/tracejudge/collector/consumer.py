"""The seam between receivers and what processes their data: the trace consumer.

Receivers (gRPC, HTTP) depend on this Protocol only, as the OpenTelemetry Collector's
receivers depend on ``consumer.Traces``: they ask the consumer for room, have it split the
request's bytes (on a decoding thread), hand it the split and translate its answer
(``IngestResult``) or refusal (``Throttled``) into their protocol's status. Anything with
these four methods can sit behind a receiver: the pipeline, or a test's consumer that
needs no decisions at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracejudge.collector.codec.otlp import SplitResult


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
    """Takes OTLP trace requests from the receivers: ``split`` on a decoding thread (a
    large request must not hold the event loop), then ``admit`` on the loop."""

    def check_capacity(self) -> None:
        """Raise ``Throttled`` when no request should be parsed now (cheap, before parsing)."""
        ...

    def split(
        self, request: ExportTraceServiceRequest | bytes, decode_rejects: Sequence[str] = ()
    ) -> SplitResult:
        """Validate and split a request, a protobuf body or one parsed from OTLP/JSON
        (``decode_rejects``: spans the JSON decoder refused); ``ValueError`` when the body
        is undecodable. Runs off the event loop: it must touch no shared state."""
        ...

    def admit(self, split: SplitResult) -> IngestResult:
        """Admit a split request (on the loop); raise ``Throttled`` to refuse it."""
        ...

    def throttled(self) -> None:
        """Count a request the receiver refused with "retry later"."""
        ...


class Admits(Protocol):
    """What the OTLP intake (HTTP and gRPC) asks of a consumer (traces or logs)."""

    def check_capacity(self) -> None: ...

    def throttled(self) -> None: ...
