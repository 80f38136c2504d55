"""Evidence problems the run builder notes reach the verdict as F-EVIDENCE-* warnings.

Real spans: the real ``tracejudge.agent``/``tracejudge.tool`` instrumentation on a real
OTel SDK provider, decoded by the real SDK decoder, then damaged the way real traces get
damaged (a dropped parent, a parent loop, a crashed span, a stray span) and built by the
real run builder. The builder's notes are coded records (``Note``): the engine maps
codes to findings with a table, so these tests pin codes and cited spans, not wording.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, get_args

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.engine.engine_runs import make_run, rules_text, tool
from tracejudge import semconv as sc
from tracejudge.engine import Engine, Verdict, evidence, load_rules, load_rules_text
from tracejudge.engine.evidence import EVIDENCE_RULE_ID
from tracejudge.model import Note, NoteCode
from tracejudge.model.decode_sdk import spans_from_sdk
from tracejudge.model.spans import SpanRecord

RULES = Path(__file__).resolve().parents[2] / "examples" / "refund" / "rules.yaml"
ORDERS = {"orders": [{"id": "B-200", "amount": 40.0, "is_duplicate": True}]}


def _healthy_spans(exporter: InMemorySpanExporter) -> list[SpanRecord]:
    with tracejudge.agent("support-agent", user_id="u1") as run:
        with tracejudge.tool("lookup_order", effect="read", arguments={"customer_id": "u1"}) as t:
            t.set_result(ORDERS)
        with tracejudge.tool("check_policy", effect="read", arguments={"order_id": "B-200"}) as t:
            t.set_result({"approved": True})
        args: dict[str, Any] = {"order_id": "B-200", "amount": 40.0, "idempotency_key": "k"}
        with tracejudge.tool("refund_api.create", effect="write", arguments=args) as t:
            t.set_result({"id": "re_ABC12345", "status": "succeeded"})
        run.set_output("I've issued a refund of $40.00 (refund id re_ABC12345).")
    return spans_from_sdk(exporter.get_finished_spans())


def _judge(spans: list[SpanRecord]) -> Verdict:
    verdicts = Engine(load_rules(RULES)).judge_spans(spans)
    assert len(verdicts) == 1
    return verdicts[0]


def _evidence(v: Verdict) -> list[str]:
    return [f.code for f in v.findings if f.rule_id == EVIDENCE_RULE_ID]


def _by_name(spans: list[SpanRecord], name: str) -> SpanRecord:
    return next(s for s in spans if s.attributes.get(sc.GEN_AI_TOOL_NAME) == name)


@pytest.mark.usefixtures("instrumented")
def test_healthy_trace_has_no_evidence_finding(span_exporter: InMemorySpanExporter) -> None:
    """The notes a clean trace gets (where the final answer came from) must not warn."""
    v = _judge(_healthy_spans(span_exporter))
    assert _evidence(v) == []
    assert v.verdict == "pass", [f.to_dict() for f in v.findings]


@pytest.mark.usefixtures("instrumented")
def test_orphan_span_warns_and_cites_it(span_exporter: InMemorySpanExporter) -> None:
    """A service dropped the refund's parent: the run may be missing calls, not a pass."""
    spans = _healthy_spans(span_exporter)
    refund = _by_name(spans, "refund_api.create")
    spans[spans.index(refund)] = refund = dataclasses.replace(
        refund, parent_span_id="00000000deadbeef"
    )
    v = _judge(spans)
    # the refund now sits outside the agent run, so the claim is unsupported; the
    # evidence findings say why the run may be judged on less than happened
    assert v.verdict == "fail"
    assert v.primary is not None
    assert v.primary.code == "F-OUTPUT-UNSUPPORTED_CLAIM"
    assert _evidence(v) == ["F-EVIDENCE-ORPHAN_SPAN", "F-EVIDENCE-UNJUDGED_STEPS"]
    finding = next(f for f in v.findings if f.code == "F-EVIDENCE-ORPHAN_SPAN")
    assert finding.severity == "warn"
    assert finding.span_ids == (refund.span_id,)  # the orphan, not its missing parent
    assert "parent" in finding.explanation
    outcome = next(o for o in v.outcomes if o.rule_id == EVIDENCE_RULE_ID)
    assert outcome.result == "insufficient_evidence"


@pytest.mark.usefixtures("instrumented")
def test_parent_cycle_warns(span_exporter: InMemorySpanExporter) -> None:
    """Parent links that loop were cut to judge the trace: the step tree is a guess."""
    spans = _healthy_spans(span_exporter)
    root = next(s for s in spans if s.parent_span_id is None)
    lookup = _by_name(spans, "lookup_order")
    spans[spans.index(root)] = dataclasses.replace(root, parent_span_id=lookup.span_id)
    v = _judge(spans)
    assert "F-EVIDENCE-PARENT_CYCLE" in _evidence(v)
    assert v.verdict in ("warn", "fail")


