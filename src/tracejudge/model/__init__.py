"""Run model: decoded spans and the runs built from them."""

from tracejudge.model.run import ModelCall, RequestedToolCall, Run, Step, ToolCall
from tracejudge.model.spans import EventRecord, SpanRecord

__all__ = [
    "EventRecord",
    "ModelCall",
    "RequestedToolCall",
    "Run",
    "SpanRecord",
    "Step",
    "ToolCall",
]
