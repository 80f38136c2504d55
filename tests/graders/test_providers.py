"""Graders over the real ``openai`` and ``anthropic`` SDKs, cache included.

No language model can run on these machines, so the judge's answers are scripted: a
loopback server (tests/support/judge_server.py) answers the real SDKs' HTTP calls with
replies written here, valid and not (malformed JSON, invented citations, refusals, 429,
a reply that never comes in time).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.graders.grader_support import BOOKING, FINAL, KEY, airline_run
from tests.support.judge_server import (
    HOLD,
    JudgeServer,
    Scripted,
    anthropic_reply,
    openai_reply,
    rate_limited,
)
from tracejudge.graders.cache import AnswerCache
from tracejudge.graders.grade import Grader
from tracejudge.graders.providers import (
    AnthropicProvider,
    GraderConfigError,
    OpenAIProvider,
    provider_for,
)
from tracejudge.graders.spec import GraderSpec

DEADLINE_S = 0.5
"""The client's deadline in the timeout test. The server holds that request until the test
releases it, so the deadline passes whatever the machine's speed: no race to lose."""


def _spec(**extra: object) -> GraderSpec:
    return GraderSpec.from_params(
        {
            "type": "grader",
            "model": "judge-1",
            "temperature": 0.3,
            "properties": [
                {"id": "claims_backed", "question": "Every claimed action has a tool result."},
                {"id": "no_advice", "question": "The agent gives no subjective advice."},
            ],
            **extra,
        }
    )


def _answer(claims: str = "yes", cite: tuple[str, ...] = (BOOKING, FINAL)) -> str:
    return json.dumps(
        {
            "properties": [
                {"id": "claims_backed", "answer": claims, "span_ids": list(cite), "reason": "r"},
                {"id": "no_advice", "answer": "insufficient_evidence", "span_ids": []},
            ]
        }
    )


def _grader(server: JudgeServer, spec: GraderSpec, cache: AnswerCache | None = None) -> Grader:
    return Grader(spec, OpenAIProvider(KEY, server.base_url, spec.timeout_s), cache)


def _labels(grader: Grader) -> list[tuple[str, str]]:
    return [(v.label, v.reason) for v in grader.grade(airline_run()).votes]


def test_a_valid_answer_through_the_openai_sdk() -> None:
    """Scripted valid answer: decided with its citations; the request carries the model,
    temperature, JSON mode and the rendered evidence, and no key in its body."""
    with JudgeServer([openai_reply(_answer())]) as server:
        result = _grader(server, _spec()).grade(airline_run())
    claims, advice = result.votes
    assert (claims.label, claims.span_ids, claims.agreement) == ("yes", (BOOKING, FINAL), 1.0)
    assert (advice.label, advice.span_ids) == ("insufficient_evidence", ())
    (body,) = server.requests
    assert body["model"] == "judge-1"
    assert body["temperature"] == 0.3
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert f"[span {BOOKING}] tool book_reservation (ok)" in body["messages"][1]["content"]
    assert KEY not in json.dumps(body)
    assert (result.samples, result.cached, result.dropped) == (1, 0, 0)


@pytest.mark.parametrize(
    ("reply", "label", "reason"),
    [
        (openai_reply("The agent did well."), "not_evaluated", "malformed: not JSON"),
        (openai_reply(None, refusal="I can't help with that."), "not_evaluated", "refusal: I"),
        (openai_reply("", finish="content_filter"), "not_evaluated", "refusal: content_filter"),
        (rate_limited(), "not_evaluated", "rate_limited"),
        (Scripted(500, {"error": {"message": "boom"}}), "not_evaluated", "http_500"),
        (
            openai_reply(_answer(cite=("0123456789abcdef",))),
            "insufficient_evidence",
            "said yes but 1 cited span id(s) not in the run",
        ),
    ],
    ids=["malformed", "refusal", "filtered", "429", "500", "wrong-citation"],
)
def test_what_is_not_an_answer_is_never_a_pass(reply: Scripted, label: str, reason: str) -> None:
    """Scripted bad replies: not_evaluated (or insufficient_evidence) with the reason, and
    one request each (the SDK does not retry behind the grader's back)."""
    with JudgeServer([reply]) as server:
        (claims, _) = _grader(server, _spec()).grade(airline_run()).votes
    assert claims.label == label
    assert reason in claims.reason
    assert len(server.requests) == 1


def test_a_reply_that_comes_too_late_is_a_timeout() -> None:
    """The server holds the request (scripted silence) past the client's deadline."""
    with JudgeServer([HOLD]) as server:
        votes = _grader(server, _spec(timeout_s=DEADLINE_S)).grade(airline_run()).votes
    assert [(v.label, v.reason) for v in votes] == [
        ("not_evaluated", "1 of 1 samples not evaluated (timeout)")
    ] * 2


