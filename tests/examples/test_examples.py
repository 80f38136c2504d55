"""Every example runs as users run it: a subprocess, real SDKs, real local servers.

The traces the examples write are then judged by the real ``tracejudge eval`` command, so
these tests hold the whole offline path together: instrumentation → OTLP/JSON file →
decoder → run builder → engine → exit status.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.guards import PROCESS_S
from tests.support.ports import ReservedPort
from tracejudge import semconv

from ..demo.otlp_sink import OtlpSink

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RULES = EXAMPLES / "refund" / "rules.yaml"
BASELINES = EXAMPLES / "refund" / "baselines"
BIN = Path(sys.executable).parent


def _run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _python(script: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    done = _run(sys.executable, script, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _eval(*files: Path, baselines: bool = True) -> subprocess.CompletedProcess[str]:
    extra: list[str | Path] = ["--baselines", BASELINES] if baselines else []
    return _run(BIN / "tracejudge", "eval", "--rules", RULES, *extra, "--format", "json", *files)


def _verdicts(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_refund_agent_prints_its_answer_and_its_trace_is_judged(tmp_path: Path) -> None:
    """The OpenAI example (plain and streamed) writes traces that eval judges correctly."""
    healthy, wrong = tmp_path / "healthy.json", tmp_path / "wrong.json"
    agent = EXAMPLES / "refund" / "agent.py"
    out = _python(agent, "--variant", "healthy", "--trace-out", healthy).stdout
    assert "answer: Your refund for order ord_B1002 has been processed: $84.00" in out
    assert "'order_id': 'ord_B1002', 'amount': 84.0" in out
    _python(agent, "--variant", "wrong_order", "--stream", "--trace-out", wrong)
    done = _eval(healthy, wrong)
    assert done.returncode == 1, done.stdout + done.stderr
    by_variant = {v["variant"]: v for v in _verdicts(done)}
    assert by_variant["healthy"]["verdict"] == "pass"
    assert by_variant["wrong_order"]["primary"]["code"] == "F-ACTION-ARG-ENTITY_BINDING"


def test_refund_agent_exports_to_the_configured_otlp_endpoint() -> None:
    """Without --trace-out, instrument() exports OTLP to OTEL_EXPORTER_OTLP_ENDPOINT."""
    with OtlpSink() as sink:
        done = _run(
            sys.executable,
            EXAMPLES / "refund" / "agent.py",
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url},
        )
        spans = sink.spans
    assert done.returncode == 0, done.stdout + done.stderr
    trace_id = re.search(r"trace: ([0-9a-f]{32})", done.stdout)
    assert trace_id is not None
    names = {s.name for s in spans if s.trace_id == trace_id.group(1)}
    assert {"invoke_agent refund-agent", "execute_tool refund_api.create"} <= names


def test_anthropic_refund_agent_is_judged_by_the_same_rules(tmp_path: Path) -> None:
    """The Anthropic flavour (plain and streamed) passes the OpenAI agent's rules and baseline."""
    trace, streamed = tmp_path / "anthropic.json", tmp_path / "anthropic-stream.json"
    agent = EXAMPLES / "anthropic_refund" / "agent.py"
    out = _python(agent, "--trace-out", trace).stdout
    assert "answer: Your refund for order ord_B1002 has been processed" in out
    _python(agent, "--stream", "--trace-out", streamed)
    done = _eval(trace, streamed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [v["verdict"] for v in _verdicts(done)] == ["pass", "pass"], done.stdout
    spans = json.loads(trace.read_text())["resourceSpans"][0]["scopeSpans"]
    providers = {
        a["value"].get("stringValue")
        for scope in spans
        for span in scope["spans"]
        for a in span["attributes"]
        if a["key"] == semconv.GEN_AI_PROVIDER_NAME
    }
    assert "anthropic" in providers


def test_ci_eval_example_passes_and_a_regression_fails(tmp_path: Path) -> None:
    """The CI recipe: an uninstrumented agent + one line; eval exits 0, then 1 on a regression."""
    script = EXAMPLES / "ci_eval" / "run_evals.py"
    _python(script, "--out", tmp_path / "good", "--cases", "1")
    _python(script, "--out", tmp_path / "bad", "--cases", "1", "--variant", "silent_failure")
    good = _eval(*sorted((tmp_path / "good").glob("*.json")), baselines=False)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _eval(*sorted((tmp_path / "bad").glob("*.json")), baselines=False)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    (verdict,) = _verdicts(bad)
    assert verdict["primary"]["code"] == "F-OUTPUT-UNSUPPORTED_CLAIM"
    workflow = (EXAMPLES / "ci_eval" / "github-workflow.yml").read_text()
    assert "tracejudge eval --rules examples/refund/rules.yaml" in workflow
    assert "examples/ci_eval/run_evals.py" in workflow


def test_committed_traces_are_what_make_traces_records(tmp_path: Path) -> None:
    """Regenerating the example traces is byte-identical, so they are provably recorded."""
    _python(EXAMPLES / "refund" / "make_traces.py", "--out", tmp_path)
    for committed in sorted((EXAMPLES / "refund" / "traces").glob("*.json")):
        fresh = tmp_path / "traces" / committed.name
        assert fresh.read_bytes() == committed.read_bytes(), (
            f"{committed.name} is stale: the agent or the instrumentation changed; run "
            "`python examples/refund/make_traces.py` and review the diff"
        )
    for committed in sorted(BASELINES.glob("*.json")):
        fresh_doc = json.loads((tmp_path / "baselines" / committed.name).read_text())
        committed_doc = json.loads(committed.read_text())
        fresh_doc.pop("recorded_at")
        committed_doc.pop("recorded_at")
        assert fresh_doc == committed_doc


def test_committed_traces_get_the_documented_verdicts() -> None:
    """The four recorded scenarios are judged as examples/refund/README.md says."""
    done = _eval(*sorted((EXAMPLES / "refund" / "traces").glob("*.json")))
    assert done.returncode == 1, done.stdout + done.stderr
    by_variant = {v["variant"]: v for v in _verdicts(done)}
    assert by_variant["healthy"]["verdict"] == "pass"
    assert by_variant["wrong_order"]["primary"]["code"] == "F-ACTION-ARG-ENTITY_BINDING"
    assert by_variant["half_amount"]["primary"]["code"] == "F-BASELINE-ARG_DRIFT"
    silent = by_variant["silent_failure"]
    assert silent["verdict"] == "fail"
    assert "F-OUTPUT-UNSUPPORTED_CLAIM" in {f["code"] for f in silent["findings"]}


def test_examples_are_quiet_and_quick_without_a_collector() -> None:
    """With nothing listening at the OTLP endpoint, each agent example prints one warning on
    stderr (instrument()'s exporter guard) and no exporter retries (it used to spend ~6 s
    printing connection-refused retries at exit). The port is bound but not listening, so
    connecting is refused (``ReservedPort``)."""
    with ReservedPort() as closed:
        url = closed.url
        for script in (
            EXAMPLES / "refund" / "agent.py",
            EXAMPLES / "anthropic_refund" / "agent.py",
            EXAMPLES / "agents_refund" / "agent.py",
            EXAMPLES / "langgraph_refund" / "agent.py",
        ):
            done = _run(sys.executable, script, env={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
            assert done.returncode == 0, done.stderr
            assert "answer: Your refund for order ord_B1002" in done.stdout
            assert done.stderr.splitlines() == [
                f"tracejudge: nothing listens at {url}; spans are not exported until a "
                "collector runs there (set OTEL_EXPORTER_OTLP_ENDPOINT, or start "
                "`tracejudge serve`)"
            ], script


def test_otlp_endpoint_is_resolved_as_the_exporter_does() -> None:
    """instrument()'s guard probes the endpoint the OTLP exporter uses: traces variable first,
    then the base one, then the protocol's default port."""
    from tracejudge.instrumentation._endpoint import traces_endpoint

    assert traces_endpoint({}).port == 4318
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}).port == 4317
    both = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/v1/traces",
    }
    assert (traces_endpoint(both).host, traces_endpoint(both).port) == ("b", 2)
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c"}).port == 443


