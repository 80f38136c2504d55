"""Engine behaviour: layers, overall verdict, primary selection, never raising."""

from __future__ import annotations

import dataclasses
import json

from tests.engine.engine_runs import ORDERS, REFUND_TOOLS, make_run, model, span, tool
from tracejudge.engine import Engine, load_rules_text
from tracejudge.engine.context import Report, RunContext
from tracejudge.engine.verdict import EXPLANATION_MAX_BYTES

RULES = {
    "version": 1,
    "tools": REFUND_TOOLS,
    "rules": [
        {
            "id": "claim",
            "layer": "outcome",
            "check": {
                "type": "claim_evidence",
                "claim": "(?i)refunded",
                "tool": "refund_api.create",
            },
        },
        {
            "id": "bind",
            "layer": "trajectory",
            "check": {
                "type": "entity_binding",
                "tool": "refund_api.create",
                "argument": "order_id",
            },
        },
        {
            "id": "loops",
            "layer": "trajectory",
            "severity": "warn",
            "check": {"type": "no_loop", "max_repeats": 2},
        },
        {"id": "steps", "layer": "budget", "check": {"type": "budget", "max_steps": 10}},
    ],
}


def _engine() -> Engine:
    return Engine(load_rules_text(json.dumps(RULES)))


def test_earliest_causal_failure_is_primary() -> None:
    """A wrong refund (step 1) is the cause; the claim in the answer is downstream."""
    bad = tool("refund_api.create", {"order_id": "Z"}, None, status="error")
    run = make_run([tool("lookup_order", {}, ORDERS), bad, model()], "You have been refunded.")
    v = _engine().judge(run)
    assert [f.code for f in v.findings] == [
        "F-ACTION-ARG-ENTITY_BINDING",
        "F-OUTPUT-UNSUPPORTED_CLAIM",
    ]
    assert v.primary is v.findings[0]
    assert v.primary.span_ids == (span(1),)
    assert v.layers == {
        "outcome": "fail",
        "trajectory": "fail",
        "policy": "not_applicable",
        "budget": "pass",
    }


def test_hard_gate_is_not_averaged_away() -> None:
    """A soft warning earlier in the run never outranks a later hard failure."""
    lookup = tool("lookup_order", {}, ORDERS)
    run = make_run([lookup, lookup, model()], "You have been refunded.")
    v = _engine().judge(run)
    assert v.verdict == "fail"
    assert v.primary is not None
    assert v.primary.code == "F-OUTPUT-UNSUPPORTED_CLAIM"
    assert [f.code for f in v.findings][-1] == "F-ACTION-LOOP"


def test_warn_only_run() -> None:
    """Only soft findings: the run warns and the trajectory layer says warn."""
    lookup = tool("lookup_order", {}, ORDERS)
    v = _engine().judge(make_run([lookup, lookup], "Here are your orders."))
    assert v.verdict == "warn"
    assert v.layers["trajectory"] == "warn"
    outcomes = {o.rule_id: o.result for o in v.outcomes}
    assert outcomes == {"claim": "pass", "bind": "pass", "loops": "warn", "steps": "pass"}


def test_judge_never_raises() -> None:
    """A check that crashes becomes an error verdict instead of an exception."""

    class Crashing:
        """A ``Check`` with a bug (a fake: the shipped checks are tested not to raise)."""

        def evaluate(self, ctx: RunContext, report: Report) -> None:
            raise TypeError("boom")

    engine = _engine()
    first = engine.ruleset.rules[0]
    engine.ruleset = dataclasses.replace(
        engine.ruleset, rules=(dataclasses.replace(first, check=Crashing()),)
    )
    v = engine.judge(make_run([]))
    assert v.verdict == "error"
    assert v.error == "TypeError: boom"
    assert v.to_dict()["error"] == v.error


def test_explanations_are_clipped_and_span_ids_lowercase() -> None:
    """Tempo truncates long attributes; span ids are lowercase hex everywhere."""
    long_id = "Z" * 2000
    run = make_run(
        [tool("lookup_order", {}, ORDERS), tool("refund_api.create", {"order_id": long_id}, {})]
    )
    run.steps[1] = dataclasses.replace(run.steps[1], span_id="ABCDEF0123456789")
    v = _engine().judge(run)
    f = v.findings[0]
    assert len(f.explanation.encode()) <= EXPLANATION_MAX_BYTES
    assert f.span_ids == ("abcdef0123456789",)


def test_outcomes_cover_every_rule_with_spans() -> None:
    """Each rule yields one outcome (one gen_ai.evaluation.result event) parented to a span."""
    v = _engine().judge(make_run([tool("lookup_order", {}, ORDERS)], "ok"))
    assert [o.rule_id for o in v.outcomes] == ["claim", "bind", "loops", "steps"]
    assert all(o.span_id for o in v.outcomes)
    assert v.outcomes[0].score == 1.0


def test_judge_spans_never_raises() -> None:
    """Spans the run builder cannot handle give one error verdict, not an exception."""
    from tracejudge.model.spans import SpanRecord

    # An event that is not an EventRecord (a fake: no decoder makes one, but a bug in the
    # builder must still not escape ``judge_spans``). Pure Python fails reading its fields,
    # the compiled build on its type: either way one error verdict.
    span = SpanRecord(
        "0af7651916cd43dd8448eb211c80319c",
        "00f067aa0ba902b7",
        None,
        "chat",
        attributes={"gen_ai.operation.name": "chat"},
        events=["not an event"],  # type: ignore[list-item]
    )
    verdicts = _engine().judge_spans([span])
    assert len(verdicts) == 1
    assert verdicts[0].verdict == "error"
    assert verdicts[0].trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert verdicts[0].root_span_id == "00f067aa0ba902b7"
    assert verdicts[0].error is not None
    assert verdicts[0].error.startswith(("AttributeError", "TypeError"))
