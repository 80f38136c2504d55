"""OTLP wire helpers: split requests by trace, frame fragments, decode, status bodies.

The collector buffers each trace as serialized ``ResourceSpans`` fragments, not Python
objects: a fragment costs about its wire size, and an unchanged fragment can be forwarded
without re-serializing. ``ExportTraceServiceRequest`` has one repeated field, so a request is
just fragments framed as field 1; concatenating framed fragments from many traces gives one
valid request for a batched forward.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge.model.decode_proto import spans_from_resource_spans
from tracejudge.model.spans import SpanRecord

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_REASONS = 3
"""Rejection reasons quoted in a partial-success message (the rest are counted)."""


@dataclass(slots=True)
class TraceFragment:
    """The spans of one trace from one ``ResourceSpans`` of one request."""

    trace_id: bytes
    data: bytes
    spans: int
    has_root: bool


@dataclass(slots=True)
class SplitResult:
    """A request split per trace, with the spans refused and why."""

    fragments: list[TraceFragment] = field(default_factory=list)
    accepted: int = 0
    rejected: int = 0
    error_message: str = ""


def parse_request(data: bytes) -> ExportTraceServiceRequest:
    """Parse protobuf bytes; raises ``ValueError`` with a readable reason when undecodable."""
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"undecodable ExportTraceServiceRequest: {exc}") from exc


def resource_spans_slices(data: bytes) -> list[memoryview] | None:
    """The serialized ``ResourceSpans`` of a request body, as views into it, in order.

    A request is a sequence of field-1 entries, so walking only its top-level tags finds
    each ``ResourceSpans``' own bytes (no parse). None when the body holds anything but
    well-formed field-1 entries; the caller then serializes from the parsed message.
    """
    out: list[memoryview] = []
    view = memoryview(data)
    pos = 0
    end = len(data)
    while pos < end:
        if data[pos] != 0x0A:  # field 1, wire type 2 (one tag byte)
            return None
        pos += 1
        size = 0
        shift = 0
        while True:
            if pos >= end or shift > 63:
                return None
            b = data[pos]
            pos += 1
            size |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        if pos + size > end:
            return None
        out.append(view[pos : pos + size])
        pos += size
    return out


def split_by_trace(
    request: ExportTraceServiceRequest,
    raw: bytes | None = None,
    decode_rejects: Sequence[str] = (),
) -> SplitResult:
    """Group valid spans by trace id; spans with invalid ids are rejected (partial success).

    ``decode_rejects`` are the reasons for spans the decoder already left out (OTLP/JSON
    spans it could not convert); they count as rejected and lead the error message.

    Fragments are assembled as bytes (each span serialized once, then framed into its
    ``ScopeSpans`` and ``ResourceSpans``), which is several times faster than building new
    protobuf messages and copying spans into them. ``raw``, the request's own bytes, lets a
    ``ResourceSpans`` that holds one trace be buffered as received, with no serializing.
    """
    out = SplitResult()
    reasons: list[str] = list(decode_rejects[:_REASONS])
    out.rejected = len(decode_rejects)
    slices = resource_spans_slices(raw) if raw is not None else None
    if slices is not None and len(slices) != len(request.resource_spans):
        slices = None
    for i, rs in enumerate(request.resource_spans):
        whole = _single_trace(rs)
        if whole is not None:
            tid, count, has_root = whole
            data = bytes(slices[i]) if slices is not None else rs.SerializeToString()
            out.fragments.append(TraceFragment(tid, data, count, has_root))
            out.accepted += count
            continue
        head = _field(1, rs.resource.SerializeToString()) if rs.HasField("resource") else b""
        tail = _field(3, rs.schema_url.encode()) if rs.schema_url else b""
        groups: dict[bytes, list[bytes]] = {}
        counts: dict[bytes, int] = {}
        roots: set[bytes] = set()
        for ss in rs.scope_spans:
            scope = _field(1, ss.scope.SerializeToString()) if ss.HasField("scope") else b""
            scope_tail = _field(3, ss.schema_url.encode()) if ss.schema_url else b""
            per_trace: dict[bytes, list[bytes]] = {}
            for span in ss.spans:
                tid = span.trace_id
                sid = span.span_id
                pid = span.parent_span_id
                if len(tid) != 16 or tid == _ZERO_TRACE:
                    out.rejected += 1
                    if len(reasons) < _REASONS:
                        reasons.append(
                            f"span {sid.hex()!r}: invalid trace_id {tid.hex()!r} "
                            "(must be 16 bytes, not all zero)"
                        )
                    continue
                if len(sid) != 8 or sid == _ZERO_SPAN or len(pid) not in (0, 8):
                    out.rejected += 1
                    if len(reasons) < _REASONS:
                        reasons.append(
                            f"trace {tid.hex()}: invalid span_id {sid.hex()!r} or "
                            f"parent_span_id {pid.hex()!r} (must be 8 bytes, span_id not all zero)"
                        )
                    continue
                if not pid:
                    roots.add(tid)
                framed = _field(2, span.SerializeToString())
                bucket = per_trace.get(tid)
                if bucket is None:
                    per_trace[tid] = [framed]
                else:
                    bucket.append(framed)
            for tid, spans in per_trace.items():
                body = scope + b"".join(spans) + scope_tail
                groups.setdefault(tid, []).append(_field(2, body))
                counts[tid] = counts.get(tid, 0) + len(spans)
        for tid, parts in groups.items():
            data = head + b"".join(parts) + tail
            out.fragments.append(TraceFragment(tid, data, counts[tid], tid in roots))
            out.accepted += counts[tid]
    if out.rejected:
        more = "" if out.rejected <= len(reasons) else f" (and {out.rejected - len(reasons)} more)"
        out.error_message = "; ".join(reasons) + more
    return out


def _single_trace(rs: ResourceSpans) -> tuple[bytes, int, bool] | None:
    """The usual case, one valid trace per ``ResourceSpans`` (what an SDK exporter sends
    for one trace): its trace id, span count and root flag, so the whole message serializes
    as the fragment in one call. None when the general split is needed."""
    tid = b""
    count = 0
    root = False
    for ss in rs.scope_spans:
        if not ss.spans:
            return None  # the general path drops scopes with no spans
        for span in ss.spans:
            t = span.trace_id
            if not tid:  # the first span: its id must be valid (an empty one equals b"")
                if len(t) != 16 or t == _ZERO_TRACE:
                    return None
                tid = t
            elif t != tid:
                return None
            sid = span.span_id
            pid = span.parent_span_id
            if len(sid) != 8 or sid == _ZERO_SPAN:
                return None
            if not pid:
                root = True
            elif len(pid) != 8:
                return None
            count += 1
    if not count:
        return None
    return tid, count, root


def fragment_info(data: bytes) -> TraceFragment:
    """Re-derive a stored fragment's trace id, span count and root flag (disk replay)."""
    rs = ResourceSpans.FromString(data)
    tid = b""
    count = 0
    root = False
    for ss in rs.scope_spans:
        for span in ss.spans:
            tid = span.trace_id
            count += 1
            root = root or not span.parent_span_id
    return TraceFragment(tid, data, count, root)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        bits = n & 0x7F
        n >>= 7
        if n:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return bytes(((number << 3) | 2,)) + _varint(len(payload)) + payload


