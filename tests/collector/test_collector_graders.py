"""Grader rules in ``tracejudge serve``: the deterministic verdict goes out as before, the
grader's outcome follows as a ``gen_ai.evaluation.result`` log record.

No language model can run on these machines, so the judge's answers are scripted: the
real ``openai`` SDK (through the grader's ``OpenAIProvider``) talks to the loopback server
of tests/support/judge_server.py, which can hold a request until the test releases it.
The collector, its engine, the trace backend and the logs backend are real; time is the
collector's ``ManualClock`` (the call budget's minute is moved by hand, not waited for).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    advance,
    attrs,
    config,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.collector.logs_support import LogsSink, record_attrs
from tests.support.judge_server import HOLD, JudgeServer, Scripted, openai_reply
from tracejudge import semconv as sc
from tracejudge.collector import Collector, ConfigError
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.processors.grader_budget import TokenBudget
from tracejudge.content import is_content_key

KEY = "sk-test-judge-key-0123456789"
TOOL_SPAN = "5eed5eed5eed0001"
"""Every run's tool span id (ids are unique within a trace): what a yes answer cites."""

RULES = """\
version: 1
tools:
  lookup_order: {{kind: lookup}}
rules:
  - id: look-it-up
    layer: trajectory
    check: {{type: required_steps, tools: [lookup_order]}}
  - id: claims-backed
    layer: outcome
    severity: fail
    check:
      type: grader
      model: judge-1
      when: {when}
      base_url: {base_url}
      api_key_file: key.txt
      properties:
        - id: claims_backed
          question: Every action the agent says it took is backed by a tool result.
"""


@pytest.fixture
def logs_sink(lt: LoopThread) -> Iterator[LogsSink]:
    """A real OTLP logs receiver standing in for the logs backend."""
    s = LogsSink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


def _rules(tmp: Path, server: JudgeServer, when: str = "always") -> Path:
    (tmp / "key.txt").write_text(KEY + "\n", encoding="utf-8")
    path = tmp / "rules.yaml"
    path.write_text(RULES.format(when=when, base_url=server.base_url), encoding="utf-8")
    return path


def _start(
    lt: LoopThread, sink: Sink, logs: LogsSink, tmp: Path, rules: Path, **overrides: Any
) -> tuple[Collector, ManualClock]:
    clock = ManualClock()
    cfg = config(sink, tmp, rules=rules, forward_logs=logs.http_url, **overrides)

    async def go() -> Collector:
        c = Collector(cfg, None, clock)
        await c.start()
        return c

    return lt.run(go()), clock


def _run(c: Collector) -> tuple[str, str]:
    """Post one agent run (root and one lookup_order tool call); its (trace, root) ids."""
    tid, root = new_ids()
    spans = [
        make_span(
            tid,
            root,
            name="invoke_agent support",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
        ),
        make_span(
            tid,
            bytes.fromhex(TOOL_SPAN),
            parent=root,
            name="execute_tool lookup_order",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
            },
        ),
    ]
    status, _, _ = post(c.http_port, make_request(spans).SerializeToString())
    assert status == 200
    return tid.hex(), root.hex()


def _answer(label: str) -> str:
    prop = {"id": "claims_backed", "answer": label, "span_ids": [TOOL_SPAN], "reason": "scripted"}
    return json.dumps({"properties": [prop]})


def _graded(logs: LogsSink, trace_id: str) -> list[dict[str, Any]]:
    """The grader's evaluation records for ``trace_id``."""
    out = []
    for r in logs.records(sc.EVENT_GEN_AI_EVALUATION_RESULT):
        a = record_attrs(r)
        if r.trace_id.hex() == trace_id and a.get("gen_ai.evaluation.name") == "claims-backed":
            out.append({**a, "_span": r.span_id.hex()})
    return out


