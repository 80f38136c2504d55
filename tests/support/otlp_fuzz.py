"""A corpus of malformed OTLP requests, generated from the reference payload with a fixed seed.

Why a checked-in corpus rather than random inputs at test time: a failure names an entry that
anyone can replay byte for byte, and the suite sends the same requests on every run. Why a
seeded generator rather than ``hypothesis``: the inputs worth sending are a few hundred
requests over one known payload (truncations, bit flips, hand-made varints, nesting,
encodings), which ``random.Random(SEED)`` covers without a new dependency; shrinking would buy
little when every entry is already small and named.

Every entry starts from ``tests/fixtures/otlp/trace.json`` (opentelemetry-proto's example,
Apache-2.0): that document itself, its protobuf encoding, and a richer variant with a root span,
events, a link and every ``AnyValue`` kind. Hand-made entries cover each class of bad input;
seeded mutations (truncation, bit flips, byte insertions/deletions, chunk duplication,
character edits of the JSON) cover what nobody thought of.

Regenerate with ``.venv/bin/python -m tests.support.otlp_fuzz`` (writes ``CORPUS``);
``tests/collector/test_collector_fuzz.py`` checks the file matches what this module generates.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.support.paths import FIXTURES, OTLP_REFERENCE
from tracejudge import semconv as sc
from tracejudge.otlp.json_traces import json_to_proto

SEED = 12
"""Issue 12, the one that asked for the corpus."""
CORPUS = FIXTURES / "fuzz" / "otlp-corpus.jsonl.gz"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

ANY = "any"
"""Whatever the collector makes of it, as long as it is an OTLP answer (no 5xx but 503)."""
OK = "ok"
"""Accepted whole: 200 / OK without rejected spans."""
PARTIAL = "partial"
"""200 / OK with ``rejected_spans`` >= 1."""
REFUSED = "refused"
"""Partial success, or the whole request refused with a 4xx / non-OK gRPC status."""
ERROR = "error"
"""The whole request refused (4xx / non-OK gRPC status)."""
EXPECTATIONS = (ANY, OK, PARTIAL, REFUSED, ERROR)


@dataclass(frozen=True)
class Entry:
    """One request of the corpus.

    ``transports``: ``http`` and/or ``grpc`` (gRPC only for protobuf bodies with no HTTP
    header tricks). ``status``: the exact HTTP status expected, where one is certain.
    """

    name: str
    body: bytes
    expect: str
    content_type: str = PROTOBUF
    headers: dict[str, str] = field(default_factory=dict)
    transports: tuple[str, ...] = ("http", "grpc")
    status: int | None = None
    method: str = "POST"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expect": self.expect,
            "content_type": self.content_type,
            "headers": self.headers,
            "transports": list(self.transports),
            "status": self.status,
            "method": self.method,
            "body_b64": base64.b64encode(self.body).decode(),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Entry:
        return cls(
            name=doc["name"],
            body=base64.b64decode(doc["body_b64"]),
            expect=doc["expect"],
            content_type=doc["content_type"],
            headers=dict(doc["headers"]),
            transports=tuple(doc["transports"]),
            status=doc["status"],
            method=doc["method"],
        )


# --- bases ------------------------------------------------------------------------------


def reference_json() -> dict[str, Any]:
    """opentelemetry-proto's example trace, as parsed JSON."""
    doc: dict[str, Any] = json.loads((OTLP_REFERENCE / "trace.json").read_text(encoding="utf-8"))
    return doc


def _reference_request() -> ExportTraceServiceRequest:
    """The reference document as protobuf (``json_format`` would read the hex ids as base64)."""
    return json_to_proto(reference_json())


_IDS = {"traceId", "spanId", "parentSpanId"}


