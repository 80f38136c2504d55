"""When decisions happen: the timer wakes at the earliest deadline, not on a fixed period."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.collector.collector_support import Sink, make_request, make_span, new_ids, post, wait_for
from tracejudge.collector import Collector


def test_decision_follows_the_deadline_not_the_tick(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Decision latency beyond the wait must not grow with the tick: with a 1 s tick and a
    0.1 s wait, back-to-back traces are each forwarded about 0.1 s after their root. A
    timer that slept a whole tick between batches made the second trace wait ~1 s."""
    c = collector_factory(decision_wait_after_root=0.1, decision_wait=5.0, tick=1.0)
    took = []
    for n in range(1, 4):
        trace_id, root_id = new_ids()
        start = time.monotonic()
        post(c.http_port, make_request([make_span(trace_id, root_id)]).SerializeToString())
        wait_for(lambda n=n: len(sink.spans()) == n, what=f"trace {n}")  # type: ignore[misc]
        took.append(time.monotonic() - start)
    assert all(0.09 <= t < 0.6 for t in took), took