def _root_events(sink: Sink, trace_id: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The forwarded root span's attributes, and its outcome events (rule -> label)."""
    (root,) = [s for s in sink.spans() if s.trace_id.hex() == trace_id and not s.parent_span_id]
    labels = {}
    for e in root.events:
        if e.name == sc.EVENT_GEN_AI_EVALUATION_RESULT:
            a = {kv.key: kv.value.string_value for kv in e.attributes}
            labels[a["gen_ai.evaluation.name"]] = a["gen_ai.evaluation.score.label"]
    return attrs(root), labels


def test_verdicts_and_receivers_go_on_while_a_grader_call_is_held(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """Run A's judge call is held by the server. Meanwhile A's deterministic verdict is
    forwarded (the grader rule not_applicable on it, as without graders), run B is received,
    judged, forwarded and graded (pass, its record parented to B's root), and /healthz
    answers. Released, A's call gets a 503: its record follows, insufficient_evidence."""
    with JudgeServer([HOLD, openai_reply(_answer("yes"))]) as server:
        c, clock = _start(lt, sink, logs_sink, tmp_path, _rules(tmp_path, server))
        a, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: len(server.requests) == 1, what="A's judge call, held")
        wait_for(lambda: any(s.trace_id.hex() == a for s in sink.spans()), what="A forwarded")
        root_attrs, labels = _root_events(sink, a)
        assert root_attrs[sc.TRACEJUDGE_VERDICT] == "pass"
        assert labels == {"look-it-up": "pass", "claims-backed": "not_applicable"}

        b, b_root = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, b), what="B's grader record")
        assert any(s.trace_id.hex() == b for s in sink.spans())
        status, _, body = post(c.http_port, b"", method="GET", path="/healthz")
        assert status == 200, body
        (rec,) = _graded(logs_sink, b)
        assert rec["gen_ai.evaluation.score.label"] == "pass"
        assert rec["_span"] == b_root
        assert rec["tracejudge.grader.model"] == "judge-1"
        assert rec["tracejudge.grader.properties"] == ["claims_backed=yes"]
        assert _graded(logs_sink, a) == []

        server.release()
        wait_for(lambda: _graded(logs_sink, a), what="A's grader record")
        (late,) = _graded(logs_sink, a)
        assert late["gen_ai.evaluation.score.label"] == "insufficient_evidence"
        assert "not_evaluated" in late["gen_ai.evaluation.explanation"]
        g = c.snapshot()["graders"]
        assert (g["runs"], g["calls"], g["outcomes"]) == (2, 2, 2)
        assert g["not_evaluated"] == {"http_503": 1}
        assert (g["agreement_count"], g["agreement_mean"]) == (1, 1.0)
        text = c.prometheus_text()
        assert "tracejudge_grader_calls_total 2" in text
        assert 'tracejudge_grader_not_evaluated_total{reason="http_503"} 1' in text
        lt.run(c.stop(timeout=2.0))


def test_over_the_call_budget_a_run_is_not_evaluated_never_passed(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """One call a minute: of two runs decided together one is graded, the other's record
    says not_evaluated (budget), insufficient_evidence. A minute later on the collector's
    clock a third run is graded again."""
    with JudgeServer([openai_reply(_answer("yes"))]) as server:
        rules = _rules(tmp_path, server)
        c, clock = _start(lt, sink, logs_sink, tmp_path, rules, grader_calls_per_minute=1)
        a, _ = _run(c)
        b, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, a) and _graded(logs_sink, b), what="two records")
        labels = sorted(
            (r["gen_ai.evaluation.score.label"], r.get("gen_ai.evaluation.explanation", ""))
            for t in (a, b)
            for r in _graded(logs_sink, t)
        )
        assert labels[0][0] == "insufficient_evidence"
        assert labels[0][1].endswith("(grader: not_evaluated) budget")
        assert labels[1] == ("pass", "")
        assert len(server.requests) == 1
        g = c.snapshot()["graders"]
        assert (g["not_evaluated"], g["over_budget"]) == ({"budget": 1}, {"waiting": 1})
        for t in (a, b):
            assert _root_events(sink, t)[0][sc.TRACEJUDGE_VERDICT] == "pass"

        advance(c, clock, 61.0)
        d, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, d), what="a record a minute later")
        assert _graded(logs_sink, d)[0]["gen_ai.evaluation.score.label"] == "pass"
        assert len(server.requests) == 2
        lt.run(c.stop(timeout=2.0))


