"""The hot dataclasses write their ``__init__`` out (native code in the compiled build);
each must take exactly its fields, in order, with the dataclass defaults."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from tracejudge.engine.verdict import RuleOutcome, Verdict
from tracejudge.model.run import ModelCall, Note, Run, ToolCall
from tracejudge.model.spans import SpanRecord

REQUIRED: dict[type[Any], tuple[Any, ...]] = {
    SpanRecord: ("t" * 32, "s" * 16, None, "chat"),
    ModelCall: ("s" * 16, "chat"),
    ToolCall: ("s" * 16, "lookup_order"),
    Run: ("t" * 32, "s" * 16),
    Note: ("orphan_span", ("s" * 16,), "span ssss: parent pppp is missing from the trace"),
    RuleOutcome: ("rule", "policy", "pass", "s" * 16),
    Verdict: ("t" * 32, "s" * 16, "pass", {"policy": "pass"}),
}


@pytest.mark.parametrize("cls", list(REQUIRED), ids=lambda c: c.__name__)
def test_written_init_matches_the_fields(cls: type[Any]) -> None:
    """Defaults equal the declared ones (a fresh container per instance), every field is a
    keyword (``dataclasses.replace`` works), and positions follow the field order."""
    obj = cls(*REQUIRED[cls])
    fields = dataclasses.fields(cls)
    for f, value in zip(fields, REQUIRED[cls], strict=False):
        assert getattr(obj, f.name) == value
    for f in fields[len(REQUIRED[cls]) :]:
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(obj, f.name) == f.default_factory()
            assert getattr(obj, f.name) is not getattr(cls(*REQUIRED[cls]), f.name)
        else:
            assert getattr(obj, f.name) == f.default
    assert dataclasses.replace(obj, **{f.name: getattr(obj, f.name) for f in fields}) == obj
    positional = cls(*(getattr(obj, f.name) for f in fields))
    assert positional == obj


@pytest.mark.parametrize("cls", list(REQUIRED), ids=lambda c: c.__name__)
def test_copy_and_pickle_round_trip(cls: type[Any]) -> None:
    """``copy``, ``deepcopy`` and ``pickle`` rebuild an equal object, in both builds (a
    compiled class cannot be created empty, which is what they do by default)."""
    obj = cls(*REQUIRED[cls])
    assert copy.copy(obj) == obj
    assert copy.deepcopy(obj) == obj
    assert pickle.loads(pickle.dumps(obj)) == obj
