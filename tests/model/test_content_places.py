"""Everything the run model reads as content is dropped by ``--drop-content`` and redacted
by ``--redact-attributes``, for every place of every reader (issue 18 item 2, issue 20).

The places come from the reader tables (``tracejudge.model.places``). For each one a
span (and, for event places, the log record the OTLP logs form of the event would be)
carries a secret there; the test first proves the run model reads it (so the place is
real and the sample well-formed), then runs the collector's span and log-record filters
(the functions ``serve`` applies before anything is forwarded, written to ``--output`` or
dead-lettered) and checks the secret is gone from the serialized output. Before the one
content declaration, 43 of the 82 places leaked past ``--drop-content`` (the
older-convention events, the un-indexed ``gen_ai.prompt``/``gen_ai.completion``, the ADK
and pydantic-ai attributes, the log-record forms of the events), and redaction skipped
strings inside arrays.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from tests.support.content_places import ROOT, SECRET, TRACE, WORD, kv, telemetry
from tracejudge import semconv as sc
from tracejudge.collector.exporters.logs_forward import LogContentFilter
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.stamp import drop_content
from tracejudge.content import is_content_event, is_content_key
from tracejudge.model import build_runs, spans_from_resource_spans
from tracejudge.model.log_events import events_by_span, with_log_events
from tracejudge.model.messages import INPUT_EVENTS
from tracejudge.model.places import ContentPlace, content_places
from tracejudge.model.readers import TOOL_READERS
from tracejudge.model.vendor_models import MODEL_READERS

PLACES = content_places()


def _read(rs: ResourceSpans, rl: ResourceLogs) -> str:
    """What the run model read as content (messages, tool payloads, the final answer)."""
    spans = spans_from_resource_spans(rs)
    spans = with_log_events(spans, events_by_span([rl]))
    read: list[Any] = []
    for run in build_runs(spans):
        read.append(run.final_answer)
        for step in run.steps:
            if step.kind == "model":
                read.extend([step.input_messages, step.output_messages])
                read.extend(c.arguments for c in step.requested_tool_calls)
            else:
                read.extend([step.arguments, step.result])
    return json.dumps(read, default=str)


def _written(rs: ResourceSpans, rl: ResourceLogs) -> bytes:
    return rs.SerializeToString() + rl.SerializeToString()


@pytest.mark.parametrize("place", PLACES, ids=str)
def test_the_run_model_reads_content_there(place: ContentPlace) -> None:
    """The sample is well-formed: without any filter, the run model reads the secret
    from this place (else the two tests below would prove nothing)."""
    assert WORD in _read(*telemetry(place))


@pytest.mark.parametrize("place", PLACES, ids=str)
def test_drop_content_drops_it(place: ContentPlace) -> None:
    """``--drop-content``: the span filter and the log-record filter leave nothing of
    the content in what is written, and the run model built from it reads none."""
    rs, rl = telemetry(place)
    drop_content(rs)
    logs = LogContentFilter(drop=True, redact=False, scrubber=Scrubber())
    rl = ResourceLogs.FromString(logs.apply(rl.SerializeToString()))
    assert WORD not in _written(rs, rl).decode("utf-8", "replace")
    assert WORD not in _read(rs, rl)


@pytest.mark.parametrize("place", PLACES, ids=str)
def test_redact_attributes_redacts_it(place: ContentPlace) -> None:
    """``--redact-attributes``: the secret in the content is replaced, the rest kept."""
    rs, rl = telemetry(place)
    scrubber = Scrubber()
    scrubber.fragment(rs)
    logs = LogContentFilter(drop=False, redact=True, scrubber=scrubber)
    rl = ResourceLogs.FromString(logs.apply(rl.SerializeToString()))
    written = _written(rs, rl).decode("utf-8", "replace")
    assert WORD not in written
    assert "[REDACTED]" in written


def test_the_places_cover_every_reader_row() -> None:
    """Every row of the reader tables that reads content has its places, and every
    event the message reader knows: a new row cannot be left out of the walk."""
    readers = {p.reader for p in PLACES}
    for row in TOOL_READERS:
        if row.arguments or row.result or row.arguments_events or row.result_events:
            assert f"TOOL_READERS[{row.framework}]" in readers
    for model_row in MODEL_READERS:
        assert f"MODEL_READERS[{model_row.framework}]" in readers
    events = {p.event for p in PLACES if p.event}
    assert set(INPUT_EVENTS) <= events
    assert {
        sc.FOREIGN_GEN_AI_CHOICE,
        sc.FOREIGN_GEN_AI_CONTENT_PROMPT,
        sc.FOREIGN_GEN_AI_CONTENT_COMPLETION,
        sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
    } <= events


def test_every_place_is_declared_content() -> None:
    """The declaration (``tracejudge.content``) names every place: its key, or its
    event, is content."""
    for place in PLACES:
        assert is_content_key(place.key) or is_content_event(place.event), str(place)


@pytest.mark.parametrize(
    ("key", "content"),
    [
        ("gen_ai.prompt", True),
        ("gen_ai.prompt.0.content", True),
        ("llm.input_messages.1.message.content", True),
        ("llm.prompts", True),
        ("llm.prompts.0.prompt.text", True),
        ("llm.prompt_template.variables", True),
        ("gen_ai.usage.prompt_tokens", False),
        ("gen_ai.prompt_tokens", False),
        ("gen_ai.request.model", False),
        ("llm.prompt_template.version", False),
        ("input.value.x", True),
        ("input.mime_type", False),
    ],
)
def test_a_key_and_what_is_flattened_under_it(key: str, content: bool) -> None:
    """Flattened forms are content; keys that only share a prefix of characters are not."""
    assert is_content_key(key) is content


def test_events_that_are_not_content_keep_their_attributes_minus_content() -> None:
    """An ``exception`` event stays, with its attributes; a content key inside another
    event is dropped; the span is marked."""
    rs = ResourceSpans()
    span = rs.scope_spans.add().spans.add(trace_id=TRACE, span_id=ROOT, name="s")
    ev = span.events.add(name=sc.EVENT_EXCEPTION)
    ev.attributes.extend([kv(sc.EXCEPTION_TYPE, "ValueError"), kv("gen_ai.prompt", SECRET)])
    span.events.add(name=sc.FOREIGN_GEN_AI_USER_MESSAGE).attributes.append(kv("content", SECRET))
    assert drop_content(rs)
    (kept,) = span.events
    assert kept.name == sc.EVENT_EXCEPTION
    assert [kv.key for kv in kept.attributes] == [sc.EXCEPTION_TYPE]
    assert {kv.key: kv.value.bool_value for kv in span.attributes} == {
        sc.TRACEJUDGE_CONTENT_DROPPED: True
    }


def test_span_redaction_reaches_into_arrays_and_maps() -> None:
    """OpenInference ``llm.prompts`` is a list of strings: redaction reads inside it."""
    rs = ResourceSpans()
    span: Span = rs.scope_spans.add().spans.add(trace_id=TRACE, span_id=ROOT, name="s")
    kv = span.attributes.add(key=sc.FOREIGN_LLM_PROMPTS)
    kv.value.array_value.values.add(string_value=SECRET)
    assert Scrubber().fragment(rs)
    assert WORD not in rs.SerializeToString().decode("utf-8", "replace")


def test_a_content_log_record_keeps_its_identity_and_metadata() -> None:
    """A message event's record keeps its name, trace context and non-content attributes
    (the model, the provider); its body, content attributes and message fields go. A
    plain log line loses its body too: it can quote a prompt as well."""
    rl = ResourceLogs()
    sl = rl.scope_logs.add()
    details = sl.log_records.add(
        trace_id=TRACE, span_id=ROOT, event_name=sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS
    )
    details.attributes.extend(
        [
            kv(sc.GEN_AI_REQUEST_MODEL, "gpt-4o"),
            kv(sc.GEN_AI_INPUT_MESSAGES, SECRET),
            kv(sc.FOREIGN_CONTENT, SECRET),
        ]
    )
    details.body.string_value = SECRET
    plain = sl.log_records.add(trace_id=TRACE, span_id=ROOT)
    plain.attributes.append(kv("content", "not a message field here"))
    plain.body.string_value = SECRET
    logs = LogContentFilter(drop=True, redact=False, scrubber=Scrubber())
    first, second = (
        ResourceLogs.FromString(logs.apply(rl.SerializeToString())).scope_logs[0].log_records
    )
    assert (first.event_name, first.trace_id, first.span_id) == (
        sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
        TRACE,
        ROOT,
    )
    assert [(a.key, a.value.string_value or a.value.bool_value) for a in first.attributes] == [
        (sc.GEN_AI_REQUEST_MODEL, "gpt-4o"),
        (sc.TRACEJUDGE_CONTENT_DROPPED, True),
    ]
    assert not first.HasField("body")
    assert not second.HasField("body")
    assert [a.key for a in second.attributes] == ["content", sc.TRACEJUDGE_CONTENT_DROPPED]


def test_a_hostile_key_costs_no_more_than_its_length() -> None:
    """A key of a million dots is answered by looking at its first few (no declared key
    has more), and a long key is not kept in the cache."""
    assert is_content_key("." * 1_000_000) is False
    assert is_content_key("gen_ai.prompt" + ".x" * 500_000) is True
