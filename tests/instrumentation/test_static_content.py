"""Tool definitions encoded once per distinct tool list (``Runtime.encode_static``).

Why it matters: agents pass the same tool list on every model call, and converting,
serializing and redacting it was a fifth of a traced call's cost, so it is remembered.
Remembering must never show stale definitions: a list changed in place is encoded
again, and what redaction counted is counted on every span. The end-to-end test uses
the real ``openai`` SDK against a recorded response (loopback HTTP).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.replay import ReplayServer
from tracejudge.instrumentation import ContentStats, Runtime

Replay = Callable[..., ReplayServer]


def _tools(description: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": description,
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]


class _Counting:
    """Wraps a converter and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, tools: Any) -> Any:
        self.calls += 1
        return [
            {"name": t["function"]["name"], "description": t["function"]["description"]}
            for t in tools
        ]


def test_same_list_is_encoded_once_and_mutation_is_seen() -> None:
    """The second call with the same unchanged list reuses the text; after an in-place
    change the new definitions are encoded."""
    rt = Runtime()
    convert = _Counting()
    tools = _tools("Look an order up")
    first = rt.encode_static(tools, convert, ContentStats())
    assert rt.encode_static(tools, convert, ContentStats()) == first
    assert convert.calls == 1
    tools[0]["function"]["description"] = "Find an order"
    changed = rt.encode_static(tools, convert, ContentStats())
    assert changed is not None
    assert "Find an order" in changed
    assert convert.calls == 2


def test_redaction_is_counted_on_every_use() -> None:
    """A secret in a tool description is redacted, and counted on each span that
    carries the remembered text, not only the first."""
    rt = Runtime()
    tools = _tools("uses api_key=abc123 internally")
    counts = []
    for _ in range(2):
        stats = ContentStats()
        text = rt.encode_static(tools, _Counting(), stats)
        assert text is not None
        assert "abc123" not in text
        counts.append(stats.redacted)
    assert counts == [1, 1]


def test_uncopyable_source_is_encoded_every_time() -> None:
    """A source that cannot be deep-copied is not remembered (no stale risk)."""
    rt = Runtime()
    convert = _Counting()
    tools = _tools("Look an order up")
    tools[0]["lock"] = threading.Lock()  # deepcopy refuses locks
    rt.encode_static(tools, convert, ContentStats())
    rt.encode_static(tools, convert, ContentStats())
    assert convert.calls == 2


@pytest.mark.usefixtures("instrumented")
def test_spans_show_the_tool_list_as_it_was_at_each_call(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Two real calls with one tool list changed in between: each span's
    ``gen_ai.tool.definitions`` is the list as sent on that call."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    tools = _tools("Look an order up")
    messages: list[Any] = [{"role": "user", "content": "Say this is a test"}]
    client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)  # type: ignore[arg-type]
    tools[0]["function"]["description"] = "Find an order"
    client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)  # type: ignore[arg-type]
    descriptions = [
        json.loads(str((s.attributes or {})["gen_ai.tool.definitions"]))[0]["description"]
        for s in sorted(span_exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    ]
    assert descriptions == ["Look an order up", "Find an order"]
    sent = [r.json() for r in server.requests]
    assert [b["tools"][0]["function"]["description"] for b in sent] == descriptions  # type: ignore[index]


def test_converted_value_is_remembered_with_its_text() -> None:
    """``static`` converts an unchanged source once (its value serves the tool-call ledger
    whether or not content is captured) and the text is encoded once from that value; a
    change in place, or another converter, converts afresh."""
    rt = Runtime()
    convert = _Counting()
    tools = _tools("Look an order up")
    entry = rt.static(tools, convert)
    assert rt.static(tools, convert) is entry
    assert convert.calls == 1
    text = rt.encode_static_entry(entry, ContentStats())
    assert rt.encode_static(tools, convert, ContentStats()) == text
    assert convert.calls == 1
    other = _Counting()
    assert rt.static(tools, other).value == entry.value
    assert other.calls == 1
    tools[0]["function"]["description"] = "Find an order"
    assert rt.static(tools, convert).value[0]["description"] == "Find an order"
    assert convert.calls == 2


def test_a_string_is_converted_once_by_its_value_and_long_ones_are_not_kept() -> None:
    """``static_text`` (a system instruction as one string): an equal string, even another
    object, reuses the entry; redaction is counted on each use; a string over the limit
    is converted every time."""
    rt = Runtime()
    calls: list[str] = []

    def convert(text: str) -> list[dict[str, str]]:
        calls.append(text)
        return [{"type": "text", "content": text}]

    prompt = "You help with orders; api_key=abc123"
    counts = []
    for copy in (prompt, "".join(prompt)):
        stats = ContentStats()
        text = rt.encode_static_entry(rt.static_text(copy, convert), stats)
        assert text is not None
        assert "abc123" not in text
        counts.append(stats.redacted)
    assert counts == [1, 1]
    assert len(calls) == 1
    long = "x" * 20_000
    rt.static_text(long, convert)
    rt.static_text(long, convert)
    assert len(calls) == 3