def otlp_json(req: ExportTraceServiceRequest) -> Any:
    """A request in OTLP/JSON: the proto3 JSON mapping with ids as hex, not base64."""

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else fix(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return fix(json_format.MessageToDict(req))


def rich_request() -> ExportTraceServiceRequest:
    """The reference span plus its root (so it can be judged), with an event, a link and one
    attribute of every ``AnyValue`` kind: more structure for mutations to hit."""
    req = _reference_request()
    ss = req.resource_spans[0].scope_spans[0]
    child = ss.spans[0]
    root = ss.spans.add()
    root.CopyFrom(child)
    root.span_id = child.parent_span_id
    root.parent_span_id = b""
    root.name = "invoke_agent refund"
    root.kind = Span.SPAN_KIND_INTERNAL
    root.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
    root.attributes.add(key="gen_ai.agent.name").value.string_value = "refund"
    a = child.attributes
    a.add(key="int").value.int_value = -42
    a.add(key="double").value.double_value = 2.5
    a.add(key="bool").value.bool_value = True
    a.add(key="bytes").value.bytes_value = b"\x00\xff"
    arr = a.add(key="array").value.array_value
    arr.values.add().string_value = "x"
    arr.values.add().int_value = 7
    kv = a.add(key="kvlist").value.kvlist_value
    kv.values.add(key="inner").value.string_value = "y"
    ev = child.events.add(name="gen_ai.client.inference.operation.details")
    ev.time_unix_nano = child.start_time_unix_nano + 10
    ev.attributes.add(key="event.attr").value.string_value = "z"
    link = child.links.add(trace_id=b"\x11" * 16, span_id=b"\x22" * 8)
    link.attributes.add(key="link.attr").value.int_value = 1
    child.status.code = Status.STATUS_CODE_ERROR
    child.status.message = "failed"
    return req


def _pb(req: ExportTraceServiceRequest) -> bytes:
    out: bytes = req.SerializeToString()
    return out


def _json(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


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


def _ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field, built by hand (serializing never checks depth or UTF-8)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _request_with_span(span: bytes, resource: bytes = b"") -> bytes:
    """``ExportTraceServiceRequest{resource_spans{resource, scope_spans{spans: span}}}``."""
    scope_spans = _ld(2, span)
    rs = (_ld(1, resource) if resource else b"") + _ld(2, scope_spans)
    return _ld(1, rs)


def _span_bytes(name: bytes = b"step", extra: bytes = b"", tid: bytes = b"\x5b" * 16) -> bytes:
    return _ld(1, tid) + _ld(2, b"\x5c" * 8) + _ld(4, b"\x5d" * 8) + _ld(5, name) + extra


def _nested_value(depth: int, kind: str) -> bytes:
    """An ``AnyValue`` nested ``depth`` kvlists or arrays deep, as bytes."""
    value = _ld(1, b"x")  # string_value
    for _ in range(depth):
        if kind == "kvlist":  # AnyValue.kvlist_value(6) > KeyValueList.values(1) > KeyValue
            value = _ld(6, _ld(1, _ld(1, b"k") + _ld(2, value)))
        else:  # AnyValue.array_value(5) > ArrayValue.values(1) > AnyValue
            value = _ld(5, _ld(1, value))
    return value


def _json_nested(depth: int, kind: str) -> str:
    if kind == "kvlist":
        head = '{"kvlistValue":{"values":[{"key":"k","value":' * depth
        tail = "}]}}" * depth
    else:
        head = '{"arrayValue":{"values":[' * depth
        tail = "]}}" * depth
    return head + '{"stringValue":"x"}' + tail


# --- hand-made entries ----------------------------------------------------------------


def _protobuf_entries() -> Iterator[Entry]:
    good = _pb(rich_request())
    yield Entry("pb-reference", _pb(_reference_request()), OK)
    yield Entry("pb-rich", good, OK)
    yield Entry("pb-empty-body", b"", OK)
    yield Entry("pb-empty-resource-spans", _ld(1, b""), OK)
    # varints and lengths
    yield Entry("pb-varint-11-bytes", b"\x0a" + b"\xff" * 10 + b"\x01", ERROR)
    yield Entry("pb-varint-unterminated", b"\x0a" + b"\xff" * 5, ERROR)
    yield Entry("pb-length-negative", b"\x0a" + _varint(2**64 - 1) + good[2:], ERROR)
    yield Entry("pb-length-2^63", b"\x0a" + _varint(2**63) + b"x", ERROR)
    yield Entry("pb-length-past-end", b"\x0a" + _varint(len(good) + 10) + good, ERROR)
    yield Entry("pb-length-zero-then-garbage", b"\x0a\x00\xff\xff", ERROR)
    yield Entry("pb-tag-field-0", b"\x02\x01x" + good, ERROR)
    yield Entry("pb-tag-overlong", b"\x8a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01x", ERROR)
    yield Entry("pb-wire-type-7", b"\x0f" + good, ERROR)
    yield Entry("pb-end-group-unmatched", b"\x0c" + good, ERROR)
    yield Entry("pb-start-group-unclosed", b"\x0b" + good, ERROR)
    # wrong wire types for known fields
    yield Entry("pb-resource-spans-as-varint", b"\x08\x01" + good, ANY)
    yield Entry("pb-resource-spans-as-fixed64", b"\x09" + b"\0" * 8, ANY)
    yield Entry("pb-trace-id-as-varint", _request_with_span(b"\x08\x05" + _ld(2, b"\1" * 8)), ANY)
    yield Entry("pb-span-name-as-fixed32", _request_with_span(_span_bytes() + b"\x2d\0\0\0\0"), ANY)
    yield Entry(
        "pb-kind-huge-varint", _request_with_span(_span_bytes() + b"\x30" + _varint(2**63)), ANY
    )
    yield Entry(
        "pb-kind-negative", _request_with_span(_span_bytes() + b"\x30" + _varint(2**64 - 5)), OK
    )
    yield Entry(
        "pb-unknown-fields",
        _request_with_span(_span_bytes() + _ld(99, b"junk") + b"\xa0\x06\x01"),
        OK,
    )
    yield Entry(
        "pb-status-code-unknown", _request_with_span(_span_bytes() + _ld(15, b"\x18\x63")), OK
    )
    # invalid UTF-8 in proto3 strings (decoders must refuse it)
    for where, span in [
        ("name", _span_bytes(name=b"bad\xff\xfename")),
        ("attr-key", _span_bytes(extra=_ld(9, _ld(1, b"k\xc3") + _ld(2, _ld(1, b"v"))))),
        ("attr-value", _span_bytes(extra=_ld(9, _ld(1, b"k") + _ld(2, _ld(1, b"\xed\xa0\x80"))))),
        ("overlong", _span_bytes(name=b"\xc0\xaf")),
    ]:
        yield Entry(f"pb-invalid-utf8-{where}", _request_with_span(span), ERROR)
    yield Entry(
        "pb-invalid-utf8-resource",
        _request_with_span(_span_bytes(), _ld(1, _ld(1, b"\xff") + _ld(2, _ld(1, b"v")))),
        ERROR,
    )
    # identities (partial success)
    for label, tid, sid, pid in [
        ("empty-trace-id", b"", b"\x01" * 8, b""),
        ("short-trace-id", b"\x01" * 15, b"\x01" * 8, b""),
        ("long-trace-id", b"\x01" * 17, b"\x01" * 8, b""),
        ("zero-trace-id", bytes(16), b"\x01" * 8, b""),
        ("empty-span-id", b"\x01" * 16, b"", b""),
        ("short-span-id", b"\x01" * 16, b"\x01" * 7, b""),
        ("zero-span-id", b"\x01" * 16, bytes(8), b""),
        ("long-parent-id", b"\x01" * 16, b"\x01" * 8, b"\x02" * 9),
    ]:
        req = rich_request()
        bad = req.resource_spans[0].scope_spans[0].spans.add(name="bad")
        bad.trace_id, bad.span_id, bad.parent_span_id = tid, sid, pid
        yield Entry(f"pb-{label}", _pb(req), PARTIAL)
        alone = ExportTraceServiceRequest()
        alone.resource_spans.add().scope_spans.add().spans.add().CopyFrom(bad)
        yield Entry(f"pb-{label}-alone", _pb(alone), PARTIAL)
    # duplicates
    req = rich_request()
    spans = req.resource_spans[0].scope_spans[0].spans
    spans.add().CopyFrom(spans[0])
    yield Entry("pb-duplicated-span", _pb(req), OK)
    req = rich_request()
    req.resource_spans.add().CopyFrom(req.resource_spans[0])
    yield Entry("pb-duplicated-resource-spans", _pb(req), OK)
    yield Entry("pb-concatenated-twice", good + good, OK)
    # nesting past upb's limit (100 message levels; the span's AnyValue sits at level 6)
    for kind in ("kvlist", "array"):
        for depth in (10, 31, 32, 40, 47, 48, 64, 200, 2000):
            value = _nested_value(depth, kind)
            span = _span_bytes(extra=_ld(9, _ld(1, b"deep") + _ld(2, value)))
            fits = depth * (3 if kind == "kvlist" else 2) + 6 <= 100
            yield Entry(f"pb-deep-{kind}-{depth}", _request_with_span(span), OK if fits else ERROR)
    # sizes (max_request_bytes is 4 MiB by default)
    req = rich_request()
    req.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="big").value.string_value = (
        "a" * (1 << 20)
    )
    yield Entry("pb-string-1MiB", _pb(req), OK)
    req.resource_spans[0].scope_spans[0].spans[0].attributes.add(
        key="bigger"
    ).value.string_value = "b" * (5 << 20)
    yield Entry("pb-string-6MiB", _pb(req), ERROR, status=413)
    req = rich_request()
    target = req.resource_spans[0].scope_spans[0].spans[0]
    for i in range(20_000):
        target.attributes.add(key=f"k{i}").value.int_value = i
    yield Entry("pb-20k-attributes", _pb(req), OK)
    yield Entry("pb-1MiB-zeros", bytes(1 << 20), ERROR)
    yield Entry("pb-json-body", _json(reference_json()), ERROR)


def _json_entries() -> Iterator[Entry]:
    def j(name: str, doc: Any, expect: str, status: int | None = None) -> Entry:
        body = doc if isinstance(doc, bytes) else _json(doc)
        return Entry(name, body, expect, JSON, transports=("http",), status=status)

    ref = reference_json()
    yield j("json-reference", ref, OK)
    yield j("json-rich", otlp_json(rich_request()), OK)
    yield j("json-empty-object", {}, OK)
    yield j("json-empty-body", b"", ERROR, 400)
    yield j("json-top-level-array", [ref], ERROR, 400)
    yield j("json-top-level-string", "resourceSpans", ERROR, 400)
    yield j("json-null", None, ANY)
    yield j("json-resource-spans-object", {"resourceSpans": {"a": 1}}, ERROR, 400)
    yield j("json-resource-spans-null", {"resourceSpans": None}, OK)
    yield j("json-trailing-garbage", _json(ref) + b"}}", ERROR, 400)
    yield j(
        "json-invalid-utf8", _json(ref).replace(b"my.service", b"my.\xff\xfeservice"), ERROR, 400
    )
    yield j("json-lone-surrogate", _json(ref).replace(b"my.service", b"my.\\ud800service"), ANY)
    # json.loads reads UTF-16/32 with a BOM as RFC 4627 allowed; accepted, decoded right
    yield j("json-utf16-bom", b"\xff\xfe" + _json(ref).decode().encode("utf-16-le"), OK)
    yield j("json-deep-array-10000", b"[" * 10_000 + b"]" * 10_000, ERROR, 400)
    yield j(
        "json-big-int", _json(ref).replace(b'"1544712660000000000"', b"1" + b"0" * 400), REFUSED
    )

    def span_with(changes: dict[str, Any]) -> dict[str, Any]:
        doc = copy.deepcopy(ref)
        span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        for key, value in changes.items():
            if value is _DELETE:
                span.pop(key, None)
            else:
                span[key] = value
        return doc

    refused: list[tuple[str, dict[str, Any]]] = [
        ("trace-id-number", {"traceId": 12345}),
        ("trace-id-bad-hex", {"traceId": "zz" * 16}),
        ("trace-id-base64", {"traceId": "W47/95gDgQPSabYzgT/GDA=="}),
        ("trace-id-short", {"traceId": "5B8EFFF7"}),
        ("trace-id-long", {"traceId": "5B8EFFF798038103D269B633813FC60C00"}),
        ("trace-id-spaces", {"traceId": "5B8EFFF798038103 D269B633813FC60"}),
        ("trace-id-empty", {"traceId": ""}),
        ("trace-id-missing", {"traceId": _DELETE}),
        ("trace-id-zero", {"traceId": "0" * 32}),
        ("span-id-base64", {"spanId": "7uGbfsPBsXQ="}),
        ("span-id-empty", {"spanId": ""}),
        ("span-id-list", {"spanId": ["EEE19B7EC3C1B174"]}),
        ("parent-id-short", {"parentSpanId": "EEE1"}),
        ("parent-id-bad-hex", {"parentSpanId": "GGGGGGGGGGGGGGGG"}),
        ("name-number", {"name": 7}),
        ("kind-bogus", {"kind": "SPAN_KIND_BOGUS"}),
        ("kind-float", {"kind": 2.5}),
        ("kind-huge", {"kind": 2**40}),
        ("start-negative", {"startTimeUnixNano": "-5"}),
        ("start-not-a-number", {"startTimeUnixNano": "soon"}),
        ("start-object", {"startTimeUnixNano": {"n": 1}}),
        ("start-2^64", {"startTimeUnixNano": str(2**64)}),
        ("end-bool", {"endTimeUnixNano": True}),
        ("start-fractional-float", {"startTimeUnixNano": 1.5}),
        ("attributes-string", {"attributes": "k=v"}),
        ("attributes-object", {"attributes": {"key": "k"}}),
        ("attribute-no-key", {"attributes": [{"value": {"stringValue": "v"}}]}),
        ("attribute-key-number", {"attributes": [{"key": 1, "value": {"stringValue": "v"}}]}),
        ("attribute-value-string", {"attributes": [{"key": "k", "value": "v"}]}),
        ("int-value-word", {"attributes": [{"key": "k", "value": {"intValue": "abc"}}]}),
        ("int-value-float", {"attributes": [{"key": "k", "value": {"intValue": 1.5}}]}),
        ("int-value-2^63", {"attributes": [{"key": "k", "value": {"intValue": str(2**63)}}]}),
        ("bool-value-string", {"attributes": [{"key": "k", "value": {"boolValue": "yes"}}]}),
        ("double-value-word", {"attributes": [{"key": "k", "value": {"doubleValue": "lots"}}]}),
        ("bytes-value-not-base64", {"attributes": [{"key": "k", "value": {"bytesValue": "%%%"}}]}),
        ("array-value-string", {"attributes": [{"key": "k", "value": {"arrayValue": "[]"}}]}),
        (
            "kvlist-values-number",
            {"attributes": [{"key": "k", "value": {"kvlistValue": {"values": 3}}}]},
        ),
        ("events-object", {"events": {"name": "e"}}),
        ("event-time-word", {"events": [{"name": "e", "timeUnixNano": "later"}]}),
        ("links-bad-trace-id", {"links": [{"traceId": "xyz", "spanId": "EEE19B7EC3C1B174"}]}),
        ("status-string", {"status": "ERROR"}),
        ("status-code-bogus", {"status": {"code": "STATUS_CODE_MAYBE"}}),
    ]
    for label, changes in refused:
        yield j(f"json-{label}", span_with(changes), REFUSED)
    accepted: list[tuple[str, dict[str, Any]]] = [
        ("double-nan", {"attributes": [{"key": "k", "value": {"doubleValue": "NaN"}}]}),
        ("double-infinity", {"attributes": [{"key": "k", "value": {"doubleValue": "-Infinity"}}]}),
        (
            "snake-case-keys",
            {
                "trace_id": ref["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"],
                "traceId": _DELETE,
            },
        ),
        ("lowercase-hex", {"traceId": "5b8efff798038103d269b633813fc60c"}),
        ("unknown-field", {"somethingNew": {"a": [1, 2]}}),
        ("kind-name", {"kind": "SPAN_KIND_SERVER"}),
        ("start-integral-float", {"startTimeUnixNano": 1.5e18}),
        ("empty-value", {"attributes": [{"key": "k", "value": {}}]}),
    ]
    for label, changes in accepted:
        yield j(f"json-{label}", span_with(changes), OK)
    for label, value in [
        ("resource-attrs-string", {"resource": {"attributes": "x"}}),
        ("scope-spans-number", {"scopeSpans": 5}),
        ("scope-name-list", {"scopeSpans": [{"scope": {"name": []}, "spans": []}]}),
    ]:
        doc = copy.deepcopy(ref)
        doc["resourceSpans"][0].update(value)
        yield j(f"json-{label}", doc, ERROR, 400)
    # duplicates, ids mixed with good spans
    doc = copy.deepcopy(ref)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append(copy.deepcopy(spans[0]))
    yield j("json-duplicated-span", doc, OK)
    doc = copy.deepcopy(ref)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**copy.deepcopy(spans[0]), "spanId": "not-hex!!", "name": "bad"})
    spans.append({**copy.deepcopy(spans[0]), "spanId": "EEE19B7EC3C1B175", "name": "good"})
    yield j("json-one-bad-id-among-good", doc, PARTIAL)
    # nesting
    for kind in ("kvlist", "array"):
        for depth in (10, 31, 32, 47, 48, 200, 5000):
            text = _json(ref).decode()
            deep = f'"attributes":[{{"key":"deep","value":{_json_nested(depth, kind)}}}]'
            text = text.replace('"attributes":[{"key":"my.span.attr"', deep + ',"x":[{"key":"a"', 1)
            # the span's AnyValue is message level 6 of 100; an array level costs 2 more,
            # a kvlist level 3
            expect = OK if depth * (3 if kind == "kvlist" else 2) + 6 <= 100 else REFUSED
            yield j(f"json-deep-{kind}-{depth}", text.encode(), expect)
    # huge strings
    doc = span_with({"name": "n" * (3 << 20)})
    yield j("json-name-3MiB", doc, OK)
    doc = span_with({"attributes": [{"key": "k", "value": {"stringValue": "v" * (5 << 20)}}]})
    yield j("json-string-5MiB", doc, ERROR, 413)
    yield j(
        "json-escapes-1MiB",
        _json(span_with({"name": "\\u0000"})).replace(b"\\\\u0000", b"\\u0000" * (1 << 17)),
        ANY,
    )


