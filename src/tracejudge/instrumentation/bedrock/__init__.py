"""AWS Bedrock instrumentation: ``BedrockPatcher`` traces boto3's ``bedrock-runtime``
Converse API.

One CLIENT span ``chat {modelId}`` per ``converse`` / ``converse_stream`` call,
``gen_ai.provider.name`` ``aws.bedrock``. Modules: ``_convert`` (Converse shapes →
convention attributes and parts), ``_patch`` (the ``ProviderSpec``, the
``_make_api_call`` wrapper and the stream-event accumulator).
"""

from __future__ import annotations

from tracejudge.instrumentation.bedrock._patch import BedrockPatcher

__all__ = ["BedrockPatcher"]
