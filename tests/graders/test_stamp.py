"""A grader's outcome as a span event: its identity rides on ``gen_ai.evaluation.result``.

No model is involved: the outcome is built by hand as ``apply_graders`` builds it, and
stamped with the collector's own stamper onto a real protobuf span.
"""

from __future__ import annotations

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tracejudge import semconv as sc
from tracejudge.collector.processors.stamp import stamp
from tracejudge.engine.verdict import RuleOutcome, Verdict

ROOT = "00000000000000a1"


def _plain(v: AnyValue) -> object:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_plain(x) for x in v.array_value.values]
    assert kind is not None
    return getattr(v, kind)


def test_grader_attributes_are_stamped_on_the_evaluation_event() -> None:
    """The deterministic outcome's event is unchanged; the grader's carries its identity."""
    span = Span(trace_id=bytes(15) + b"\x01", span_id=bytes.fromhex(ROOT), name="invoke_agent")
    span.end_time_unix_nano = 5
    fragment = ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])
    graded = RuleOutcome(
        "claims-backed",
        "outcome",
        "fail",
        ROOT,
        0.0,
        "claims_backed: ... (grader: no, 100% of 1)",
        (
            (sc.TRACEJUDGE_GRADER_MODEL, "judge-1"),
            (sc.TRACEJUDGE_GRADER_SAMPLES, 3),
            (sc.TRACEJUDGE_GRADER_AGREEMENT, 1.0),
            (sc.TRACEJUDGE_GRADER_PROPERTIES, ("claims_backed=no",)),
        ),
    )
    plain = RuleOutcome("no-loop", "trajectory", "pass", ROOT, 1.0, "")
    verdict = Verdict("0" * 31 + "1", ROOT, "fail", {}, outcomes=[plain, graded])
    stamp([fragment], [verdict])
    events = fragment.scope_spans[0].spans[0].events
    assert [e.name for e in events] == [sc.EVENT_GEN_AI_EVALUATION_RESULT] * 2
    assert [{a.key: _plain(a.value) for a in e.attributes} for e in events] == [
        {
            sc.GEN_AI_EVALUATION_NAME: "no-loop",
            sc.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
            sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
        },
        {
            sc.GEN_AI_EVALUATION_NAME: "claims-backed",
            sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
            sc.GEN_AI_EVALUATION_SCORE_LABEL: "fail",
            sc.GEN_AI_EVALUATION_EXPLANATION: "claims_backed: ... (grader: no, 100% of 1)",
            sc.TRACEJUDGE_GRADER_MODEL: "judge-1",
            sc.TRACEJUDGE_GRADER_SAMPLES: 3,
            sc.TRACEJUDGE_GRADER_AGREEMENT: 1.0,
            sc.TRACEJUDGE_GRADER_PROPERTIES: ["claims_backed=no"],
        },
    ]
    assert [e.time_unix_nano for e in events] == [5, 5]
