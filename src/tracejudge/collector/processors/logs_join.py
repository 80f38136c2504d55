"""The logs join on the decided edge: a decided trace's log records follow its decision.

The logs intake (``logs_intake.py``) holds the records of a trace being assembled with it;
once the decision stage has settled the trace, this processor has the intake forward them (and,
with ``--evaluation-logs``, one evaluation record per rule outcome) to the logs endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracejudge.collector.component import Consumer, Lifecycle
from tracejudge.collector.processors.decided import Context, Decided
from tracejudge.collector.processors.logs_intake import LogsIntake

__all__ = ["LogsJoin", "LogsJoinConfig", "LogsJoinFactory"]

KIND = "logs_join"


@dataclass(frozen=True, slots=True)
class LogsJoinConfig:
    """No settings of its own: what it forwards is the intake's (``forward_logs``,
    ``evaluation_logs``)."""


class LogsJoin:
    """Tells the logs intake of each decided trace, then hands the batch on."""

    kind = KIND

    def __init__(self, intake: LogsIntake, next: Consumer[Decided]) -> None:
        self.intake = intake
        self.next = next
        self.state = Lifecycle(KIND)

    def start(self) -> None:
        """Nothing to start: the intake's queue starts with the receivers' side."""
        self.state.start()

    def consume(self, batch: Decided) -> None:
        """Forward each trace's held log records (and evaluation records)."""
        self.state.check()
        decided = self.intake.decided
        for d in batch:
            decided(d.trace, d.verdicts)
        self.next.consume(batch)

    def shutdown(self) -> None:
        """Nothing to release (the collector flushes the logs queue with the others)."""
        self.state.shutdown()

    def snapshot(self) -> Mapping[str, Any]:
        """The ``logs`` entry of ``/metrics`` (the intake's counts and queue)."""
        return {"logs": self.intake.snapshot()}


class LogsJoinFactory:
    """Builds the logs join over the graph's logs intake."""

    kind = KIND

    def default_config(self) -> LogsJoinConfig:
        """No settings."""
        return LogsJoinConfig()

    def config_for(self, settings: Any) -> LogsJoinConfig:
        """No settings to read."""
        return self.default_config()

    def create(self, config: LogsJoinConfig, next: Consumer[Decided], context: Context) -> LogsJoin:
        """The join, handing batches to ``next``."""
        return LogsJoin(context.logs, next)
