"""Anthropic's stream translation: raw Messages-API events folded back into a Message.

Why only this: observing the stream (every end path, the first ending wins) is the
shared ``StreamObserver``'s; what is Anthropic's is how ``message_start`` /
``content_block_*`` / ``message_delta`` events rebuild the Message that ``_messages``
records — complete at the end of the stream, partial when it was abandoned or failed.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation.anthropic._convert import get
from tracejudge.instrumentation.anthropic._messages import record


class MessageAccumulator:
    """Rebuilds a Message (as a plain dict) from raw Messages-API stream events.

    Why not the SDK's own snapshot: ``create(stream=True)`` has none, its location is
    private and differs across majors, and an early-abandoned stream still needs the
    partial id/model/usage recorded.
    """

    __slots__ = ("_json", "message", "started")

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"role": "assistant", "content": []}
        self.started = False
        self._json: dict[int, str] = {}

    def add(self, event: Any) -> None:
        """Fold one event in. Unknown event and delta types are ignored on purpose:
        they carry nothing the conventions record (pings, signatures, citations)."""
        kind = get(event, "type")
        if kind == "message_start":
            self._start(get(event, "message"))
        elif kind == "content_block_start":
            self._block_start(get(event, "index"), get(event, "content_block"))
        elif kind == "content_block_delta":
            self._delta(get(event, "index"), get(event, "delta"))
        elif kind == "content_block_stop":
            self._block_stop(get(event, "index"))
        elif kind == "message_delta":
            delta = get(event, "delta")
            for key in ("stop_reason", "stop_sequence"):
                value = get(delta, key)
                if value is not None:
                    self.message[key] = value
            self._merge_usage(get(event, "usage"))

    def _start(self, message: Any) -> None:
        self.started = True
        for key in ("id", "model", "role"):
            value = get(message, key)
            if isinstance(value, str):
                self.message[key] = value
        self.message["usage"] = {}
        self._merge_usage(get(message, "usage"))

    def _merge_usage(self, usage: Any) -> None:
        if usage is None:
            return
        target = self.message.setdefault("usage", {})
        data = to_jsonable(usage)
        if isinstance(data, dict):
            target.update({k: v for k, v in data.items() if v is not None})

    def _block(self, index: Any) -> dict[str, Any] | None:
        blocks: list[dict[str, Any]] = self.message["content"]
        if isinstance(index, int) and 0 <= index < len(blocks):
            return blocks[index]
        return None

    def _block_start(self, index: Any, block: Any) -> None:
        data = to_jsonable(block)
        entry: dict[str, Any] = data if isinstance(data, dict) else {"type": "unknown"}
        blocks: list[dict[str, Any]] = self.message["content"]
        if isinstance(index, int):
            while len(blocks) < index:
                blocks.append({"type": "unknown"})
            if index < len(blocks):
                blocks[index] = entry
            else:
                blocks.append(entry)
        else:
            blocks.append(entry)

    def _delta(self, index: Any, delta: Any) -> None:
        block = self._block(index)
        if block is None:
            return
        kind = get(delta, "type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(get(delta, "text") or "")
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(get(delta, "thinking") or "")
        elif kind == "input_json_delta" and isinstance(index, int):
            self._json[index] = self._json.get(index, "") + str(get(delta, "partial_json") or "")

    def _block_stop(self, index: Any) -> None:
        block = self._block(index)
        if block is None or not isinstance(index, int) or index not in self._json:
            return
        raw = self._json.pop(index)
        try:
            block["input"] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            block["input"] = raw  # keep what the model sent rather than drop it

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record the rebuilt Message: complete when the stream ended with its stop
        reason, else as far as it got; a stream that never started generated nothing."""
        if self.started:
            record(call, self.message, complete=complete and "stop_reason" in self.message)
