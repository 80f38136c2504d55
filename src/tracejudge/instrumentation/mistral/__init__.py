"""Mistral AI instrumentation: ``MistralPatcher`` traces the ``mistralai`` SDK.

One CLIENT span ``chat {model}`` per ``client.chat.complete`` / ``stream`` call (sync and
``complete_async`` / ``stream_async``), ``gen_ai.provider.name`` ``mistral_ai``. Mistral's
chat API has OpenAI's shapes, so the request, response and stream translation are the
OpenAI chat code's (``instrumentation.openai._chat``); ``_patch`` holds the
``ProviderSpec`` (for the SDK's two layouts) and what is Mistral's own.
"""

from __future__ import annotations

from tracejudge.instrumentation.mistral._patch import MistralPatcher

__all__ = ["MistralPatcher"]
