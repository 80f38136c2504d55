"""The OTLP codec: OTLP/JSON, OTLP protobuf and the run model's ``SpanRecord``.

Every path in tracejudge that reads or writes OTLP goes through this package: the
collector's receivers, ``tracejudge eval``'s file reader and the trace files the
collector and the instrumentation write.

- ``json_traces``: OTLP/JSON traces -> ``ExportTraceServiceRequest``;
- ``json_logs``: OTLP/JSON logs -> ``ExportLogsServiceRequest``;
- ``records``: OTLP protobuf -> ``SpanRecord``;
- ``json_encode``: protobuf -> OTLP/JSON (the files tracejudge writes).
"""

# The codec decodes into the run model's records (``tracejudge.model.spans``) and the run
# model's package re-exports its decoders, so the two packages import each other. The model
# package goes first whichever is imported first: then every module of this package is
# complete before the model's ``__init__`` imports from it.
import tracejudge.model  # noqa: F401  (import order, see above)