def _semantic_entries() -> Iterator[Entry]:
    """Well-formed OTLP whose GenAI attributes have the wrong types or broken content: the
    collector must accept them (they are valid OTLP) and judge them without failing (an
    evidence verdict at worst), so ``decision_errors`` stays 0. One trace per entry: a root
    ``invoke_agent refund``, a ``chat`` call and an ``execute_tool`` of the refund API."""

    def value(v: Any, out: Any) -> None:
        if isinstance(v, bool):
            out.bool_value = v
        elif isinstance(v, int):
            out.int_value = v
        elif isinstance(v, float):
            out.double_value = v
        elif isinstance(v, bytes):
            out.bytes_value = v
        elif isinstance(v, list):
            for x in v:
                value(x, out.array_value.values.add())
        elif isinstance(v, dict):
            for k, x in v.items():
                value(x, out.kvlist_value.values.add(key=k).value)
        else:
            out.string_value = v

    cases: list[tuple[str, str, Any]] = [
        ("root", sc.GEN_AI_OPERATION_NAME, 7),
        ("root", sc.GEN_AI_AGENT_NAME, ["refund", "other"]),
        ("root", sc.GEN_AI_CONVERSATION_ID, {"id": 1}),
        ("chat", sc.GEN_AI_USAGE_INPUT_TOKENS, "many"),
        ("chat", sc.GEN_AI_USAGE_OUTPUT_TOKENS, -(2**63)),
        ("chat", sc.GEN_AI_USAGE_INPUT_TOKENS, 2.5e300),
        ("chat", sc.GEN_AI_REQUEST_MODEL, b"\x00\xff"),
        ("chat", sc.GEN_AI_INPUT_MESSAGES, "[{not json"),
        ("chat", sc.GEN_AI_INPUT_MESSAGES, '{"role": "user"}'),
        ("chat", sc.GEN_AI_INPUT_MESSAGES, '[{"role": 5, "parts": "x"}]'),
        (
            "chat",
            sc.GEN_AI_OUTPUT_MESSAGES,
            '[{"role":"assistant","parts":[{"type":"tool_call","id":null,"name":[],"arguments":"{"}]}]',
        ),
        ("chat", sc.GEN_AI_OUTPUT_MESSAGES, "[" * 5000 + "]" * 5000),
        ("chat", sc.GEN_AI_OUTPUT_MESSAGES, [{"role": "assistant"}]),
        ("chat", sc.GEN_AI_RESPONSE_FINISH_REASONS, "stop"),
        ("chat", sc.GEN_AI_REQUEST_TEMPERATURE, "hot"),
        ("tool", sc.GEN_AI_TOOL_NAME, 42),
        ("tool", sc.GEN_AI_TOOL_CALL_ARGUMENTS, "{'order_id': broken"),
        ("tool", sc.GEN_AI_TOOL_CALL_ARGUMENTS, {"order_id": {"nested": [1, 2]}}),
        ("tool", sc.GEN_AI_TOOL_CALL_ARGUMENTS, '{"order_id": ' + "[" * 3000 + "]" * 3000 + "}"),
        ("tool", sc.GEN_AI_TOOL_CALL_RESULT, '{"status": 12345678901234567890123}'),
        ("tool", sc.GEN_AI_TOOL_CALL_RESULT, '"re_' + "x" * 100_000 + '"'),
        ("tool", sc.GEN_AI_TOOL_CALL_ID, True),
        ("tool", sc.TRACEJUDGE_TOOL_EFFECT, ["write"]),
        ("tool", sc.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY, 3.5),
        ("root", sc.TRACEJUDGE_VERDICT, "pass"),  # a forged verdict on input
        ("root", sc.TRACEJUDGE_TENANT_ID, {"a": [{"b": b"c"}]}),
    ]
    base = _reference_request()
    for n, (where, key, bad) in enumerate(cases):
        req = ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        rs.resource.CopyFrom(base.resource_spans[0].resource)
        ss = rs.scope_spans.add()
        tid = bytes([0xA0, n]) + b"\x5e" * 14
        root = ss.spans.add(
            trace_id=tid, span_id=bytes([0xB0, n]) + b"\x01" * 6, name="invoke_agent refund"
        )
        chat = ss.spans.add(
            trace_id=tid, span_id=bytes([0xB1, n]) + b"\x01" * 6, name="chat gpt-4o"
        )
        tool = ss.spans.add(
            trace_id=tid,
            span_id=bytes([0xB2, n]) + b"\x01" * 6,
            name="execute_tool refund_api.create",
        )
        chat.parent_span_id = tool.parent_span_id = root.span_id
        for i, span in enumerate((root, chat, tool)):
            span.start_time_unix_nano = 1_544_712_660_000_000_000 + i
            span.end_time_unix_nano = span.start_time_unix_nano + 1000
        good = {
            "root": {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "refund"},
            "chat": {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_REQUEST_MODEL: "gpt-4o"},
            "tool": {
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                sc.GEN_AI_TOOL_NAME: "refund_api.create",
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"order_id": "o1"}',
                sc.GEN_AI_TOOL_CALL_RESULT: '{"status": "succeeded"}',
            },
        }
        for label, span in (("root", root), ("chat", chat), ("tool", tool)):
            attrs = dict(good[label])
            if label == where:
                attrs[key] = bad
            for k, v in attrs.items():
                value(v, span.attributes.add(key=k).value)
        yield Entry(f"genai-{where}-{key}-{n}", _pb(req), OK)


