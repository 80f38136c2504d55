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

WAIT_S = 120.0
"""A condition polled until it holds (``wait_for``)."""

IO_S = 60.0
"""One request or connection to a server on this machine (a socket's or an RPC's timeout)."""

PROCESS_S = 900.0
"""A subprocess: a CLI command, an example, a collector starting or stopping, an install."""
