"""The decided edge: what the decision stage hands on once a chunk of traces is settled.

After the decision stage has judged, stamped and enqueued a chunk of traces (their payloads are in
the forward queues, their verdict records in the sinks), it hands the chunk on as one
``Decided`` batch to the chain of processors built from ``processors/registry.py``: the logs
join (a trace's held log records and evaluation records) and the graders. ``Context`` is what
the graph shares with the processors it builds on this edge (``component.ProcessorFactory``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.collector.clock import Clock
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.logs_intake import LogsIntake
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict
from tracejudge.graders.apply import GraderRule

__all__ = ["Context", "Decided", "DecidedTrace"]


@dataclass(frozen=True, slots=True)
class DecidedTrace:
    """One settled trace (a conversation's traces as one) and its scrubbed verdicts."""

    trace: PendingTrace
    verdicts: Sequence[Verdict]


Decided = tuple[DecidedTrace, ...]
"""The batch of the decided edge: the traces one chunk settled, in deadline order."""


@dataclass(frozen=True, slots=True)
class Context:
    """What the processors of the decided edge are built with, besides their config."""

    clock: Clock
    stats: Stats
    scrubber: Scrubber
    """The collector's one scrubber (verdicts, log lines, backend answers)."""
    queues: Sequence[TargetQueue]
    """The forward queues (the graders' own spans go there)."""
    logs: LogsIntake
    """The logs side: log records held with their traces, the logs queue."""
    grader_rules: Sequence[GraderRule] = ()
    """The rules file's graders, ready (none: the graders processor passes batches on)."""
