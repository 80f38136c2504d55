"""Shadow runs: tagged by the real instrumentation, judged by the real engine, paired with
the stable run of their request by the baseline diff (``tracejudge.engine.shadow``)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support import shadow_runs
from tests.support.shadow_runs import run_once
from tracejudge import semconv as sc
from tracejudge.engine import Engine, load_rules_text
from tracejudge.engine.shadow import ShadowReport, pair_verdicts, shadow_arguments, shadow_lines
from tracejudge.engine.verdict import Verdict
from tracejudge.model.decode_sdk import spans_from_sdk
from tracejudge.model.spans import AttrValue, SpanRecord

RULESET = load_rules_text(shadow_runs.RULES)


def _judge(exporter: InMemorySpanExporter) -> list[Verdict]:
    spans = spans_from_sdk(exporter.get_finished_spans())
    return Engine(RULESET).judge_spans(spans)


def _pair(exporter: InMemorySpanExporter) -> tuple[list[Verdict], list[ShadowReport]]:
    verdicts = _judge(exporter)
    return verdicts, pair_verdicts(verdicts, shadow_arguments(RULESET))


@pytest.mark.usefixtures("instrumented")
def test_the_tags_reach_the_verdict_and_its_json(span_exporter: InMemorySpanExporter) -> None:
    """``agent(request_id=, shadow=)`` sets the two attributes; the verdict carries them
    (additive JSON keys) and a trajectory to pair with; untagged runs keep none."""
    run_once("refund", request_id="r-1")
    run_once("refund", request_id="r-1", shadow=True, variant="candidate")
    run_once("refund", request_id=None)
    roots = [s for s in span_exporter.get_finished_spans() if s.parent is None]
    assert roots[1].attributes is not None
    assert roots[1].attributes[sc.TRACEJUDGE_RUN_SHADOW] is True
    assert roots[1].attributes[sc.TRACEJUDGE_REQUEST_ID] == "r-1"
    stable, shadow, plain = _judge(span_exporter)
    assert (stable.request_id, stable.shadow) == ("r-1", False)
    assert (shadow.request_id, shadow.shadow) == ("r-1", True)
    assert stable.to_dict()["request_id"] == "r-1"
    assert "shadow" not in stable.to_dict()
    assert shadow.to_dict()["shadow"] is True
    assert stable.trajectory is not None
    assert shadow.trajectory is not None
    assert plain.trajectory is None
    assert "request_id" not in plain.to_dict()


@pytest.mark.usefixtures("instrumented")
def test_an_identical_shadow_is_paired(span_exporter: InMemorySpanExporter) -> None:
    """Same calls, same arguments, same terminal action: paired, no findings."""
    run_once("refund", request_id="r-1")
    run_once("refund", request_id="r-1", shadow=True, variant="candidate")
    _, reports = _pair(span_exporter)
    assert [(r.outcome, r.findings) for r in reports] == [("paired", [])]
    line = reports[0].to_dict()
    assert line["record"] == "shadow"
    assert line["outcome"] == "paired"
    assert line["shadow"]["variant"] == "candidate"
    assert line["stable"]["variant"] == "stable"


@pytest.mark.usefixtures("instrumented")
def test_a_shadow_that_skips_the_refund_diverges(span_exporter: InMemorySpanExporter) -> None:
    """The baseline diff's hard differences, under F-SHADOW codes: the refund call is
    missing and the terminal action changed, even though both runs pass their rules."""
    run_once("no_refund", request_id="r-2", shadow=True, variant="candidate")
    run_once("refund", request_id="r-2")  # the stable run may come second
    verdicts, (report,) = _pair(span_exporter)
    assert [v.verdict for v in verdicts] == ["pass", "pass"]
    assert report.outcome == "diverged"
    assert report.stable is verdicts[1]
    got = [(f.code, f.severity, f.rule_id) for f in report.findings]
    assert got == [
        ("F-SHADOW-MISSING_CALL", "fail", "tracejudge.shadow"),
        ("F-SHADOW-TERMINAL_ACTION", "fail", "tracejudge.shadow"),
    ]
    assert "stable run call refund_api.create is missing" in report.findings[0].explanation
    assert "'no_action', stable run 'refund'" in report.findings[1].explanation
    assert report.findings[0].span_ids == (verdicts[0].root_span_id,)


@pytest.mark.usefixtures("instrumented")
def test_argument_drift_is_a_warning_at_the_call(span_exporter: InMemorySpanExporter) -> None:
    """Half the refund amount: one soft ARG_DRIFT citing the shadow's refund span."""
    run_once("refund", request_id="r-3")
    run_once("half", request_id="r-3", shadow=True)
    _verdicts, (report,) = _pair(span_exporter)
    assert [(f.code, f.severity) for f in report.findings] == [("F-SHADOW-ARG_DRIFT", "warn")]
    assert "amount=20.0, stable run 40.0" in report.findings[0].explanation
    refund = [s for s in span_exporter.get_finished_spans() if "refund_api" in s.name][1]
    assert report.findings[0].span_ids == (f"{refund.context.span_id:016x}",)