class _Delete:
    pass


_DELETE = _Delete()


def _http_entries() -> Iterator[Entry]:
    good = _pb(rich_request())
    ref = _json(reference_json())

    def h(
        name: str,
        body: bytes,
        expect: str,
        status: int | None,
        ctype: str = PROTOBUF,
        **headers: str,
    ) -> Entry:
        hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
        return Entry(name, body, expect, ctype, hdrs, ("http",), status)

    bomb = gzip.compress(bytes(64 << 20), 9, mtime=0)
    yield h("gzip-bomb-64MiB", bomb, ERROR, 413, Content_Encoding="gzip")
    yield h("gzip-bomb-json", bomb, ERROR, 413, JSON, Content_Encoding="gzip")
    yield h(
        "gzip-double",
        gzip.compress(gzip.compress(good, mtime=0), mtime=0),
        ERROR,
        400,
        Content_Encoding="gzip",
    )
    yield h("gzip-valid", gzip.compress(good, mtime=0), OK, 200, Content_Encoding="gzip")
    yield h("gzip-valid-json", gzip.compress(ref, mtime=0), OK, 200, JSON, Content_Encoding="gzip")
    yield h("gzip-uppercase", gzip.compress(good, mtime=0), OK, 200, Content_Encoding="GZIP")
    yield h(
        "gzip-truncated", gzip.compress(good, mtime=0)[:-9], ERROR, 400, Content_Encoding="gzip"
    )
    yield h(
        "gzip-bad-crc",
        gzip.compress(good, mtime=0)[:-8] + b"\0" * 8,
        ERROR,
        400,
        Content_Encoding="gzip",
    )
    yield h(
        "gzip-trailing-garbage",
        gzip.compress(good, mtime=0) + b"garbage",
        ERROR,
        400,
        Content_Encoding="gzip",
    )
    yield h("gzip-two-members", gzip.compress(good, mtime=0) * 2, OK, 200, Content_Encoding="gzip")
    yield h("gzip-not-gzip", good, ERROR, 400, Content_Encoding="gzip")
    yield h("gzip-empty", b"", ERROR, 400, Content_Encoding="gzip")
    yield h(
        "gzip-header-only",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff",
        ERROR,
        400,
        Content_Encoding="gzip",
    )
    yield h("gzip-body-without-header", gzip.compress(good, mtime=0), ERROR, 400)
    for enc in ("deflate", "br", "zstd", "gzip, gzip", "x-gzip", "compress"):
        yield h(f"encoding-{enc.replace(', ', '-')}", good, ERROR, 415, Content_Encoding=enc)
    for ctype in (
        "text/plain",
        "application/protobuf",
        "application/grpc",
        "multipart/form-data",
        "application/x-www-form-urlencoded",
    ):
        yield h(f"content-type-{ctype.replace('/', '-')}", good, ERROR, 415, ctype)
    yield h("content-type-json-charset", ref, OK, 200, "application/json; charset=utf-8")
    yield h("content-type-protobuf-params", good, OK, 200, "application/x-protobuf; proto=x")
    yield h("content-type-uppercase", good, OK, 200, "Application/X-Protobuf")
    yield h("content-type-json-body-protobuf", good, ERROR, 400, JSON)
    yield Entry("method-put", good, ERROR, PROTOBUF, {}, ("http",), 405, "PUT")
    yield Entry("method-get", b"", ERROR, PROTOBUF, {}, ("http",), 405, "GET")