@pytest.mark.usefixtures("instrumented")
def test_unfinished_span_warns(span_exporter: InMemorySpanExporter) -> None:
    """A span without an end time (a crashed process) makes timing approximate."""
    spans = _healthy_spans(span_exporter)
    policy = _by_name(spans, "check_policy")
    spans[spans.index(policy)] = dataclasses.replace(policy, end_ns=0)
    v = _judge(spans)
    assert _evidence(v) == ["F-EVIDENCE-UNFINISHED_SPAN"]
    assert v.verdict == "warn"


@pytest.mark.usefixtures("instrumented")
def test_tool_span_outside_the_agent_run_warns(span_exporter: InMemorySpanExporter) -> None:
    """A refund recorded beside the agent run was never judged: say so."""
    spans = _healthy_spans(span_exporter)
    with tracejudge.tool("refund_api.create", effect="write", arguments={"order_id": "X"}) as t:
        t.set_result({"status": "succeeded"})
    stray = spans_from_sdk(span_exporter.get_finished_spans())[-1]
    stray = dataclasses.replace(stray, trace_id=spans[0].trace_id)
    v = _judge([*spans, stray])
    assert _evidence(v) == ["F-EVIDENCE-UNJUDGED_STEPS"]


@pytest.mark.usefixtures("instrumented")
def test_unparsable_messages_warn_in_the_outcome_layer(
    span_exporter: InMemorySpanExporter,
) -> None:
    """Messages that are not a JSON list are ignored: claims read from them are missing."""
    spans = _healthy_spans(span_exporter)
    root = next(s for s in spans if s.parent_span_id is None)
    chat = SpanRecord(
        trace_id=root.trace_id,
        span_id="00000000000c4a70",
        parent_span_id=root.span_id,
        name="chat gpt-4o-mini",
        start_ns=root.start_ns + 1,
        end_ns=root.start_ns + 2,
        attributes={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            sc.GEN_AI_INPUT_MESSAGES: "{not json",
            sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 2,
        },
    )
    v = _judge([*spans, chat])
    assert _evidence(v) == ["F-EVIDENCE-BAD_MESSAGES"]
    finding = next(f for f in v.findings if f.rule_id == EVIDENCE_RULE_ID)
    assert finding.layer == "outcome"
    assert finding.span_ids == ("00000000000c4a70",)
    assert v.layers["outcome"] == "warn"


def test_text_arguments_warn_once_when_no_rule_said_so() -> None:
    """A reference/baseline rule compares text with JSON and cannot tell: flag the run."""
    rs = load_rules_text(rules_text({"type": "required_steps", "tools": ["send_email"]}))
    run = make_run([tool("send_email", "to u1: hello", {"sent": True}, args_json=False)])
    v = Engine(rs).judge(run)
    assert _evidence(v) == ["F-EVIDENCE-ARGS_NOT_JSON"]
    assert v.verdict == "warn"


def test_text_arguments_are_not_reported_twice() -> None:
    """A rule that needs the arguments already answered insufficient_evidence for them."""
    check = {"type": "identity_scope", "tool": "lookup_order", "argument": "customer_id"}
    rs = load_rules_text(rules_text({**check, "equals": "user_id"}, layer="policy"))
    run = make_run([tool("lookup_order", "customer u1", {}, args_json=False)], user_id="u1")
    v = Engine(rs).judge(run)
    assert [f.code for f in v.findings] == ["F-EVIDENCE-ARGS_NOT_JSON"]
    assert v.findings[0].rule_id == "r1"


def test_findings_come_from_note_codes_and_span_ids_not_wording() -> None:
    """Any text under a gap code warns, citing the note's spans; provenance codes never do."""
    rs = load_rules_text(rules_text({"type": "required_steps", "tools": ["send_email"]}))
    run = make_run([tool("send_email", {"to": "u1"}, {"sent": True})])
    run.notes.extend(
        [
            Note("final_answer", (run.root_span_id,), "parent xyz is missing from the trace"),
            Note("inferred_call", ("00000000000000c1",), "parent links loop"),
            Note("orphan_span", ("00000000000000AA",), "reworded: lost my parent"),
            Note("orphan_span", ("00000000000000bb", "00000000000000aa"), "another"),
        ]
    )
    v = Engine(rs).judge(run)
    assert _evidence(v) == ["F-EVIDENCE-ORPHAN_SPAN"]
    (finding,) = [f for f in v.findings if f.rule_id == EVIDENCE_RULE_ID]
    assert finding.span_ids == ("00000000000000aa", "00000000000000bb")
    assert finding.explanation.endswith("reworded: lost my parent (+1 more)")


def test_every_gap_in_the_table_is_a_note_code_the_builder_can_write() -> None:
    """A table entry for a code the model does not define would never fire."""
    assert set(evidence._CLASSES) <= set(get_args(NoteCode))
    assert len(evidence.CODES) == len(set(evidence.CODES))
