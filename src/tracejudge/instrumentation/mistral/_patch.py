"""The ``mistralai`` patch: ``chat.complete`` and ``chat.stream`` (and their ``_async``
twins) as GenAI ``chat`` spans.

Why the OpenAI chat translation: Mistral's chat API is OpenAI's in shape (messages with
``role``/``content``/``tool_calls``/``tool_call_id``, ``tools`` as functions, choices
with a ``message`` or a ``delta``, ``usage`` with ``prompt_tokens``), so the request,
response and stream code is ``instrumentation.openai._chat``'s; what differs is said
there (content as a list of chunks, thinking, arguments as an object) or here: the
request parameter names, the stream events (each a ``CompletionEvent`` whose ``data`` is
the chunk), and where the SDK lives.

Two layouts: mistralai 1.x keeps the SDK at ``mistralai`` (``mistralai.chat.Chat``),
2.x and later at ``mistralai.client``. The patch picks the layout of the installed
release when it is applied. ``stream`` returns the SDK's ``EventStream``, which is its
own iterator; the shared stream observer (``instrumentation._stream``) observes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._patcher import mistral_sdk_module
from tracejudge.instrumentation._provider import Endpoint, ProviderPatcher, ProviderSpec, Target
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get, url_server
from tracejudge.instrumentation.openai import _chat
from tracejudge.instrumentation.openai._common import _INT, _NUMBER, _STR

SUPPORTED: Final = SupportedVersions("1.2.4", "4")
"""mistralai releases tracejudge is tested on (see docs/instrumentation.md)."""

PROVIDER: Final = sc.GenAiProviderNameValues.MISTRAL_AI

PARAMS: Final[dict[str, tuple[str, int]]] = {
    "max_tokens": (sc.GEN_AI_REQUEST_MAX_TOKENS, _INT),
    "temperature": (sc.GEN_AI_REQUEST_TEMPERATURE, _NUMBER),
    "top_p": (sc.GEN_AI_REQUEST_TOP_P, _NUMBER),
    "top_k": (sc.GEN_AI_REQUEST_TOP_K, _INT),
    "frequency_penalty": (sc.GEN_AI_REQUEST_FREQUENCY_PENALTY, _NUMBER),
    "presence_penalty": (sc.GEN_AI_REQUEST_PRESENCE_PENALTY, _NUMBER),
    "random_seed": (sc.GEN_AI_REQUEST_SEED, _INT),
    "reasoning_effort": (sc.GEN_AI_REQUEST_REASONING_LEVEL, _STR),
}


def server_of(resource: Any, kwargs: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """``server.address``/``server.port``: the call's ``server_url``, else the client's."""
    url = kwargs.get("server_url")
    if not isinstance(url, str) or not url:
        try:
            url = resource.sdk_configuration.get_server_details()[0]
        except Exception:  # an SDK that moved it: no server attributes, never an error
            return None, None
    return url_server(url)


def _start(
    runtime: Runtime, resource: Any, kwargs: Mapping[str, Any], *, stream: bool
) -> ModelCallTelemetry:
    attrs = _chat.chat_request_attributes(kwargs, PARAMS)
    if stream:
        attrs[sc.GEN_AI_REQUEST_STREAM] = True
    address, port = server_of(resource, kwargs)
    return _chat.open_chat(runtime, PROVIDER, kwargs, attrs, address, port)


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span of a ``complete`` call."""
    return _start(runtime, resource, kwargs, stream=False)


def start_stream(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the span of a ``stream`` call."""
    return _start(runtime, resource, kwargs, stream=True)


def message_content(msg: Any) -> list[dict[str, Any]]:
    """A response message's content (a string or a list of chunks) as parts."""
    return _chat.content_parts(get(msg, "content"))


def no_vendor_attributes(extra: dict[str, AttributeValue], chunk: Any) -> None:
    """Mistral responses carry no provider-specific attributes of the conventions."""


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a ``ChatCompletionResponse``."""
    _chat.finish(call, response, message_content, no_vendor_attributes)


class EventAccumulator(_chat.ChatStreamAccumulator):
    """Folds the ``CompletionEvent``s of ``stream`` (each wraps a chunk in ``data``)."""

    __slots__ = ()
    vendor = staticmethod(no_vendor_attributes)

    def add(self, chunk: Any) -> None:
        """Fold one event's chunk in."""
        data = get(chunk, "data")
        super().add(chunk if data is None else data)


ASYNC: Final = "_async"
COMPLETE: Final = Endpoint(start, finish)
STREAM: Final = Endpoint(start_stream, finish, EventAccumulator)


def spec_for(package: str) -> ProviderSpec:
    """The spec of the SDK laid out under ``package`` (``mistralai`` for 1.x,
    ``mistralai.client`` from 2.0 on)."""
    return ProviderSpec(
        name="mistral",
        sdk_module="mistralai",
        targets=(
            Target(
                f"{package}.chat", "Chat", "Chat", COMPLETE, ("complete",), async_suffix="_async"
            ),
            Target(f"{package}.chat", "Chat", "Chat", STREAM, ("stream",), async_suffix="_async"),
        ),
        stream_classes=(
            f"{package}.utils.eventstreaming.EventStream",
            f"{package}.utils.eventstreaming.EventStreamAsync",
        ),
        distribution="mistralai",
        supported=SUPPORTED,
    )


SPEC: Final = spec_for("mistralai.client")
SPEC_1X: Final = spec_for("mistralai")


def installed_layout() -> ProviderSpec:
    """``SPEC_1X`` when a mistralai 1.x is installed, else ``SPEC`` (2.0 and later)."""
    return SPEC_1X if mistral_sdk_module() == "mistralai" else SPEC


class MistralPatcher(ProviderPatcher):
    """The ``Patcher`` for the ``mistralai`` SDK (registered by name in ``_patcher``)."""

    def __init__(self) -> None:
        super().__init__(SPEC)

    def patch(self, runtime: Runtime) -> None:
        """Patch the installed release's layout (see the module docstring)."""
        self.spec = installed_layout()
        super().patch(runtime)


__all__ = ["SPEC", "SPEC_1X", "SUPPORTED", "MistralPatcher"]
