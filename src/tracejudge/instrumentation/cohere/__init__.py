"""Cohere instrumentation: ``CoherePatcher`` traces the ``cohere`` SDK's v2 Chat API.

One CLIENT span ``chat {model}`` per ``chat`` / ``chat_stream`` call of ``ClientV2``,
``AsyncClientV2`` or ``client.v2`` (sync and async), ``gen_ai.provider.name`` ``cohere``.
``_patch`` holds the ``ProviderSpec``, the response translation and the stream
accumulator; the request side is the OpenAI chat code's (the same shapes).
"""

from __future__ import annotations

from tracejudge.instrumentation.cohere._patch import CoherePatcher

__all__ = ["CoherePatcher"]
