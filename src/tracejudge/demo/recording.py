"""Recording agent runs as reproducible OTLP/JSON files.

The example traces in ``examples/refund/traces/`` are produced by running the instrumented
agent, not written by hand, and must not change when nothing changed. Two things in a
span vary between runs: ids and times. ``SeededIdGenerator`` derives ids from a seed and a
counter, and ``to_otlp_json(..., normalize_times=True)`` replaces every timestamp by its
rank on a 1 ms grid, which keeps the order and nesting of spans (what rules read) and
drops the wall-clock noise.

The JSON follows the OTLP/JSON encoding of the specification: lowerCamelCase keys, hex
``traceId``/``spanId``, enums as integers, 64-bit integers as decimal strings.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.id_generator import IdGenerator

EPOCH_NS = 1_795_996_800_000_000_000
"""2026-12-01T00:00:00Z: where normalised times start."""
STEP_NS = 1_000_000
"""Normalised times are 1 ms apart."""


class SeededIdGenerator(IdGenerator):
    """Trace and span ids from ``sha256(seed, kind, n)``: the same run gets the same ids."""

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._spans = 0
        self._traces = 0

    def _next(self, kind: str, n: int, bits: int) -> int:
        digest = hashlib.sha256(f"{self._seed}/{kind}/{n}".encode()).digest()
        value = int.from_bytes(digest[: bits // 8], "big")
        return value or 1

    def generate_span_id(self) -> int:
        """The next span id."""
        self._spans += 1
        return self._next("span", self._spans, 64)

    def generate_trace_id(self) -> int:
        """The next trace id."""
        self._traces += 1
        return self._next("trace", self._traces, 128)


_ID_KEYS = ("traceId", "spanId", "parentSpanId")
_TIME_KEYS = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano")


def _walk(node: Any, visit: Any) -> None:
    if isinstance(node, dict):
        visit(node)
        for value in node.values():
            _walk(value, visit)
    elif isinstance(node, list):
        for item in node:
            _walk(item, visit)


def _hex_ids(node: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        value = node.get(key)
        if isinstance(value, str):
            node[key] = base64.b64decode(value).hex()


def to_otlp_json(spans: Sequence[ReadableSpan], *, normalize_times: bool = False) -> dict[str, Any]:
    """The spans as one OTLP/JSON ``ExportTraceServiceRequest`` document."""
    document = MessageToDict(encode_spans(spans))
    _walk(document, _hex_ids)
    if normalize_times:
        stamps: set[int] = set()

        def collect(node: dict[str, Any]) -> None:
            stamps.update(int(node[k]) for k in _TIME_KEYS if k in node)

        _walk(document, collect)
        rank = {t: EPOCH_NS + i * STEP_NS for i, t in enumerate(sorted(stamps))}

        def rewrite(node: dict[str, Any]) -> None:
            for key in _TIME_KEYS:
                if key in node:
                    node[key] = str(rank[int(node[key])])

        _walk(document, rewrite)
    return document


def write_otlp_json(
    path: Path, spans: Sequence[ReadableSpan], *, normalize_times: bool = False
) -> None:
    """Write the spans as a pretty, stable OTLP/JSON file (sorted keys, trailing newline)."""
    document = to_otlp_json(spans, normalize_times=normalize_times)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
