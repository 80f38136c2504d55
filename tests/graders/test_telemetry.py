"""Each grader model call is a GenAI ``chat`` span: whole spans from the real SDK.

No language model can run on these machines, so the judge's answers are scripted: the
real ``openai`` and ``anthropic`` SDKs talk to the loopback server of
tests/support/judge_server.py (valid answers, a 429, a reply held past the client's
deadline). The spans go to the real OpenTelemetry SDK's ``InMemorySpanExporter``
(``otel_traces``, which also checks each span against the pinned conventions), with the
fake clock's times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, NoOpTracerProvider

from tests.graders.grader_support import AIRLINE, BOOKING, KEY, ROOT, airline_run
from tests.support import judge_server as judge
from tests.support.guards import WAIT_S
from tests.support.judge_server import JudgeServer, Scripted, openai_reply
from tests.support.spans import PORT, TRACEBACK, span_dicts
from tracejudge.cli.graders import build_graders
from tracejudge.content import is_content_key
from tracejudge.engine.rules import load_rules
from tracejudge.graders.grade import Grader
from tracejudge.graders.pairwise import PairwiseGrader
from tracejudge.graders.prompt import SYSTEM, identity
from tracejudge.graders.providers import AnthropicProvider, OpenAIProvider
from tracejudge.graders.spec import GraderSpec
from tracejudge.graders.telemetry import judge_runtime, traced
from tracejudge.report.loading import load_runs

PROMPT_TEXT = "book_reservation"
"""A word of the evidence the judge is shown (a tool the run called)."""
DEADLINE_S = 0.5
"""The client's deadline in the timeout test; the server holds the request until the test
ends, so the deadline passes whatever the machine's speed."""

Otel = tuple[TracerProvider, InMemorySpanExporter]


@pytest.fixture(autouse=True)
def _deterministic_times(fake_clock: object) -> None:
    """Span times from the fake clock (1 s per reading)."""


def _spec(**extra: object) -> GraderSpec:
    return GraderSpec.from_params(
        {
            "type": "grader",
            "model": "judge-1",
            "temperature": 0.3,
            "max_tokens": 256,
            "properties": [
                {"id": "claims_backed", "question": "Every claimed action has a tool result."}
            ],
            **extra,
        }
    )


def _answer() -> str:
    prop = {"id": "claims_backed", "answer": "yes", "span_ids": [BOOKING], "reason": "r"}
    return json.dumps({"properties": [prop]})


def _grader(otel: Otel, server: JudgeServer, spec: GraderSpec, content: Any = None) -> Grader:
    runtime = judge_runtime(otel[0], NoOpMeterProvider(), content)
    provider = OpenAIProvider(KEY, server.base_url, spec.timeout_s)
    return Grader(spec, traced(provider, spec, runtime))


def _identity(spec: GraderSpec) -> dict[str, Any]:
    ident = identity(spec)
    return {
        "tracejudge.grader.provider": ident.provider,
        "tracejudge.grader.model": ident.model,
        "tracejudge.grader.prompt_hash": ident.prompt_hash,
        "tracejudge.grader.rendering_version": ident.rendering_version,
    }


def _request_attributes(spec: GraderSpec, provider: str = "openai") -> dict[str, Any]:
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": "judge-1",
        "server.address": "127.0.0.1",
        "server.port": PORT,
        **_identity(spec),
    }
    if provider == "openai":
        out["gen_ai.output.type"] = "json"
    out["gen_ai.request.temperature"] = 0.3
    out["gen_ai.request.max_tokens"] = 256
    return out


def _rules_file(tmp: Path, server: JudgeServer, extra: str) -> Path:
    """A rules file of one grader rule asking ``server``, with ``extra`` check keys."""
    path = tmp / "rules.yaml"
    path.write_text(
        "version: 1\nrules:\n  - id: claims-backed\n    layer: outcome\n    check:\n"
        f"      type: grader\n      model: judge-1\n      {extra}\n"
        f"      temperature: 0.3\n      base_url: {server.base_url}\n"
        "      properties:\n        - id: claims_backed\n"
        "          question: Every claimed action has a tool result.\n",
        "utf-8",
    )
    return path


def _links(exporter: InMemorySpanExporter) -> list[tuple[str, str, dict[str, Any]]]:
    (span,) = exporter.get_finished_spans()
    return [
        (
            f"{link.context.trace_id:032x}",
            f"{link.context.span_id:016x}",
            dict(link.attributes or {}),
        )
        for link in span.links
    ]


