"""LiteLLM instrumentation: ``LiteLLMPatcher`` traces ``litellm.completion`` / ``acompletion``
and ``litellm.embedding`` / ``aembedding``.

One CLIENT span ``chat {model}`` per call (sync and async, streamed or not), with
``gen_ai.provider.name`` the provider LiteLLM routes the call to (``openai``,
``anthropic``, ``mistral_ai``, ...) and ``gen_ai.request.model`` the model that provider
is asked for (``anthropic/claude-3-opus`` is ``claude-3-opus`` at ``anthropic``); one
``embeddings {model}`` span per embeddings call, routed the same way. LiteLLM
takes and returns OpenAI's chat shapes, so the translation is the OpenAI chat code's
(``instrumentation.openai._chat``); ``_patch`` holds the ``ProviderSpec``, the routing
and why the LiteLLM span is the one span when LiteLLM calls an SDK tracejudge patches.
"""

from __future__ import annotations

from tracejudge.instrumentation.litellm._patch import LiteLLMPatcher

__all__ = ["LiteLLMPatcher"]
