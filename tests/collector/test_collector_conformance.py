"""OTLP/HTTP and OTLP/gRPC receiver conformance: every status the spec asks for.

Clients here are raw HTTP and raw gRPC calls, because the SDK exporters never send the
malformed or oversized requests these tests need.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.collector.collector_support import (
    Sink,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.guards import IO_S
from tracejudge import semconv as sc
from tracejudge.collector import Collector

PB = "application/x-protobuf"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _one_trace() -> bytes:
    tid, rid = new_ids()
    out: bytes = make_request([make_span(tid, rid)]).SerializeToString()
    return out


def test_protobuf_success_answers_protobuf(collector_factory: Callable[..., Collector]) -> None:
    """Full success is 200 with an empty ExportTraceServiceResponse in protobuf."""
    c = collector_factory()
    status, headers, body = post(c.http_port, _one_trace())
    assert status == 200
    assert headers["content-type"].startswith(PB)
    assert not ExportTraceServiceResponse.FromString(body).HasField("partial_success")


def test_json_request_is_decoded_and_answered_in_json(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """OTLP/JSON (hex ids, camelCase) is accepted and the answer is JSON (Phoenix #2067)."""
    c = collector_factory()
    tid, rid = new_ids()
    doc = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "x"},
                        "spans": [
                            {
                                "traceId": tid.hex(),
                                "spanId": rid.hex(),
                                "name": "invoke_agent",
                                "kind": 1,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                            }
                        ],
                    }
                ],
            }
        ]
    }
    status, headers, body = post(c.http_port, json.dumps(doc).encode(), "application/json")
    assert status == 200, body
    assert headers["content-type"].startswith("application/json")
    assert json.loads(body) == {}
    wait_for(lambda: len(sink.spans()) == 1, what="JSON span forwarded")
    span = sink.spans()[0]
    assert span.trace_id == tid
    assert attrs(span)[sc.TRACEJUDGE_VERDICT] == "pass"


def test_gzip_body_is_accepted(collector_factory: Callable[..., Collector], sink: Sink) -> None:
    """Content-Encoding: gzip is decompressed (the OTel exporters gzip by default in some SDKs)."""
    c = collector_factory()
    status, _, _ = post(
        c.http_port, gzip.compress(_one_trace()), headers={"Content-Encoding": "gzip"}
    )
    assert status == 200
    wait_for(lambda: len(sink.spans()) == 1, what="gzip span")