def test_a_call_is_a_chat_span_with_the_graders_identity_and_no_content(
    otel_traces: Otel,
) -> None:
    """A scripted valid answer through the real ``openai`` SDK: one CLIENT span ``chat
    judge-1`` with the request, the response and its tokens, the grader's identity and a
    link to the judged run's root; by default no attribute is content (by the one
    declaration) and no text of the prompt or the answer is on it."""
    spec = _spec()
    with JudgeServer([openai_reply(_answer())]) as server:
        votes = _grader(otel_traces, server, spec).grade(airline_run()).votes
    assert votes[0].label == "yes"
    exporter = otel_traces[1]
    assert span_dicts(exporter) == [
        {
            "name": "chat judge-1",
            "kind": "CLIENT",
            "context": {"trace_id": 1, "span_id": 1},
            "parent": None,
            "start_time": 1_000_000_000,
            "end_time": 2_000_000_000,
            "status": "UNSET",
            "attributes": {
                **_request_attributes(spec),
                "gen_ai.response.id": "chatcmpl-judge",
                "gen_ai.response.model": "judge-1",
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5,
            },
        }
    ]
    run = airline_run()
    assert _links(exporter) == [
        (run.trace_id, run.root_span_id, {"tracejudge.grader.judged_run": "run"})
    ]
    (span,) = exporter.get_finished_spans()
    attrs = span.attributes or {}
    assert not [k for k in attrs if is_content_key(k)]
    said = " ".join(str(v) for v in attrs.values())
    assert PROMPT_TEXT not in said
    assert SYSTEM[:40] not in said
    assert "claims_backed" not in said


@pytest.mark.parametrize(
    ("reply", "error_type", "status", "exception"),
    [
        (
            judge.rate_limited(),
            "429",
            "Error code: 429 - slow down",
            "openai.RateLimitError",
        ),
        (judge.HOLD, "openai.APITimeoutError", "Request timed out.", "openai.APITimeoutError"),
    ],
    ids=["429", "timeout"],
)
def test_a_call_that_brought_no_answer_is_an_error_span(
    otel_traces: Otel, reply: Scripted, error_type: str, status: str, exception: str
) -> None:
    """A scripted 429, and a reply the server holds past the client's deadline: the span's
    status is ERROR with ``error.type`` (the HTTP status, else the exception's class, as
    the instrumentation records them) and the ``exception`` event; no response attribute,
    no token; the sample is not_evaluated with the grader's reason."""
    spec = _spec(timeout_s=DEADLINE_S)
    with JudgeServer([reply]) as server:
        votes = _grader(otel_traces, server, spec).grade(airline_run()).votes
    assert votes[0].label == "not_evaluated"
    (span,) = span_dicts(otel_traces[1])
    assert span == {
        "name": "chat judge-1",
        "kind": "CLIENT",
        "context": {"trace_id": 1, "span_id": 1},
        "parent": None,
        "start_time": 1_000_000_000,
        "end_time": 3_000_000_000,
        "status": "ERROR",
        "status_description": status,
        "attributes": {**_request_attributes(spec), "error.type": error_type},
        "events": [
            {
                "name": "exception",
                "timestamp": 2_000_000_000,
                "attributes": {
                    "exception.type": exception,
                    "exception.message": status,
                    "exception.stacktrace": TRACEBACK,
                },
            }
        ],
    }


def test_content_goes_on_the_span_only_when_capture_is_on(otel_traces: Otel) -> None:
    """``SPAN_ONLY`` capture: the instructions, the evidence and the answer are on the span,
    under keys the content declaration names (so ``--drop-content`` and the redaction that
    follow it treat them as content)."""
    spec = _spec()
    with JudgeServer([openai_reply(_answer())]) as server:
        _grader(otel_traces, server, spec, content="SPAN_ONLY").grade(airline_run())
    (span,) = otel_traces[1].get_finished_spans()
    attrs = span.attributes or {}
    content = sorted(k for k in attrs if is_content_key(k))
    assert content == [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
    ]
    assert PROMPT_TEXT in str(attrs["gen_ai.input.messages"])
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [
        {"type": "text", "content": SYSTEM}
    ]
    (out,) = json.loads(str(attrs["gen_ai.output.messages"]))
    assert out == {
        "role": "assistant",
        "parts": [{"type": "text", "content": _answer()}],
        "finish_reason": "stop",
    }


def test_an_anthropic_call_is_one_span_ours(otel_traces: Otel) -> None:
    """Through the real ``anthropic`` SDK: the span says ``anthropic``, with its usage; the
    SDK's own span (2.x, on by default, to the global provider) is switched off on the
    grader's client, so the call is one span."""
    spec = _spec(provider="anthropic")
    with JudgeServer([judge.anthropic_reply(_answer())]) as server:
        provider = AnthropicProvider(KEY, server.origin, spec.timeout_s)
        runtime = judge_runtime(otel_traces[0], NoOpMeterProvider())
        Grader(spec, traced(provider, spec, runtime)).grade(airline_run())
    assert provider._client.open_telemetry["traces"]["enabled"] is False
    (span,) = span_dicts(otel_traces[1])
    assert span["attributes"] == {
        **_request_attributes(spec, "anthropic"),
        "gen_ai.response.id": "msg_judge",
        "gen_ai.response.model": "judge-1",
        "gen_ai.response.finish_reasons": ["end_turn"],
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
    }


