"""Google Gemini instrumentation: ``GeminiPatcher`` traces the ``google-genai`` SDK.

One CLIENT span ``generate_content {model}`` per ``client.models.generate_content`` /
``generate_content_stream`` call (sync and async, ``client.aio``), ``gen_ai.provider.name``
``gcp.gemini`` (the Gemini API) or ``gcp.vertex_ai`` (a Vertex AI client). Modules:
``_convert`` (Gemini shapes → convention attributes and parts), ``_patch`` (the
``ProviderSpec``, the stream generators and the chunk accumulator).
"""

from __future__ import annotations

from tracejudge.instrumentation.gemini._patch import GeminiPatcher

__all__ = ["GeminiPatcher"]
