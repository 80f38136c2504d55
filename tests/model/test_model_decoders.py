"""Decoders: OTLP protobuf, OTLP/JSON and SDK spans all become the same SpanRecords."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.model.model_helpers import recorder
from tests.support.paths import OTLP_REFERENCE
from tracejudge import semconv as sc
from tracejudge.model import (
    OtlpDecodeError,
    SpanRecord,
    json_to_proto,
    span_from_proto,
    spans_from_json,
    spans_from_proto_request,
    spans_from_resource_spans,
    spans_from_sdk,
)
from tracejudge.model.spans import SPAN_KIND_CLIENT, SPAN_KIND_SERVER, STATUS_ERROR
from tracejudge.otlp.json_encode import request_to_otlp_json

REFERENCE_TRACE = OTLP_REFERENCE / "trace.json"


def _sample_request() -> tuple[ExportTraceServiceRequest, list[SpanRecord]]:
    with recorder() as rec:
        with rec.tracer.start_as_current_span("invoke_agent refunds") as root:
            root.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            root.set_attribute(sc.GEN_AI_REQUEST_TEMPERATURE, 0.25)
            root.set_attribute(sc.GEN_AI_RESPONSE_FINISH_REASONS, ["stop", "length"])
            root.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, 2**40)
            root.set_attribute(sc.TRACEJUDGE_APPROVAL_GRANTED, True)
            with rec.tracer.start_as_current_span("chat gpt", kind=SpanKind.CLIENT) as chat:
                chat.add_event("gen_ai.choice", {"index": 0, "flags": [True, False]})
                chat.set_status(Status(StatusCode.ERROR, "boom"))
        return rec.request(), spans_from_sdk(rec.spans())


class TestProto:
    def test_round_trip_through_real_otlp_encoder(self) -> None:
        """SDK spans -> real OTLP encoder -> bytes -> decoder equals decoding the SDK spans
        directly: the collector and in-process paths must see identical records."""
        request, from_sdk = _sample_request()
        from_proto = spans_from_proto_request(request.SerializeToString())
        key = {s.span_id: s for s in from_sdk}
        assert len(from_proto) == 2
        for span in from_proto:
            assert span == key[span.span_id]
        chat = next(s for s in from_proto if s.name == "chat gpt")
        assert chat.kind == SPAN_KIND_CLIENT
        assert chat.status_code == STATUS_ERROR
        assert chat.status_message == "boom"
        assert chat.events[0].attributes == {"index": 0, "flags": [True, False]}
        root = next(s for s in from_proto if s.parent_span_id is None)
        assert root.attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop", "length"]
        assert root.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 2**40
        assert chat.parent_span_id == root.span_id
        assert root.resource[sc.SERVICE_NAME] == "model-tests"
        assert root.scope == "tests.model"

    def test_resource_spans_and_single_span_bytes(self) -> None:
        """The collector buffers per-trace ResourceSpans / Span bytes and decodes them later."""
        request, from_sdk = _sample_request()
        rs = request.resource_spans[0]
        decoded = spans_from_resource_spans(rs.SerializeToString())
        assert sorted(s.span_id for s in decoded) == sorted(s.span_id for s in from_sdk)
        one = rs.scope_spans[0].spans[0]
        record = span_from_proto(one.SerializeToString(), {"k": "v"}, "scope-x")
        assert record.span_id == one.span_id.hex()
        assert record.resource == {"k": "v"}
        assert record.scope == "scope-x"

    def test_bad_bytes_and_bad_ids_raise_one_clear_error(self) -> None:
        """Garbage bytes and wrong-length ids raise OtlpDecodeError with the field's path."""
        with pytest.raises(OtlpDecodeError, match="invalid protobuf"):
            spans_from_proto_request(b"\x0a\xff\xff\xff")
        request, _ = _sample_request()
        request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x01\x02"
        with pytest.raises(OtlpDecodeError) as info:
            spans_from_proto_request(request)
        assert str(info.value) == (
            "resourceSpans[0].scopeSpans[0].spans[1].traceId: not 16 bytes (got 2)"
        )