# --- seeded mutations -----------------------------------------------------------------


def _mutations(rng: random.Random) -> Iterator[Entry]:
    bases = {"ref": _pb(_reference_request()), "rich": _pb(rich_request())}
    for label, base in bases.items():
        for i in range(20):
            cut = rng.randrange(1, len(base))
            yield Entry(f"mut-pb-{label}-truncate-{i}-at-{cut}", base[:cut], ANY)
        for i in range(40):
            data = bytearray(base)
            for _ in range(rng.randint(1, 8)):
                bit = rng.randrange(len(data) * 8)
                data[bit // 8] ^= 1 << (bit % 8)
            yield Entry(f"mut-pb-{label}-bitflip-{i}", bytes(data), ANY)
        for i in range(15):
            data = bytearray(base)
            at = rng.randrange(len(data))
            op = rng.choice(("insert", "delete", "duplicate", "byte"))
            if op == "insert":
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            elif op == "delete":
                del data[at : at + rng.randint(1, 6)]
            elif op == "duplicate":
                data[at:at] = data[at : at + rng.randint(2, 40)]
            else:
                data[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF))
            yield Entry(f"mut-pb-{label}-{op}-{i}", bytes(data), ANY)
        for i in range(5):  # a field's declared length off by a little
            data = bytearray(base)
            at = rng.randrange(1, len(data))
            data[at] = (data[at] + rng.choice((-2, -1, 1, 2))) % 256
            yield Entry(f"mut-pb-{label}-nudge-{i}", bytes(data), ANY)
    text = _json(otlp_json(rich_request())).decode()
    alphabet = '{}[]":,0123456789abcdefABCDEF-.eE \\ntruefalsnul'
    for i in range(40):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(chars))
            edit = rng.randrange(3)
            if edit == 0:
                del chars[at]
            elif edit == 1:
                chars.insert(at, rng.choice(alphabet))
            else:
                chars[at] = rng.choice(alphabet)
        body = "".join(chars).encode()
        yield Entry(f"mut-json-edit-{i}", body, ANY, JSON, transports=("http",))
    for i in range(10):
        cut = rng.randrange(1, len(text))
        yield Entry(
            f"mut-json-truncate-{i}-at-{cut}",
            text[:cut].encode(),
            ERROR,
            JSON,
            transports=("http",),
            status=400,
        )


