"""Reading a judge's answer and voting over samples.

No language model can run on these machines, so the judge's answers here are scripted
strings: what a model would send back, well formed or not.
"""

from __future__ import annotations

import json

from tracejudge.graders.answer import Answer, PropertyAnswer, not_evaluated, parse_answer
from tracejudge.graders.spec import GraderSpec, Property
from tracejudge.graders.vote import PropertyVote, vote

RUBRIC = (
    Property("claims_backed", "Every claimed action is backed by a successful tool result."),
    Property("fields_present", "All requested fields are present."),
)
SPANS = {"aaaa000000000001", "aaaa000000000002"}


def _reply(*items: dict[str, object]) -> str:
    return json.dumps({"properties": list(items)})


def test_a_valid_answer_keeps_its_citations() -> None:
    """A scripted well-formed answer: each property's label, citations and reason."""
    text = _reply(
        {"id": "claims_backed", "answer": "no", "span_ids": ["AAAA000000000002"], "reason": "r"},
        {"id": "fields_present", "answer": "yes", "span_ids": ["aaaa000000000001"]},
    )
    assert parse_answer(text, RUBRIC, SPANS) == Answer(
        (
            PropertyAnswer("claims_backed", "no", ("aaaa000000000002",), "r"),
            PropertyAnswer("fields_present", "yes", ("aaaa000000000001",), ""),
        )
    )


def test_citations_not_in_the_run_are_dropped_and_counted() -> None:
    """A scripted answer citing invented span ids: dropped, counted, and a yes left with no
    valid citation is insufficient_evidence, not a yes."""
    text = _reply(
        {"id": "claims_backed", "answer": "yes", "span_ids": ["ffff", "eeee"]},
        {"id": "fields_present", "answer": "no", "span_ids": ["ffff", "aaaa000000000001"]},
    )
    a = parse_answer(text, RUBRIC, SPANS)
    assert a.properties == (
        PropertyAnswer(
            "claims_backed",
            "insufficient_evidence",
            (),
            "said yes but 2 cited span id(s) not in the run",
            2,
        ),
        PropertyAnswer("fields_present", "no", ("aaaa000000000001",), "", 1),
    )
    assert a.dropped == 3


def test_fenced_json_is_read() -> None:
    """Scripted: models often wrap JSON in a code fence."""
    text = (
        "```json\n"
        + _reply(
            {"id": "claims_backed", "answer": "insufficient_evidence"},
            {"id": "fields_present", "answer": "yes", "span_ids": ["aaaa000000000001"]},
        )
        + "\n```"
    )
    labels = [p.label for p in parse_answer(text, RUBRIC, SPANS).properties]
    assert labels == ["insufficient_evidence", "yes"]


def test_malformed_answers_are_not_evaluated_with_the_reason() -> None:
    """Scripted malformed replies: never a pass, never a zero."""
    bad_json = parse_answer("Sure! The agent did fine.", RUBRIC, SPANS)
    assert bad_json.not_evaluated is not None
    assert bad_json.not_evaluated.startswith("malformed: not JSON")
    assert {p.label for p in bad_json.properties} == {"not_evaluated"}
    no_list = parse_answer('{"claims_backed": "yes"}', RUBRIC, SPANS)
    assert no_list.not_evaluated == "malformed: no 'properties' list"
    partial = parse_answer(
        _reply({"id": "claims_backed", "answer": "maybe", "span_ids": ["aaaa000000000001"]}),
        RUBRIC,
        SPANS,
    )
    assert partial.properties == (
        PropertyAnswer(
            "claims_backed",
            "not_evaluated",
            (),
            "malformed: answer 'maybe' is not yes, no or insufficient_evidence",
        ),
        PropertyAnswer("fields_present", "not_evaluated", (), "malformed: not answered"),
    )


def _sample(label: str, span: str = "aaaa000000000001") -> Answer:
    spans = (span,) if label in ("yes", "no") else ()
    return Answer(
        (
            PropertyAnswer("claims_backed", label, spans, f"{label} reason"),  # type: ignore[arg-type]
            PropertyAnswer("fields_present", "yes", ("aaaa000000000001",)),
        )
    )


def test_majority_wins_with_its_agreement_and_citations() -> None:
    """Three scripted samples, two say no: no, agreement 2/3, the two no's citations."""
    answers = [
        _sample("no", "aaaa000000000001"),
        _sample("yes"),
        _sample("no", "aaaa000000000002"),
    ]
    first = vote(RUBRIC, answers)[0]
    assert first == PropertyVote(
        "claims_backed",
        "no",
        2 / 3,
        ("aaaa000000000001", "aaaa000000000002"),
        "no reason",
        0,
    )


def test_a_split_is_insufficient_evidence_and_unreadable_samples_count_against() -> None:
    """Scripted samples: a 1-1 split decides nothing; one readable sample of three, the
    others rate-limited, is not a decision either."""
    split = vote(RUBRIC, [_sample("yes"), _sample("no")])[0]
    assert (split.label, split.agreement) == ("insufficient_evidence", 0.5)
    assert split.reason == "no majority over 2 samples: no 1, yes 1"
    limited = [
        _sample("yes"),
        not_evaluated(RUBRIC, "rate_limited"),
        not_evaluated(RUBRIC, "timeout"),
    ]
    first = vote(RUBRIC, limited)[0]
    assert first.label == "not_evaluated"
    assert first.reason == "2 of 3 samples not evaluated (rate_limited)"
    assert vote(RUBRIC, [])[0].label == "not_evaluated"


def test_spec_reads_params_and_hashes_the_rubric() -> None:
    """The rubric hash changes with a question's words, not with its whitespace."""
    params = {
        "type": "grader",
        "model": "judge-1",
        "samples": 3,
        "properties": [{"id": "claims_backed", "question": "Every claim  is\nbacked."}],
    }
    spec = GraderSpec.from_params(params)
    assert spec.properties == (Property("claims_backed", "Every claim is backed."),)
    assert (spec.samples, spec.when, spec.provider, spec.key_env) == (
        3,
        "undecided",
        "openai",
        "OPENAI_API_KEY",
    )
    same = GraderSpec.from_params({**params, "samples": 1})
    assert same.rubric_hash() == spec.rubric_hash()
    other = GraderSpec.from_params(
        {**params, "properties": [{"id": "claims_backed", "question": "Every claim is true."}]}
    )
    assert other.rubric_hash() != spec.rubric_hash()
