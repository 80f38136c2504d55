"""The processors ``serve`` chains on the decided edge, in their declared order.

Adding a processor is one module (the processor and its ``ProcessorFactory``, as
``logs_join.py``) and one line in ``PROCESSORS``: the line's place is the processor's place
in the chain. A registry is a value, not global state:
``Collector(config, processors=PROCESSORS.with_factory(MyFactory(), after="logs_join"))``
runs with another chain.
"""

from __future__ import annotations

from tracejudge.collector.component import ProcessorRegistry
from tracejudge.collector.processors.decided import Context, Decided
from tracejudge.collector.processors.grading import GradingFactory
from tracejudge.collector.processors.logs_join import LogsJoinFactory

__all__ = ["PROCESSORS", "DecidedRegistry"]

DecidedRegistry = ProcessorRegistry[Decided, Context]
"""The processor kinds of the decided edge."""

PROCESSORS: DecidedRegistry = ProcessorRegistry(
    (
        LogsJoinFactory(),
        GradingFactory(),
    )
)
"""What ``tracejudge serve`` does with settled traces, in order: one line per kind."""
