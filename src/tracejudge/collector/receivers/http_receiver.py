"""OTLP/HTTP receiver: ``POST /v1/traces``, plus health, metrics and the gate's routes.

It takes raw bytes, has a ``TraceConsumer`` (the admission stage in ``serve``) split them on a
decoding thread and admits the split on the loop; it knows nothing else of it. It follows
the OTLP/HTTP rules exactly: protobuf or JSON in, the answer in the request's encoding,
gzip decompressed as a stream with a cap (a zip bomb gets 413, not an OOM), 400 with a
``google.rpc.Status`` body for undecodable data, 415 / 405 for wrong type / method, and
503 + Retry-After when the collector is full.
The gRPC receiver is ``grpc_receiver.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import zlib
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from aiohttp import web
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracejudge.collector.clock import Clock, SystemClock, within
from tracejudge.collector.codec.otlp import SplitResult, response_bytes, status_bytes
from tracejudge.collector.consumer import Admits, Throttled, TraceConsumer
from tracejudge.collector.receivers.inflight import BodyCharge, InflightBytes
from tracejudge.collector.security.auth import Authenticator, auth_middleware
from tracejudge.collector.telemetry.exposition import CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE
from tracejudge.collector.telemetry.exposition import wants_prometheus
from tracejudge.collector.telemetry.flagger import add_flagger_routes
from tracejudge.gate.params import ParamError
from tracejudge.otlp.json_traces import json_to_proto_partial

log = logging.getLogger("tracejudge.collector")

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


INLINE_DECODE_BYTES = 256 * 1024
"""Bodies up to this size are decoded and split on the loop, larger ones on a decoding
thread. Decoding takes about 3-9 µs of CPU per KiB (compiled; more for many small
attributes), so a body at the limit holds the loop about as long as a chunk of cheap traces
judged on it does (1-3 ms). The thread is insurance, not free: handing a body to it (submit,
the GIL taken twice, the result back through the loop's self-pipe) cost a fifth to a third
more CPU than decoding on the loop at every size measured, 36 KiB to 1 MiB
(``bench/bench_decode_handoff.py``: +108 µs on 36 KiB, +1.1 ms on 359 KiB), and under a
costly judgement on the judging thread it kept a small request waiting hundreds of ms for
the GIL. It was 64 KiB, which sent the collector benchmark's 82 KiB requests (10 traces of
10 spans) to the thread."""

T = TypeVar("T")
R = TypeVar("R")


async def decode(fn: Callable[[T], R], arg: T, size: int) -> R:
    """``fn(arg)`` for a body of ``size`` bytes: on the loop when small, else on a decoding
    thread, so a large request never holds the loop, ``/healthz`` and the other clients."""
    if size <= INLINE_DECODE_BYTES:
        return fn(arg)
    return await asyncio.get_running_loop().run_in_executor(None, fn, arg)


class TooLarge(Exception):
    """The body exceeds the size limit (after decompression)."""


class BadEncoding(Exception):
    """The body is not valid gzip."""


# --- sockets ---------------------------------------------------------------------------


def bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (``Address already in use``), or ``None``.

    Binds and closes a socket per resolved address, with ``SO_REUSEADDR`` as grpc and
    aiohttp use it (so a port in TIME_WAIT is free); like grpc, one address that binds is
    enough. Port 0 always binds.
    """
    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve {host!r}: {exc.strerror or exc}"
    reasons: list[str] = []
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                reasons.append(_reason(exc))
                continue
            return None
    return reasons[0] if reasons else f"{host!r} resolves to no address"


def _reason(exc: OSError) -> str:
    """``Address already in use`` rather than aiohttp's or asyncio's longer wrapping."""
    return os.strerror(exc.errno) if exc.errno else str(exc)


# --- HTTP ------------------------------------------------------------------------------


class BodyTimeout(Exception):
    """The body did not arrive within the body timeout (a short or stalled body)."""


