"""Run model: decoded spans and the runs built from them.

Public entry points (everything else in this package is internal):

- decoders to ``SpanRecord``: ``spans_from_proto_request`` / ``spans_from_resource_spans`` /
  ``span_from_proto`` (OTLP protobuf messages or bytes), ``spans_from_json`` (OTLP/JSON,
  parsed or text), ``spans_from_sdk`` (OTel SDK ``ReadableSpan``);
- ``json_to_proto``: OTLP/JSON -> ``ExportTraceServiceRequest`` (the collector buffers and
  forwards protobuf); it and the OTLP decoders above are the OTLP codec's
  (``tracejudge.otlp``), re-exported here;
- ``load_spans`` / ``load_traces``: trace files (.json, .jsonl, .pb, gzipped); ``read_spans``
  keeps the good lines of a JSON-lines file with bad ones and returns one error per bad line;
- ``build_runs``: the spans of one trace -> its ``Run`` s (what the engine judges);
- ``group_by_trace``: spans -> ``{trace_id: spans}``;
- ``OtlpDecodeError``: the one error every decoder raises for malformed input.
"""

from tracejudge.model.build import build_runs
from tracejudge.model.decode_sdk import spans_from_sdk
from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.files import group_by_trace, load_spans, load_traces, read_spans
from tracejudge.model.run import (
    ModelCall,
    Note,
    NoteCode,
    RequestedToolCall,
    Run,
    Step,
    ToolCall,
    Turn,
)
from tracejudge.model.spans import EventRecord, SpanRecord
from tracejudge.otlp.json_traces import json_to_proto
from tracejudge.otlp.records import (
    span_from_proto,
    spans_from_json,
    spans_from_proto_request,
    spans_from_resource_spans,
)

__all__ = [
    "EventRecord",
    "ModelCall",
    "Note",
    "NoteCode",
    "OtlpDecodeError",
    "RequestedToolCall",
    "Run",
    "SpanRecord",
    "Step",
    "ToolCall",
    "Turn",
    "build_runs",
    "group_by_trace",
    "json_to_proto",
    "load_spans",
    "load_traces",
    "read_spans",
    "span_from_proto",
    "spans_from_json",
    "spans_from_proto_request",
    "spans_from_resource_spans",
    "spans_from_sdk",
]
