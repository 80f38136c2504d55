"""The ``case`` check: runs judged against their case's expected outcome.

Runs are built directly (``engine_runs``), airline-style: a lookup, then writes. Each finding
and each matching mode is shown failing and passing on small hand-made runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine.engine_runs import FINAL, ROOT, make_run, model, span, tool
from tracejudge.engine import CaseSet, Engine, load_cases_text, load_rules_text
from tracejudge.engine.checks.case import CASE_RULE_ID, max_matching, normalize, same
from tracejudge.engine.verdict import Verdict
from tracejudge.model.run import Step, Turn

TOOLS: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
    "update_reservation_baggages": {"kind": "mutate"},
    "book_reservation": {"kind": "mutate"},
    "send_certificate": {"kind": "mutate"},
    "transfer_to_human_agents": {"kind": "notify"},
}
LOOKUP = tool("get_reservation_details", {"reservation_id": "ABC123"}, {"status": "active"})
CANCEL = tool("cancel_reservation", {"reservation_id": "ABC123"}, {"status": "cancelled"})
BAGS = {
    "reservation_id": "ABC123",
    "total_baggages": 2,
    "nonfree_baggages": 0,
    "payment_id": "gc_1",
}


def cases(*entries: dict[str, Any]) -> CaseSet:
    """A cases file holding ``entries`` (JSON is YAML)."""
    return load_cases_text(json.dumps({"version": 1, "cases": list(entries)}), "cases.yaml")


def case(**kw: Any) -> CaseSet:
    """One case, id ``c1``."""
    return cases({"id": "c1", **kw})


def rules(check: dict[str, Any] | None = None, tools: dict[str, Any] | None = None) -> str:
    """Rules with one unrelated rule, plus a ``case`` rule when ``check`` is given."""
    doc: dict[str, Any] = {
        "version": 1,
        "tools": TOOLS if tools is None else tools,
        "rules": [{"id": "loops", "layer": "trajectory", "check": {"type": "no_loop"}}],
    }
    if check is not None:
        doc["rules"].append({"id": "my-case", "layer": "outcome", "check": check})
    return json.dumps(doc)


def judge(
    case_set: CaseSet | None,
    steps: list[Step],
    answer: str | None = "Done.",
    *,
    check: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    **kw: Any,
) -> Verdict:
    """Judge a run of case ``c1`` (unless ``case_id`` says otherwise)."""
    kw.setdefault("case_id", "c1")
    ruleset = load_rules_text(rules(check, tools))
    return Engine(ruleset, cases=case_set).judge(make_run(steps, answer, **kw))


def codes(v: Verdict) -> list[str]:
    """Finding codes, in primary order."""
    return [f.code for f in v.findings]


def outcome(v: Verdict, rule_id: str = CASE_RULE_ID) -> str:
    """The result of one rule."""
    return next(o.result for o in v.outcomes if o.rule_id == rule_id)


class TestActions:
    """Expected actions: present, missing, wrong arguments, unexpected writes."""

    def test_the_expected_write_with_its_arguments_passes(self) -> None:
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]
            ),
            [LOOKUP, CANCEL],
        )
        assert v.verdict == "pass"
        assert outcome(v) == "pass"

    def test_implicit_rule_is_outcome_layer_and_hard(self) -> None:
        """Given cases and no ``case`` rule, the engine judges with ``tracejudge.case``."""
        v = judge(case(expected_actions=[{"tool": "cancel_reservation"}]), [LOOKUP])
        assert v.verdict == "fail"
        f = v.findings[0]
        assert (f.rule_id, f.layer, f.severity) == (CASE_RULE_ID, "outcome", "fail")
        assert v.layers["outcome"] == "fail"

    def test_an_explicit_case_rule_replaces_the_implicit_one(self) -> None:
        v = judge(
            case(expected_actions=[{"tool": "cancel_reservation"}]),
            [LOOKUP],
            check={"type": "case"},
        )
        assert [o.rule_id for o in v.outcomes] == ["loops", "my-case"]
        assert v.findings[0].rule_id == "my-case"

    def test_missing_action_cites_the_root_as_absent(self) -> None:
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]
            ),
            [LOOKUP],
        )
        assert codes(v) == ["F-CASE-MISSING_ACTION"]
        f = v.findings[0]
        assert f.span_ids == (ROOT,)
        assert f.absent is True
        assert "cancel_reservation" in f.explanation
        assert "expected_actions[0]" in f.explanation

    def test_a_failed_call_does_not_satisfy_an_expectation(self) -> None:
        failed = tool(
            "cancel_reservation", {"reservation_id": "ABC123"}, "Error: not allowed", status="error"
        )
        v = judge(case(expected_actions=[{"tool": "cancel_reservation"}]), [LOOKUP, failed])
        assert codes(v) == ["F-CASE-MISSING_ACTION"]
        assert "attempted at step 1" in v.findings[0].explanation

    def test_attempts_all_counts_failed_calls(self) -> None:
        failed = tool("cancel_reservation", {"reservation_id": "ABC123"}, "Error", status="error")
        v = judge(
            case(expected_actions=[{"tool": "cancel_reservation"}]),
            [LOOKUP, failed],
            check={"type": "case", "attempts": "all"},
        )
        assert v.verdict == "pass"

    def test_wrong_arguments_cite_the_call_and_name_both_values(self) -> None:
        wrong = tool("cancel_reservation", {"reservation_id": "XYZ999"}, {"status": "cancelled"})
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]
            ),
            [LOOKUP, wrong],
        )
        assert codes(v) == ["F-CASE-WRONG_ARGUMENTS"]  # and not also an unexpected write
        f = v.findings[0]
        assert f.span_ids == (span(1),)
        assert f.step_index == 1
        assert "reservation_id='XYZ999', expected 'ABC123'" in f.explanation

    def test_a_wrong_write_before_the_right_one_is_unexpected(self) -> None:
        wrong = tool("cancel_reservation", {"reservation_id": "XYZ999"}, {"status": "cancelled"})
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]
            ),
            [LOOKUP, wrong, CANCEL],
        )
        assert codes(v) == ["F-CASE-UNEXPECTED_WRITE"]
        assert v.findings[0].span_ids == (span(1),)

    def test_an_extra_write_is_unexpected_but_reads_and_notices_never_are(self) -> None:
        extra = tool("send_certificate", {"user_id": "u1", "amount": 100}, {"ok": True})
        notice = tool("transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
        v = judge(
            case(expected_actions=[{"tool": "cancel_reservation"}]),
            [LOOKUP, CANCEL, LOOKUP, notice, extra],
        )
        assert codes(v) == ["F-CASE-UNEXPECTED_WRITE"]
        f = v.findings[0]
        assert f.span_ids == (span(4),)
        assert "send_certificate" in f.explanation
        assert "'c1'" in f.explanation

    def test_no_expected_actions_means_every_write_is_unexpected(self) -> None:
        v = judge(case(expected_actions=[]), [LOOKUP, CANCEL])
        assert codes(v) == ["F-CASE-UNEXPECTED_WRITE"]
        assert judge(case(expected_actions=[]), [LOOKUP]).verdict == "pass"

    def test_without_expected_actions_writes_are_not_judged(self) -> None:
        v = judge(case(must_communicate=["cancelled"]), [LOOKUP, CANCEL], "It is cancelled.")
        assert v.verdict == "pass"

    def test_a_failed_write_is_not_unexpected(self) -> None:
        failed = tool("book_reservation", {"user_id": "u1"}, "Error", status="error")
        v = judge(case(expected_actions=[{"tool": "cancel_reservation"}]), [CANCEL, failed])
        assert v.verdict == "pass"

    @pytest.mark.parametrize(("mode", "expected"), [("warn", "warn"), ("fail", "fail")])
    def test_failed_writes_can_be_reported(self, mode: str, expected: str) -> None:
        failed = tool("book_reservation", {"user_id": "u1"}, "Error", status="error")
        v = judge(
            case(expected_actions=[{"tool": "cancel_reservation"}]),
            [CANCEL, failed],
            check={"type": "case", "failed_writes": mode},
        )
        assert codes(v) == ["F-CASE-FAILED_WRITE"]
        assert v.verdict == expected
        assert v.findings[0].span_ids == (span(1),)

    def test_an_action_of_severity_warn_only_warns(self) -> None:
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation"},
                    {"tool": "transfer_to_human_agents", "severity": "warn"},
                ]
            ),
            [CANCEL],
        )
        assert codes(v) == ["F-CASE-MISSING_ACTION"]
        assert v.findings[0].severity == "warn"
        assert v.verdict == "warn"

    def test_kinds_from_the_span_effect_when_tools_are_not_declared(self) -> None:
        write = tool("send_certificate", {"amount": 5}, {"ok": True})
        write.effect = "write"
        v = judge(case(expected_actions=[]), [write], tools={})
        assert codes(v) == ["F-CASE-UNEXPECTED_WRITE"]

    def test_a_call_of_unknown_kind_is_missing_evidence_not_a_pass(self) -> None:
        mystery = tool("frobnicate", {"x": 1}, {"ok": True})
        v = judge(case(expected_actions=[{"tool": "cancel_reservation"}]), [CANCEL, mystery])
        assert codes(v) == ["F-EVIDENCE-UNKNOWN_TOOL_KIND"]
        assert v.verdict == "warn"
        assert outcome(v) == "insufficient_evidence"
        assert "frobnicate" in v.findings[0].explanation

    def test_arguments_that_are_not_json_cannot_be_compared(self) -> None:
        text = tool("cancel_reservation", "reservation ABC123", {"ok": True}, args_json=False)
        v = judge(
            case(
                expected_actions=[
                    {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]
            ),
            [text],
        )
        assert "F-EVIDENCE-ARGS_NOT_JSON" in codes(v)
        assert "F-CASE-MISSING_ACTION" not in codes(v)
        assert v.verdict == "warn"


def _bags(expected: dict[str, Any], actual: dict[str, Any], **spec: Any) -> Verdict:
    call = tool("update_reservation_baggages", actual, {"ok": True})
    action = {"tool": "update_reservation_baggages", "arguments": expected, **spec}
    return judge(case(expected_actions=[action]), [call])


class TestArgumentMatching:
    """Per-argument exact / subset / ignore / tolerance / delta, and the action's ``match``."""

    def test_exact_is_json_equality(self) -> None:
        assert _bags(BAGS, dict(BAGS)).verdict == "pass"
        assert _bags(BAGS, {**BAGS, "total_baggages": 2.0}).verdict == "pass"  # 2 == 2.0 in JSON
        assert _bags(BAGS, {**BAGS, "total_baggages": "2"}).verdict == "fail"
        assert _bags({**BAGS, "insurance": False}, {**BAGS, "insurance": 0}).verdict == "fail"

    def test_exact_rejects_an_extra_argument_and_names_it(self) -> None:
        v = _bags(BAGS, {**BAGS, "note": "hi"})
        assert codes(v) == ["F-CASE-WRONG_ARGUMENTS"]
        assert "note='hi' is not an expected argument" in v.findings[0].explanation

    def test_missing_argument_is_named(self) -> None:
        actual = {k: v for k, v in BAGS.items() if k != "payment_id"}
        v = _bags(BAGS, actual)
        assert "payment_id missing, expected 'gc_1'" in v.findings[0].explanation

    def test_match_subset_allows_other_arguments(self) -> None:
        v = _bags({"reservation_id": "ABC123"}, BAGS, match="subset")
        assert v.verdict == "pass"
        assert _bags({"reservation_id": "ZZZ"}, BAGS, match="subset").verdict == "fail"

    def test_ignore_accepts_any_value_or_none(self) -> None:
        spec = {"argument_match": {"payment_id": "ignore"}}
        assert _bags(BAGS, {**BAGS, "payment_id": "cc_9"}, **spec).verdict == "pass"
        without = {k: v for k, v in BAGS.items() if k != "payment_id"}
        assert _bags(BAGS, without, **spec).verdict == "pass"

    def test_ignore_also_admits_an_unlisted_argument_under_exact(self) -> None:
        spec = {"argument_match": {"note": "ignore"}}
        assert _bags(BAGS, {**BAGS, "note": "hi"}, **spec).verdict == "pass"

    def test_subset_on_objects_and_lists_in_any_order(self) -> None:
        want = {"flights": [{"flight_number": "HAT2"}, {"flight_number": "HAT1"}]}
        got = {
            "flights": [
                {"flight_number": "HAT1", "date": "2024-05-20"},
                {"flight_number": "HAT2", "date": "2024-05-21"},
            ]
        }
        spec = {"argument_match": {"flights": "subset"}}
        assert _bags(want, got, **spec).verdict == "pass"
        assert _bags(want, got).verdict == "fail"  # exact: other order, other keys
        short = {"flights": [{"flight_number": "HAT1"}]}
        assert _bags(want, {"flights": short["flights"]}, **spec).verdict == "fail"

    def test_relative_tolerance(self) -> None:
        spec = {"argument_match": {"amount": {"tolerance": 0.01}}}
        assert _bags({"amount": 100}, {"amount": 100.9}, **spec).verdict == "pass"
        v = _bags({"amount": 100}, {"amount": 102}, **spec)
        assert v.verdict == "fail"
        assert "amount=102, expected 100 (tolerance 0.01)" in v.findings[0].explanation

    def test_absolute_delta(self) -> None:
        spec = {"argument_match": {"amount": {"delta": 0.5}}}
        assert _bags({"amount": 10}, {"amount": 10.5}, **spec).verdict == "pass"
        assert _bags({"amount": 10}, {"amount": 10.6}, **spec).verdict == "fail"
        assert _bags({"amount": 10}, {"amount": "10"}, **spec).verdict == "fail"

    def test_json_equality_keeps_strings_numbers_and_booleans_apart(self) -> None:
        assert same({"a": [1, 2.0]}, {"a": [1.0, 2]})
        assert not same(True, 1)
        assert not same("1", 1)
        assert not same(None, 0)
        assert not same({"a": 1}, {"a": 1, "b": None})


