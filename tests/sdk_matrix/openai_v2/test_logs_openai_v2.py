"""Messages that arrive only as OTLP log records are judged: real parts end to end.

Runs in .venv-openai-v2 (scripts/openai-v2-env.sh; see this folder's conftest.py for why).

The real ``opentelemetry-instrumentation-openai-v2`` (2.4b0, its
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`` mode: content in a
``gen_ai.client.inference.operation.details`` log record, none on the span) instruments the
real ``openai`` client talking to the replay server (cassette by
open-telemetry/opentelemetry-python-contrib, Apache-2.0); the real OTel SDK exports the
spans and the log records over OTLP to ``tracejudge serve``, which judges with the real
engine and a claim rule on the final answer. The final answer exists only in the logs.

The older event form (``gen_ai.user.message`` ... ``gen_ai.choice``, content in the body,
what openai-v2 emitted before 2.4 and what ``opentelemetry-instrumentation-anthropic``
still emits) is produced with the real SDK ``Logger`` in the shape those versions emit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.collector.collector_support import LoopThread, Sink, attrs, wait_for
from tests.collector.logs_support import LogsSink
from tests.support.replay import ReplayServer
from tracejudge import semconv as sc
from tracejudge.collector import Collector, load_judge

RULES = """\
version: 1
tools:
  run_test: {kind: mutate}
rules:
  - id: test-claim-needs-a-test-run
    layer: outcome
    description: An answer saying a test happened needs a successful run_test call.
    check:
      type: claim_evidence
      claim: "(?i)this is a test"
      tool: run_test
"""


@pytest.fixture
def logs_sink(lt: LoopThread) -> Iterator[LogsSink]:
    """A real OTLP logs receiver standing in for the logs backend."""
    s = LogsSink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


@pytest.fixture
def judged(
    tmp_path: Path, collector_factory: Callable[..., Collector], logs_sink: LogsSink
) -> Collector:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES, encoding="utf-8")
    return collector_factory(
        judge=load_judge(rules), decision_wait_after_root=0.3, forward_logs=logs_sink.grpc_url
    )


def _providers(c: Collector, logs_over: str) -> tuple[TracerProvider, LoggerProvider]:
    tp = TracerProvider()
    tp.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces"))
    )
    lp = LoggerProvider()
    exporter: LogRecordExporter
    if logs_over == "grpc":
        exporter = GrpcLogs(endpoint=f"127.0.0.1:{c.grpc_port}", insecure=True)
    else:
        exporter = HttpLogs(endpoint=f"http://127.0.0.1:{c.http_port}/v1/logs")
    lp.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return tp, lp


def _verdict(c: Collector, sink: Sink, trace_id: str) -> dict[str, object]:
    def root() -> dict[str, object] | None:
        for span in sink.spans():
            a = attrs(span)
            if span.trace_id.hex() == trace_id and sc.TRACEJUDGE_VERDICT in a:
                return a
        return None

    wait_for(lambda: root() is not None, what="the stamped root")
    found = root()
    assert found is not None
    return found


@pytest.mark.parametrize("logs_over", ["http", "grpc"])
def test_openai_v2_event_only_content_is_judged_from_logs(
    logs_over: str,
    judged: Collector,
    sink: Sink,
    logs_sink: LogsSink,
    replay: Callable[..., ReplayServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The answer "This is a test." is only in the operation-details log record; the
    claim rule sees it (fail, ``F-OUTPUT-UNSUPPORTED_CLAIM``), so the log reached the run
    builder as the model call's output. The record is then forwarded to the logs
    endpoint with its span id, and the forwarded chat span carries no content."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    tp, lp = _providers(judged, logs_over)
    instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call,unused-ignore]
    instrumentor.instrument(tracer_provider=tp, logger_provider=lp)
    try:
        server = replay("openai/test_chat_completion_with_content.yaml")
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        with tp.get_tracer("agent").start_as_current_span(
            "invoke_agent tester", attributes={sc.GEN_AI_AGENT_NAME: "tester"}
        ) as root:
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Say this is a test"}]
            )
        assert answer.choices[0].message.content == "This is a test."
    finally:
        instrumentor.uninstrument()
        lp.shutdown()
        tp.shutdown()
    trace_id = f"{root.get_span_context().trace_id:032x}"
    got = _verdict(judged, sink, trace_id)
    assert got[sc.TRACEJUDGE_VERDICT] == "fail"
    assert got[sc.TRACEJUDGE_FAILURE_CODE] == "F-OUTPUT-UNSUPPORTED_CLAIM"
    chat = next(s for s in sink.spans() if s.name.startswith("chat"))
    assert sc.GEN_AI_OUTPUT_MESSAGES not in attrs(chat)  # the span had no content
    wait_for(lambda: bool(logs_sink.records()), what="the forwarded log record")
    (record,) = logs_sink.records(sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS)
    assert record.span_id == chat.span_id
    assert record.trace_id.hex() == trace_id
    assert judged.logs is not None
    assert judged.logs.counts.held == 1


def test_older_message_events_in_log_bodies_are_judged(
    judged: Collector, sink: Sink, logs_sink: LogsSink
) -> None:
    """``gen_ai.user.message`` / ``gen_ai.choice`` records with the content in their body
    (openai-v2 before 2.4) give the model call its messages: the claim in the choice's
    message is judged."""
    tp, lp = _providers(judged, "http")
    tracer = tp.get_tracer("agent")
    logger = lp.get_logger("opentelemetry.instrumentation.openai_v2")
    with (
        tracer.start_as_current_span(
            "invoke_agent tester", attributes={sc.GEN_AI_AGENT_NAME: "tester"}
        ) as root,
        tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini"},
        ),
    ):
        logger.emit(
            LogRecord(
                event_name=sc.FOREIGN_GEN_AI_USER_MESSAGE,
                attributes={sc.FOREIGN_GEN_AI_SYSTEM: "openai"},
                body={"content": "Say this is a test"},
            )
        )
        logger.emit(
            LogRecord(
                event_name=sc.FOREIGN_GEN_AI_CHOICE,
                attributes={sc.FOREIGN_GEN_AI_SYSTEM: "openai"},
                body={
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "This is a test."},
                },
            )
        )
    lp.shutdown()
    tp.shutdown()
    got = _verdict(judged, sink, f"{root.get_span_context().trace_id:032x}")
    assert got[sc.TRACEJUDGE_FAILURE_CODE] == "F-OUTPUT-UNSUPPORTED_CLAIM"
    wait_for(lambda: len(logs_sink.records()) == 2, what="both forwarded records")