class OverBudget(Exception):
    """The body's bytes do not fit the in-flight budget (``max_inflight_request_bytes``)."""


async def read_body(
    request: web.Request,
    gzip: bool,
    cap: int,
    timeout: float,
    charge: BodyCharge | None = None,
    *,
    clock: Clock | None = None,
) -> bytes:
    """Read the body within ``timeout`` seconds (of ``clock``), decompressing gzip as a
    stream, refusing more than ``cap`` bytes. A Content-Length larger than what is sent, or a
    chunked body that stops, would otherwise hold the connection forever. ``charge``: the
    in-flight budget, charged the bytes held as they arrive (``OverBudget`` when they do not
    fit)."""
    try:
        return await within(clock or SystemClock(), timeout, _read_body(request, gzip, cap, charge))
    except TimeoutError:
        raise BodyTimeout(f"request body not received within {timeout:g}s") from None


def _gunzip() -> Any:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


async def _read_body(
    request: web.Request, gzip: bool, cap: int, charge: BodyCharge | None
) -> bytes:
    out = bytearray()
    raw = 0
    d = _gunzip() if gzip else None
    async for chunk in request.content.iter_chunked(1 << 16):
        raw += len(chunk)
        if raw > cap:
            raise TooLarge
        if d is None:
            out += chunk
        else:
            d = _inflate(d, chunk, out, cap)
        if charge is not None and not charge.grow_to(len(out)):
            raise OverBudget
    if d is not None:
        try:
            out += d.flush()
        except zlib.error as exc:
            raise BadEncoding(f"invalid gzip body: {exc}") from exc
        if not d.eof:
            raise BadEncoding("truncated gzip body")
        if len(out) > cap:
            raise TooLarge
    return bytes(out)


def _inflate(d: Any, data: bytes, out: bytearray, cap: int) -> Any:
    """Inflate ``data`` into ``out``; returns the decompressor for the next chunk.

    A gzip body may hold several members one after another (RFC 1952; what ``cat a.gz
    b.gz`` or a streaming compressor writes, and what Go's reader in the OTel Collector
    accepts): each member gets a fresh decompressor. Only the first used to be read, so the
    spans of the others were acknowledged and silently dropped. Bytes after a member that
    do not start another one are invalid gzip, not ignored.
    """
    while data:
        if d.eof:
            d = _gunzip()
        try:
            out += d.decompress(data, cap + 1 - len(out))
        except zlib.error as exc:
            raise BadEncoding(f"invalid gzip body: {exc}") from exc
        if len(out) > cap or d.unconsumed_tail:
            raise TooLarge
        data = d.unused_data if d.eof else b""
    return d


def _status_response(
    http: int, code: int, message: str, ctype: str, retry_after: float | None = None
) -> web.Response:
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, round(retry_after)))
    body = status_bytes(code, message, retry_after)
    if ctype == JSON:
        obj = json_format.MessageToDict(status_pb2.Status.FromString(body))
        return web.json_response(obj, status=http, headers=headers)
    return web.Response(body=body, status=http, content_type=PROTOBUF, headers=headers)


status_response = _status_response
"""A ``google.rpc.Status`` answer in the request's encoding (the logs receiver's too)."""


