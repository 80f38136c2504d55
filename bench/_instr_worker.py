"""One configuration of the instrumentation benchmark, in its own process.

Instrumentors patch the OpenAI SDK globally and cannot all be undone cleanly, so every
configuration runs in a fresh interpreter; ``bench_instrumentation.py`` runs them side by
side and interleaves repeats so machine noise hits all of them alike.

The SDK talks to an in-process ``httpx2.MockTransport`` that returns a recorded-shape chat
completion with a tool call, so the figure is the SDK + instrumentation cost, not network.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from _harness import discard_provider

RESPONSE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
}
BODY = json.dumps(RESPONSE).encode()
MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Please refund my duplicate charge on order A-1."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _client() -> Any:
    import httpx2
    import openai

    def handler(request: Any) -> Any:
        return httpx2.Response(200, content=BODY, headers={"content-type": "application/json"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http)


class Toggle:
    """Switches one configuration's instrumentation on and off inside this process."""

    def __init__(self, on: Callable[[], None], off: Callable[[], None]) -> None:
        self.on, self.off = on, off


def _floor_call(provider: Any) -> Callable[[Any], Any]:
    """One bare SDK span carrying the attributes tracejudge's chat span carries, content
    included (serialized with ``json.dumps``: what hand-written telemetry would do)."""
    from opentelemetry import trace

    tracer = provider.get_tracer("bench.floor")
    start_attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "openai.api.type": "chat_completions",
        "server.address": "bench.invalid",
        "server.port": 80,
    }

    def call(client: Any) -> Any:
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", kind=trace.SpanKind.CLIENT, attributes=start_attrs
        ) as s:
            s.set_attribute("gen_ai.input.messages", json.dumps(MESSAGES))
            s.set_attribute("gen_ai.tool.definitions", json.dumps(TOOLS))
            r = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS)
            choice = r.choices[0]
            calls = [
                {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                for tc in choice.message.tool_calls or ()
            ]
            output = json.dumps([{"role": "assistant", "tool_calls": calls}])
            s.set_attributes(
                {
                    "gen_ai.response.id": r.id,
                    "gen_ai.response.model": r.model,
                    "gen_ai.response.finish_reasons": (choice.finish_reason,),
                    "gen_ai.usage.input_tokens": r.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": r.usage.completion_tokens,
                    "gen_ai.output.messages": output,
                }
            )
            return r

    return call


_MISSING = object()


def _snapshot() -> dict[tuple[Any, str], Any]:
    """Every attribute of the ``openai`` modules and of the classes they define."""
    out: dict[tuple[Any, str], Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "openai" or name.startswith("openai.")):
            continue
        for attr, value in list(vars(module).items()):
            out[(module, attr)] = value
            if isinstance(value, type) and value.__module__ == name:
                for cattr, cvalue in list(vars(value).items()):
                    out[(value, cattr)] = cvalue
    return out


def _patch_toggle(instrument: Callable[[], None]) -> Toggle:
    """Instrument once, then switch by putting the SDK attributes it replaced back and
    forth. Why not ``uninstrument()``: OpenLLMetry's does not undo everything (calls
    got 3x slower and re-instrumenting stacked its wrappers: 3.5 spans per call); the
    same switch for every configuration keeps the comparison fair."""
    before = _snapshot()
    instrument()
    after = _snapshot()
    owners = {id(owner) for owner, _ in before}
    changed = [
        (key, before.get(key, _MISSING), value)
        for key, value in after.items()
        if id(key[0]) in owners  # modules imported by instrument() itself are left alone
        and not (key[1].startswith("__") and key[1].endswith("__"))  # pydantic's caches
        and not isinstance(value, types.ModuleType)  # a submodule imported meanwhile
        and before.get(key, _MISSING) is not value
    ]

    def switch(on: bool) -> None:
        for (owner, attr), off_value, on_value in changed:
            value = on_value if on else off_value
            if value is _MISSING:
                if attr in vars(owner):
                    delattr(owner, attr)
            else:
                setattr(owner, attr, value)

    names = sorted({f"{getattr(o, '__name__', o)}.{a}" for (o, a), _, _ in changed})
    print(f"# switched: {' '.join(names)}", file=sys.stderr)
    return Toggle(lambda: switch(True), lambda: switch(False))


def _toggle(config: str, provider: Any, state: dict[str, Any]) -> Toggle:
    """How to switch ``config`` on and off inside this process."""
    import openai  # noqa: F401 - imported before the snapshot, as an application would
    from opentelemetry import trace

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    trace.set_tracer_provider(provider)
    if config == "floor":
        floor = _floor_call(provider)

        def floor_on() -> None:
            state["wrapper"] = floor

        return Toggle(floor_on, lambda: state.update(wrapper=None))
    if config == "bare":
        # Both halves identical: the row measures the method's own noise.
        return Toggle(lambda: None, lambda: None)
    if config == "tracejudge":
        import tracejudge

        return _patch_toggle(
            lambda: tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
        )
    instrumentor: Any
    if config == "otel-genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        instrumentor = OpenAIInstrumentor()
    elif config == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LLMetry

        instrumentor = LLMetry()
    elif config == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OI

        instrumentor = OI()
    else:
        raise SystemExit(f"unknown config {config}")
    return _patch_toggle(lambda: instrumentor.instrument(tracer_provider=provider))


def _block(one: Callable[[], Any], calls: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(calls):
        one()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    """``_instr_worker.py CONFIG CALLS [BLOCK]``: CALLS measured calls per state."""
    config, calls = sys.argv[1], int(sys.argv[2])
    block = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    provider = discard_provider()
    state: dict[str, Any] = {"wrapper": None}
    client = _client()
    # One plain call first, as an application would: the SDK loads its resource
    # modules lazily, and the switch below only covers what existed before patching.
    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS)
    toggle = _toggle(config, provider, state)

    def one() -> Any:
        wrapper = state["wrapper"]
        if wrapper is not None:
            return wrapper(client)
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS)

    for switch in (toggle.on, toggle.off):
        switch()
        for _ in range(200):
            one()
    on_us: list[float] = []
    off_us: list[float] = []
    on_spans = 0
    for i in range(max(1, calls // block)):
        # ABBA order: a slow drift of the machine hits both halves alike.
        for instrumented in (False, True) if i % 2 == 0 else (True, False):
            (toggle.on if instrumented else toggle.off)()
            before = provider.discard.count
            us = _block(one, block)
            if instrumented:
                on_us.append(us)
                on_spans += provider.discard.count - before
            else:
                off_us.append(us)
    diffs = [a - b for a, b in zip(on_us, off_us, strict=True)]
    print(
        json.dumps(
            {
                "config": config,
                "bare_us": statistics.median(off_us),
                "us_per_call": statistics.median(on_us),
                "overhead_us": statistics.median(diffs),
                "spans": on_spans / (len(on_us) * block),
            }
        )
    )


if __name__ == "__main__":
    main()
