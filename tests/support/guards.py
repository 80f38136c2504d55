"""Deadlock guards: how long a test waits for something that must happen before it calls
the wait hung.

They are not performance claims. On a shared machine (a load average of 20 or more on two
cores) a step that takes a tenth of a second alone can take many seconds, so every bound
here is wide; a test waits on an event (a condition, an answer, a process's exit) and
these only stop a test that would otherwise never end. Time the code under test reacts
to (decision waits, the judge's lag) is moved by hand with ``ManualClock``; a claim that
something is *not slow* compares against the same run's own measurement, or counts
events. ``tests/test_no_wall_clock_bounds.py`` keeps the tests to that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

WAIT_S = 120.0
"""A condition polled until it holds (``wait_for``)."""

IO_S = 60.0
"""One request or connection to a server on this machine (a socket's or an RPC's timeout)."""

PROCESS_S = 900.0
"""A subprocess: a CLI command, an example, a collector starting or stopping, an install."""

POLL_S = 0.02
"""The pause between two looks at a condition (``eventually``): how soon a wait notices."""


def eventually(attempt: Callable[[], T | None], what: str, timeout: float = WAIT_S) -> T:
    """Call ``attempt`` until it returns something other than None, and return that; fail
    with ``what`` once ``timeout`` (a deadlock guard) has passed. The one poll loop of the
    tests: the one place a test reads the wall clock to stop waiting."""
    end = time.monotonic() + timeout
    while True:
        got = attempt()
        if got is not None:
            return got
        if time.monotonic() >= end:
            raise AssertionError(f"timed out waiting for {what} (a {timeout:g}s deadlock guard)")
        time.sleep(POLL_S)


def wait_for(cond: Callable[[], object], timeout: float = WAIT_S, what: str = "condition") -> None:
    """Poll until ``cond()`` is true or fail with ``what`` (``timeout``: a deadlock guard,
    never a claim about speed)."""
    eventually(lambda: True if cond() else None, what, timeout)


async def until(cond: Callable[[], object], what: str, timeout: float = WAIT_S) -> None:
    """``wait_for`` inside a coroutine: the loop keeps running while the condition is
    polled."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= end:
            raise AssertionError(f"timed out waiting for {what} (a {timeout:g}s deadlock guard)")
        await asyncio.sleep(POLL_S)
