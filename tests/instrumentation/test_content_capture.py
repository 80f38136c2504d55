"""Content capture modes, redaction, size caps and the message JSON schemas.

Calls go through the real ``openai`` SDK to recorded responses (loopback HTTP); message
JSON is validated against the GenAI conventions' own schema files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.guards import PROCESS_S
from tests.support.paths import GENAI_SCHEMAS
from tests.support.replay import ReplayServer
from tracejudge.content import is_content_event, is_content_key
from tracejudge.instrumentation import CaptureMode, Redactor
from tracejudge.instrumentation._content import (
    CAPTURE_ENV,
    ContentEncoder,
    ContentStats,
    dumps,
    parse_capture_mode,
    to_jsonable,
)

Replay = Callable[..., ReplayServer]
SCHEMAS = GENAI_SCHEMAS
WEATHER: list[Any] = [
    {"role": "system", "content": "You're a helpful assistant."},
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"},
]
SECRET_MSG: list[Any] = [
    {
        "role": "user",
        "content": "my key is sk-proj-abcdefghijklmnopqrstuvwx, card 4111 1111 1111 1111",
    }
]
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


@pytest.fixture(autouse=True)
def _uninstrument() -> Iterator[None]:
    yield
    tracejudge.uninstrument()


def _call(server: ReplayServer, messages: list[Any]) -> None:
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    c.chat.completions.create(model="gpt-4o-mini", messages=messages)


def _only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    [span] = exporter.get_finished_spans()
    return span


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("NO_CONTENT", CaptureMode.NO_CONTENT),
        ("span_only", CaptureMode.SPAN_ONLY),
        ("EVENT_ONLY", CaptureMode.EVENT_ONLY),
        (" SPAN_AND_EVENT ", CaptureMode.SPAN_AND_EVENT),
        ("true", CaptureMode.SPAN_ONLY),
        ("False", CaptureMode.NO_CONTENT),
        ("", CaptureMode.NO_CONTENT),
        (True, CaptureMode.SPAN_ONLY),
    ],
)
def test_capture_mode_values(value: str | bool, mode: CaptureMode) -> None:
    """The four util-genai names (any case) and the older true/false form are accepted."""
    assert parse_capture_mode(value) is mode


def test_capture_mode_from_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without an explicit argument the mode comes from the conventional variable; an
    unknown value there is a warning naming the variable and means NO_CONTENT (never an
    exception: it is read lazily from inside the application's calls), while an unknown
    explicit argument is an error naming the accepted values."""
    monkeypatch.setenv(CAPTURE_ENV, "SPAN_AND_EVENT")
    assert parse_capture_mode(None) is CaptureMode.SPAN_AND_EVENT
    monkeypatch.setenv(CAPTURE_ENV, "everything")
    assert parse_capture_mode(None) is CaptureMode.NO_CONTENT
    assert CAPTURE_ENV in caplog.text
    assert "everything" in caplog.text
    with pytest.raises(ValueError, match="NO_CONTENT"):
        parse_capture_mode("everything")


def test_bad_capture_variable_never_breaks_a_tool_call() -> None:
    """A decorated tool called before instrument() with a typo in the capture variable
    still runs and returns (regression: the lazily built runtime used to raise)."""
    code = (
        "import tracejudge\n"
        "@tracejudge.tool(effect='read')\n"
        "def lookup(x: int) -> int:\n"
        "    return x + 1\n"
        "assert lookup(1) == 2\n"
        "print('ok')\n"
    )
    env = {**os.environ, CAPTURE_ENV: "everything", "OTEL_TRACES_EXPORTER": "none"}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=PROCESS_S
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert CAPTURE_ENV in proc.stderr


