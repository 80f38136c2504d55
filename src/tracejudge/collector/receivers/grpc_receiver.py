"""The OTLP/gRPC receiver: ``TraceService/Export`` on raw bytes, its admission (the bearer
token, then capacity, before any parsing), and the grpc-core settings of the server.

The logs service (``logs_receiver.py``) shares the admission and the server. Refusals are
UNAVAILABLE with ``RetryInfo``, the OTLP "retry later" for gRPC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import grpc
import grpc.aio
from google.rpc import code_pb2  # type: ignore[import-untyped]

from tracejudge.collector.codec.otlp import SplitResult, response_bytes, status_bytes
from tracejudge.collector.consumer import Admits, IngestResult, Throttled, TraceConsumer
from tracejudge.collector.receivers.http_receiver import bind_problem, decode
from tracejudge.collector.receivers.inflight import InflightBytes
from tracejudge.collector.security.auth import Authenticator

__all__ = [
    "GRPC_BUDGET_WAIT",
    "GrpcLimits",
    "Refusal",
    "admit_grpc",
    "export_method",
    "grpc_handler",
    "grpc_options",
    "grpc_unavailable",
    "start_grpc",
]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


GRPC_BUDGET_WAIT = 1.0
"""Seconds a gRPC call waits for room in the in-flight budget before UNAVAILABLE."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an Export is refused, in plain values. Not the exception that said so: its
    traceback would keep the parsed request alive (see ``export_method``)."""

    code: grpc.StatusCode
    message: str
    retry_after: float | None = None
    """Set for "retry later" (UNAVAILABLE with ``RetryInfo``)."""

    @classmethod
    def throttled(cls, exc: Throttled) -> Refusal:
        """The refusal for a ``Throttled`` (the request's exact size, the disk queue)."""
        return cls(grpc.StatusCode.UNAVAILABLE, str(exc), exc.retry_after)


Request = TypeVar("Request")


def export_method(
    consumer: Admits,
    auth: Authenticator | None,
    budget: InflightBytes,
    cap: int,
    parse: Callable[[bytes], Request],
    ingest: Callable[[Request, bytes], IngestResult],
    respond: Callable[[int, str], bytes],
) -> grpc.RpcMethodHandler[bytes, bytes]:
    """An OTLP ``Export`` method that reads its message only once the call is admitted,
    and refuses only once nothing refers to the message any more.

    Export is unary, but it is registered as request-streaming: a unary handler runs after
    grpc has read the whole message into Python. Here a call is checked (the bearer token,
    capacity), reserves ``cap`` bytes of the in-flight budget the HTTP receiver also draws
    on (waiting up to ``GRPC_BUDGET_WAIT`` for room), and only then reads its one message;
    the reservation shrinks to the message's size and is given back when the call ends.
    Clients see no difference: on the wire a unary call is a client stream of one message.

    ``parse`` (on a decoding thread; ValueError: INVALID_ARGUMENT) and ``ingest`` (on the
    loop; ``Throttled``: UNAVAILABLE) the message; ``respond`` serializes the
    partial-success answer. They run to completion before any abort. A refusal raised
    from inside the frames that hold the message and its parsed request (``context.abort``
    raises) kept both alive in grpc's reference cycles until the cyclic GC came by: under a
    burst of large requests over gRPC that was most of the collector's peak memory
    (docs/collector.md, Memory)."""

    async def export(_requests: object, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        await admit_grpc(context, consumer, auth)
        if not await budget.reserve_waiting(cap, GRPC_BUDGET_WAIT):
            reason = "too many request bytes in flight (max_inflight_request_bytes)"
            await grpc_unavailable(consumer, context, reason, 1.0)
        held = cap
        try:
            data: object = await context.read()
            if isinstance(data, bytes):
                budget.release(held - len(data))
                held = len(data)
                answer = await _answer(data, parse, ingest, respond)
            else:  # grpc.aio.EOF: the client sent no message
                answer = Refusal(grpc.StatusCode.INVALID_ARGUMENT, "Export without a request")
            del data
        finally:
            budget.release(held)
        if isinstance(answer, bytes):
            return answer
        if answer.retry_after is not None:
            await grpc_unavailable(consumer, context, answer.message, answer.retry_after)
        await context.abort(answer.code, answer.message)
        raise AssertionError("abort returned")  # pragma: no cover - abort always raises

    return grpc.stream_unary_rpc_method_handler(export)


async def _answer(
    data: bytes,
    parse: Callable[[bytes], Request],
    ingest: Callable[[Request, bytes], IngestResult],
    respond: Callable[[int, str], bytes],
) -> bytes | Refusal:
    """Parse (a large message on a decoding thread: it must not hold the loop) and ingest
    one message: the serialized response, or why not (plain values)."""
    try:
        request = await decode(parse, data, len(data))
    except ValueError as exc:
        return Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    try:
        result = ingest(request, data)
    except Throttled as exc:  # this request's exact size, or the disk queue refused it
        return Refusal.throttled(exc)
    return respond(result.rejected, result.error_message)


def grpc_handler(
    consumer: TraceConsumer,
    budget: InflightBytes,
    cap: int,
    auth: Authenticator | None = None,
) -> grpc.GenericRpcHandler[bytes, bytes]:
    """``TraceService/Export`` on raw bytes (we parse them ourselves), admitted by
    ``export_method``: with ``auth``, a call without a valid ``authorization: Bearer``
    metadata entry is answered UNAUTHENTICATED before its message is even read."""

    def admit(split: SplitResult, _raw: bytes) -> IngestResult:
        return consumer.admit(split)

    method = export_method(consumer, auth, budget, cap, consumer.split, admit, response_bytes)
    return grpc.method_handlers_generic_handler(_SERVICE, {"Export": method})


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
        reason, retry_after = str(exc), exc.retry_after
    else:
        return
    await grpc_unavailable(consumer, context, reason, retry_after)


async def grpc_unavailable(
    consumer: Admits,
    context: grpc.aio.ServicerContext[bytes, bytes],
    reason: str,
    retry_after: float,
) -> NoReturn:
    """Refuse with UNAVAILABLE and ``RetryInfo`` (the OTLP "retry later" for gRPC)."""
    consumer.throttled()
    details = status_bytes(code_pb2.UNAVAILABLE, reason, retry_after)
    await context.abort(
        grpc.StatusCode.UNAVAILABLE,
        reason,
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
    max_concurrent_streams: int = 4
    bdp_probe: bool = False


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
        # Calls in flight per connection (more wait at the client, in HTTP/2 flow control).
        ("grpc.max_concurrent_streams", limits.max_concurrent_streams),
        # BDP probing lets each stream's window grow to whole messages, which then sat in
        # grpc-core, unread and outside every limit of ours: most of the peak memory of a
        # burst of large requests over gRPC (docs/collector.md, Memory).
        ("grpc.http2.bdp_probe", int(limits.bdp_probe)),
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
    consumer: TraceConsumer,
    host: str,
    port: int,
    max_bytes: int,
    limits: GrpcLimits,
    auth: Authenticator | None = None,
    credentials: grpc.ServerCredentials | None = None,
    extra: Sequence[grpc.GenericRpcHandler[bytes, bytes]] = (),
    *,
    budget: InflightBytes | None = None,
) -> tuple[Any, int]:
    """Start the gRPC server; returns it and the bound port (0 picks a free one). With
    ``credentials`` the port speaks TLS only. ``extra``: more services on the same port
    (the logs receiver), which check ``auth`` and draw on ``budget`` themselves.
    ``budget``: the in-flight request bytes shared with the HTTP receiver (None: no limit)."""
    inflight = InflightBytes(1 << 62) if budget is None else budget
    server = grpc.aio.server(options=grpc_options(max_bytes, limits))
    server.add_generic_rpc_handlers((grpc_handler(consumer, inflight, max_bytes, auth), *extra))
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
