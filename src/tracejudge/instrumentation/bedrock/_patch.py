"""The boto3 ``bedrock-runtime`` patch: ``converse`` and ``converse_stream`` as GenAI spans.

Why the one choke point ``botocore.client.BaseClient._make_api_call``: botocore builds each
client's class at run time (``client.converse`` exists only on the instance's generated
class), so there is no SDK method to wrap before a client is made. Every client method
goes through ``_make_api_call(operation_name, api_params)``; the wrapper passes anything
that is not a Bedrock Runtime Converse call straight through after one dictionary lookup
and one string comparison. The rest is the provider template's: the span starts with the
request's attributes and is current while botocore sends (its HTTP span nests under
ours), a response is recorded, an error fails the span, and a ``converse_stream``
``EventStream`` is observed by the one ``StreamObserver`` until it ends however it ends.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._context import PendingToolCall
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._patcher import MethodPatches
from tracejudge.instrumentation._provider import (
    Endpoint,
    ProviderPatcher,
    ProviderSpec,
    begin,
    failed,
    live_runtime,
    watch,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._shapes import get, url_server
from tracejudge.instrumentation.bedrock import _convert as cv

SUPPORTED: Final = SupportedVersions("1.34.162", "2")
"""botocore releases tracejudge is tested on (boto3 of the same version): 1.34.162, the last
1.34 (Converse and ConverseStream with guardrails), to 1.x (see docs/instrumentation.md)."""

SERVICE: Final = "bedrock-runtime"


def server_of(client: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` of the client's endpoint URL."""
    return url_server(getattr(getattr(client, "meta", None), "endpoint_url", None))


def _start(
    runtime: Runtime, client: Any, params: Mapping[str, Any], *, stream: bool
) -> ModelCallTelemetry:
    address, port = server_of(client)
    model = params.get("modelId")
    # the same toolConfig on every call: converted (and encoded) once, see ``static``
    entry = runtime.static(params.get("toolConfig"), cv.tool_definitions)
    tools = entry.value
    call = ModelCallTelemetry(
        runtime,
        sc.GenAiOperationNameValues.CHAT,
        sc.GenAiProviderNameValues.AWS_BEDROCK,
        model if isinstance(model, str) and model else None,
        cv.request_attributes(params, stream=stream),
        server_address=address,
        server_port=port,
        offered_tools=tools or None,
    )
    if runtime.capture_any:
        with runtime.guard:  # the span exists now: odd content must not orphan it
            call.set_input(
                cv.input_messages(params.get("messages")),
                cv.system_instructions(params.get("system")),
                runtime.encode_static_entry(entry, call.stats) if tools else None,
            )
    return call


