"""The run builder never crashes, whatever a misbehaving instrumentation sends."""

from __future__ import annotations

import json
import random
from typing import Any

from tracejudge import semconv as sc
from tracejudge.model import EventRecord, SpanRecord, ToolCall, build_runs

_KEYS = sorted(
    {
        value
        for name, value in vars(sc).items()
        if isinstance(value, str) and name.isupper() and name not in ("SCHEMA_PIN", "CORE_VERSION")
    }
)
_INDEXED = [
    sc.FOREIGN_GEN_AI_PROMPT + ".0.role",
    sc.FOREIGN_GEN_AI_PROMPT + ".0.tool_calls.0.name",
    sc.FOREIGN_GEN_AI_COMPLETION + ".1.tool_calls",
    sc.FOREIGN_LLM_OUTPUT_MESSAGES + ".0." + sc.FOREIGN_MESSAGE_TOOL_CALLS + ".x",
    sc.FOREIGN_LLM_INPUT_MESSAGES + ".0." + sc.FOREIGN_MESSAGE_CONTENTS + ".0",
]
_OPS = ["chat", "execute_tool", "invoke_agent", "embeddings", "retrieval", ""]
_WEIRD: list[Any] = [
    None,
    "",
    "not json",
    "{",
    "[]",
    "[1, 2]",
    '[{"role": 5, "parts": "x"}]',
    '[{"role": "assistant", "parts": [{"type": "tool_call", "id": {"a": 1}}]}]',
    '[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1"}]}]',
    '{"isError": true}',
    '{"tool_calls": 3}',
    json.dumps([{"role": "assistant", "tool_calls": [{"function": None}, 7]}]),
    0,
    -1,
    2**63 - 1,
    1.5,
    float("nan"),
    True,
    b"\xff\xfe",
    ["a", "b"],
    [1, 2],
    [],
    {"nested": {"deep": [1, {"x": None}]}},
    {"args": [], "kwargs": {"a": 1}},
    "LLM",
    "TOOL",
    "AGENT",
    "tool",
    "agent",
    "write",
    "true",
]
_EVENT_NAMES = [
    sc.FOREIGN_GEN_AI_CHOICE,
    sc.FOREIGN_GEN_AI_USER_MESSAGE,
    sc.FOREIGN_GEN_AI_TOOL_MESSAGE,
    sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
    sc.FOREIGN_GEN_AI_CONTENT_COMPLETION,
    sc.EVENT_EXCEPTION,
    "other",
]


def _random_trace(rng: random.Random) -> list[SpanRecord]:
    n = rng.randint(1, 12)
    ids = [f"{rng.randrange(1, 40):016x}" for _ in range(n)]  # collisions on purpose
    spans = []
    for sid in ids:
        parent = rng.choice([None, rng.choice(ids), f"{999:016x}"])
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: rng.choice(_OPS + _WEIRD)}
        for key in rng.sample(_KEYS + _INDEXED, rng.randint(0, 12)):
            attrs[key] = rng.choice(_WEIRD)
        events = [
            EventRecord(
                name=rng.choice(_EVENT_NAMES),
                time_ns=rng.randint(0, 100),
                attributes={
                    rng.choice(_KEYS): rng.choice(_WEIRD),
                    sc.FOREIGN_GEN_AI_EVENT_CONTENT: rng.choice(_WEIRD),
                },
            )
            for _ in range(rng.randint(0, 3))
        ]
        start = rng.randint(0, 100)
        spans.append(
            SpanRecord(
                trace_id="c" * 32,
                span_id=sid,
                parent_span_id=parent,
                name=rng.choice(["execute_tool x", "x.tool", "chat", ""]),
                start_ns=start,
                end_ns=rng.choice([0, start, start + rng.randint(0, 50), start - 1]),
                status_code=rng.choice([0, 1, 2, 7]),
                attributes=attrs,
                events=events,
            )
        )
    return spans


def test_fuzzed_traces_never_crash_and_keep_invariants() -> None:
    """2,000 seeded random traces mixing every flavour's keys with wrong types, loops,
    duplicate ids, orphans and missing ends: build_runs always returns runs whose spans
    are unique and whose observed steps are in (start, end, span id) order."""
    rng = random.Random(20261130)
    for _ in range(2000):
        spans = _random_trace(rng)
        runs = build_runs(spans)
        assert runs
        for run in runs:
            ids = [s.span_id for s in run.spans]
            assert len(ids) == len(set(ids))
            observed = [s for s in run.steps if not (isinstance(s, ToolCall) and s.inferred)]
            keys = [(s.start_ns, max(s.end_ns, s.start_ns), s.span_id) for s in observed]
            assert keys == sorted(keys)


def test_absurdly_deep_attribute_values_do_not_crash() -> None:
    """Tool arguments nested past the JSON parser's limit stay text (noted), and flattened
    keys with thousands of segments are skipped instead of overflowing the stack."""
    deep_args = "[" * 100_000 + "]" * 100_000
    span = SpanRecord(
        trace_id="d" * 32,
        span_id="0000000000000001",
        parent_span_id=None,
        name="execute_tool t",
        attributes={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: deep_args,
        },
    )
    model = SpanRecord(
        trace_id="d" * 32,
        span_id="0000000000000002",
        parent_span_id="0000000000000001",
        name="chat",
        attributes={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.FOREIGN_GEN_AI_PROMPT + ".0" + ".x" * 5000: "deep",
        },
    )
    (run,) = build_runs([span, model])
    (tool,) = run.tool_calls
    assert tool.arguments_is_json is False
    assert run.model_calls[0].input_messages is None
