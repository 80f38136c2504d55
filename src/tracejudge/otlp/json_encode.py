"""OTLP protobuf to OTLP/JSON: the one encoder of the files tracejudge writes.

``serve --output``, the dead-letter file and the file exporter of ``instrument(file=...)``
all write ``ExportTraceServiceRequest``s as OTLP/JSON, one per line (the layout of the
OpenTelemetry Collector's file exporter and of the OTLP file exporter specification), and
``tracejudge eval`` reads them back. The OTLP/JSON encoding differs from protobuf's own
JSON mapping in two places: trace and span ids are hex, not base64, and enums are
integers.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def request_to_otlp_json(request: ExportTraceServiceRequest | bytes) -> dict[str, Any]:
    """A request (or its serialized bytes) as an OTLP/JSON document."""
    if isinstance(request, bytes):
        request = ExportTraceServiceRequest.FromString(request)
    doc: dict[str, Any] = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return doc


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """OpenTelemetry SDK spans as one OTLP/JSON request (the OTLP exporters' encoding)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return request_to_otlp_json(encode_spans(spans))


def _hex_ids(obj: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            obj[key] = base64.b64decode(value).hex()