Outcome = tuple[str, str | None, list[str]]


def _outcomes(done: subprocess.CompletedProcess[str]) -> dict[str, Outcome]:
    """Per variant: the verdict, the primary finding's code and every finding's code."""
    out: dict[str, Outcome] = {}
    for v in _verdicts(done):
        primary = v["primary"]["code"] if v["primary"] else None
        out[v["variant"]] = (v["verdict"], primary, sorted({f["code"] for f in v["findings"]}))
    return out


def test_agents_sdk_refund_agent_gets_the_plain_agents_verdicts(tmp_path: Path) -> None:
    """The refund agent on the OpenAI Agents SDK (its Runner, function tools, the
    tracing processor instrument() registers) is judged by the same rules and baseline
    exactly as the plain-SDK agent's committed traces: every variant gets the same
    verdict, primary finding and findings; the streamed run passes too."""
    agent = EXAMPLES / "agents_refund" / "agent.py"
    traces = []
    for variant in ("healthy", "silent_failure", "wrong_order", "half_amount"):
        trace = tmp_path / f"{variant}.json"
        out = _python(agent, "--variant", variant, "--trace-out", trace).stdout
        assert "answer: Your refund for order" in out
        traces.append(trace)
    streamed = tmp_path / "streamed.json"
    _python(agent, "--variant", "healthy", "--stream", "--trace-out", streamed)
    plain = _outcomes(_eval(*sorted((EXAMPLES / "refund" / "traces").glob("*.json"))))
    on_agents_sdk = _outcomes(_eval(*traces))
    assert on_agents_sdk == plain
    assert plain["healthy"] == ("pass", None, [])
    done = _eval(streamed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [v["verdict"] for v in _verdicts(done)] == ["pass"]
    names = {
        span["name"]
        for scope in json.loads(traces[0].read_text())["resourceSpans"][0]["scopeSpans"]
        for span in scope["spans"]
    }
    assert {"invoke_agent refund-agent", "execute_tool refund_api.create"} <= names


@pytest.mark.parametrize(
    ("example", "provider"),
    [
        ("gemini_refund", "gcp.gemini"),
        ("bedrock_refund", "aws.bedrock"),
        ("mistral_refund", "mistral_ai"),
        ("cohere_refund", "cohere"),
        ("litellm_refund", "anthropic"),
    ],
)
def test_refund_agents_on_other_providers_get_the_plain_agents_verdicts(
    tmp_path: Path, example: str, provider: str
) -> None:
    """The refund agent on Gemini (``google-genai``), Bedrock (boto3 Converse), Mistral
    (``mistralai``), Cohere (``cohere`` v2) and LiteLLM (``anthropic/`` through LiteLLM's own
    HTTP code), each against the scripted model server's endpoint in that wire format, is judged by the same rules and baseline exactly as the
    plain-SDK agent's committed traces: every variant gets the same verdict, primary finding
    and findings, and each model call names its provider."""
    agent = EXAMPLES / example / "agent.py"
    traces = []
    for variant in ("healthy", "silent_failure", "wrong_order", "half_amount"):
        trace = tmp_path / f"{variant}.json"
        out = _python(agent, "--variant", variant, "--trace-out", trace).stdout
        assert "answer: Your refund for order" in out
        traces.append(trace)
    plain = _outcomes(_eval(*sorted((EXAMPLES / "refund" / "traces").glob("*.json"))))
    assert _outcomes(_eval(*traces)) == plain
    assert plain["silent_failure"][:2] == ("fail", "F-OUTPUT-UNSUPPORTED_CLAIM")
    spans = [
        span
        for scope in json.loads(traces[0].read_text())["resourceSpans"][0]["scopeSpans"]
        for span in scope["spans"]
    ]
    model_calls = [
        {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}
        for span in spans
        if span["kind"] == "SPAN_KIND_CLIENT"
    ]
    assert model_calls
    assert {c[semconv.GEN_AI_PROVIDER_NAME] for c in model_calls} == {provider}
    assert {"invoke_agent refund-agent", "execute_tool refund_api.create"} <= {
        span["name"] for span in spans
    }


def test_langgraph_refund_agent_gets_the_plain_agents_verdicts(tmp_path: Path) -> None:
    """The refund agent on LangGraph (``create_react_agent`` over ``ChatOpenAI``, traced
    through the callback handler instrument() installs) is judged by the same rules and
    baseline exactly as the plain-SDK agent's committed traces: every variant gets the
    same verdict, primary finding and findings — the silent failure (the answer claims a
    refund no ``refund_api.create`` made) fails — and the streamed run passes too."""
    agent = EXAMPLES / "langgraph_refund" / "agent.py"
    traces = []
    for variant in ("healthy", "silent_failure", "wrong_order", "half_amount"):
        trace = tmp_path / f"{variant}.json"
        out = _python(agent, "--variant", variant, "--trace-out", trace).stdout
        assert "answer: Your refund for order" in out
        traces.append(trace)
    streamed = tmp_path / "streamed.json"
    _python(agent, "--variant", "healthy", "--stream", "--trace-out", streamed)
    plain = _outcomes(_eval(*sorted((EXAMPLES / "refund" / "traces").glob("*.json"))))
    on_langgraph = _outcomes(_eval(*traces))
    assert on_langgraph == plain
    assert on_langgraph["silent_failure"][:2] == ("fail", "F-OUTPUT-UNSUPPORTED_CLAIM")
    done = _eval(streamed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [v["verdict"] for v in _verdicts(done)] == ["pass"]
    spans = [
        span
        for scope in json.loads(traces[0].read_text())["resourceSpans"][0]["scopeSpans"]
        for span in scope["spans"]
    ]
    names = sorted(span["name"] for span in spans)
    assert names == sorted(
        ["invoke_agent refund-agent"]
        + ["chat gpt-4o-mini"] * 5
        + [f"execute_tool {t}" for t in ("lookup_order", "check_policy", "refund_api.create")]
        + ["execute_tool send_email"]
    )
