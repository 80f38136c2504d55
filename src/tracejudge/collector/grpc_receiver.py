"""The OTLP/gRPC receiver: ``TraceService/Export`` on raw bytes, its admission (the bearer
token, then capacity, before any parsing), and the grpc-core settings of the server.

The logs service (``logs_receiver.py``) shares the admission and the server. Refusals are
UNAVAILABLE with ``RetryInfo``, the OTLP "retry later" for gRPC.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
import grpc.aio
from google.rpc import code_pb2  # type: ignore[import-untyped]

from tracejudge.collector.auth import Authenticator
from tracejudge.collector.consumer import Admits, Throttled, TraceConsumer
from tracejudge.collector.otlp import parse_request, response_bytes, status_bytes
from tracejudge.collector.receivers import bind_problem

__all__ = [
    "GrpcLimits",
    "admit_grpc",
    "grpc_handler",
    "grpc_options",
    "grpc_unavailable",
    "start_grpc",
]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


def grpc_handler(
    pipeline: TraceConsumer, auth: Authenticator | None = None
) -> grpc.GenericRpcHandler[bytes, bytes]:
    """A generic handler for Export that receives raw bytes (we parse them ourselves).

    With ``auth``, a call without a valid ``authorization: Bearer`` metadata entry is
    answered UNAUTHENTICATED before anything else (its bytes are never parsed)."""

    async def export(data: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        await admit_grpc(context, pipeline, auth)
        try:
            request = parse_request(data)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        try:
            result = pipeline.ingest(request, data)
        except Throttled as exc:  # this request's exact size, or the disk queue refused it
            await grpc_unavailable(pipeline, context, exc)
        return response_bytes(result.rejected, result.error_message)

    handler = grpc.unary_unary_rpc_method_handler(export)
    return grpc.method_handlers_generic_handler(_SERVICE, {"Export": handler})


async def admit_grpc(
    context: grpc.aio.ServicerContext[bytes, bytes], consumer: Admits, auth: Authenticator | None
) -> None:
    """Before a gRPC Export's bytes are parsed (traces or logs): with ``auth``, a call
    without a valid ``authorization: Bearer`` entry is UNAUTHENTICATED; then capacity, so
    a throttled request costs no parsing (UNAVAILABLE with ``RetryInfo``)."""
    if auth is not None:
        header = None
        for key, value in context.invocation_metadata() or ():
            if key == "authorization" and isinstance(value, str):
                header = value
                break
        reason = auth.check(header, "OTLP/gRPC", context.peer())
        if reason is not None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, reason)
    try:
        consumer.check_capacity()
    except Throttled as exc:
        await grpc_unavailable(consumer, context, exc)


async def grpc_unavailable(
    consumer: Admits, context: grpc.aio.ServicerContext[bytes, bytes], exc: Throttled
) -> NoReturn:
    """Refuse with UNAVAILABLE and ``RetryInfo`` (the OTLP "retry later" for gRPC)."""
    consumer.throttled()
    details = status_bytes(code_pb2.UNAVAILABLE, str(exc), exc.retry_after)
    await context.abort(
        grpc.StatusCode.UNAVAILABLE,
        str(exc),
        trailing_metadata=(("grpc-status-details-bin", details),),
    )
    raise AssertionError("abort returned")  # pragma: no cover - abort always raises


@dataclass(slots=True)
class GrpcLimits:
    """gRPC connection settings (seconds; None: no limit). See ``grpc_options``."""

    keepalive_time: float
    keepalive_timeout: float
    max_connection_idle: float | None
    max_connection_age: float | None
    max_connection_age_grace: float
    handshake_timeout: float
    max_concurrent_streams: int = 16


def grpc_options(max_bytes: int, limits: GrpcLimits) -> list[tuple[str, int]]:
    """The grpc-core channel arguments for the receiver.

    The server pings an idle connection every ``keepalive_time`` and drops it when no
    answer comes within ``keepalive_timeout`` (a dead client or NAT); a connection with no
    call for ``max_connection_idle`` is closed, and one older than ``max_connection_age``
    gets a GOAWAY (calls in flight get ``max_connection_age_grace``), which spreads
    clients over new instances behind a load balancer; a connection that has not finished
    its HTTP/2 handshake within ``handshake_timeout`` is dropped.
    """

    def ms(seconds: float) -> int:
        return max(1, int(seconds * 1000))

    opts = [
        ("grpc.max_receive_message_length", max_bytes),
        # Calls in flight per connection (more wait at the client, in HTTP/2 flow control):
        # each holds a whole message of up to ``max_bytes`` in memory.
        ("grpc.max_concurrent_streams", limits.max_concurrent_streams),
        ("grpc.so_reuseport", 0),
        ("grpc.keepalive_time_ms", ms(limits.keepalive_time)),
        ("grpc.keepalive_timeout_ms", ms(limits.keepalive_timeout)),
        ("grpc.server_handshake_timeout_ms", ms(limits.handshake_timeout)),
        # Clients may ping as often as every 10 s without a call (OTel SDKs ping at 30 s+).
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    if limits.max_connection_idle is not None:
        opts.append(("grpc.max_connection_idle_ms", ms(limits.max_connection_idle)))
    if limits.max_connection_age is not None:
        opts.append(("grpc.max_connection_age_ms", ms(limits.max_connection_age)))
        opts.append(("grpc.max_connection_age_grace_ms", ms(limits.max_connection_age_grace)))
    return opts


async def start_grpc(
    pipeline: TraceConsumer,
    host: str,
    port: int,
    max_bytes: int,
    limits: GrpcLimits,
    auth: Authenticator | None = None,
    credentials: grpc.ServerCredentials | None = None,
    extra: Sequence[grpc.GenericRpcHandler[bytes, bytes]] = (),
) -> tuple[Any, int]:
    """Start the gRPC server; returns it and the bound port (0 picks a free one). With
    ``credentials`` the port speaks TLS only. ``extra``: more services on the same port
    (the logs receiver), which check ``auth`` themselves."""
    server = grpc.aio.server(options=grpc_options(max_bytes, limits))
    server.add_generic_rpc_handlers((grpc_handler(pipeline, auth), *extra))
    # Try the address with a plain socket first: when grpc's C core fails to bind, it
    # writes its own log line (``E... add_port.cc ... Failed to add port``) straight to
    # the process's stderr before Python hears of it, ahead of our one-line error.
    taken = bind_problem(host, port)
    if taken is not None:
        raise OSError(f"cannot bind OTLP/gRPC on {host}:{port}: {taken}")
    reason = "port in use or not allowed"
    try:
        address = f"{host}:{port}"
        if credentials is not None:
            bound = server.add_secure_port(address, credentials)
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError as exc:  # grpc reports a failed bind as RuntimeError
        bound = 0
        reason = str(exc).split(";")[0]
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC on {host}:{port}: {reason}")
    await server.start()
    return server, bound
