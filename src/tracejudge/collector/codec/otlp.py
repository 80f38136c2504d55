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

from tracejudge.model.spans import SpanRecord
from tracejudge.otlp.records import spans_from_resource_spans

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_EMPTY = b"\x0a\x00"
"""An empty ``ResourceSpans`` entry of a request (field 1, length 0)."""
_EMPTY_RUN = _EMPTY * 2048
_REASONS = 3
"""Rejection reasons quoted in a partial-success message (the rest are counted)."""


@dataclass(slots=True)
class TraceFragment:
    """The spans of one trace from one ``ResourceSpans`` of one request."""

    trace_id: bytes
    data: bytes
    spans: int
    has_root: bool


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may bring, enforced while it is split: spans beyond either limit
    are refused with OTLP partial success, the message naming the limit. One request could
    otherwise fill the whole buffer (``max_traces``) or bring a trace far past
    ``max_spans_per_trace`` that had to be judged whole."""

    max_traces: int = 1 << 62
    """Distinct traces (``max_traces_per_request``); spans of later traces are refused."""
    max_spans_per_trace: int = 1 << 62
    """Spans of one trace (``max_spans_per_trace``); a trace's later spans are refused."""
    traces_name: str = "max_traces_per_request"
    """The setting ``max_traces`` comes from, named in the refusal."""


NO_LIMITS = RequestLimits()

TRACES_LIMIT = "max_traces_per_request"
SPANS_LIMIT = "max_spans_per_trace"


@dataclass(slots=True)
class SplitResult:
    """A request split per trace, with the spans refused and why."""

    fragments: list[TraceFragment] = field(default_factory=list)
    accepted: int = 0
    rejected: int = 0
    error_message: str = ""
    over_limit: dict[str, int] = field(default_factory=dict)
    """Spans refused by each per-request limit (``TRACES_LIMIT``, ``SPANS_LIMIT``)."""


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
    limits: RequestLimits = NO_LIMITS,
) -> SplitResult:
    """Group valid spans by trace id; spans with invalid ids are rejected (partial success),
    and so are spans beyond ``limits``.

    ``decode_rejects`` are the reasons for spans the decoder already left out (OTLP/JSON
    spans it could not convert); they count as rejected and lead the error message.

    Fragments are assembled as bytes (each span serialized once, then framed into its
    ``ScopeSpans`` and ``ResourceSpans``), which is several times faster than building new
    protobuf messages and copying spans into them. ``raw``, the request's own bytes, lets a
    ``ResourceSpans`` that holds one trace be buffered as received, with no serializing.
    """
    splitter = _Splitter(limits, decode_rejects)
    slices = resource_spans_slices(raw) if raw is not None else None
    if slices is not None and len(slices) != len(request.resource_spans):
        slices = None
    for i, rs in enumerate(request.resource_spans):
        splitter.add(rs, slices[i] if slices is not None else None)
    return splitter.result()