length_delimited = _field
"""Public name of ``_field`` for the stamper (which appends serialized span fields)."""


def frame(fragment: bytes) -> bytes:
    """Frame one serialized ``ResourceSpans`` as field 1 of ``ExportTraceServiceRequest``."""
    return b"\x0a" + _varint(len(fragment)) + fragment


def to_records(fragments: Iterable[ResourceSpans]) -> list[SpanRecord]:
    """Decode parsed fragments to ``SpanRecord``s with the shared decoder (same as offline)."""
    out: list[SpanRecord] = []
    for rs in fragments:
        out.extend(spans_from_resource_spans(rs))
    return out


def response_bytes(rejected: int = 0, message: str = "") -> bytes:
    """A serialized ``ExportTraceServiceResponse`` (with partial success when rejecting)."""
    if not rejected and not message:
        return ExportTraceServiceResponse().SerializeToString()
    ps = ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
    return ExportTraceServiceResponse(partial_success=ps).SerializeToString()


def status_bytes(code: int, message: str, retry_after_s: float | None = None) -> bytes:
    """A serialized ``google.rpc.Status`` (``RetryInfo`` detail when throttling)."""
    status = status_pb2.Status(code=code, message=message)
    if retry_after_s is not None:
        info = error_details_pb2.RetryInfo()
        info.retry_delay.FromNanoseconds(int(retry_after_s * 1e9))
        status.details.add().Pack(info)
    out: bytes = status.SerializeToString()
    return out


def retry_delay_from_status(data: bytes) -> float | None:
    """The ``RetryInfo`` delay in a serialized ``google.rpc.Status``, if any."""
    try:
        status = status_pb2.Status.FromString(data)
    except DecodeError:
        return None
    for detail in status.details:
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return float(info.retry_delay.ToNanoseconds()) / 1e9
    return None
