"""The ``litellm`` patch: ``litellm.completion``/``acompletion`` as GenAI ``chat`` spans,
``litellm.embedding``/``aembedding`` as ``embeddings`` spans.

Which layer owns the span: LiteLLM's. LiteLLM reaches some providers through an SDK that
tracejudge also patches (``azure/...`` calls the ``openai`` SDK's
``chat.completions.create``, which the ``openai`` patch wraps; ``openai/...`` posts
through the same SDK's client) and others through its own HTTP code (``anthropic/...``,
``cohere/...``, Gemini). Tracing at the LiteLLM call gives one span per call the
application made, whichever transport LiteLLM picks, with the provider LiteLLM routed
to and the model it asked for, and it covers every provider (an SDK-level span would
leave the HTTP-code providers untraced). Our span is current while LiteLLM runs, so the
``openai`` patch's duplicate check (``should_skip_model_span``: the current span is a
model span) makes the SDK call inside it pass through untraced; a direct ``openai``
call outside LiteLLM keeps its own span. A stream is observed on LiteLLM's
``CustomStreamWrapper``, not on the SDK stream inside it.

The patch replaces the four functions on the ``litellm`` package (what applications and
LiteLLM's ``Router`` call); LiteLLM's internal ``acompletion`` → ``completion`` and
``aembedding`` → ``embedding`` calls go to ``litellm.main`` and are not traced twice.
``completion(..., acompletion=True)`` and ``embedding(..., aembedding=True)`` (a
coroutine from the sync function) are followed: the span covers the awaited call and
ends with its result or exception (``instrumentation._deferred``). An embeddings
response has OpenAI's shape, so its translation is the OpenAI embeddings code's
(``instrumentation.openai._embeddings``), with the provider LiteLLM routed to.

Nothing here imports ``litellm`` at module level: ``instrument()`` must not import it
(the patcher is built when the application imports ``litellm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._provider import (
    Endpoint,
    FunctionTarget,
    ProviderPatcher,
    ProviderSpec,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get, url_server
from tracejudge.instrumentation.openai import _chat, _embeddings
from tracejudge.instrumentation.openai._common import CHAT_PARAMS

SUPPORTED: Final = SupportedVersions("1.108.0", "2")
"""litellm releases tracejudge is tested on (see docs/instrumentation.md)."""

PARAMS: Final = {k: v for k, v in CHAT_PARAMS.items() if k != "service_tier"}
"""LiteLLM takes OpenAI's parameters; ``service_tier`` is an ``openai.*`` attribute, not
one of every provider's."""

UNKNOWN_PROVIDER: Final = "litellm"
"""``gen_ai.provider.name`` when LiteLLM cannot name the provider (the call then fails
with LiteLLM's own error): the relay is all the instrumentation knows."""

_V = sc.GenAiProviderNameValues
PROVIDERS: Final[Mapping[str, str]] = {
    "openai": _V.OPENAI,
    "text-completion-openai": _V.OPENAI,
    "azure": _V.AZURE_AI_OPENAI,
    "azure_ai": _V.AZURE_AI_INFERENCE,
    "anthropic": _V.ANTHROPIC,
    "cohere": _V.COHERE,
    "cohere_chat": _V.COHERE,
    "mistral": _V.MISTRAL_AI,
    "gemini": _V.GCP_GEMINI,
    "vertex_ai": _V.GCP_VERTEX_AI,
    "vertex_ai_beta": _V.GCP_VERTEX_AI,
    "bedrock": _V.AWS_BEDROCK,
    "watsonx": _V.IBM_WATSONX_AI,
    "xai": _V.X_AI,
    "moonshot": _V.MOONSHOT_AI,
    "groq": _V.GROQ,
    "deepseek": _V.DEEPSEEK,
    "perplexity": _V.PERPLEXITY,
}
"""LiteLLM's provider names → the conventions' registry values (the ones tracejudge's own
provider patches emit); a provider the registry does not list keeps LiteLLM's name."""