def test_a_runs_calls_are_taken_when_it_is_settled_all_or_none(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """Two samples a run, three calls a minute: run A takes two and is graded; run B, settled
    with one call left, is refused whole, not_evaluated (budget) at once, both its samples
    counted over the call budget, and no call is made for it. Calls used to be taken one
    sample at a time on the grader thread, after the run had been rebuilt from its spans and
    rendered: B made one call whose answer could not decide (one of two samples), and a
    spent budget still cost that work for every run (CPU the deterministic verdicts need,
    ``make bench-collector-graders``)."""
    with JudgeServer([openai_reply(_answer("yes"))]) as server:
        rules = _rules(tmp_path, server)
        text = rules.read_text("utf-8")
        rules.write_text(
            text.replace("      when: always\n", "      when: always\n      samples: 2\n"
                         "      temperature: 0.5\n"),
            "utf-8",
        )  # fmt: skip
        c, clock = _start(lt, sink, logs_sink, tmp_path, rules, grader_calls_per_minute=3)
        a, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, a), what="A's record")
        assert _graded(logs_sink, a)[0]["gen_ai.evaluation.score.label"] == "pass"
        b, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, b), what="B's record")
        (rec,) = _graded(logs_sink, b)
        assert rec["gen_ai.evaluation.score.label"] == "insufficient_evidence"
        assert rec["gen_ai.evaluation.explanation"].endswith("(grader: not_evaluated) budget")
        assert len(server.requests) == 2
        g = c.snapshot()["graders"]
        assert (g["calls"], g["not_evaluated"], g["over_budget"]) == (
            2,
            {"budget": 2},
            {"calls": 2},
        )
        lt.run(c.stop(timeout=2.0))


def test_stop_leaves_held_calls_and_says_what_was_not_graded(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """One grader thread, its call held: stop does not wait for it; the run waiting behind
    it gets its record (not_evaluated, shutdown) before the logs are flushed, and both are
    counted."""
    with JudgeServer([HOLD]) as server:
        rules = _rules(tmp_path, server)
        c, clock = _start(lt, sink, logs_sink, tmp_path, rules, grader_max_concurrent=1)
        a, _ = _run(c)
        b, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: len(server.requests) == 1, what="one judge call, held")
        lt.run(c.stop(timeout=2.0))
        records = [r for t in (a, b) for r in _graded(logs_sink, t)]
        assert len(records) == 1
        assert records[0]["gen_ai.evaluation.explanation"].endswith("not_evaluated) shutdown")
        assert c.snapshot()["graders"]["not_evaluated"] == {"shutdown": 2}
        assert len(server.requests) == 1


def test_by_default_only_undecided_runs_are_graded(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """``when: undecided`` (the default): a run every deterministic rule decided is not
    sent to the judge and gets no grader record."""
    with JudgeServer([openai_reply(_answer("no"))]) as server:
        rules = _rules(tmp_path, server, when="undecided")
        c, clock = _start(lt, sink, logs_sink, tmp_path, rules)
        a, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: any(s.trace_id.hex() == a for s in sink.spans()), what="forwarded")
        lt.run(c.stop(timeout=2.0))
        assert server.requests == []
        assert _graded(logs_sink, a) == []
        assert c.snapshot()["graders"]["runs"] == 0


def test_a_grader_without_its_key_stops_serve_at_start(tmp_path: Path, sink: Sink) -> None:
    """The key file is missing: the collector is not built, the error names the rule."""
    with JudgeServer([]) as server:
        rules = _rules(tmp_path, server)
    (tmp_path / "key.txt").unlink()
    with pytest.raises(ConfigError, match=r"rule claims-backed\): cannot read api_key_file"):
        Collector(config(sink, tmp_path, rules=rules))


def test_over_the_token_budget_a_call_is_not_made(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """A budget of 15 tokens a minute, and each scripted answer reports 10 input and 5
    output tokens: on one grader thread, the first run's call spends the minute's tokens,
    so the second run's call is not made (not_evaluated, budget; counted as over the token
    budget). A minute later on the collector's clock the tokens are back."""
    with JudgeServer([openai_reply(_answer("yes"))]) as server:
        rules = _rules(tmp_path, server)
        c, clock = _start(
            lt, sink, logs_sink, tmp_path, rules, grader_tokens_per_minute=15,
            grader_max_concurrent=1,
        )  # fmt: skip
        a, _ = _run(c)
        b, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, a) and _graded(logs_sink, b), what="two records")
        labels = sorted(
            r["gen_ai.evaluation.score.label"] for t in (a, b) for r in _graded(logs_sink, t)
        )
        assert labels == ["insufficient_evidence", "pass"]
        assert len(server.requests) == 1
        g = c.snapshot()["graders"]
        assert (g["tokens_per_minute"], g["tokens"], g["tokens_last_minute"]) == (15, 15, 15)
        assert (g["not_evaluated"], g["over_budget"]) == ({"budget": 1}, {"tokens": 1})
        assert "tracejudge_grader_tokens_total 15" in c.prometheus_text()

        advance(c, clock, 61.0)
        assert c.snapshot()["graders"]["tokens_last_minute"] == 0
        d, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, d), what="a record a minute later")
        assert _graded(logs_sink, d)[0]["gen_ai.evaluation.score.label"] == "pass"
        assert len(server.requests) == 2
        assert not [s for s in sink.spans() if s.name.startswith("chat ")]  # traces: off
        lt.run(c.stop(timeout=2.0))