class TestOrder:
    """``ordered: true``: the listed order, other calls in between allowed."""

    EXPECTED = [{"tool": "cancel_reservation"}, {"tool": "book_reservation"}]
    BOOK = tool("book_reservation", {"user_id": "u1"}, {"id": "NEW1"})

    def test_in_order_passes(self) -> None:
        v = judge(case(ordered=True, expected_actions=self.EXPECTED), [CANCEL, LOOKUP, self.BOOK])
        assert v.verdict == "pass"

    def test_out_of_order_cites_the_early_call(self) -> None:
        v = judge(case(ordered=True, expected_actions=self.EXPECTED), [self.BOOK, CANCEL])
        assert codes(v) == ["F-CASE-ORDER"]
        f = v.findings[0]
        assert f.span_ids == (span(0),)
        assert "after expected_actions[0] (cancel_reservation)" in f.explanation

    def test_unordered_by_default(self) -> None:
        assert judge(case(expected_actions=self.EXPECTED), [self.BOOK, CANCEL]).verdict == "pass"

    def test_pairing_is_a_maximum_matching_not_first_come(self) -> None:
        """The first expectation matches both calls, the second only the first call: a
        greedy pairing would leave the second unmatched and report a healthy run."""
        loose = {
            "tool": "cancel_reservation",
            "arguments": {"reservation_id": "ABC123"},
            "match": "subset",
        }
        tight = {
            "tool": "cancel_reservation",
            "arguments": {"reservation_id": "ABC123", "reason": "sick"},
        }
        first = tool("cancel_reservation", {"reservation_id": "ABC123", "reason": "sick"}, {})
        second = tool("cancel_reservation", {"reservation_id": "ABC123", "reason": "other"}, {})
        assert judge(case(expected_actions=[loose, tight]), [first, second]).verdict == "pass"

    def test_max_matching(self) -> None:
        edges = {(0, 0), (0, 1), (1, 0)}
        assert max_matching(2, 2, lambda a, b: (a, b) in edges) == {0: 1, 1: 0}


