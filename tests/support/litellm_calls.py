"""What the LiteLLM tests share: the prompts, the recorded responses they replay, the call
most of them make (Claude through LiteLLM's own HTTP code) and the response-id check.

LiteLLM makes up the response id of an Anthropic response (``chatcmpl-<uuid>``) and
``created`` from the clock: ``masked_id`` checks the id against what the application got,
then masks it.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: the packaged prices
import litellm

from tests.support.replay import ReplayServer

JOKE: Any = [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]
TEST: Any = [{"role": "user", "content": "Say this is a test"}]
ANTHROPIC_CREATE = "anthropic/test_anthropic_message_create_with_events_with_content.yaml"
ANTHROPIC_STREAM = "anthropic/test_anthropic_message_streaming_with_events_with_content.yaml"
ANTHROPIC_ASYNC_STREAM = (
    "anthropic/test_async_anthropic_message_streaming_with_events_with_content.yaml"
)
ANTHROPIC_TOOLS = "anthropic/test_anthropic_tools_with_events_with_content.yaml"
OPENAI_CREATE = "openai/test_chat_completion_with_content.yaml"
OPENAI_STREAM = "openai/test_chat_completion_streaming.yaml"
WEATHER: Any = [
    {
        "role": "user",
        "content": "What is the weather like right now in New York? "
        "Also what time is it there now?",
    }
]
WEATHER_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current time in a given time zone",
            "parameters": {
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"],
            },
        },
    },
]


def masked_id(spans: list[dict[str, Any]], expected: str) -> list[dict[str, Any]]:
    """Check each span's response id is ``expected`` (what the application got), then
    mask it (LiteLLM makes one up for an Anthropic response)."""
    for span in spans:
        assert span["attributes"]["gen_ai.response.id"] == expected
        span["attributes"]["gen_ai.response.id"] = "<id>"
    return spans


def claude(server: ReplayServer, **kwargs: Any) -> Any:
    return litellm.completion(
        model="anthropic/claude-3-opus-20240229",
        messages=JOKE,
        api_base=server.origin,
        api_key="test-key",
        max_tokens=1024,
        **kwargs,
    )
