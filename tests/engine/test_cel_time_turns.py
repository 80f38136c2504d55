"""Time and the conversation in the CEL view: timestamps, ``iso_timestamp``, turns."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import convo, say, user
from tests.engine.engine_runs import codes, judge_one, make_run, tool
from tracejudge.engine.celfuncs import iso_timestamp, rfc3339
from tracejudge.engine.celview import ViewSpec, run_view
from tracejudge.engine.compile import Compiler, cel_activation
from tracejudge.engine.context import RunContext
from tracejudge.model.run import Run

TOOLS: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
}
WITHIN_24H = (
    "run.tools.filter(t, t.name == 'cancel_reservation' && t.ok).all(t, run.tools.exists(r, "
    "r.name == 'get_reservation_details' && r.index < t.index && "
    "timestamp(t.start) - iso_timestamp(r.result.created_at) <= duration('24h')))"
)


def _booked(created_at: str) -> Run:
    """A reservation looked up, then cancelled; the run starts 2023-11-14T22:13:20Z."""
    details = tool(
        "get_reservation_details",
        {"reservation_id": "ZFA04Y"},
        {"reservation_id": "ZFA04Y", "created_at": created_at},
    )
    cancel = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "cancelled"})
    return convo(
        [
            user("Cancel ZFA04Y"),
            say(None, details),
            say("Cancel ZFA04Y?"),
            user("yes"),
            say(None, cancel),
            say("Done"),
        ]
    )


def _rule(expr: str) -> dict[str, Any]:
    return {"type": "cel", "expr": expr, "message": "cancellation outside 24 h of booking"}


def test_cancel_within_24_hours_of_the_reservations_created_at() -> None:
    """Zone-less result times read as UTC; the call's own start is the moment of the act."""
    run = _booked("2023-11-14T10:00:00")  # 12 h before
    assert judge_one(_rule(WITHIN_24H), run, layer="policy", tools=TOOLS).verdict == "pass"
    run = _booked("2023-11-12T10:00:00")  # 2.5 days before
    v = judge_one(_rule(WITHIN_24H), run, layer="policy", tools=TOOLS)
    assert codes(v) == ["F-CUSTOM-PREDICATE"]
    assert v.primary.explanation == "cancellation outside 24 h of booking"


def test_an_unreadable_time_is_an_evaluation_error_not_a_pass() -> None:
    """Garbage in a result: ``F-EVIDENCE-CEL_ERROR`` naming the value."""
    v = judge_one(_rule(WITHIN_24H), _booked("last Tuesday"), layer="policy", tools=TOOLS)
    assert codes(v) == ["F-EVIDENCE-CEL_ERROR"]
    assert "last Tuesday" in v.primary.explanation


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("iso_timestamp('2024-05-14T09:52:38') == timestamp('2024-05-14T09:52:38Z')", True),
        ("iso_timestamp('2024-05-14 09:52:38') == timestamp('2024-05-14T09:52:38Z')", True),
        ("iso_timestamp('2024-05-14') == timestamp('2024-05-14T00:00:00Z')", True),
        ("iso_timestamp('2024-05-14T09:52:38+02:00') == timestamp('2024-05-14T07:52:38Z')", True),
        (
            "iso_timestamp('2024-05-15 15:00:00', 'America/New_York') == "
            "timestamp('2024-05-15T19:00:00Z')",
            True,
        ),
        ("iso_timestamp('2024-05-15T15:00:00', '-05:00').getHours() == 20", True),
        ("iso_timestamp('2024-05-14T00:00:00Z') + duration('24h') > "
         "iso_timestamp('2024-05-14T23:59:59')", True),
        ("timestamp(run.start) < timestamp(run.end)", True),
        ("timestamp(run.end) - timestamp(run.start) == duration('70ms')", True),
        ("run.tools.all(t, timestamp(t.start) <= timestamp(t.end))", True),
        ("run.models.exists(m, m.end == run.tools[0].start)", True),
    ],
)  # fmt: skip
def test_time_expressions(expr: str, expected: bool) -> None:
    """ISO-8601 forms, zones and offsets, RFC 3339 run and step times, durations."""
    c = Compiler()
    compiled = c.cel("expr", expr)
    assert compiled is not None, c.errors
    run = _booked("2023-11-14T10:00:00")
    ctx = RunContext(run, {}, {}, None, ViewSpec.of([expr]))
    assert compiled.evaluate(ctx.activation()) == (expected, None)