def test_gzip_body_of_several_members_is_read_whole(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A gzip body may be several members one after another (RFC 1952; ``cat a.gz b.gz``,
    streaming compressors; Go's reader in the OTel Collector reads them all). Only the first
    used to be inflated: the request was answered 200 and the other members' spans were
    silently lost (found by the malformed-OTLP corpus, ``gzip-two-members``). Now every
    member is read, and the size cap still counts them together."""
    c = collector_factory(max_request_bytes=64 * 1024)
    traces = [_one_trace() for _ in range(3)]
    body = b"".join(gzip.compress(t) for t in traces)
    status, _, resp = post(c.http_port, body, headers={"Content-Encoding": "gzip"})
    assert status == 200, resp
    wait_for(lambda: len(sink.spans()) == 3, what="the spans of all three members")
    filler = gzip.compress(b"\x00" * (40 * 1024))
    status, _, _ = post(c.http_port, filler * 2, headers={"Content-Encoding": "gzip"})
    assert status == 413


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (b"\x00\xffnot protobuf at all\x12\x99", None),
        (_one_trace()[:-3], None),
        (b"not gzip", "gzip"),
        (gzip.compress(_one_trace())[:-10], "gzip"),
        (gzip.compress(_one_trace()) + b"garbage", "gzip"),
    ],
    ids=["garbage", "truncated-protobuf", "bad-gzip", "truncated-gzip", "gzip-then-garbage"],
)
def test_undecodable_body_is_400_with_status(
    collector_factory: Callable[..., Collector], body: bytes, encoding: str | None
) -> None:
    """Undecodable data is 400 with a google.rpc.Status body, never a crash or a 500."""
    c = collector_factory()
    headers = {"Content-Encoding": encoding} if encoding else {}
    status, hdrs, resp = post(c.http_port, body, headers=headers)
    assert status == 400
    assert hdrs["content-type"].startswith(PB)
    st = status_pb2.Status.FromString(resp)
    assert st.code == 3
    assert st.message
    status, _, _ = post(c.http_port, _one_trace())
    assert status == 200


def test_bad_json_is_400_in_json(collector_factory: Callable[..., Collector]) -> None:
    """A JSON request that is not OTLP gets its Status back as JSON."""
    c = collector_factory()
    status, hdrs, resp = post(c.http_port, b'{"resourceSpans": 5}', "application/json")
    assert status == 400
    assert hdrs["content-type"].startswith("application/json")
    assert json.loads(resp)["code"] == 3


def test_invalid_ids_are_partial_success(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Spans with invalid ids are rejected by count with a reason; the rest go through."""
    c = collector_factory()
    tid, rid = new_ids()
    good = make_span(tid, rid)
    bad_trace = make_span(b"\x01" * 8)
    bad_span = make_span(tid, span_id=b"\x00" * 8, parent=rid)
    status, _, body = post(
        c.http_port, make_request([good, bad_trace, bad_span]).SerializeToString()
    )
    assert status == 200
    resp = ExportTraceServiceResponse.FromString(body)
    assert resp.partial_success.rejected_spans == 2
    assert "invalid" in resp.partial_success.error_message
    wait_for(lambda: len(sink.spans()) == 1, what="the valid span")
    assert c.stats.spans["rejected"] == 2


def test_oversized_and_zip_bomb_are_413(collector_factory: Callable[..., Collector]) -> None:
    """The size cap applies after decompression: a small gzip of 8 MiB of zeros is refused
    without inflating it whole."""
    c = collector_factory(max_request_bytes=64 * 1024)
    big = b"\x00" * (200 * 1024)
    status, _, _ = post(c.http_port, big)
    assert status == 413
    bomb = gzip.compress(b"\x00" * (8 * 1024 * 1024))
    assert len(bomb) < 64 * 1024
    status, _, resp = post(c.http_port, bomb, headers={"Content-Encoding": "gzip"})
    assert status == 413
    assert status_pb2.Status.FromString(resp).code == 8


def test_wrong_content_type_is_415_and_wrong_method_405(
    collector_factory: Callable[..., Collector],
) -> None:
    """415 for anything but protobuf/JSON (and unknown encodings); 405 with Allow for non-POST."""
    c = collector_factory()
    assert post(c.http_port, b"x", "text/plain")[0] == 415
    assert post(c.http_port, b"x", headers={"Content-Encoding": "br"})[0] == 415
    status, hdrs, _ = post(c.http_port, b"", method="GET")
    assert status == 405
    assert hdrs["allow"] == "POST"
    assert post(c.http_port, b"", method="PUT")[0] == 405


def test_full_buffer_throttles_http_and_grpc(collector_factory: Callable[..., Collector]) -> None:
    """When the buffer is full the collector pushes back (503 + Retry-After, gRPC UNAVAILABLE
    with RetryInfo) instead of evicting accepted traces."""
    c = collector_factory(max_traces=1, decision_wait=30.0, decision_wait_after_root=30.0)
    assert post(c.http_port, _one_trace())[0] == 200
    status, hdrs, body = post(c.http_port, _one_trace())
    assert status == 503
    assert int(hdrs["retry-after"]) >= 1
    assert status_pb2.Status.FromString(body).code == 14
    with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
        call = channel.unary_unary(EXPORT, None, None)
        with pytest.raises(grpc.RpcError) as info:
            call(_one_trace(), timeout=IO_S)
    err = info.value
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    details: dict[str, bytes] = {
        md[0]: md[1]  # type: ignore[index]
        for md in err.trailing_metadata()
    }
    st = status_pb2.Status.FromString(details["grpc-status-details-bin"])
    retry = error_details_pb2.RetryInfo()
    assert st.details[0].Unpack(retry)
    assert retry.retry_delay.ToNanoseconds() > 0
    assert c.stats.requests_throttled == 2
    assert len(c.decision.buffer.traces) == 1 if c.decision else False


def test_grpc_garbage_is_invalid_argument(collector_factory: Callable[..., Collector]) -> None:
    """Undecodable gRPC payloads get INVALID_ARGUMENT (not INTERNAL, not a crash)."""
    c = collector_factory()
    with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
        call = channel.unary_unary(EXPORT, None, None)
        with pytest.raises(grpc.RpcError) as info:
            call(b"\xff\xff\xff\xff garbage", timeout=IO_S)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert ExportTraceServiceResponse.FromString(call(_one_trace(), timeout=IO_S)) is not None


def test_huge_attribute_is_forwarded_intact(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A 1 MiB attribute value passes through unchanged (the collector never truncates)."""
    c = collector_factory()
    tid, rid = new_ids()
    value = "x" * (1024 * 1024)
    span = make_span(tid, rid, attributes={sc.GEN_AI_OUTPUT_MESSAGES: value})
    assert post(c.http_port, make_request([span]).SerializeToString())[0] == 200
    wait_for(lambda: len(sink.spans()) == 1, what="huge span")
    assert attrs(sink.spans()[0])[sc.GEN_AI_OUTPUT_MESSAGES] == value


def test_health_and_metrics_endpoints(collector_factory: Callable[..., Collector]) -> None:
    """/healthz and /metrics report counts as JSON on the HTTP port, or on the management
    port alone when one is configured (the OTLP port then answers 404 for them)."""
    import http.client

    plain = collector_factory()
    managed = collector_factory(management_port=0)
    post(plain.http_port, _one_trace())
    post(managed.http_port, _one_trace())
    assert post(managed.http_port, b"", path="/metrics", method="GET")[0] == 404
    assert post(managed.http_port, b"", path="/healthz", method="GET")[0] == 404
    for port in (plain.http_port, managed.management_port):
        assert port
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_S)
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        health = json.loads(resp.read())
        assert resp.status == 200
        assert health["status"] == "ok"
        conn.request("GET", "/metrics")
        metrics = json.loads(conn.getresponse().read())
        assert metrics["spans"]["received"] == 1
        conn.close()