class TestForbidden:
    """Forbidden actions: the tool alone, or with argument constraints (subset)."""

    def test_a_forbidden_tool_cites_the_call(self) -> None:
        v = judge(case(forbidden_actions=[{"tool": "cancel_reservation"}]), [LOOKUP, CANCEL])
        assert codes(v) == ["F-CASE-FORBIDDEN_ACTION"]
        assert v.findings[0].span_ids == (span(1),)
        assert "forbidden_actions[0]" in v.findings[0].explanation

    def test_argument_constraints_match_as_a_subset(self) -> None:
        forbid = [{"tool": "update_reservation_baggages", "arguments": {"payment_id": "cc_9"}}]
        paid = tool("update_reservation_baggages", {**BAGS, "payment_id": "cc_9"}, {})
        assert codes(judge(case(forbidden_actions=forbid), [paid])) == ["F-CASE-FORBIDDEN_ACTION"]
        fine = tool("update_reservation_baggages", BAGS, {})
        assert judge(case(forbidden_actions=forbid), [fine]).verdict == "pass"

    def test_a_forbidden_write_is_not_also_unexpected(self) -> None:
        v = judge(
            case(expected_actions=[], forbidden_actions=[{"tool": "cancel_reservation"}]),
            [CANCEL],
        )
        assert codes(v) == ["F-CASE-FORBIDDEN_ACTION"]

    def test_a_failed_forbidden_call_counts_only_with_attempts_all(self) -> None:
        failed = tool("cancel_reservation", {"reservation_id": "ABC123"}, "Error", status="error")
        forbid = case(forbidden_actions=[{"tool": "cancel_reservation"}])
        assert judge(forbid, [failed]).verdict == "pass"
        v = judge(forbid, [failed], check={"type": "case", "attempts": "all"})
        assert codes(v) == ["F-CASE-FORBIDDEN_ACTION"]