def test_eval_graders_are_traced_on_the_runtime_given(otel_traces: Otel, tmp_path: Path) -> None:
    """``build_graders`` (what ``tracejudge eval`` runs, on the global tracer provider) wraps
    each grader's provider: a rules file's grader makes one span per sample."""
    with JudgeServer([openai_reply(_answer())]) as server:
        rules = _rules_file(tmp_path, server, "samples: 2")
        runtime = judge_runtime(otel_traces[0], NoOpMeterProvider())
        (g,), problems = build_graders(
            load_rules(rules), rules, {"OPENAI_API_KEY": KEY}, None, runtime
        )
        assert problems == []
        g.grader.grade(airline_run())
    names = [s.name for s in otel_traces[1].get_finished_spans()]
    assert names == ["chat judge-1", "chat judge-1"]


EVAL_WITH_A_PROVIDER = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
if sys.argv[1] == "global":
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
from tracejudge.cli import main

try:
    main(sys.argv[3:])
except SystemExit:
    pass
names = [s.name for s in exporter.get_finished_spans()]
with open(sys.argv[2], "w") as f:
    json.dump([names, type(trace.get_tracer_provider()).__name__], f)
"""


@pytest.mark.parametrize("where", ["global", "none"])
def test_eval_sends_the_spans_to_the_global_tracer_provider(where: str, tmp_path: Path) -> None:
    """``tracejudge eval`` in a process whose program set a global tracer provider: the
    grader's call is a span on it; with none set, eval sets none up (the API's proxy
    stays, whose spans go nowhere). A subprocess: the global provider is set once."""
    out, trace = tmp_path / "spans.json", ROOT / "tests" / "fixtures" / "otlp" / "trace.json"
    with JudgeServer([openai_reply(json.dumps({"properties": []}))]) as server:
        rules = _rules_file(tmp_path, server, "when: always")
        script = [sys.executable, "-c", EVAL_WITH_A_PROVIDER, where, str(out)]
        proc = subprocess.run(
            [*script, "eval", "--rules", str(rules), str(trace)],
            env={**os.environ, "OPENAI_API_KEY": KEY},
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
    assert "grader claims-backed" in proc.stderr, proc.stderr
    assert len(server.requests) == 1
    names, provider = json.loads(out.read_text("utf-8"))
    if where == "global":
        assert (names, provider) == (["chat judge-1"], "TracerProvider")
    else:
        assert (names, provider) == ([], "ProxyTracerProvider")


class _BrokenTracer(NoOpTracer):
    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a tracer bug")


class _BrokenProvider(NoOpTracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _BrokenTracer()


def test_a_telemetry_fault_never_costs_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    """A tracer that raises on every span: the call is made and answered as without
    telemetry; the fault is logged (the runtime's guard), not raised."""
    spec = _spec()
    runtime = judge_runtime(_BrokenProvider(), NoOpMeterProvider())
    with JudgeServer([openai_reply(_answer())]) as server:
        provider = OpenAIProvider(KEY, server.base_url, spec.timeout_s)
        votes = Grader(spec, traced(provider, spec, runtime)).grade(airline_run()).votes
    assert votes[0].label == "yes"
    assert len(server.requests) == 1
    assert "a tracer bug" in caplog.text


def test_a_pairwise_call_links_both_runs_whichever_was_shown_first(otel_traces: Otel) -> None:
    """A pairwise comparison is one model call about two runs: its span links the
    baseline's root and the candidate's, each link saying which, in that order whether the
    model was shown the candidate first or not (the order is drawn per pair; the links are
    telemetry, never shown to the model)."""
    runs = {str(r.run_id): r for r in load_runs([AIRLINE]).runs}
    baseline, candidate = runs["0-0"], runs["0-1"]
    spec = _spec()
    shown: set[bool] = set()
    for seed in ("seed-0", "seed-1", "seed-2", "seed-3", "seed-4", "seed-5"):
        otel_traces[1].clear()
        with JudgeServer([openai_reply(json.dumps({"properties": []}))]) as server:
            runtime = judge_runtime(otel_traces[0], NoOpMeterProvider(), None)
            provider = OpenAIProvider(KEY, server.base_url, spec.timeout_s)
            pairwise = PairwiseGrader(spec, traced(provider, spec, runtime), seed)
            shown.add(pairwise.compare(baseline, candidate).candidate_first)
            prompt = json.dumps(server.requests[0])
        assert _links(otel_traces[1]) == [
            (
                baseline.trace_id,
                baseline.root_span_id,
                {"tracejudge.grader.judged_run": "baseline"},
            ),
            (
                candidate.trace_id,
                candidate.root_span_id,
                {"tracejudge.grader.judged_run": "candidate"},
            ),
        ]
        assert "baseline" not in prompt
        assert "candidate" not in prompt
    assert shown == {True, False}