def test_baseline_tolerances_apply_to_shadows() -> None:
    """The rule set's ``baseline`` argument rules are the shadow's allowances too."""
    rules = shadow_runs.RULES + (
        "  - id: like-the-baseline\n"
        "    layer: trajectory\n"
        "    check:\n"
        "      type: baseline\n"
        "      arguments: {refund_api.create: {amount: {tolerance: 0.6}}}\n"
    )
    assert shadow_arguments(load_rules_text(rules)) == {"refund_api.create": {"amount": 0.6}}
    assert shadow_arguments(RULESET) == {}


@pytest.mark.usefixtures("instrumented")
def test_a_shadow_without_partner_or_request_id_is_reported(
    span_exporter: InMemorySpanExporter,
) -> None:
    """Never silence: no stable run in the input, or no request id at all (the bad input
    of the issue), are unpaired reports; the id-less shadow's own verdict says why."""
    run_once("refund", request_id="r-4", shadow=True)
    run_once("refund", request_id=None, shadow=True)
    verdicts, reports = _pair(span_exporter)
    assert [r.outcome for r in reports] == ["unpaired", "unpaired"]
    assert [f.code for r in reports for f in r.findings] == ["F-SHADOW-UNPAIRED"] * 2
    assert "no stable run of request r-4 in the input" in reports[0].reason
    assert "without a request id" in reports[1].reason
    lonely = verdicts[1]
    assert lonely.shadow
    assert lonely.request_id is None
    assert [f.code for f in lonely.findings] == ["F-EVIDENCE-SHADOW_NO_REQUEST"]
    assert lonely.verdict == "warn"  # missing evidence: never a pass
    assert shadow_lines(reports)[0] == "shadow runs: 0 paired, 0 diverged, 2 unpaired"


@pytest.mark.parametrize(
    ("flag", "raw_id", "shadow", "request_id"),
    [("True", 42, True, "42"), ("true", "  ", True, None), (False, "r-9", False, "r-9")],
)
def test_tags_written_by_other_tools(
    flag: str | bool, raw_id: str | int, shadow: bool, request_id: str | None
) -> None:
    """Spans from a proxy or another SDK (built here as records: our instrumentation only
    writes a bool and a string): the tag as the text "true" counts, an integer id is an
    id, a blank id is none, and a shadow without one gets the evidence finding."""
    attrs: dict[str, AttrValue] = {
        sc.GEN_AI_OPERATION_NAME: "invoke_agent",
        sc.GEN_AI_AGENT_NAME: "a",
        sc.TRACEJUDGE_RUN_SHADOW: flag,
        sc.TRACEJUDGE_REQUEST_ID: raw_id,
    }
    root = SpanRecord("0" * 31 + "1", "0" * 15 + "1", None, "invoke_agent a", 1, 1, 2, 0, "", attrs)
    (v,) = Engine(RULESET).judge_spans([root])
    assert (v.shadow, v.request_id) == (shadow, request_id)
    assert ("F-EVIDENCE-SHADOW_NO_REQUEST" in [f.code for f in v.findings]) is (
        shadow and request_id is None
    )


def test_agent_checks_the_types_of_its_shadow_arguments() -> None:
    """A typed parameter: a wrong type is the programmer's error, raised at once."""
    with pytest.raises(TypeError, match="shadow must be a bool"):
        tracejudge.agent("a", shadow="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tracejudge\.request\.id must be a str"):
        tracejudge.agent("a", request_id=7)  # type: ignore[arg-type]