def generate() -> list[Entry]:
    """The whole corpus, in a fixed order (same seed, same bytes)."""
    rng = random.Random(SEED)
    out = [*_protobuf_entries(), *_json_entries(), *_http_entries(), *_semantic_entries()]
    out += _mutations(rng)
    names = [e.name for e in out]
    assert len(names) == len(set(names)), "corpus entry names must be unique"
    assert all(e.expect in EXPECTATIONS for e in out)
    return out


def encode(entries: list[Entry]) -> bytes:
    """The corpus file's uncompressed text: one JSON object per line."""
    return "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in entries).encode()


def load(path: Path = CORPUS) -> list[Entry]:
    """The checked-in corpus."""
    text = gzip.decompress(path.read_bytes()).decode()
    return [Entry.from_json(json.loads(line)) for line in text.splitlines()]


def main() -> None:
    """Write ``CORPUS`` (gzip with mtime 0, so the bytes depend only on the entries) and
    its checksum in ``MANIFEST.tsv``."""
    entries = generate()
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(encode(entries), 9, mtime=0)
    CORPUS.write_bytes(data)
    name = CORPUS.relative_to(FIXTURES).as_posix()
    manifest = FIXTURES / "MANIFEST.tsv"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    digest = hashlib.sha256(data).hexdigest()[:16]
    for i, line in enumerate(lines):
        if line.startswith(name + "\t"):
            lines[i] = line.rsplit("\t", 1)[0] + "\t" + digest
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{CORPUS.relative_to(FIXTURES.parents[1])}: {len(entries)} entries, sha256 {digest}")


if __name__ == "__main__":
    main()
