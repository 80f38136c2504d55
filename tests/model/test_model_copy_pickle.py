"""The run model and verdict types are plain dataclasses: ``copy``, ``deepcopy`` and
``pickle`` rebuild an equal object, in both builds (the compiled one included: mypyc's
``__setstate__`` assigns each field, which is why none of these types is frozen; the
frozen ``Finding`` and ``RequestedToolCall`` cannot be copied in the compiled build)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from tracejudge.engine.verdict import RuleOutcome, Verdict
from tracejudge.model.run import ModelCall, Note, Run, ToolCall, Turn
from tracejudge.model.spans import EventRecord, SpanRecord

SPAN = SpanRecord(
    "t" * 32,
    "s" * 16,
    None,
    "chat",
    attributes={"gen_ai.operation.name": "chat"},
    events=[EventRecord("e", 1, {"k": [1, 2]})],
)
OUTCOME = RuleOutcome("rule", "policy", "fail", "s" * 16, 0.0, "why", (("k", "v"),))
OBJECTS: list[Any] = [
    SPAN,
    Note("orphan_span", ("s" * 16,), "span ssss: parent pppp is missing from the trace"),
    Turn(0, "assistant", "hi", step_index=1, span_id="s" * 16),
    ModelCall("s" * 16, "chat", finish_reasons=("stop",), input_tokens=3),
    ToolCall("s" * 16, "lookup_order", call_id="c1", arguments={"id": 1}, request_turn=0),
    Run("t" * 32, "s" * 16, spans=[SPAN], notes=[], final_answer="done"),
    OUTCOME,
    Verdict(
        "t" * 32,
        "s" * 16,
        "fail",
        {"policy": "fail"},
        outcomes=[OUTCOME],
    ),
]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
def test_copy_and_pickle_round_trip(obj: Any) -> None:
    """Every field comes back equal (containers included)."""
    assert copy.copy(obj) == obj
    assert copy.deepcopy(obj) == obj
    assert pickle.loads(pickle.dumps(obj)) == obj


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
def test_replace_keeps_every_other_field(obj: Any) -> None:
    """``dataclasses.replace`` (how a changed verdict or span is made) works in both builds."""
    first = dataclasses.fields(obj)[0]
    out = dataclasses.replace(obj, **{first.name: getattr(obj, first.name)})
    assert out == obj
    assert out is not obj


def test_containers_are_fresh_per_instance() -> None:
    """A field with a mutable default gets its own container each time."""
    a, b = SpanRecord("t", "a", None, "x"), SpanRecord("t", "b", None, "x")
    assert a.attributes == {}
    assert a.attributes is not b.attributes
    assert a.events == []
    assert a.events is not b.events
    v, w = Verdict("t", "a", "pass", {}), Verdict("t", "b", "pass", {})
    assert v.findings is not w.findings
    assert v.outcomes is not w.outcomes