class TestStateAndInformation:
    """``expected_state`` (the state check's machinery) and ``must_communicate``."""

    def test_expected_state_reads_the_last_successful_result(self) -> None:
        state = [{"tool": "cancel_reservation", "path": "status", "equals": "cancelled"}]
        assert judge(case(expected_state=state), [CANCEL]).verdict == "pass"
        other = tool("cancel_reservation", {"reservation_id": "ABC123"}, {"status": "active"})
        v = judge(case(expected_state=state), [other])
        assert codes(v) == ["F-CASE-STATE_MISMATCH"]
        assert v.findings[0].span_ids == (span(0),)

    def test_expected_state_with_cel(self) -> None:
        state = [{"tool": "cancel_reservation", "path": "status", "cel": "value in ['cancelled']"}]
        assert judge(case(expected_state=state), [CANCEL]).verdict == "pass"
        v = judge(case(expected_state=state), [LOOKUP])
        assert codes(v) == ["F-CASE-STATE_MISMATCH"]
        assert v.findings[0].span_ids == (ROOT,)

    def test_text_is_case_folded_and_ignores_digit_group_commas(self) -> None:
        c = case(must_communicate=["23553", "Refund"])
        assert judge(c, [], "Your REFUND total is $23,553.").verdict == "pass"
        v = judge(c, [], "Your refund is on its way.")
        assert codes(v) == ["F-CASE-MISSING_INFORMATION"]
        f = v.findings[0]
        assert f.span_ids == (FINAL,)
        assert "'23553'" in f.explanation
        assert normalize("1,000,000 Miles, soon") == "1000000 miles, soon"

    def test_regex_items(self) -> None:
        c = case(must_communicate=[{"regex": r"\$\d+\.\d{2}"}])
        assert judge(c, [], "That is $84.00 back.").verdict == "pass"
        assert codes(judge(c, [], "That is 84 back.")) == ["F-CASE-MISSING_INFORMATION"]

    def test_final_answer_scope_ignores_earlier_messages(self) -> None:
        turns = [
            Turn(0, "user", "How much?"),
            Turn(1, "assistant", "The total is 327."),
            Turn(2, "assistant", "Anything else?"),
        ]
        steps: list[Step] = [model(), model()]
        final = case(must_communicate=["327"])
        anywhere = case(must_communicate=["327"], communicate_in="assistant_messages")
        assert judge(final, steps, "Anything else?", turns=turns).verdict == "fail"
        assert judge(anywhere, steps, "Anything else?", turns=turns).verdict == "pass"

    def test_user_words_never_count_as_communicated(self) -> None:
        turns = [Turn(0, "user", "My number is 327."), Turn(1, "assistant", "Thanks.")]
        anywhere = case(must_communicate=["327"], communicate_in="assistant_messages")
        assert judge(anywhere, [model()], "Thanks.", turns=turns).verdict == "fail"

    def test_no_answer_is_missing_evidence(self) -> None:
        v = judge(case(must_communicate=["327"]), [LOOKUP], None)
        assert codes(v) == ["F-EVIDENCE-NO_FINAL_ANSWER"]
        assert v.verdict == "warn"