def test_samples_are_voted() -> None:
    """Three scripted samples, two no's and a yes: no, agreement 2/3."""
    replies = [
        openai_reply(_answer("no", (BOOKING,))),
        openai_reply(_answer("yes")),
        openai_reply(_answer("no", (FINAL,))),
    ]
    with JudgeServer(replies) as server:
        claims = _grader(server, _spec(samples=3)).grade(airline_run()).votes[0]
    assert (claims.label, claims.agreement, claims.span_ids) == ("no", 2 / 3, (BOOKING, FINAL))
    assert len(server.requests) == 3


def test_the_cache_answers_a_second_judging(tmp_path: Path) -> None:
    """Judging the same run twice asks the model once; a malformed answer is not kept
    (asked again); another rubric or model misses."""
    cache = AnswerCache(tmp_path / "cache")
    with JudgeServer([openai_reply(_answer())]) as server:
        first = _grader(server, _spec(), cache).grade(airline_run())
        second = _grader(server, _spec(), cache).grade(airline_run())
        assert len(server.requests) == 1
        assert second.votes == first.votes
        assert (second.cached, cache.hits) == (1, 1)
        _grader(server, _spec(model="judge-2"), cache).grade(airline_run())
        assert len(server.requests) == 2
    (entry,) = [p for p in (tmp_path / "cache").rglob("*.json") if "judge-1" in p.read_text()]
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert KEY not in entry.read_text()
    with JudgeServer([openai_reply("nope")]) as server:
        spec = _spec(samples=2)
        _grader(server, spec, cache).grade(airline_run())
        _grader(server, spec, cache).grade(airline_run())
        # sample 0 is the one cached above (the sample count is not part of the identity);
        # sample 1 is malformed both times, so it is asked again
        assert len(server.requests) == 2


def test_anthropic_sdk_answers_and_refusals() -> None:
    """Scripted Messages replies through the real ``anthropic`` SDK."""
    spec = _spec(provider="anthropic")
    with JudgeServer([anthropic_reply(_answer()), anthropic_reply("", stop="refusal")]) as server:
        grader = Grader(spec, AnthropicProvider(KEY, server.origin, spec.timeout_s))
        ok = grader.grade(airline_run()).votes[0]
        refused = grader.grade(airline_run()).votes[0]
    assert (ok.label, ok.span_ids) == ("yes", (BOOKING, FINAL))
    assert (refused.label, refused.reason) == (
        "not_evaluated",
        "1 of 1 samples not evaluated (refusal: refused)",
    )
    assert server.requests[0]["temperature"] == 0.3
    assert server.requests[0]["system"].startswith("You are an auditor")


def test_a_missing_key_is_said_by_its_variable() -> None:
    """No key: an error naming the environment variable, before any run is judged."""
    with pytest.raises(GraderConfigError, match="set the environment variable OPENAI_API_KEY"):
        provider_for(_spec(), {})
    with pytest.raises(GraderConfigError, match="JUDGE_KEY"):
        provider_for(_spec(api_key_env="JUDGE_KEY"), {"OPENAI_API_KEY": KEY})
    assert isinstance(provider_for(_spec(), {"OPENAI_API_KEY": KEY}), OpenAIProvider)
    anth = provider_for(_spec(provider="anthropic"), {"ANTHROPIC_API_KEY": KEY})
    assert isinstance(anth, AnthropicProvider)


def test_a_key_from_a_file_next_to_the_rules(tmp_path: Path) -> None:
    """``api_key_file`` is read relative to the rules file; unreadable or empty is an error
    naming the file, never showing a key."""
    (tmp_path / "judge.key").write_text(KEY + "\n")
    spec = _spec(api_key_file="judge.key")
    assert isinstance(provider_for(spec, {}, tmp_path), OpenAIProvider)
    with pytest.raises(GraderConfigError, match=r"cannot read api_key_file .*missing\.key"):
        provider_for(_spec(api_key_file="missing.key"), {"OPENAI_API_KEY": KEY}, tmp_path)
    (tmp_path / "empty.key").write_text("\n")
    with pytest.raises(GraderConfigError, match=r"empty\.key' is empty"):
        provider_for(_spec(api_key_file="empty.key"), {}, tmp_path)


def test_what_leaves_for_the_model_follows_the_graders_content_settings() -> None:
    """``redact`` patterns and ``content: false`` apply to what the SDK sends."""
    with JudgeServer([openai_reply(_answer())]) as server:
        _grader(server, _spec(redact=[r"\bmia_li_\d+\b"])).grade(airline_run())
        _grader(server, _spec(content=False)).grade(airline_run())
    redacted, shape_only = (r["messages"][1]["content"] for r in server.requests)
    assert "mia_li_3668" not in redacted
    assert "[REDACTED]" in redacted
    assert "Seattle" in redacted
    assert "mia_li_3668" not in shape_only
    assert "Seattle" not in shape_only
    assert f"[span {BOOKING}] tool book_reservation (ok) arguments: [content not shown]" in (
        shape_only
    )