async def read_otlp_body(
    request: web.Request,
    consumer: Admits,
    cap: int,
    body_timeout: float,
    charge: BodyCharge | None = None,
    *,
    clock: Clock | None = None,
) -> tuple[bytes, str] | web.StreamResponse:
    """An OTLP/HTTP request's body and content type, or the answer that refuses it: the
    method (405), the encodings (415), capacity (503 + Retry-After, before the body is
    read), the body's time, size and gzip (408, 413, 400), the in-flight budget
    (``charge``; 503 + Retry-After, the connection closed). One intake for ``/v1/traces``
    and ``/v1/logs``, so both signals answer bad input alike."""
    if request.method != "POST":
        return web.Response(status=405, headers={"Allow": "POST"})
    ctype = request.content_type
    if ctype not in (PROTOBUF, JSON):
        return _status_response(
            415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Type {ctype!r}", PROTOBUF
        )
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        return _status_response(
            415, code_pb2.INVALID_ARGUMENT, f"unsupported Content-Encoding {encoding!r}", ctype
        )
    try:
        consumer.check_capacity()
    except Throttled as exc:
        consumer.throttled()
        return _status_response(503, code_pb2.UNAVAILABLE, str(exc), ctype, exc.retry_after)
    try:
        body = await read_body(request, encoding == "gzip", cap, body_timeout, charge, clock=clock)
    except OverBudget:
        consumer.throttled()
        resp = _status_response(
            503,
            code_pb2.UNAVAILABLE,
            "too many request bytes in flight (max_inflight_request_bytes)",
            ctype,
            1.0,
        )
        resp.force_close()  # the rest of the body may still come: drop the connection
        return resp
    except BodyTimeout as exc:
        resp = _status_response(408, code_pb2.DEADLINE_EXCEEDED, str(exc), ctype)
        resp.force_close()  # the rest of the body may still come: drop the connection
        return resp
    except TooLarge:
        return _status_response(
            413, code_pb2.RESOURCE_EXHAUSTED, f"request body exceeds {cap} bytes", ctype
        )
    except BadEncoding as exc:
        return _status_response(400, code_pb2.INVALID_ARGUMENT, str(exc), ctype)
    return body, ctype


def traces_handler(
    consumer: TraceConsumer,
    cap: int,
    body_timeout: float,
    inflight: InflightBytes | None = None,
    clock: Clock | None = None,
) -> Callable[[web.Request], Any]:
    """The ``/v1/traces`` handler (the body timeout on ``clock``, the real one by default)."""
    budget = InflightBytes(1 << 62) if inflight is None else inflight

    async def handle(request: web.Request) -> web.StreamResponse:
        """``_handle`` the request, its body charged to the in-flight budget as it arrives
        and given back once answered."""
        charge = BodyCharge(budget)
        try:
            return await _handle(request, charge)
        finally:
            charge.release()

    async def _handle(request: web.Request, charge: BodyCharge) -> web.StreamResponse:
        got = await read_otlp_body(request, consumer, cap, body_timeout, charge, clock=clock)
        if isinstance(got, web.StreamResponse):
            return got
        body, ctype = got
        try:
            split = await decode(partial(_split, consumer, json=ctype == JSON), body, len(body))
        except (ValueError, UnicodeDecodeError) as exc:
            return _status_response(400, code_pb2.INVALID_ARGUMENT, str(exc)[:500], ctype)
        try:
            result = consumer.admit(split)
        except Throttled as exc:  # this request's exact size, or the disk queue refused it
            consumer.throttled()
            return _status_response(503, code_pb2.UNAVAILABLE, str(exc), ctype, exc.retry_after)
        raw = response_bytes(result.rejected, result.error_message)
        if ctype == JSON:
            obj = json_format.MessageToDict(ExportTraceServiceResponse.FromString(raw))
            return web.json_response(obj)
        return web.Response(body=raw, content_type=PROTOBUF)

    return handle


def _split(consumer: TraceConsumer, body: bytes, *, json: bool) -> SplitResult:
    """Decode and split a body (on a decoding thread). OTLP/JSON spans the converter cannot
    represent (bad ids, values nested deeper than protobuf decoders accept) are rejected
    one by one: partial success."""
    if json:
        partial = json_to_proto_partial(body)
        return consumer.split(partial.request, partial.rejected)
    return consumer.split(body)


GateAnswer = Callable[[Mapping[str, str]], dict[str, Any]]
"""Answers a ``GET /v1/gate`` query (raises ``ParamError`` for a malformed one)."""


