"""The logs receivers over real sockets: OTLP/JSON and protobuf in, the same clear 400s,
415s, 405s and partial success as the trace receivers, gRPC INVALID_ARGUMENT, and the
``--evaluation-logs`` records at the logs endpoint.

The collector runs with the stand-in judge (rule semantics do not matter here); the logs
backend is the real OTLP logs receiver of logs_support.py.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.collector.logs_support import LogsSink, log_record, logs_request, record_attrs
from tests.support.guards import IO_S
from tracejudge import semconv as sc
from tracejudge.collector import Collector
from tracejudge.otlp.records import any_value_to_python


@pytest.fixture
def logs_sink(lt: LoopThread) -> Iterator[LogsSink]:
    """A real OTLP logs receiver standing in for the logs backend."""
    s = LogsSink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


def _json_logs(trace_id: str, span_id: str, **record: object) -> bytes:
    doc = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": "t"},
                        "logRecords": [
                            {
                                "timeUnixNano": "1700000000000000000",
                                "traceId": trace_id,
                                "spanId": span_id,
                                "eventName": sc.FOREIGN_GEN_AI_CHOICE,
                                "body": {
                                    "kvlistValue": {
                                        "values": [
                                            {"key": "index", "value": {"intValue": "0"}},
                                        ]
                                    }
                                },
                                **record,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    return json.dumps(doc).encode()


def test_otlp_json_logs_are_held_and_forwarded_as_protobuf(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink, sink: Sink
) -> None:
    """OTLP/JSON (hex ids, AnyValue bodies) is converted without loss: the forwarded
    record has the same ids, event name and body; gzip bodies are read too."""
    c = collector_factory(forward_logs=logs_sink.http_url)
    tid, root = new_ids()
    body = _json_logs(tid.hex(), root.hex())
    status, headers, raw = post(
        c.http_port,
        gzip.compress(body),
        "application/json",
        {"Content-Encoding": "gzip"},
        path="/v1/logs",
    )
    assert status == 200, raw
    assert headers["content-type"].startswith("application/json")
    assert json.loads(raw) == {}
    post(c.http_port, make_request([make_span(tid, root)]).SerializeToString())
    wait_for(lambda: bool(logs_sink.records()), what="the forwarded record")
    (rec,) = logs_sink.records()
    assert (rec.trace_id, rec.span_id, rec.event_name) == (tid, root, sc.FOREIGN_GEN_AI_CHOICE)
    assert rec.body.kvlist_value.values[0].value.int_value == 0
    assert logs_sink.paths == ["/v1/logs"]


def test_bad_logs_requests_get_clear_answers(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink
) -> None:
    """Undecodable protobuf and malformed JSON: 400 with a ``google.rpc.Status`` naming
    the problem; a record with a bad id in JSON: 200 with partial success naming it; wrong
    type 415, wrong method 405 — as for ``/v1/traces``."""
    c = collector_factory(forward_logs=logs_sink.http_url)
    status, _, raw = post(c.http_port, b"\xff\xff\xff", path="/v1/logs")
    assert status == 400
    assert "undecodable ExportLogsServiceRequest" in status_pb2.Status.FromString(raw).message
    status, _, raw = post(c.http_port, b"{not json", "application/json", path="/v1/logs")
    assert status == 400
    assert json.loads(raw)["code"] == 3  # INVALID_ARGUMENT
    status, _, raw = post(
        c.http_port, b'{"resourceLogs": {"x": 1}}', "application/json", path="/v1/logs"
    )
    assert status == 400
    assert "resourceLogs: expected an array" in json.loads(raw)["message"]
    _tid, sid = new_ids()
    status, _, raw = post(
        c.http_port, _json_logs("zz" * 16, sid.hex()), "application/json", path="/v1/logs"
    )
    assert status == 200
    partial = json.loads(raw)["partialSuccess"]
    assert partial["rejectedLogRecords"] == "1"
    assert "traceId" in partial["errorMessage"]
    assert "logRecords[0].traceId: not 32 hex chars" in partial["errorMessage"]
    status, _, _ = post(c.http_port, b"x", "text/plain", path="/v1/logs")
    assert status == 415
    status, headers, _ = post(c.http_port, b"", method="GET", path="/v1/logs")
    assert status == 405
    assert headers["allow"] == "POST"
    assert c.logs is not None
    assert c.logs.counts.rejected == 1
    assert c.snapshot()["logs"]["rejected"] == 1


def test_a_full_buffer_answers_logs_with_retry_later(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink
) -> None:
    """Log records share the assembler's limits: with the buffer full (``max_traces``
    traces pending), a logs request gets 503 with ``Retry-After`` and is counted as
    throttled, like a trace request."""
    c = collector_factory(forward_logs=logs_sink.http_url, max_traces=1, decision_wait=30.0)
    tid, sid = new_ids()
    post(c.http_port, make_request([make_span(tid, sid, parent=b"\x01" * 8)]).SerializeToString())
    wait_for(lambda: c.snapshot()["buffered_traces"] == 1, what="one buffered trace")
    other, span = new_ids()
    body = logs_request([log_record(other, span, "e")]).SerializeToString()
    status, headers, raw = post(c.http_port, body, path="/v1/logs")
    assert status == 503
    assert headers["retry-after"] == "1"
    assert status_pb2.Status.FromString(raw).message == "trace buffer full"
    assert c.snapshot()["requests_throttled"] == 1


def test_grpc_logs_service_answers_invalid_argument_and_partial_success(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink
) -> None:
    """gRPC ``LogsService/Export`` on the trace port: garbage is INVALID_ARGUMENT; a
    request with a 5-byte trace id gets partial success with the count and reason."""
    c = collector_factory(forward_logs=logs_sink.http_url)
    with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export", None, None
        )
        with pytest.raises(grpc.RpcError) as err:
            call(b"\xff\xff\xff", timeout=IO_S)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        tid, sid = new_ids()
        request = logs_request([log_record(tid, sid, "e"), log_record(b"\x01" * 5, sid, "e")])
        raw = call(request.SerializeToString(), timeout=IO_S)
    answer = ExportLogsServiceResponse.FromString(raw)
    assert answer.partial_success.rejected_log_records == 1
    assert "invalid trace_id" in answer.partial_success.error_message


def test_evaluation_logs_carry_each_outcome_on_its_span_scrubbed(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink, sink: Sink
) -> None:
    """``--evaluation-logs``: one ``gen_ai.evaluation.result`` record per rule outcome,
    with the trace id and the span id its span-event copy is on, the same attributes as
    that copy, and the explanation scrubbed like every collector output (the span-event
    copy stays)."""
    c = collector_factory(
        forward_logs=logs_sink.grpc_url,
        evaluation_logs=True,
        redact_patterns=["a span failed"],
    )
    tid, root = new_ids()
    _, tool = new_ids()
    post(
        c.http_port,
        make_request(
            [make_span(tid, root), make_span(tid, tool, root, error=True)]
        ).SerializeToString(),
    )
    wait_for(lambda: bool(logs_sink.records()), what="the evaluation record")
    (rec,) = logs_sink.records(sc.EVENT_GEN_AI_EVALUATION_RESULT)
    wait_for(lambda: len(sink.spans()) == 2, what="the stamped spans")
    carrier = next(s for s in sink.spans() if s.events)
    (event,) = carrier.events
    assert (rec.trace_id, rec.span_id) == (tid, carrier.span_id) == (tid, tool)
    got = record_attrs(rec)
    assert got == {kv.key: v for kv, v in zip(event.attributes, attrs_of(event), strict=True)}
    assert got[sc.GEN_AI_EVALUATION_NAME] == "no-errors"
    assert got[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    assert got[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.0
    assert "a span failed" not in got[sc.GEN_AI_EVALUATION_EXPLANATION]
    assert rec.severity_number == 17  # ERROR: a failed outcome
    assert c.logs is not None
    assert c.logs.counts.evaluation_records == 1
    assert attrs(next(s for s in sink.spans() if s.span_id == root))[sc.TRACEJUDGE_VERDICT] == (
        "fail"
    )


def attrs_of(event: Span.Event) -> list[object]:
    """An event's attribute values as plain values, in order."""
    return [any_value_to_python(kv.value) for kv in event.attributes]


