"""Anthropic instrumentation: ``AnthropicPatcher`` traces the Messages API.

One CLIENT span ``chat {model}`` per ``messages.create``/``parse``/``stream`` call
(sync and async, streamed or not) following the GenAI conventions and their Anthropic
refinement, with the SDK's own span switched off under ours (see ``_suppress``).
Modules: ``_convert`` (Anthropic shapes → convention attributes and parts),
``_messages`` (the endpoint's request/response translation), ``_stream`` (stream events
→ a Message), ``_patch`` (the ``ProviderSpec`` and the ``messages.stream()`` managers).
The wrapper and the stream observation are the shared template's (``_provider``).
"""

from __future__ import annotations

from tracejudge.instrumentation.anthropic._patch import AnthropicPatcher

__all__ = ["AnthropicPatcher"]