def test_the_token_budget_on_the_collectors_clock() -> None:
    """``TokenBudget`` alone: spent once the last 60 s of the clock used the budget, free
    again when they pass; 0 is no budget (counted only)."""
    clock = ManualClock()
    budget = TokenBudget(clock, 100)
    budget.add(60)
    clock.advance(30.0)
    assert not budget.spent()
    budget.add(40)
    assert budget.spent()
    clock.advance(30.0)  # the first call's 60 tokens left the window
    assert (budget.spent(), budget.last_minute(), budget.total) == (False, 40, 100)
    off = TokenBudget(clock, 0)
    off.add(10**9)
    assert (off.spent(), off.last_minute()) == (False, 10**9)


def _grader_spans(sink: Sink) -> list[tuple[dict[str, Any], Any]]:
    """The ``chat`` spans the sink received, each with its resource's attributes."""
    return [
        ({kv.key: kv.value.string_value for kv in rs.resource.attributes}, s)
        for r in list(sink.requests)
        for rs in r.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
        if s.name == "chat judge-1"
    ]


def test_grader_traces_sends_each_call_as_a_span_of_the_collector(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """``grader_traces``: the one call the budget lets through (one call a minute: the
    second run is refused without a call) is a ``chat judge-1`` CLIENT span of service
    ``tracejudge``, forwarded to the backend in a trace of its own, linked to the judged
    run's root, with the grader's identity and the tokens; no content and none of the
    prompt's text. The refused run made no span, and no span went to ``output`` (the file
    eval reads, where it would be judged as a run)."""
    output = tmp_path / "judged.jsonl"
    with JudgeServer([openai_reply(_answer("yes"))]) as server:
        rules = _rules(tmp_path, server)
        c, clock = _start(
            lt, sink, logs_sink, tmp_path, rules, grader_traces=True, grader_calls_per_minute=1,
            output=output,
        )  # fmt: skip
        a, a_root = _run(c)
        b, b_root = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, a) and _graded(logs_sink, b), what="two records")
        wait_for(lambda: _grader_spans(sink), what="the grader call's span")
        lt.run(c.stop(timeout=2.0))
    ((resource, span),) = _grader_spans(sink)
    assert resource["service.name"] == "tracejudge"
    assert span.kind == span.SPAN_KIND_CLIENT
    assert span.trace_id.hex() not in (a, b)
    [link] = span.links
    assert (link.trace_id.hex(), link.span_id.hex()) in ((a, a_root), (b, b_root))
    got = attrs(span)
    assert got["server.port"] == int(server.base_url.split(":")[-1].split("/")[0])
    del got["server.port"]
    assert got == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "judge-1",
        "server.address": "127.0.0.1",
        "gen_ai.output.type": "json",
        "tracejudge.grader.provider": "openai",
        "tracejudge.grader.model": "judge-1",
        "tracejudge.grader.prompt_hash": got["tracejudge.grader.prompt_hash"],
        "tracejudge.grader.rendering_version": "evidence/1",
        "gen_ai.request.temperature": 0.0,
        "gen_ai.request.max_tokens": 1024,
        "gen_ai.response.id": "chatcmpl-judge",
        "gen_ai.response.model": "judge-1",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
    }
    assert not [k for k in got if is_content_key(k)]
    assert "lookup_order" not in json.dumps(got)
    g = c.snapshot()["graders"]
    assert (g["calls"], g["over_budget"], g["traces"]) == (
        1,
        {"waiting": 1},
        {"spans": 1, "dropped": 0},
    )
    assert "judge-1" not in output.read_text("utf-8")
    assert {s.trace_id.hex() for s in sink.spans() if s.name != "chat judge-1"} == {a, b}