def test_no_content_keeps_only_tool_call_parts(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """In NO_CONTENT mode no message text is recorded, but the requested tool calls are
    (the judge needs which tools were asked for), and no details event is emitted."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    _call(replay("openai/test_chat_completion_tool_calls_with_content.yaml"), WEATHER)
    span = _only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert "gen_ai.input.messages" not in attrs
    assert "gen_ai.tool.definitions" not in attrs
    out = json.loads(str(attrs["gen_ai.output.messages"]))
    assert [p["type"] for p in out[0]["parts"]] == ["tool_call", "tool_call"]
    assert list(span.events) == []


def test_no_content_plain_answer_has_no_output(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A text-only answer in NO_CONTENT mode leaves no content attribute at all."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content=False)
    _call(replay("openai/test_chat_completion_with_content.yaml"), WEATHER)
    span = _only_span(span_exporter)
    assert not [k for k in span.attributes or {} if is_content_key(k)]
    assert not [e.name for e in span.events if is_content_event(e.name)]


@pytest.mark.parametrize(
    ("mode", "on_span", "on_event"),
    [("SPAN_ONLY", True, False), ("EVENT_ONLY", False, True), ("SPAN_AND_EVENT", True, True)],
)
def test_span_and_event_modes(
    mode: str,
    on_span: bool,
    on_event: bool,
    tracer_provider: TracerProvider,
    replay: Replay,
    span_exporter: InMemorySpanExporter,
) -> None:
    """SPAN_* modes put messages on span attributes; *_EVENT modes put them on a
    ``gen_ai.client.inference.operation.details`` event of the span."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content=mode)
    _call(replay("openai/test_chat_completion_with_content.yaml"), WEATHER)
    span = _only_span(span_exporter)
    attrs = dict(span.attributes or {})
    assert ("gen_ai.input.messages" in attrs) is on_span
    assert ("gen_ai.output.messages" in attrs) is on_span
    events = [e for e in span.events if e.name == DETAILS_EVENT]
    assert bool(events) is on_event
    if on_event:
        keys = set((events[0].attributes or {}).keys())
        # the content, and the operation it belongs to: operation and provider name are
        # required on this event by the conventions (it can stand alone, as a log record)
        assert keys == {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "gen_ai.response.model",
            "server.address",
            "server.port",
        }


def test_messages_validate_against_convention_schemas(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Input/output messages and tool definitions we emit validate against the JSON
    schemas shipped with the GenAI conventions."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    server = replay("openai/test_chat_completion_tool_calls_with_content.yaml", sequential=True)
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    tools: list[Any] = [
        {"type": "function", "function": {"name": "get_current_weather", "parameters": {}}}
    ]
    first = c.chat.completions.create(model="gpt-4o-mini", messages=WEATHER, tools=tools)
    calls = first.choices[0].message.tool_calls or []
    history: list[Any] = [
        *WEATHER,
        first.choices[0].message,
        *({"role": "tool", "content": "rain", "tool_call_id": tc.id} for tc in calls),
    ]
    c.chat.completions.create(model="gpt-4o-mini", messages=history)
    schema_for = {
        "gen_ai.input.messages": "gen-ai-input-messages.json",
        "gen_ai.output.messages": "gen-ai-output-messages.json",
        "gen_ai.tool.definitions": "gen-ai-tool-definitions.json",
    }
    checked = 0
    for span in span_exporter.get_finished_spans():
        for key, file in schema_for.items():
            value = (span.attributes or {}).get(key)
            if value is None:
                continue
            schema = json.loads((SCHEMAS / file).read_text())
            jsonschema.validate(json.loads(str(value)), schema)
            checked += 1
    assert checked == 5


def test_secrets_redacted_and_counted(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """API keys and Luhn-valid card numbers never leave the process; the span says how
    many secrets were redacted."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    _call(replay("openai/test_chat_completion_with_content.yaml"), SECRET_MSG)
    attrs = dict(_only_span(span_exporter).attributes or {})
    text = str(attrs["gen_ai.input.messages"])
    assert "sk-proj" not in text
    assert "4111" not in text
    assert text.count("[REDACTED]") == 2
    assert attrs["tracejudge.content.redacted"] == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123456", "Authorization: Bearer [REDACTED]"),
        ('{"password":"hunter2","user":"bob"}', '{"password":"[REDACTED]","user":"bob"}'),
        ("login?password=hunter2&user=bob", "login?password=[REDACTED]&user=bob"),
        ("api_key: abc123xyz", "api_key: [REDACTED]"),
        ("card 4111-1111-1111-1111 ok", "card [REDACTED] ok"),
        ("order 4111 1111 1111 1112 ok", "order 4111 1111 1111 1112 ok"),
        ("max_tokens=5 and 1700000000000", "max_tokens=5 and 1700000000000"),
        ("AKIAABCDEFGHIJKLMNOP", "[REDACTED]"),
    ],
)
def test_default_redaction_patterns(text: str, expected: str) -> None:
    """Each default pattern hides the secret and keeps the surrounding text; numbers that
    fail the Luhn check and ordinary ``*_tokens`` keys are left alone."""
    assert Redactor().redact(text)[0] == expected


def test_custom_redaction_pattern(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """``redact_patterns`` adds patterns; a group named ``s`` limits what is replaced."""
    tracejudge.instrument(
        tracer_provider=tracer_provider, redact_patterns=[r"ssn (?P<s>\d{3}-\d{2}-\d{4})"]
    )

    @tracejudge.tool
    def lookup(query: str) -> str:
        return "found ssn 123-45-6789"

    lookup("who")
    attrs = dict(_only_span(span_exporter).attributes or {})
    assert attrs["gen_ai.tool.call.result"] == '"found ssn [REDACTED]"'
    assert attrs["tracejudge.content.redacted"] == 1


def test_size_cap_truncates_and_flags(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Content over ``max_attribute_bytes`` is cut (on a character boundary) and the span
    is flagged ``tracejudge.content.truncated``."""
    tracejudge.instrument(
        tracer_provider=tracer_provider, capture_content="SPAN_ONLY", max_attribute_bytes=128
    )
    _call(
        replay("openai/test_chat_completion_with_content.yaml"),
        [{"role": "user", "content": "é" * 500}],
    )
    attrs = dict(_only_span(span_exporter).attributes or {})
    value = str(attrs["gen_ai.input.messages"])
    assert len(value.encode("utf-8")) <= 128
    assert value.endswith("…[truncated]")
    assert attrs["tracejudge.content.truncated"] is True


def test_encoder_never_raises() -> None:
    """Values JSON cannot encode (cycles, broken ``__repr__``) still give a string."""

    class BadRepr:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    cyclic: list[Any] = []
    cyclic.append(cyclic)
    encoder = ContentEncoder(Redactor())
    stats = ContentStats()
    assert "unrepresentable" in encoder.encode({"x": BadRepr()}, stats)
    assert isinstance(encoder.encode(cyclic, stats), str)
    assert dumps({"b": b"\x00\x01"}) == '{"b":"AAE="}'


@pytest.mark.parametrize(
    "value",
    [
        [{"role": "user", "parts": [{"type": "text", "content": 'é \u2028 "q" \\ \x00'}]}],
        {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "x": 1.5, "n": None},
        {2: "int key", 1.5: "float key", None: "null key", True: "bool key"},
        {"tuple": (1, "two"), "nested": [[], {}, [{"k": [True, False]}]]},
        [],
        7,
    ],
)
def test_dumps_writes_what_the_json_encoder_writes(value: Any) -> None:
    """``dumps`` reuses one C encoder: its text is the standard encoder's with the same
    options, for every kind of value (non-ASCII kept, NaN and infinities, non-string
    keys)."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    assert dumps(value) == expected


def test_a_value_that_contains_itself_is_encoded_by_the_fallback() -> None:
    """Without the encoder's cycle check a value containing itself fails with a recursion
    error instead of a ValueError; ``dumps`` falls back as before: the converted value
    (depth-capped, the cycle as its repr), not the unserializable marker."""
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    for value in (cyclic, looped):
        text = dumps(value)
        assert text == json.dumps(
            to_jsonable(value), ensure_ascii=False, separators=(",", ":"), default=repr
        )
        assert "..." in text


def test_capture_content_false_records_no_content_at_all(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """`capture_content=False` is the explicit "nothing leaves the process" switch: it
    overrides the default capture of tool arguments/results, requested tool calls and the
    final answer too, unlike the NO_CONTENT mode (which keeps that evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content=False)

    @tracejudge.tool(effect="read")
    def lookup(order_id: str) -> dict[str, str]:
        return {"id": order_id}

    with tracejudge.agent("a") as run:
        _call(replay("openai/test_chat_completion_tool_calls_with_content.yaml"), WEATHER)
        lookup("A-1")
        run.set_output("done")
    spans = {
        s.name.split()[0]: dict(s.attributes or {}) for s in span_exporter.get_finished_spans()
    }
    assert set(spans) == {"chat", "execute_tool", "invoke_agent"}
    for name, attrs in spans.items():  # what the one content declaration says is content
        assert not [k for k in attrs if is_content_key(k)], name
    assert spans["execute_tool"]["gen_ai.tool.name"] == "lookup"


def test_no_content_mode_still_records_tool_evidence(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """The NO_CONTENT mode (the default) hides message text only: the judge still gets
    tool arguments, results and the final answer."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")

    @tracejudge.tool(effect="read")
    def lookup(order_id: str) -> dict[str, str]:
        return {"id": order_id}

    with tracejudge.agent("a") as run:
        lookup("A-1")
        run.set_output("done")
    spans = {
        s.name.split()[0]: dict(s.attributes or {}) for s in span_exporter.get_finished_spans()
    }
    assert json.loads(str(spans["execute_tool"]["gen_ai.tool.call.arguments"])) == {
        "order_id": "A-1"
    }
    assert json.loads(str(spans["execute_tool"]["gen_ai.tool.call.result"])) == {"id": "A-1"}
    assert "done" in str(spans["invoke_agent"]["gen_ai.output.messages"])