@pytest.mark.parametrize(
    ("expr", "needle"),
    [
        ("iso_timestamp('yesterday') > timestamp('2024-01-01T00:00:00Z')", "not an ISO-8601"),
        ("iso_timestamp('2024-05-14', 'Mars/Olympus') > timestamp(run.start)", "time zone"),
        ("iso_timestamp(run.step_count) > timestamp(run.start)", "No matching overloads"),
        ("iso_timestamp('" + "9" * 80 + "') > timestamp(run.start)", "characters"),
    ],
)
def test_bad_times_are_errors(expr: str, needle: str) -> None:
    """Every bad input is a CEL error value (the rule gets ``F-EVIDENCE-CEL_ERROR``)."""
    v = judge_one(_rule(expr), _booked("x"), layer="policy", tools=TOOLS)
    assert codes(v) == ["F-EVIDENCE-CEL_ERROR"]
    assert needle in v.primary.explanation


def test_a_run_without_timestamps_has_null_times() -> None:
    """No recorded time is null in the view, so ``timestamp()`` on it is an error."""
    run = make_run([tool("x")])
    run.start_ns = run.end_ns = 0
    assert run_view(run, {}, None)["start"] is None
    assert rfc3339(1) == "1970-01-01T00:00:00.000000001Z"
    assert iso_timestamp("2024-05-14T09:52:38").isoformat() == "2024-05-14T09:52:38+00:00"


TURN_EXPRESSIONS = [
    "run.turns.filter(t, t.role == 'user').size() == 2",
    "run.turns.exists(t, t.role == 'user' && t.text.contains('yes'))",
    "run.turns.filter(t, t.role == 'assistant' && t.text != null).map(t, t.text) == "
    "['Cancel ZFA04Y?', 'Done']",
    "run.turns.exists(u, u.role == 'user' && u.text == 'yes' && run.tools.exists(t, "
    "t.name == 'cancel_reservation' && u.step_index < t.index))",
    "run.turns.exists(t, t.tool_calls.exists(c, c.name == 'cancel_reservation' && "
    "c.arguments.reservation_id == 'ZFA04Y'))",
    "run.turns.exists(t, t.role == 'tool' && t.result.status == 'cancelled')",
    "run.turns.all(t, t.time != null || t.role == 'tool')",
    "run.models.exists(m, m.input_messages == null)",
]


@pytest.mark.parametrize("expr", TURN_EXPRESSIONS)
def test_turns_in_the_view_and_pruning_keeps_answers(expr: str) -> None:
    """The conversation is readable from CEL, and the pruned view answers like the full."""
    run = _booked("2023-11-14T10:00:00")
    c = Compiler()
    compiled = c.cel("expr", expr)
    assert compiled is not None, c.errors
    kinds = RunContext(run, {}, {}).kinds
    full = compiled.evaluate(cel_activation(run_view(run, kinds, None)))
    assert full == (True, None)
    for spec in (ViewSpec.of([expr]), ViewSpec.of(TURN_EXPRESSIONS)):
        assert compiled.evaluate(cel_activation(run_view(run, kinds, spec))) == full


def test_turns_are_built_only_when_named() -> None:
    """An expression that never names ``turns`` does not pay for the conversation."""
    run = _booked("2023-11-14T10:00:00")
    kinds = RunContext(run, {}, {}).kinds
    view = run_view(run, kinds, ViewSpec.of(["run.tools.size() > 0"]))
    assert "turns" not in view
    view = run_view(run, kinds, ViewSpec.of(["run.turns.exists(t, t.role == 'user')"]))
    assert set(view["turns"][0]) == {"role"}