def test_a_failed_call_is_an_error_span_scrubbed_like_every_output(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """A scripted 429 whose message quotes a key: the forwarded span has status ERROR and
    ``error.type`` 429, and the key is redacted in its status and exception event (the
    span's strings pass the collector's scrubber)."""
    secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    quota = Scripted(429, {"error": {"message": f"quota of {secret} spent"}})
    with JudgeServer([quota]) as server:
        c, clock = _start(
            lt, sink, logs_sink, tmp_path, _rules(tmp_path, server), grader_traces=True
        )
        _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _grader_spans(sink), what="the failed call's span")
        lt.run(c.stop(timeout=2.0))
    ((_, span),) = _grader_spans(sink)
    assert (span.status.code, span.status.message) == (
        span.status.STATUS_CODE_ERROR,
        "Error code: 429 - quota of [REDACTED] spent",
    )
    assert attrs(span)["error.type"] == "429"
    (event,) = span.events
    assert {kv.key: kv.value.string_value for kv in event.attributes}["exception.message"] == (
        "Error code: 429 - quota of [REDACTED] spent"
    )
    assert secret not in span.SerializeToString().decode("utf-8", "replace")
    assert c.snapshot()["graders"]["not_evaluated"] == {"rate_limited": 1}


def test_past_the_run_deadline_no_call_is_made_for_a_waiting_run(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """One grader thread and a 30 s run deadline. Run A's call is held; run B waits for the
    thread. The collector's clock moves 40 s: when A's call is released (a 503), B is past
    its deadline, so no call is made for it: its record says not_evaluated (deadline),
    insufficient_evidence, never a pass. A call already open is not cut short."""
    with JudgeServer([HOLD, openai_reply(_answer("yes"))]) as server:
        rules = _rules(tmp_path, server)
        c, clock = _start(
            lt, sink, logs_sink, tmp_path, rules, grader_max_concurrent=1, grader_run_deadline=30
        )
        a, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: len(server.requests) == 1, what="A's judge call, held")
        b, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: c.snapshot()["graders"]["waiting"] == 2, what="B waiting for the thread")
        advance(c, clock, 40.0)
        server.release()
        wait_for(lambda: _graded(logs_sink, a) and _graded(logs_sink, b), what="both records")
        (late,) = _graded(logs_sink, b)
        assert late["gen_ai.evaluation.score.label"] == "insufficient_evidence"
        assert late["gen_ai.evaluation.explanation"].endswith(
            "(grader: not_evaluated) 1 of 1 samples not evaluated (deadline)"
        )
        assert len(server.requests) == 1
        g = c.snapshot()["graders"]
        assert g["not_evaluated"] == {"http_503": 1, "deadline": 1}
        assert _root_events(sink, b)[0][sc.TRACEJUDGE_VERDICT] == "pass"
        lt.run(c.stop(timeout=2.0))


def test_a_negative_run_deadline_is_refused(tmp_path: Path, sink: Sink) -> None:
    """0 turns the deadline off; below 0 is a config error naming the key."""
    with pytest.raises(ConfigError, match="grader_run_deadline: must not be negative"):
        config(sink, tmp_path, grader_run_deadline=-1.0).validate()


def test_a_graders_reason_is_scrubbed_before_its_record_leaves(
    lt: LoopThread, sink: Sink, logs_sink: LogsSink, tmp_path: Path
) -> None:
    """The model's reason quotes a key it read in the run: the grader's evaluation record
    carries it redacted, as the deterministic verdicts' explanations are (the grader
    thread's verdicts go through the collector's scrubber before they are sent)."""
    secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    prop = {
        "id": "claims_backed",
        "answer": "no",
        "span_ids": [TOOL_SPAN],
        "reason": f"the agent printed the key {secret}",
    }
    with JudgeServer([openai_reply(json.dumps({"properties": [prop]}))]) as server:
        c, clock = _start(lt, sink, logs_sink, tmp_path, _rules(tmp_path, server))
        a, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, a), what="A's grader record")
        (rec,) = _graded(logs_sink, a)
        assert rec["gen_ai.evaluation.score.label"] == "fail"
        explanation = rec["gen_ai.evaluation.explanation"]
        assert "the agent printed the key [REDACTED]" in explanation
        assert secret not in json.dumps(rec)
        lt.run(c.stop(timeout=2.0))
