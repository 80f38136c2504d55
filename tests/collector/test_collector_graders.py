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
from tests.support.judge_server import HOLD, JudgeServer, openai_reply
from tracejudge import semconv as sc
from tracejudge.collector import Collector, ConfigError
from tracejudge.collector.clock import ManualClock

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
        assert c.snapshot()["graders"]["not_evaluated"] == {"budget": 1}
        for t in (a, b):
            assert _root_events(sink, t)[0][sc.TRACEJUDGE_VERDICT] == "pass"

        advance(c, clock, 61.0)
        d, _ = _run(c)
        advance(c, clock, 2.0)
        wait_for(lambda: _graded(logs_sink, d), what="a record a minute later")
        assert _graded(logs_sink, d)[0]["gen_ai.evaluation.score.label"] == "pass"
        assert len(server.requests) == 2
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