def start(runtime: Runtime, client: Any, params: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {modelId}`` span of a ``converse`` call."""
    return _start(runtime, client, params, stream=False)


def start_stream(runtime: Runtime, client: Any, params: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the span of a ``converse_stream`` call."""
    return _start(runtime, client, params, stream=True)


def tool_calls_of(response: Any) -> list[PendingToolCall]:
    """The ``toolUse`` blocks of the response's message, for the tool-call ledger."""
    calls: list[PendingToolCall] = []
    for block in get(get(get(response, "output"), "message"), "content") or ():
        use = get(block, "toolUse")
        call_id, name = get(use, "toolUseId"), get(use, "name")
        if isinstance(call_id, str) and isinstance(name, str):
            calls.append(PendingToolCall(call_id, name, to_jsonable(get(use, "input"))))
    return calls


def requested_calls(response: Any, output: list[dict[str, Any]]) -> list[PendingToolCall]:
    """``tool_calls_of(response)``, taking each call's id, name and arguments from its
    ``tool_call`` part in ``output`` (``output_messages(response)``): the arguments are
    converted once per call, not twice."""
    blocks = get(get(get(response, "output"), "message"), "content")
    parts = output[0]["parts"]
    if not isinstance(blocks, list) or len(blocks) != len(parts):
        return tool_calls_of(response)  # not the shapes output_messages read block by block
    calls: list[PendingToolCall] = []
    for block, part in zip(blocks, parts, strict=True):
        use = block.get("toolUse") if type(block) is dict else get(block, "toolUse")
        if use is None:
            continue
        if part["type"] != "tool_call":  # a block with text too: read as tool_calls_of does
            calls.extend(tool_calls_of({"output": {"message": {"content": [block]}}}))
            continue
        call_id, name = part.get("id"), part["name"]
        if isinstance(call_id, str) and isinstance(name, str):
            calls.append(PendingToolCall(call_id, name, part["arguments"]))
    return calls


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a complete Converse response."""
    record(call, response, complete=True)


def record(call: ModelCallTelemetry, response: Any, *, complete: bool) -> None:
    """Record a response, complete or as far as a stream got."""
    in_tok, out_tok, extra = cv.usage_counts(get(response, "usage"))
    reason = cv.finish_reason(get(response, "stopReason"))
    call.set_response(
        finish_reasons=(reason,) if reason is not None else None,
        input_tokens=in_tok,
        output_tokens=out_tok,
        extra=extra,
    )
    output = cv.output_messages(response)
    if complete or output[0]["parts"]:
        call.set_output(
            output,
            requested_calls(response, output) if complete else (),
            record_tool_calls=complete,
        )


class EventAccumulator:
    """Folds ConverseStream events (``messageStart``, ``contentBlockStart``/``Delta``/
    ``Stop``, ``messageStop``, ``metadata``) back into a Converse response."""

    __slots__ = ("_json", "blocks", "response", "started")

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}
        self.started = False

    def add(self, event: Any) -> None:
        """Fold one event in (unknown events carry nothing the conventions record)."""
        self.started = True
        if not isinstance(event, Mapping):
            return
        if "contentBlockDelta" in event:
            self._delta(event["contentBlockDelta"])
        elif "contentBlockStart" in event:
            body = event["contentBlockStart"]
            use = get(get(body, "start"), "toolUse")
            if use is not None:
                block = {"toolUse": {"toolUseId": get(use, "toolUseId"), "name": get(use, "name")}}
                self.blocks[self._index(body)] = block
        elif "contentBlockStop" in event:
            self._stop(self._index(event["contentBlockStop"]))
        elif "messageStart" in event:
            self.response["role"] = get(event["messageStart"], "role")
        elif "messageStop" in event:
            self.response["stopReason"] = get(event["messageStop"], "stopReason")
        elif "metadata" in event:
            usage = get(event["metadata"], "usage")
            if usage is not None:
                self.response["usage"] = usage

    def _index(self, body: Any) -> int:
        index = get(body, "contentBlockIndex")
        return index if isinstance(index, int) else len(self.blocks)

    def _delta(self, body: Any) -> None:
        index = self._index(body)
        delta = get(body, "delta")
        text = get(delta, "text")
        if isinstance(text, str):
            block = self.blocks.setdefault(index, {"text": ""})
            block["text"] = str(block.get("text", "")) + text
            return
        use = get(delta, "toolUse")
        if use is not None:
            self.blocks.setdefault(index, {"toolUse": {}})
            self._json[index] = self._json.get(index, "") + str(get(use, "input") or "")
            return
        reasoning = get(get(delta, "reasoningContent"), "text")
        if isinstance(reasoning, str):
            block = self.blocks.setdefault(index, {"reasoningContent": {"reasoningText": {}}})
            inner = block["reasoningContent"]["reasoningText"]
            inner["text"] = str(inner.get("text", "")) + reasoning

    def _stop(self, index: int) -> None:
        raw = self._json.pop(index, None)
        block = self.blocks.get(index)
        if raw is None or block is None or "toolUse" not in block:
            return
        try:
            block["toolUse"]["input"] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            block["toolUse"]["input"] = raw  # keep what the model sent rather than drop it

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record the rebuilt response: complete when ``messageStop`` arrived."""
        if not self.started:
            return
        for index in list(self._json):
            self._stop(index)
        response = {
            **{k: v for k, v in self.response.items() if k != "role"},
            "output": {
                "message": {
                    "role": self.response.get("role") or "assistant",
                    "content": [self.blocks[i] for i in sorted(self.blocks)],
                }
            },
        }
        record(call, response, complete=complete and "stopReason" in self.response)


CONVERSE: Final = Endpoint(start, finish)
CONVERSE_STREAM: Final = Endpoint(start_stream, finish, EventAccumulator)
_ENDPOINTS: Final[Mapping[str, Endpoint]] = {
    "Converse": CONVERSE,
    "ConverseStream": CONVERSE_STREAM,
}


def _service(client: Any) -> Any:
    return getattr(
        getattr(getattr(client, "meta", None), "service_model", None), "service_name", None
    )


def _settle(
    runtime: Runtime, spec: ProviderSpec, endpoint: Endpoint, call: ModelCallTelemetry, result: Any
) -> None:
    try:
        if endpoint is CONVERSE_STREAM:
            stream = get(result, "stream")
            if stream is None:
                call.end()
            else:
                watch(runtime, spec, endpoint, call, stream, is_async=False)
            return
        endpoint.finish(call, result)
        call.end()
    except Exception as exc:
        runtime.internal_error(exc)
        if not call.ended:
            call.end()
        if runtime.raise_internal_errors:
            raise


def _wrap_api_call(runtime: Runtime, spec: ProviderSpec) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        @functools.wraps(original)
        def _make_api_call(self: Any, operation_name: Any, api_params: Any) -> Any:
            endpoint = _ENDPOINTS.get(operation_name) if isinstance(operation_name, str) else None
            if endpoint is None or _service(self) != SERVICE:
                return original(self, operation_name, api_params)
            rt = live_runtime(runtime)
            params = (
                api_params if type(api_params) is dict or isinstance(api_params, Mapping) else {}
            )
            call = begin(rt, endpoint, self, params) if rt is not None else None
            if call is None or rt is None:
                return original(self, operation_name, api_params)
            try:
                result = original(self, operation_name, api_params)
            except BaseException as exc:
                call.deactivate()
                failed(rt, call, exc)
                raise
            call.deactivate()
            _settle(rt, spec, endpoint, call, result)
            return result

        return _make_api_call

    return make


class _ApiCall:
    """Wraps ``BaseClient._make_api_call`` (see the module docstring)."""

    def install(self, runtime: Runtime, patches: MethodPatches, spec: ProviderSpec) -> None:
        from botocore.client import BaseClient

        patches.patch_method(BaseClient, "_make_api_call", _wrap_api_call(runtime, spec))

    def uninstall(self) -> None:
        """Nothing beyond the recorded method patch."""


SPEC: Final = ProviderSpec(
    name="bedrock",
    sdk_module="botocore",
    targets=(),
    stream_classes=("botocore.eventstream.EventStream", "botocore.eventstream.EventStream"),
    extension=_ApiCall,
    distribution="botocore",
    supported=SUPPORTED,
)


class BedrockPatcher(ProviderPatcher):
    """The ``Patcher`` for boto3/botocore's ``bedrock-runtime`` client."""

    def __init__(self) -> None:
        super().__init__(SPEC)


__all__ = ["SPEC", "SUPPORTED", "BedrockPatcher"]
