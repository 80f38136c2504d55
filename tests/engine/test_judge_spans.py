"""End to end without a model: real instrumentation spans -> run builder -> engine verdicts.

Uses the real ``tracejudge.agent``/``tracejudge.tool`` instrumentation on a real OTel SDK
provider (the shared ``instrumented`` fixture), the real SDK decoder and run builder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge.engine import Engine, load_rules
from tracejudge.model.decode_sdk import spans_from_sdk

RULES = Path(__file__).resolve().parents[2] / "examples" / "refund" / "rules.yaml"
ORDERS = {
    "orders": [
        {"id": "A-100", "amount": 40.0, "is_duplicate": False},
        {"id": "B-200", "amount": 40.0, "is_duplicate": True},
    ]
}


def _agent(refund_order: str | None) -> None:
    with tracejudge.agent("support-agent", case_id="dup-charge-1", user_id="u1") as run:
        with tracejudge.tool("lookup_order", effect="read", arguments={"customer_id": "u1"}) as t:
            t.set_result(ORDERS)
        with tracejudge.tool("check_policy", effect="read", arguments={"order_id": "B-200"}) as t:
            t.set_result({"approved": True})
        if refund_order is not None:
            args: dict[str, Any] = {"order_id": refund_order, "amount": 40.0}
            with tracejudge.tool("refund_api.create", effect="write", arguments=args) as t:
                t.set_result({"id": "re_ABC12345", "status": "succeeded"})
        run.set_output("I've issued a refund of $40.00 (refund id re_ABC12345).")


@pytest.mark.usefixtures("instrumented")
@pytest.mark.parametrize(
    ("refund_order", "verdict", "primary"),
    [
        ("B-200", "pass", None),
        (None, "fail", "F-OUTPUT-UNSUPPORTED_CLAIM"),
        ("A-100", "fail", "F-ACTION-ARG-ENTITY_BINDING"),
    ],
)
def test_judge_spans_from_real_instrumentation(
    span_exporter: InMemorySpanExporter, refund_order: str | None, verdict: str, primary: str | None
) -> None:
    """The engine judges what the instrumentation recorded, through the run builder."""
    _agent(refund_order)
    spans = spans_from_sdk(span_exporter.get_finished_spans())
    verdicts = Engine(load_rules(RULES)).judge_spans(spans)
    assert len(verdicts) == 1
    v = verdicts[0]
    assert v.agent == "support-agent"
    assert v.case_id == "dup-charge-1"
    assert v.verdict == verdict, [f.to_dict() for f in v.findings]
    if primary is None:
        # no baseline store given: the baseline rule does not apply, nothing else failed
        assert v.findings == []
        assert "not_applicable" in {o.result for o in v.outcomes}
    else:
        assert v.primary is not None
        assert v.primary.code == primary
        ids = {s.span_id for s in spans}
        assert set(v.primary.span_ids) <= ids
