"""One (provider, configuration) of the instrumentation benchmark, in its own process.

Instrumentors patch the SDKs globally and cannot all be undone cleanly, so every
configuration runs in a fresh interpreter; ``bench_instrumentation.py`` runs them side by
side and interleaves repeats so machine noise hits all of them alike.

The call, its client and the peers of each provider are in ``_instr_cases.py``: OpenAI's SDK
talks to an in-process mock transport, the others to the loopback replay server of the tests,
so the figure is the SDK + instrumentation cost, not network.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from _harness import discard_provider
from _instr_cases import CASES, OPENAI_MESSAGES, OPENAI_TOOLS, Case, replay_server


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
            s.set_attribute("gen_ai.input.messages", json.dumps(OPENAI_MESSAGES))
            s.set_attribute("gen_ai.tool.definitions", json.dumps(OPENAI_TOOLS))
            r = client.chat.completions.create(
                model="gpt-4o-mini", messages=OPENAI_MESSAGES, tools=OPENAI_TOOLS
            )
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


def _snapshot(modules: tuple[str, ...]) -> dict[tuple[Any, str], Any]:
    """Every attribute of the SDK's modules (``modules``: top-level names) and of the
    classes they define."""
    out: dict[tuple[Any, str], Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not any(name == m or name.startswith(m + ".") for m in modules):
            continue
        for attr, value in list(vars(module).items()):
            out[(module, attr)] = value
            if isinstance(value, type) and value.__module__ == name:
                for cattr, cvalue in list(vars(value).items()):
                    out[(value, cattr)] = cvalue
    return out


def _patch_toggle(case: Case, instrument: Callable[[], None], state: dict[str, Any]) -> Toggle:
    """Instrument once, then switch by putting the SDK attributes it replaced back and
    forth. Why not ``uninstrument()``: OpenLLMetry's does not undo everything (calls
    got 3x slower and re-instrumenting stacked its wrappers: 3.5 spans per call); the
    same switch for every configuration keeps the comparison fair.

    The switch also swaps the client: "on" calls through one made after instrumenting,
    "off" through the one made before. Some instrumentors patch a client when it is made
    (the Bedrock peers wrap botocore's client creation), and botocore builds each client's
    class at run time, out of reach of the attribute switch."""
    before = _snapshot(case.modules)
    instrument()
    after = _snapshot(case.modules)
    on_client = case.client(state["origin"])
    off_client = state["client"]
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
        state["client"] = on_client if on else off_client

    names = sorted({f"{getattr(o, '__name__', o)}.{a}" for (o, a), _, _ in changed})
    print(f"# switched: {' '.join(names)}", file=sys.stderr)
    return Toggle(lambda: switch(True), lambda: switch(False))


def _toggle(case: Case, config: str, provider: Any, state: dict[str, Any]) -> Toggle:
    """How to switch ``config`` on and off inside this process (the SDK is imported: the
    client was made before, as an application would)."""
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
            case,
            lambda: tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY"),
            state,
        )
    if config not in case.peers:
        raise SystemExit(f"unknown config {config}")
    module, name, kwargs = case.peers[config]
    instrumentor = getattr(importlib.import_module(module), name)()
    return _patch_toggle(
        case, lambda: instrumentor.instrument(tracer_provider=provider, **kwargs), state
    )


def _block(one: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Wall-clock and process CPU microseconds per call over ``calls`` calls."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        one()
    return (
        (time.perf_counter() - start) / calls * 1e6,
        (time.process_time() - cpu) / calls * 1e6,
    )


def _carries_content(span: Any, prompt: str) -> bool:
    """Whether ``span`` holds the request's text: in an attribute or an event's."""
    if span is None:
        return False
    places = [dict(span.attributes or {}), *(dict(e.attributes or {}) for e in span.events)]
    return prompt in json.dumps(places, default=str)


def main() -> None:
    """``_instr_worker.py PROVIDER/CONFIG CALLS [BLOCK]``: CALLS measured calls per state."""
    label, calls = sys.argv[1], int(sys.argv[2])
    block = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    name, _, config = label.rpartition("/")
    case = CASES[name or "openai"]
    provider = discard_provider()
    server = replay_server(case)
    state: dict[str, Any] = {"wrapper": None, "origin": server.origin if server else None}
    state["client"] = case.client(state["origin"])
    # One plain call first, as an application would: the SDK loads its resource
    # modules lazily, and the switch below only covers what existed before patching.
    case.call(state["client"])
    toggle = _toggle(case, config, provider, state)

    def one() -> Any:
        wrapper = state["wrapper"]
        if wrapper is not None:
            return wrapper(state["client"])
        return case.call(state["client"])

    for switch in (toggle.on, toggle.off):
        switch()
        for _ in range(min(200, calls // 4)):
            one()
    on_us: list[float] = []
    off_us: list[float] = []
    on_cpu: list[float] = []
    off_cpu: list[float] = []
    on_spans = 0
    for i in range(max(1, calls // block)):
        # ABBA order: a slow drift of the machine hits both halves alike.
        for instrumented in (False, True) if i % 2 == 0 else (True, False):
            (toggle.on if instrumented else toggle.off)()
            before = provider.discard.count
            us, cpu = _block(one, block)
            if instrumented:
                on_us.append(us)
                on_cpu.append(cpu)
                on_spans += provider.discard.count - before
            else:
                off_us.append(us)
                off_cpu.append(cpu)
    diffs = [a - b for a, b in zip(on_us, off_us, strict=True)]
    cpu_diffs = [a - b for a, b in zip(on_cpu, off_cpu, strict=True)]
    if server is not None:
        server.stop()
        if server.unmatched:
            raise SystemExit(f"{label}: requests with no recording: {server.unmatched[:1]}")
    print(
        json.dumps(
            {
                "config": label,
                "bare_us": statistics.median(off_us),
                "us_per_call": statistics.median(on_us),
                "overhead_us": statistics.median(diffs),
                "cpu_overhead_us": statistics.median(cpu_diffs),
                "spans": on_spans / (len(on_us) * block),
                "content": float(_carries_content(provider.discard.last, case.prompt)),
            }
        )
    )


if __name__ == "__main__":
    main()
