"""OpenAI provider: ``chat.completions.create``, ``responses.create``, ``embeddings.create``.

Why these methods (on the resource classes, sync and async): they are the public entry
points every higher-level helper funnels into. ``chat.completions.stream()`` and
``responses.stream()`` call ``create(stream=True)``; ``with_raw_response`` wraps the bound
``create``; so one wrapper per method covers streams, helpers and raw responses without
touching the SDK's private request path. ``parse`` (structured outputs) posts directly
instead of calling ``create``; it is patched when the installed SDK has it.

This module is only the ``ProviderSpec``: the endpoints' translation lives in ``_chat``,
``_responses`` and ``_embeddings``; the wrapper, raw responses and stream observation
are the shared template's (``instrumentation._provider``).
"""

from __future__ import annotations

from typing import Final

from tracejudge.instrumentation._provider import Endpoint, ProviderPatcher, ProviderSpec, Target
from tracejudge.instrumentation.openai import _chat, _embeddings, _responses

__all__ = ["SPEC", "OpenAIPatcher"]

_CHAT = Endpoint(_chat.start, _chat.finish, _chat.ChatStreamAccumulator)
_RESPONSES = Endpoint(_responses.start, _responses.finish, _responses.ResponsesStreamAccumulator)
_EMBEDDINGS = Endpoint(_embeddings.start, _embeddings.finish)

SPEC: Final = ProviderSpec(
    name="openai",
    sdk_module="openai",
    targets=(
        Target(
            "openai.resources.chat.completions.completions",
            "Completions",
            "AsyncCompletions",
            _CHAT,
            optional=("parse",),
        ),
        Target(
            "openai.resources.responses.responses",
            "Responses",
            "AsyncResponses",
            _RESPONSES,
            optional=("parse",),
        ),
        Target("openai.resources.embeddings", "Embeddings", "AsyncEmbeddings", _EMBEDDINGS),
    ),
    stream_classes=("openai.Stream", "openai.AsyncStream"),
    foreign_check=(
        ("openai._base_client", "SyncAPIClient", "request"),
        ("openai._base_client", "AsyncAPIClient", "request"),
    ),
)


class OpenAIPatcher(ProviderPatcher):
    """The ``Patcher`` for the ``openai`` SDK (v1 and later)."""

    def __init__(self) -> None:
        super().__init__(SPEC)
