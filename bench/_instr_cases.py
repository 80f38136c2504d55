"""What the instrumentation benchmark calls, per provider: the SDK call, its client, the SDK
modules an instrumentor patches, and each peer's instrumentor of that SDK.

OpenAI's client talks to an in-process mock transport (a recorded-shape chat completion with a
tool call). The other providers' clients talk over loopback HTTP to
``tests.support.replay.ReplayServer`` replaying the recorded response their tests replay
(tests/instrumentation/test_<provider>.py): the same server code, not a second copy of it.

Peers are the packages that instrument that SDK and import with the pinned SDK release
(bench/requirements-peers.txt). Left out, with why: OpenLLMetry's Mistral instrumentor 0.62.4
does not import with mistralai 3.x (it imports ``mistralai.models``, gone since 2.0); the
official OTel google-genai instrumentor (opentelemetry-instrumentation-google-genai) takes
google-genai < 3 up to 1.1b0 and a newer opentelemetry-util-genai than the OpenAI peer's pin
from 1.2b0 on, so with google-genai 3.6 it instruments nothing.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

OPENAI_MESSAGES: Any = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Please refund my duplicate charge on order A-1."},
]
OPENAI_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]
_OPENAI_RESPONSE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
}


@dataclass(frozen=True)
class Case:
    """One provider's benchmarked call.

    ``client(origin)`` makes a client (``origin``: the replay server, None for OpenAI's mock
    transport); ``call(client)`` is the one SDK call measured; ``modules``: the top-level
    packages whose attributes an instrumentor may replace; ``peers``: config name ->
    ``(module, instrumentor class, instrument() keyword arguments)``; ``prompt``: a text
    of the request that a span capturing content carries; ``calls``: measured calls per
    state by default (fewer where the bare SDK call is slow, for a similar run time).
    """

    cassettes: tuple[str, ...]
    modules: tuple[str, ...]
    client: Callable[[str | None], Any]
    call: Callable[[Any], Any]
    prompt: str
    calls: int
    peers: dict[str, tuple[str, str, dict[str, Any]]] = field(default_factory=dict)


def _openai_client(origin: str | None) -> Any:
    import httpx2
    import openai

    body = json.dumps(_OPENAI_RESPONSE).encode()

    def handler(request: Any) -> Any:
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http)


def _openai_call(client: Any) -> Any:
    return client.chat.completions.create(
        model="gpt-4o-mini", messages=OPENAI_MESSAGES, tools=OPENAI_TOOLS
    )


def _gemini_client(origin: str | None) -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(
        api_key="test-key", http_options=types.HttpOptions(base_url=origin, api_version="v1beta")
    )


@functools.cache
def _gemini_config() -> Any:
    """The call's config (tools, system instruction): made once, as an application makes
    it; each call passes the same objects, like OpenAI's tools and Cohere's."""
    from google.genai import types

    location = types.Schema(type=types.Type.STRING, description="The city and state/country")
    unit = types.Schema(type=types.Type.STRING, enum=["celsius", "fahrenheit"])
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description="Get current weather information for a given location",
                parameters=types.Schema(
                    type=types.Type.OBJECT,
                    properties={"location": location, "unit": unit},
                    required=["location"],
                ),
            )
        ]
    )
    return types.GenerateContentConfig(
        system_instruction="You are a helpful assistant. Use the tools when appropriate.",
        tools=[tool],
    )


def _gemini_call(client: Any) -> Any:
    return client.models.generate_content(
        model="gemini-2.0-flash",
        contents="What's the weather like in San Francisco?",
        config=_gemini_config(),
    )


def _bedrock_client(origin: str | None) -> Any:
    import boto3

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=origin,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


_TOP_SONG = {
    "tools": [
        {
            "toolSpec": {
                "name": "top_song",
                "description": "Get the most popular song played on a radio station.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"sign": {"type": "string", "description": "Call sign"}},
                        "required": ["sign"],
                    }
                },
            }
        }
    ]
}


def _bedrock_call(client: Any) -> Any:
    radio = [{"role": "user", "content": [{"text": "What is the most popular song on Radio XYZ?"}]}]
    return client.converse(modelId="mistral.devstral-2-123b", messages=radio, toolConfig=_TOP_SONG)


def _mistral_client(origin: str | None) -> Any:
    from mistralai.client import Mistral  # mistralai >= 2; the pinned release is 3.8

    return Mistral(api_key="test-key", server_url=origin)


def _mistral_call(client: Any) -> Any:
    joke = [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]
    return client.chat.complete(model="mistral-tiny", messages=joke)


def _cohere_client(origin: str | None) -> Any:
    import cohere

    return cohere.ClientV2(api_key="test-key", base_url=origin)


def _cohere_function(name: str, what: str) -> dict[str, Any]:
    location = {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Get the current {what} in a given location",
            "parameters": {
                "type": "object",
                "properties": {"location": location},
                "required": ["location"],
            },
        },
    }


_COHERE_TOOLS = [_cohere_function("get_weather", "weather"), _cohere_function("get_time", "time")]


def _cohere_call(client: Any) -> Any:
    question = [{"role": "user", "content": "What is the weather and current time in Tokyo?"}]
    return client.chat(model="command-r", messages=question, tools=_COHERE_TOOLS)


_LLMETRY = "opentelemetry.instrumentation."
_OI = "openinference.instrumentation."

CASES: dict[str, Case] = {
    "openai": Case(
        cassettes=(),
        modules=("openai",),
        client=_openai_client,
        calls=3000,
        call=_openai_call,
        prompt="duplicate charge on order A-1",
        peers={
            "otel-genai": (_LLMETRY + "openai_v2", "OpenAIInstrumentor", {}),
            "openinference": (_OI + "openai", "OpenAIInstrumentor", {}),
            "openllmetry": (_LLMETRY + "openai", "OpenAIInstrumentor", {}),
        },
    ),
    "gemini": Case(
        cassettes=("gemini/test_generate_content_with_tool.yaml",),
        modules=("google.genai",),
        client=_gemini_client,
        calls=1000,
        call=_gemini_call,
        prompt="weather like in San Francisco",
        peers={
            "openinference": (_OI + "google_genai", "GoogleGenAIInstrumentor", {}),
            "openllmetry": (_LLMETRY + "google_generativeai", "GoogleGenerativeAiInstrumentor", {}),
        },
    ),
    "bedrock": Case(
        cassettes=("bedrock/test_converse_tool_use_message.yaml",),
        modules=("botocore", "boto3"),
        client=_bedrock_client,
        calls=1500,
        call=_bedrock_call,
        prompt="popular song on Radio XYZ",
        peers={
            "openinference": (_OI + "bedrock", "BedrockInstrumentor", {}),
            "openllmetry": (_LLMETRY + "bedrock", "BedrockInstrumentor", {}),
        },
    ),
    "mistral": Case(
        cassettes=("mistral/test_mistralai_chat_legacy.yaml",),
        modules=("mistralai",),
        client=_mistral_client,
        calls=300,
        call=_mistral_call,
        prompt="joke about OpenTelemetry",
        peers={"openinference": (_OI + "mistralai", "MistralAIInstrumentor", {})},
    ),
    "cohere": Case(
        cassettes=("cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_history.yaml",),
        modules=("cohere",),
        client=_cohere_client,
        calls=1000,
        call=_cohere_call,
        prompt="current time in Tokyo",
        peers={
            "openinference": (_OI + "cohere", "CohereInstrumentor", {}),
            # 0.62.4 declares cohere < 6; its ClientV2.chat wrapper runs on 7.x, so the
            # dependency check is skipped (the row's spans/call and content say it worked).
            "openllmetry": (_LLMETRY + "cohere", "CohereInstrumentor", {"skip_dep_check": True}),
        },
    ),
}


def configs(provider: str) -> list[str]:
    """The configurations benchmarked for ``provider``: bare, floor (OpenAI only), tracejudge
    and each peer."""
    floor = ["floor"] if provider == "openai" else []
    return ["bare", *floor, "tracejudge", *CASES[provider].peers]


def replay_server(case: Case) -> Any:
    """A started ``ReplayServer`` for the case's cassettes, or None (OpenAI)."""
    if not case.cassettes:
        return None
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.replay import ReplayServer

    return ReplayServer(case.cassettes).start()
