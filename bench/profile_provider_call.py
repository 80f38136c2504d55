"""tracejudge's own per-call work on one provider, apart from the SDK and the network: CPU
time of the span's start and finish (``begin`` + the endpoint's ``finish`` + ``end``) on the
request and response the benchmark's call (``bench/_instr_cases.py``) made, in a loop.

Why: the instrumentation benchmark's overhead is a difference of two noisy SDK calls; this
times only what tracejudge adds, so a change to it shows apart from the machine's noise.
Compare two trees by running it with each one's ``src`` on ``PYTHONPATH``, one after the
other (or alternately); ``--profile`` prints cProfile's table instead.

Run: ``PYTHONPATH=src .venv-bench/bin/python bench/profile_provider_call.py gemini``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from typing import Any

from _harness import discard_provider
from _instr_cases import CASES, replay_server


def captured(name: str) -> tuple[Any, Any, Any, dict[str, Any], Any]:
    """(runtime, endpoint, SDK resource, call kwargs, response) of one traced call."""
    import tracejudge
    import tracejudge.instrumentation._provider as provider_mod
    import tracejudge.instrumentation.bedrock._patch as bedrock_mod

    case = CASES[name]
    provider = discard_provider()
    server = replay_server(case)
    client = case.client(server.origin if server else None)
    case.call(client)
    tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
    seen: dict[str, Any] = {}
    begin = provider_mod.begin

    def spy(runtime: Any, endpoint: Any, resource: Any, kwargs: Any) -> Any:
        seen.update(runtime=runtime, endpoint=endpoint, resource=resource, kwargs=dict(kwargs))
        finish = endpoint.finish

        def keep(call: Any, response: Any) -> None:
            seen["response"] = response
            endpoint.finish = finish
            finish(call, response)

        endpoint.finish = keep
        return begin(runtime, endpoint, resource, kwargs)

    provider_mod.begin = bedrock_mod.begin = spy
    try:
        case.call(client)
    finally:
        provider_mod.begin = bedrock_mod.begin = begin
        if server is not None:
            server.stop()
    return seen["runtime"], seen["endpoint"], seen["resource"], seen["kwargs"], seen["response"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("provider", choices=sorted(CASES))
    parser.add_argument("--calls", type=int, default=2000, help="calls per repetition")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="print cProfile's table")
    args = parser.parse_args()
    from tracejudge.instrumentation._provider import begin

    runtime, endpoint, resource, kwargs, response = captured(args.provider)

    def one() -> None:
        call = begin(runtime, endpoint, resource, kwargs)
        assert call is not None
        call.deactivate()
        endpoint.finish(call, response)
        call.end()

    for _ in range(500):
        one()
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            one()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return
    runs = []
    for _ in range(args.repeat):
        start = time.process_time()
        for _ in range(args.calls):
            one()
        runs.append((time.process_time() - start) / args.calls * 1e6)
    print(
        f"{args.provider}: CPU us per call, min {min(runs):.1f} "
        f"median {statistics.median(runs):.1f} ({args.repeat} x {args.calls} calls)"
    )


if __name__ == "__main__":
    main()