class TestJson:
    def test_json_decodes_like_proto_and_converts_back_exactly(self) -> None:
        """OTLP/JSON of a real request decodes to the same records as its protobuf, and
        json_to_proto rebuilds the identical message (what the collector forwards)."""
        request, _ = _sample_request()
        doc = request_to_otlp_json(request)
        assert spans_from_json(doc) == spans_from_proto_request(request)
        assert spans_from_json(json.dumps(doc)) == spans_from_proto_request(request)
        assert json_to_proto(doc) == request

    def test_reference_trace_json(self) -> None:
        """The OTLP repository's example: uppercase hex ids become lowercase, kind and
        times (int64 as strings) decode, resource and scope are attached."""
        doc = json.loads(REFERENCE_TRACE.read_text())
        (span,) = spans_from_json(doc)
        assert span.trace_id == "5b8efff798038103d269b633813fc60c"
        assert span.span_id == "eee19b7ec3c1b174"
        assert span.parent_span_id == "eee19b7ec3c1b173"
        assert span.kind == SPAN_KIND_SERVER
        assert span.start_ns == 1544712660000000000
        assert span.end_ns == 1544712661000000000
        assert span.attributes == {"my.span.attr": "some value"}
        assert span.resource == {"service.name": "my.service"}
        assert span.scope == "my.library"
        proto = json_to_proto(doc)
        assert proto.resource_spans[0].scope_spans[0].scope.version == "1.0.0"
        assert spans_from_proto_request(proto) == [span]

    def test_lenient_forms_are_accepted(self) -> None:
        """Enum names, snake_case keys, intValue as a number, nested values and unknown
        fields are all accepted, as senders in the wild produce them."""
        doc: dict[str, Any] = {
            "resource_spans": [
                {
                    "resource": {"attributes": []},
                    "scope_spans": [
                        {
                            "scope": {"name": "s", "futureField": 1},
                            "spans": [
                                {
                                    "trace_id": "0af7651916cd43dd8448eb211c80319c",
                                    "span_id": "b7ad6b7169203331",
                                    "parent_span_id": "",
                                    "name": "x",
                                    "kind": "SPAN_KIND_CLIENT",
                                    "start_time_unix_nano": 5,
                                    "status": {"code": "STATUS_CODE_ERROR", "message": "m"},
                                    "brandNewField": {"a": 1},
                                    "attributes": [
                                        {"key": "i", "value": {"intValue": 7}},
                                        {"key": "j", "value": {"int_value": "-8"}},
                                        {"key": "d", "value": {"doubleValue": "NaN"}},
                                        {"key": "b", "value": {"bytesValue": "AAEC"}},
                                        {"key": "n", "value": {}},
                                        {
                                            "key": "arr",
                                            "value": {
                                                "arrayValue": {
                                                    "values": [
                                                        {"boolValue": True},
                                                        {"doubleValue": 1.5},
                                                    ]
                                                }
                                            },
                                        },
                                        {
                                            "key": "kv",
                                            "value": {
                                                "kvlistValue": {
                                                    "values": [
                                                        {"key": "a", "value": {"stringValue": "b"}}
                                                    ]
                                                }
                                            },
                                        },
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
        (span,) = spans_from_json(doc)
        assert span.parent_span_id is None
        assert span.kind == SPAN_KIND_CLIENT
        assert span.status_code == STATUS_ERROR
        assert span.start_ns == 5
        attrs = span.attributes
        assert attrs["i"] == 7
        assert attrs["j"] == -8
        assert attrs["d"] != attrs["d"]  # NaN
        assert attrs["b"] == b"\x00\x01\x02"
        assert attrs["n"] is None
        assert attrs["arr"] == [True, 1.5]
        assert attrs["kv"] == {"a": "b"}
        proto = json_to_proto(doc)
        assert spans_from_proto_request(proto)[0].attributes["kv"] == {"a": "b"}

    @pytest.mark.parametrize(
        ("mutate", "message"),
        [
            (
                lambda s: s.update(traceId="abc"),
                "resourceSpans[0].scopeSpans[0].spans[1].traceId: not 32 hex chars",
            ),
            (
                lambda s: s.update(spanId="zz" * 8),
                "resourceSpans[0].scopeSpans[0].spans[1].spanId: not 16 hex chars",
            ),
            (
                lambda s: s.update(startTimeUnixNano="soon"),
                "resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano: not an integer: 'soon'",
            ),
            (
                lambda s: s.update(kind="SPAN_KIND_SIDEWAYS"),
                "resourceSpans[0].scopeSpans[0].spans[1].kind: unknown enum value "
                "'SPAN_KIND_SIDEWAYS'",
            ),
            (
                lambda s: s.update(attributes=[{"key": "q", "value": {"boolValue": "yes"}}]),
                "resourceSpans[0].scopeSpans[0].spans[1].attributes[0].value.boolValue: "
                "expected a boolean, got 'yes'",
            ),
            (
                lambda s: s["events"][0].update(attributes=[{"value": {}}]),
                "resourceSpans[0].scopeSpans[0].spans[1].events[0].attributes[0].key: "
                "missing or not a string",
            ),
        ],
    )
    def test_malformed_json_names_the_field(self, mutate: Any, message: str) -> None:
        """Every malformation raises OtlpDecodeError whose text pinpoints the field, from
        both the SpanRecord decoder and the protobuf converter."""
        request, _ = _sample_request()
        doc = request_to_otlp_json(request)
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        target = next(i for i, s in enumerate(spans) if s.get("events"))
        if target != 1:
            spans[0], spans[1] = spans[1], spans[0]
        mutate(spans[1])
        for decode in (spans_from_json, json_to_proto):
            with pytest.raises(OtlpDecodeError) as info:
                decode(copy.deepcopy(doc))
            assert str(info.value) == message

    def test_absurd_nesting_is_a_decode_error_not_a_crash(self) -> None:
        """Deeply nested arrayValues (hostile or buggy senders) end in OtlpDecodeError."""
        value: dict[str, Any] = {"stringValue": "x"}
        for _ in range(5000):
            value = {"arrayValue": {"values": [value]}}
        doc = {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": "1" * 32,
                                    "spanId": "2" * 16,
                                    "attributes": [{"key": "deep", "value": value}],
                                }
                            ]
                        }
                    ]
                }
            ]
        }
        for decode in (spans_from_json, json_to_proto):
            with pytest.raises(OtlpDecodeError, match="nested too deeply"):
                decode(doc)
        with pytest.raises(OtlpDecodeError, match="nested too deeply"):
            spans_from_json("[" * 100_000 + "]" * 100_000)

    @pytest.mark.parametrize("where", ["span", "event", "link", "resource", "scope"])
    @pytest.mark.parametrize("kind", ["kvlistValue", "arrayValue"])
    def test_converted_requests_always_parse_back(self, where: str, kind: str) -> None:
        """What json_to_proto returns must parse as protobuf: a value nested past the
        decoders' 100-level limit used to convert, be acknowledged by the collector, and
        then fail every ``FromString`` (issue 12, defect 1). Around the limit each depth
        either raises "nested too deeply" or yields bytes that parse, request and fragment."""
        from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

        outcomes = set()
        refusals: list[str] = []
        for depth in range(25, 60):
            value: dict[str, Any] = {"stringValue": "x"}
            for _ in range(depth):
                if kind == "kvlistValue":
                    value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
                else:
                    value = {"arrayValue": {"values": [value]}}
            attrs = [{"key": "deep", "value": value}]
            span: dict[str, Any] = {"traceId": "1" * 32, "spanId": "2" * 16}
            rs: dict[str, Any] = {"scopeSpans": [{"spans": [span]}]}
            if where == "span":
                span["attributes"] = attrs
            elif where == "event":
                span["events"] = [{"name": "e", "attributes": attrs}]
            elif where == "link":
                span["links"] = [{"traceId": "3" * 32, "spanId": "4" * 16, "attributes": attrs}]
            elif where == "resource":
                rs["resource"] = {"attributes": attrs}
            else:
                rs["scopeSpans"][0]["scope"] = {"name": "s", "attributes": attrs}
            try:
                request = json_to_proto({"resourceSpans": [rs]})
            except OtlpDecodeError as exc:
                refusals.append(exc.reason)
                outcomes.add("refused")
                continue
            data = request.SerializeToString()
            assert ExportTraceServiceRequest.FromString(data) == request
            ResourceSpans.FromString(request.resource_spans[0].SerializeToString())
            outcomes.add("parsed")
        assert outcomes == {"refused", "parsed"}  # the sweep crosses the limit
        assert all("nested too deeply" in r for r in refusals)

    def test_partial_conversion_leaves_out_only_the_bad_spans(self) -> None:
        """For a receiver, a malformed span is reported by path and the others converted
        (OTLP partial success), where json_to_proto would refuse the whole request."""
        from tracejudge.otlp.json_traces import json_to_proto_partial

        deep: dict[str, Any] = {"stringValue": "x"}
        for _ in range(40):
            deep = {"kvlistValue": {"values": [{"key": "k", "value": deep}]}}
        spans = [
            {"traceId": "1" * 32, "spanId": "2" * 16, "name": "good"},
            {"traceId": "1" * 30, "spanId": "3" * 16},
            {"traceId": "AAAAAAAAAAAAAAAAAAAAAA==", "spanId": "3" * 16},
            {"traceId": "1" * 32, "spanId": "4" * 16, "attributes": [{"key": "d", "value": deep}]},
            {"traceId": "1" * 32, "spanId": "5" * 16, "name": "\ud800"},
            {"traceId": "1" * 32, "spanId": "6" * 16, "name": "also good"},
        ]
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
        partial = json_to_proto_partial(doc)
        names = [s.name for s in partial.request.resource_spans[0].scope_spans[0].spans]
        assert names == ["good", "also good"]
        assert len(partial.rejected) == 4
        assert partial.rejected[0] == (
            "resourceSpans[0].scopeSpans[0].spans[1].traceId: not 32 hex chars"
        )
        assert "spans[3].attributes[0]" in partial.rejected[2]
        assert "nested too deeply" in partial.rejected[2]
        assert partial.rejected[3] == (
            "resourceSpans[0].scopeSpans[0].spans[4].name: not valid UTF-8 (a lone surrogate)"
        )
        with pytest.raises(OtlpDecodeError):
            json_to_proto(doc)

    def test_not_json_and_wrong_top_level(self) -> None:
        """A body that is not JSON, or not an object, is rejected cleanly."""
        with pytest.raises(OtlpDecodeError, match="invalid JSON"):
            spans_from_json("{nope")
        with pytest.raises(OtlpDecodeError, match="expected an OTLP/JSON object"):
            spans_from_json([1, 2])
        with pytest.raises(OtlpDecodeError, match=r"resourceSpans: expected an array"):
            spans_from_json({"resourceSpans": {}})


class TestSdk:
    def test_kinds_are_mapped_by_name_and_unfinished_spans_decode(self) -> None:
        """The SDK numbers SpanKind from 0 and OTLP from 1; an unfinished span has end 0."""
        with recorder() as rec:
            span = rec.tracer.start_span("open", kind=SpanKind.SERVER)
            (record,) = spans_from_sdk([span])  # type: ignore[list-item]
            span.end()
        assert record.kind == SPAN_KIND_SERVER
        assert record.end_ns == 0
        assert record.parent_span_id is None
