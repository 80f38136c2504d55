"""The ``google-genai`` patch: a ``ProviderSpec`` for ``models.generate_content`` and the
stream methods, whose results are generators.

Why an extension for streams: ``generate_content_stream`` is a generator function (the
async one returns an async generator), and a generator's class cannot be swapped for an
observed subclass as the Stainless SDKs' stream objects are: the shared generator wrapper
(``instrumentation._generator``) hands back our own generator around the SDK's, which
ends the span exactly once however the stream ends.

One span per public call: with automatic function calling the SDK may call the model
several times inside one ``generate_content``; that is one span, as the application made
one call (``gen_ai.usage.*`` is the SDK's last response's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._context import PendingToolCall, record_requested_tool_calls
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._generator import GeneratorMethod, GeneratorMethods
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._provider import (
    Endpoint,
    ProviderPatcher,
    ProviderSpec,
    Target,
)
from tracejudge.instrumentation._runtime import Runtime, StaticContent
from tracejudge.instrumentation._shapes import get, url_server
from tracejudge.instrumentation.gemini import _convert as cv

SUPPORTED: Final = SupportedVersions("1.30", "4")
"""google-genai releases tracejudge is tested on: 1.30 (the first that keeps the Gemini
API's response id) to 3.x (see docs/instrumentation.md)."""

_RESPONSE_KEYS: Final = frozenset({sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS})


def provider_of(resource: Any) -> str:
    """``gcp.vertex_ai`` for a Vertex AI client, else ``gcp.gemini`` (the Gemini API)."""
    client = get(resource, "_api_client")
    if getattr(client, "vertexai", False) is True:
        return sc.GenAiProviderNameValues.GCP_VERTEX_AI
    return sc.GenAiProviderNameValues.GCP_GEMINI


def server_of(resource: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` from the client's ``http_options.base_url``."""
    options = get(get(resource, "_api_client"), "_http_options")
    return url_server(get(options, "base_url"))


class ConfigParts:
    """What a call reads from its ``config``, converted once per config (``Runtime.static``
    keyed by the config object, used while it still equals its snapshot): the request
    attributes, the tool definitions and the system instruction, each with its encoded text
    made once (``Runtime.encode_static_entry``).

    Why: an application passes the same config on every call; reading its eleven request
    parameters, checking the tool list against its own snapshot and converting the system
    instruction cost more than one equality check of the whole config. The entries are
    shared by the calls that hit: read them, never change them."""

    __slots__ = ("attributes", "instruction", "system_entry", "tools")

    def __init__(self, config: Any) -> None:
        self.attributes = cv.request_attributes(config, stream=False)
        tools = get(config, "tools")
        self.tools = (
            StaticContent(tools, cv.tool_definitions, cv.tool_definitions(tools)) if tools else None
        )
        self.instruction = get(config, "system_instruction")
        self.system_entry: StaticContent | None = None

    def system(self) -> StaticContent:
        """The system instruction, converted on first use: only with content capture, and
        inside the runtime's guard (odd content must not cost the call its span)."""
        entry = self.system_entry
        if entry is None:
            instruction = self.instruction
            entry = StaticContent(
                instruction, cv.system_instructions, cv.system_instructions(instruction)
            )
            self.system_entry = entry
        return entry


def _config_parts(runtime: Runtime, config: Any) -> ConfigParts:
    """The config's ``ConfigParts``: remembered for a config that can be; for one that
    cannot (no deep copy), made afresh with the tool list and a system instruction string
    remembered on their own, as before the config was."""
    entry = runtime.static(config, ConfigParts)
    parts: ConfigParts = entry.value
    if entry.snapshot is None:  # not remembered: keep the per-field caches
        tools = get(config, "tools")
        if isinstance(tools, list):
            parts.tools = runtime.static(tools, cv.tool_definitions)
        instruction = get(config, "system_instruction")
        if isinstance(instruction, str) and instruction:
            parts.system_entry = runtime.static_text(instruction, cv.system_instructions)
    return parts


def _start(
    runtime: Runtime, resource: Any, kwargs: Mapping[str, Any], *, stream: bool
) -> ModelCallTelemetry:
    config = kwargs.get("config")
    address, port = server_of(resource)
    parts = _config_parts(runtime, config) if config is not None else None
    if parts is None:
        attributes: dict[str, AttributeValue] = {}
        tools: StaticContent | None = None
    else:
        attributes = dict(parts.attributes)  # the call adds to it: the shared one stays
        tools = parts.tools
    if stream:
        attributes[sc.GEN_AI_REQUEST_STREAM] = True
    offered = tools.value if tools is not None else None
    call = ModelCallTelemetry(
        runtime,
        sc.GenAiOperationNameValues.GENERATE_CONTENT,
        provider_of(resource),
        cv.model_name(kwargs.get("model")),
        attributes,
        server_address=address,
        server_port=port,
        offered_tools=offered,
    )
    if runtime.capture_any:  # nothing is recorded in NO_CONTENT: skip converting
        with runtime.guard:  # the span exists now: odd content must not orphan it
            messages = cv.input_messages(kwargs.get("contents"))
            system = parts.system() if parts is not None else None
            call.set_input(
                messages,
                runtime.encode_static_entry(system, call.stats) if system is not None else None,
                runtime.encode_static_entry(tools, call.stats)
                if tools is not None and offered
                else offered,
            )
    return call


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``generate_content {model}`` span of a ``generate_content`` call."""
    return _start(runtime, resource, kwargs, stream=False)


def start_stream(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the span of a ``generate_content_stream`` call."""
    return _start(runtime, resource, kwargs, stream=True)


def tool_calls_of(response: Any) -> list[PendingToolCall]:
    """The function calls the first candidate asks for; ``call_id`` is ``""`` where the API
    gave none (the Gemini API often does not; Vertex AI and newer models do)."""
    calls: list[PendingToolCall] = []
    candidates = get(response, "candidates") or ()
    for candidate in list(candidates)[:1]:
        for part in get(get(candidate, "content"), "parts") or ():
            fc = get(part, "function_call")
            call_id, name = get(fc, "id"), get(fc, "name")
            if isinstance(name, str):
                cid = call_id if isinstance(call_id, str) else ""
                calls.append(PendingToolCall(cid, name, to_jsonable(get(fc, "args"))))
    return calls


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a complete ``GenerateContentResponse``."""
    record(call, response, complete=True)


def requested_calls(response: Any, output: list[dict[str, Any]]) -> list[PendingToolCall]:
    """``tool_calls_of(response)``, taking each call's name, id and arguments from its
    ``tool_call`` part in ``output`` (``output_messages(response)``) where there is one:
    the arguments are converted once per call, not twice."""
    candidates = get(response, "candidates") or ()
    first = next(iter(candidates), None) if isinstance(candidates, (list, tuple)) else None
    raw = get(get(first, "content"), "parts") if first is not None else None
    converted = output[0]["parts"] if output else None
    if not isinstance(raw, list) or converted is None or len(raw) != len(converted):
        return tool_calls_of(response)  # not the shapes output_messages read part by part
    calls: list[PendingToolCall] = []
    for part, done in zip(raw, converted, strict=True):
        if get(part, "function_call") is None:
            continue
        if done["type"] != "tool_call":  # a part with text too: read as tool_calls_of does
            calls.extend(tool_calls_of({"candidates": [{"content": {"parts": [part]}}]}))
            continue
        name = done["name"]
        if isinstance(name, str):
            calls.append(PendingToolCall(done.get("id", ""), name, done["arguments"]))
    return calls


def record(call: ModelCallTelemetry, response: Any, *, complete: bool) -> None:
    """Record a response, complete or as far as a stream got (``complete`` False: the
    requested tool calls are not handed to the ledger, empty output is left out)."""
    usage = cv.usage_attributes(get(response, "usage_metadata"))
    extra: dict[str, AttributeValue] = {k: v for k, v in usage.items() if k not in _RESPONSE_KEYS}
    output = cv.output_messages(response)
    # one message per candidate, with its finish reason when it has one
    reasons = [m["finish_reason"] for m in output if "finish_reason" in m]
    rid, model = get(response, "response_id"), get(response, "model_version")
    in_tok = usage.get(sc.GEN_AI_USAGE_INPUT_TOKENS)
    out_tok = usage.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    call.set_response(
        response_id=rid if isinstance(rid, str) else None,
        response_model=model if isinstance(model, str) else None,
        finish_reasons=reasons or None,
        input_tokens=in_tok if isinstance(in_tok, int) else None,
        output_tokens=out_tok if isinstance(out_tok, int) else None,
        extra=extra,
    )
    if complete or any(m["parts"] for m in output):
        requested = requested_calls(response, output) if complete else []
        if complete:  # only a call with an id can be joined to its tool execution
            record_requested_tool_calls([c for c in requested if c.call_id], call.offered_tools)
        # every requested call keeps its ``tool_call`` part, even without content capture
        call.set_output(output, requested, record_tool_calls=False)


class ChunkAccumulator:
    """Folds stream chunks (each a partial ``GenerateContentResponse``) into one response:
    text parts of a candidate concatenated, function calls appended, the last finish
    reason, usage and ids kept."""

    __slots__ = ("candidates", "response", "started")

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.candidates: dict[int, dict[str, Any]] = {}
        self.started = False

    def add(self, chunk: Any) -> None:
        """Fold one chunk in."""
        self.started = True
        for key in ("response_id", "model_version", "usage_metadata"):
            value = get(chunk, key)
            if value is not None:
                self.response[key] = value
        for position, candidate in enumerate(get(chunk, "candidates") or ()):
            index = get(candidate, "index")
            slot = self.candidates.setdefault(
                index if isinstance(index, int) else position, {"content": {"parts": []}}
            )
            reason = get(candidate, "finish_reason")
            if reason is not None:
                slot["finish_reason"] = reason
            parts: list[Any] = slot["content"]["parts"]
            for part in get(get(candidate, "content"), "parts") or ():
                self._add_part(parts, part)

    @staticmethod
    def _add_part(parts: list[Any], part: Any) -> None:
        text = get(part, "text")
        if isinstance(text, str) and parts:
            last = parts[-1]
            if isinstance(last.get("text"), str) and bool(last.get("thought")) == bool(
                get(part, "thought")
            ):
                last["text"] += text
                return
        data = to_jsonable(part)
        parts.append(data if isinstance(data, dict) else {"text": str(data)})

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record the rebuilt response (nothing when no chunk arrived)."""
        if not self.started:
            return
        response = dict(self.response)
        response["candidates"] = [self.candidates[i] for i in sorted(self.candidates)]
        record(call, response, complete=complete)


GENERATE: Final = Endpoint(start, finish)
STREAM: Final = Endpoint(start_stream, finish, ChunkAccumulator)


SPEC: Final = ProviderSpec(
    name="gemini",
    sdk_module="google.genai",
    targets=(
        Target("google.genai.models", "Models", "AsyncModels", GENERATE, ("generate_content",)),
    ),
    # generate_content never returns a stream: the generator types never match its result
    stream_classes=("types.GeneratorType", "types.AsyncGeneratorType"),
    extension=lambda: GeneratorMethods(
        GeneratorMethod("google.genai.models", "Models", "generate_content_stream", STREAM, "sync"),
        GeneratorMethod(
            "google.genai.models", "AsyncModels", "generate_content_stream", STREAM, "awaitable"
        ),
    ),
    distribution="google-genai",
    supported=SUPPORTED,
)


class GeminiPatcher(ProviderPatcher):
    """The ``Patcher`` for the ``google-genai`` SDK (registered by name in ``_patcher``)."""

    def __init__(self) -> None:
        super().__init__(SPEC)


__all__ = ["SPEC", "SUPPORTED", "GeminiPatcher"]