def split_body(data: bytes, limits: RequestLimits = NO_LIMITS) -> SplitResult:
    """``split_by_trace`` of a protobuf body, one ``ResourceSpans`` at a time: raises
    ``ValueError`` (with ``parse_request``'s reason) when the body is undecodable.

    Parsing the whole request at once cost memory per ``ResourceSpans``, empty or not: a
    4 MB body of 2 million empty ones took 120 MB parsed and 600 MB split, for no span
    at all. Here the body's top-level fields are walked; each ``ResourceSpans`` is parsed
    framed as a request of its own (so nesting limits count exactly as in the whole
    request), split, and let go; an empty one costs nothing but its two bytes. Unknown
    top-level fields are skipped, as a parser does; a body the walk cannot follow (a
    deprecated group field) is parsed whole, as before.
    """
    splitter = _Splitter(limits, ())
    view = memoryview(data)
    end = len(data)
    pos = 0
    while pos < end:
        if data.startswith(_EMPTY_RUN, pos):
            # Empty ``ResourceSpans`` (2 bytes each) skipped a few thousand at a time.
            pos += len(_EMPTY_RUN)
            continue
        if data.startswith(_EMPTY, pos):
            pos += 2
            continue
        start = pos
        key, pos = _read_varint(data, pos, end)
        number = key >> 3
        wire = key & 7
        if number == 0:
            return split_by_trace(parse_request(data), data, (), limits)
        if wire == 2:
            size, pos = _read_varint(data, pos, end)
            if pos + size > end:
                parse_request(data)  # raises with the parser's own reason
                raise ValueError("undecodable ExportTraceServiceRequest: truncated message")
            if number == 1 and size:
                entry = view[start : pos + size]
                try:
                    one = ExportTraceServiceRequest.FromString(entry)  # type: ignore[arg-type]
                except DecodeError as exc:
                    raise ValueError(f"undecodable ExportTraceServiceRequest: {exc}") from exc
                splitter.add(one.resource_spans[0], view[pos : pos + size])
                del one
            pos += size
        elif wire == 0:
            pos = _read_varint(data, pos, end)[1]
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:  # groups: rare enough to parse the whole body the ordinary way
            return split_by_trace(parse_request(data), data, (), limits)
        if pos > end:
            parse_request(data)
            raise ValueError("undecodable ExportTraceServiceRequest: truncated message")
    return splitter.result()


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; ``ValueError`` when malformed."""
    value = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("undecodable ExportTraceServiceRequest: truncated or bad varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


class _Splitter:
    """``split_by_trace``'s state over one request: fragments, refusals and, per trace,
    the spans accepted so far (the per-request limits)."""

    def __init__(self, limits: RequestLimits, decode_rejects: Sequence[str]) -> None:
        self.limits = limits
        self.out = SplitResult()
        self.reasons: list[str] = list(decode_rejects[:_REASONS])
        self.out.rejected = len(decode_rejects)
        self.spans_of: dict[bytes, int] = {}
        """Spans accepted so far per trace in this request."""
        self.over_traces: dict[str, set[bytes]] = {}
        """Traces that had spans refused, per limit."""

    def add(self, rs: ResourceSpans, raw: memoryview | None) -> None:
        """Split one ``ResourceSpans`` (``raw``: its own bytes, when known)."""
        whole = _single_trace(rs)
        if whole is not None:
            tid, count, has_root = whole
            have = self.spans_of.get(tid)
            if have is None and len(self.spans_of) >= self.limits.max_traces:
                self._over(TRACES_LIMIT, tid, count)
                return
            have = have or 0
            if have + count <= self.limits.max_spans_per_trace:
                self.spans_of[tid] = have + count
                data = bytes(raw) if raw is not None else rs.SerializeToString()
                self.out.fragments.append(TraceFragment(tid, data, count, has_root))
                self.out.accepted += count
                return
            # Over the span limit: the general split below keeps the trace's first spans.
        self._general(rs)

    def _general(self, rs: ResourceSpans) -> None:
        out = self.out
        reasons = self.reasons
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
                if not self._admit(tid):
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

    def _admit(self, tid: bytes) -> bool:
        """Count one valid span of ``tid`` against the limits; False when refused."""
        have = self.spans_of.get(tid)
        if have is None:
            if len(self.spans_of) >= self.limits.max_traces:
                self._over(TRACES_LIMIT, tid, 1)
                return False
            have = 0
        if have >= self.limits.max_spans_per_trace:
            self._over(SPANS_LIMIT, tid, 1)
            return False
        self.spans_of[tid] = have + 1
        return True

    def _over(self, limit: str, tid: bytes, spans: int) -> None:
        self.out.rejected += spans
        self.out.over_limit[limit] = self.out.over_limit.get(limit, 0) + spans
        self.over_traces.setdefault(limit, set()).add(tid)

    def result(self) -> SplitResult:
        """The split, with the partial-success message: the limits that refused spans
        first (always named), then the first reasons of the spans refused one by one."""
        out = self.out
        if not out.rejected:
            return out
        parts: list[str] = []
        n = out.over_limit.get(TRACES_LIMIT, 0)
        if n:
            traces = len(self.over_traces[TRACES_LIMIT])
            parts.append(
                f"{n} spans of {traces} traces refused: the request holds more than "
                f"{self.limits.traces_name} ({self.limits.max_traces}) traces"
            )
        n = out.over_limit.get(SPANS_LIMIT, 0)
        if n:
            traces = len(self.over_traces[SPANS_LIMIT])
            parts.append(
                f"{n} spans refused: {traces} traces of the request hold more than "
                f"{SPANS_LIMIT} ({self.limits.max_spans_per_trace}) spans"
            )
        reasons = self.reasons
        others = out.rejected - sum(out.over_limit.values())
        parts.extend(reasons)
        more = "" if others <= len(reasons) else f" (and {others - len(reasons)} more)"
        out.error_message = "; ".join(parts) + more
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