def route(kwargs: Mapping[str, Any]) -> tuple[Any, str, str | None]:
    """``(model the provider is asked for, gen_ai.provider.name, API base or None)``, as
    LiteLLM resolves them (``get_llm_provider``)."""
    from litellm import get_llm_provider  # imported by the application already

    model = kwargs.get("model")
    try:
        resolved, provider, _key, base = get_llm_provider(
            model=model,
            custom_llm_provider=kwargs.get("custom_llm_provider"),
            api_base=kwargs.get("api_base") or kwargs.get("base_url"),
        )
    except Exception:  # LiteLLM cannot route it: the call raises LiteLLM's own error
        return model, UNKNOWN_PROVIDER, None
    name = str(provider) if provider else UNKNOWN_PROVIDER
    return resolved or model, PROVIDERS.get(name, name), base if isinstance(base, str) else None


def server(kwargs: Mapping[str, Any], routed_base: str | None) -> tuple[str | None, int | None]:
    """``server.address``/``server.port``: the API base the call gives, else the one
    LiteLLM routes to."""
    return url_server(kwargs.get("api_base") or kwargs.get("base_url") or routed_base)


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span of a ``completion``/``acompletion`` call."""
    model, provider, base = route(kwargs)
    attrs = _chat.chat_request_attributes(kwargs, PARAMS)
    address, port = server(kwargs, base)
    request = dict(kwargs)
    request["model"] = model
    return _chat.open_chat(runtime, provider, request, attrs, address, port)


def message_content(msg: Any) -> list[dict[str, Any]]:
    """A response message's parts: its reasoning (``reasoning_content``, where the
    provider returned one), then its content."""
    parts = _chat.content_parts(get(msg, "content"))
    reasoning = get(msg, "reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.insert(0, {"type": "reasoning", "content": reasoning})
    return parts


def no_vendor_attributes(extra: dict[str, AttributeValue], chunk: Any) -> None:
    """LiteLLM responses carry no provider-specific attributes of the conventions (an
    ``openai.*`` attribute on an Anthropic call would contradict its provider name)."""


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a ``ModelResponse`` (OpenAI's ``ChatCompletion`` shape)."""
    _chat.finish(call, response, message_content, no_vendor_attributes)


class ChunkAccumulator(_chat.ChatStreamAccumulator):
    """Folds the ``ModelResponseStream`` chunks of a ``CustomStreamWrapper`` (OpenAI's
    chunk shape)."""

    __slots__ = ()
    vendor = staticmethod(no_vendor_attributes)


def start_embeddings(
    runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]
) -> ModelCallTelemetry:
    """Start the ``embeddings {model}`` span of an ``embedding``/``aembedding`` call:
    routed like a completion, with OpenAI's embeddings parameters (LiteLLM takes them)."""
    model, provider, base = route(kwargs)
    address, port = server(kwargs, base)
    return _embeddings.open_embeddings(runtime, provider, model, kwargs, address, port)


COMPLETION: Final = Endpoint(start, finish, ChunkAccumulator)
EMBEDDING: Final = Endpoint(start_embeddings, _embeddings.finish)
"""An ``EmbeddingResponse`` has OpenAI's shape (``data[].embedding``, ``usage``)."""
_STREAM: Final = "litellm.utils.CustomStreamWrapper"

SPEC: Final = ProviderSpec(
    name="litellm",
    sdk_module="litellm",
    targets=(),
    functions=(
        FunctionTarget("litellm", "completion", "acompletion", COMPLETION),
        FunctionTarget("litellm", "embedding", "aembedding", EMBEDDING),
    ),
    stream_classes=(_STREAM, _STREAM),
    distribution="litellm",
    supported=SUPPORTED,
)


class LiteLLMPatcher(ProviderPatcher):
    """The ``Patcher`` for ``litellm`` (registered by name in ``_patcher``)."""

    def __init__(self) -> None:
        super().__init__(SPEC)


__all__ = ["SPEC", "SUPPORTED", "LiteLLMPatcher"]