def health_routes(
    app: web.Application,
    snapshot: Callable[[], dict[str, Any]],
    gate: GateAnswer | None = None,
    prometheus: Callable[[], str] | None = None,
) -> None:
    """Add ``/healthz`` (liveness + key counts), ``/metrics`` (all counts, JSON; with
    ``prometheus``, the verdict metrics in Prometheus text format to a client asking for
    it) and, with ``gate``, ``/v1/gate`` and the Flagger webhooks (the canary decision;
    docs/baselines-and-canary.md)."""

    async def healthz(_request: web.Request) -> web.Response:
        snap = snapshot()
        body = {"status": snap.get("status", "ok"), "reasons": snap.get("reasons", [])}
        refusing = (snap.get("disk_queue") or {}).get("refusing")
        if refusing is not None:  # why requests get 503, and what makes them accepted again
            body["disk_queue"] = refusing
        return web.json_response({**body, "spans": snap["spans"]})

    async def metrics(request: web.Request) -> web.Response:
        if prometheus is not None and wants_prometheus(
            request.headers.get("Accept"), request.query.get("format")
        ):
            return web.Response(
                text=prometheus(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE}
            )
        return web.json_response(snapshot())

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    if gate is not None:
        app.router.add_get("/v1/gate", gate_handler(gate))
        add_flagger_routes(app, gate)


def gate_handler(gate: GateAnswer) -> Callable[[web.Request], Any]:
    """``GET /v1/gate``: 200 with the decision for any well-formed query (an unknown agent
    or variant is an inconclusive answer, not an error: Argo Rollouts counts a non-2xx as
    a measurement error); 400 naming the parameter for a malformed one."""

    async def handle(request: web.Request) -> web.Response:
        query: dict[str, str] = {}
        for key, value in request.query.items():
            if key in query:
                return web.json_response(
                    {"error": f"{key}: given more than once", "parameter": key}, status=400
                )
            query[key] = value
        try:
            answer = gate(query)
        except ParamError as exc:
            return web.json_response({"error": str(exc), "parameter": exc.name}, status=400)
        return web.json_response(answer)

    return handle


def _otlp_refusal(request: web.Request, reason: str) -> web.StreamResponse:
    """401 with a ``google.rpc.Status`` (UNAUTHENTICATED) in the request's encoding."""
    ctype = JSON if request.content_type == JSON else PROTOBUF
    return _status_response(401, code_pb2.UNAUTHENTICATED, reason, ctype)


def receiver_app(
    consumer: TraceConsumer,
    cap: int,
    snapshot: Callable[[], dict[str, Any]],
    body_timeout: float,
    gate: GateAnswer | None = None,
    prometheus: Callable[[], str] | None = None,
    *,
    auth: Authenticator | None = None,
    management: bool = True,
    inflight: InflightBytes | None = None,
    clock: Clock | None = None,
) -> web.Application:
    """The OTLP/HTTP app (``/v1/traces``), with the health routes unless ``management``
    is False (a separate management listener serves them). With ``auth`` every route but
    ``/healthz`` needs a bearer token."""
    middlewares = [] if auth is None else [auth_middleware(auth, "OTLP/HTTP", _otlp_refusal)]
    app = web.Application(client_max_size=cap, middlewares=middlewares)
    handler = traces_handler(consumer, cap, body_timeout, inflight, clock)
    app.router.add_route("*", "/v1/traces", handler)
    if management:
        health_routes(app, snapshot, gate, prometheus)
    return app


def management_app(
    snapshot: Callable[[], dict[str, Any]],
    gate: GateAnswer | None = None,
    prometheus: Callable[[], str] | None = None,
    auth: Authenticator | None = None,
) -> web.Application:
    """The management listener's app: ``/healthz``, ``/metrics``, ``/v1/gate`` and the
    Flagger webhooks."""
    middlewares = [] if auth is None else [auth_middleware(auth, "management")]
    app = web.Application(middlewares=middlewares)
    health_routes(app, snapshot, gate, prometheus)
    return app