class TestApplicability:
    """Which runs the check judges; never a silent pass."""

    def test_a_case_id_without_an_entry_warns(self) -> None:
        v = judge(case(expected_actions=[]), [CANCEL], case_id="other-case")
        assert codes(v) == ["F-EVIDENCE-NO_CASE"]
        assert v.verdict == "warn"
        assert outcome(v) == "insufficient_evidence"
        assert "'other-case'" in v.findings[0].explanation
        assert "cases.yaml" in v.findings[0].explanation

    def test_a_run_without_a_case_id_is_not_applicable(self) -> None:
        v = judge(case(expected_actions=[]), [CANCEL], case_id=None)
        assert v.verdict == "pass"
        assert outcome(v) == "not_applicable"

    def test_a_case_rule_without_a_cases_file_does_not_apply(self) -> None:
        """As a baseline rule without a store: the caller asked for no case judging."""
        v = judge(None, [CANCEL], check={"type": "case"})
        assert codes(v) == []
        assert v.verdict == "pass"
        (case_rule,) = [o for o in v.outcomes if o.result != "pass"]
        assert case_rule.result == "not_applicable"

    def test_no_cases_no_implicit_rule(self) -> None:
        v = judge(None, [CANCEL])
        assert [o.rule_id for o in v.outcomes] == ["loops"]

    def test_cases_given_later_add_the_implicit_rule(self) -> None:
        engine = Engine(load_rules_text(rules()))
        run = make_run([CANCEL], case_id="c1")
        assert engine.judge(run).verdict == "pass"
        engine.cases = case(expected_actions=[])
        assert codes(engine.judge(run)) == ["F-CASE-UNEXPECTED_WRITE"]

    def test_primary_is_the_earliest_observed_failure(self) -> None:
        wrong = tool("cancel_reservation", {"reservation_id": "XYZ999"}, {})
        c = case(
            expected_actions=[
                {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}},
                {"tool": "book_reservation"},
            ],
            must_communicate=["cancelled"],
        )
        v = judge(c, [LOOKUP, wrong], "Done.")
        assert codes(v) == [
            "F-CASE-WRONG_ARGUMENTS",
            "F-CASE-MISSING_INFORMATION",
            "F-CASE-MISSING_ACTION",
        ]
