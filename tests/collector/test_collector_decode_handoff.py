"""Where the receivers decode a body: on the event loop up to ``INLINE_DECODE_BYTES``,
on a decoding thread above it (a large request must not hold the loop; a small one must
not pay the thread's hand-over, which costs more than decoding it)."""

from __future__ import annotations

import asyncio
import threading

from tracejudge.collector.receivers.http_receiver import INLINE_DECODE_BYTES, decode


def _decoded_on(size: int) -> tuple[str, bool]:
    """(what ``decode`` returned, whether it ran on the loop's thread) for a body of ``size``."""
    seen: list[int] = []

    def fn(arg: str) -> str:
        seen.append(threading.get_ident())
        return arg.upper()

    async def run() -> tuple[str, int]:
        return await decode(fn, "body", size), threading.get_ident()

    out, loop_thread = asyncio.run(run())
    assert len(seen) == 1
    return out, seen[0] == loop_thread


def test_bodies_up_to_the_limit_are_decoded_on_the_loop() -> None:
    assert _decoded_on(0) == ("BODY", True)
    assert _decoded_on(82 * 1024) == ("BODY", True)  # the collector benchmark's requests
    assert _decoded_on(INLINE_DECODE_BYTES) == ("BODY", True)


def test_larger_bodies_are_decoded_on_a_thread() -> None:
    assert _decoded_on(INLINE_DECODE_BYTES + 1) == ("BODY", False)
    assert _decoded_on(4 * 1024 * 1024) == ("BODY", False)