def test_logs_receivers_need_the_token_like_the_trace_receivers(
    collector_factory: Callable[..., Collector], logs_sink: LogsSink, tmp_path: Path
) -> None:
    """With bearer tokens, ``/v1/logs`` and ``LogsService/Export`` refuse a request without
    one (401 / UNAUTHENTICATED, nothing ingested) and take the real SDK log exporters' with
    one, as the trace receivers do."""
    token = "tj-test-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    tokens.write_text(token + "\n", encoding="utf-8")
    tokens.chmod(0o600)
    c = collector_factory(forward_logs=logs_sink.http_url, auth_token_file=str(tokens))
    tid, sid = new_ids()
    body = logs_request([log_record(tid, sid, "e")]).SerializeToString()
    status, _, _ = post(c.http_port, body, path="/v1/logs")
    assert status == 401
    with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export", None, None
        )
        with pytest.raises(grpc.RpcError) as err:
            call(body, timeout=IO_S)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert c.logs is not None
    assert c.logs.counts.received == 0
    headers = {"authorization": f"Bearer {token}"}
    lp = LoggerProvider()
    lp.add_log_record_processor(
        SimpleLogRecordProcessor(
            HttpLogs(endpoint=f"http://127.0.0.1:{c.http_port}/v1/logs", headers=headers)
        )
    )
    lp.add_log_record_processor(
        SimpleLogRecordProcessor(
            GrpcLogs(endpoint=f"127.0.0.1:{c.grpc_port}", insecure=True, headers=headers)
        )
    )
    lp.get_logger("auth").emit(LogRecord(body="untraced line"))
    lp.shutdown()
    assert c.logs.counts.received == 2
    assert c.logs.counts.untraced == 2
