"""The graders on the decided edge: grader rules after the verdict (``graders.py``).

Once the decision stage has settled a chunk of traces (their payloads enqueued, so grading never
holds a deterministic verdict), this processor hands each trace to the ``GraderStage``,
whose threads grade the runs its graders pick; their outcomes go out as evaluation records
through the logs intake. With no grader rules it only hands batches on (and ``/metrics``
``graders`` is null).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracejudge.collector.component import Consumer, Lifecycle
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.grader_spans import GraderSpans
from tracejudge.collector.exporters.targets import OUTPUT_NAME
from tracejudge.collector.processors.decided import Context, Decided
from tracejudge.collector.processors.graders import GraderStage

log = logging.getLogger("tracejudge.collector")

__all__ = ["Grading", "GradingConfig", "GradingFactory"]

KIND = "graders"


@dataclass(frozen=True, slots=True)
class GradingConfig:
    """The graders' budgets (``grader_*`` keys; see ``graders.py``)."""

    max_concurrent: int
    calls_per_minute: int
    tokens_per_minute: int
    run_deadline: float
    traces: bool
    """``grader_traces``: each model call a span, to the forward targets (not ``output``)."""
    max_queue_bytes: int
    """What the calls' spans may add to a forward queue."""


class Grading:
    """Hands each settled trace to the grader stage (if any), then the batch on."""

    kind = KIND

    def __init__(self, stage: GraderStage | None, next: Consumer[Decided]) -> None:
        self.stage = stage
        """The grader threads (None: the rules file has no graders)."""
        self.next = next
        self.state = Lifecycle(KIND)

    def start(self) -> None:
        """The threads start with the first run to grade."""
        self.state.start()

    def consume(self, batch: Decided) -> None:
        """Grade the batch's runs (on the grader threads), then hand the batch on."""
        self.state.check()
        stage = self.stage
        if stage is not None:
            for d in batch:
                stage.decided(d.trace, d.verdicts)
        self.next.consume(batch)

    def shutdown(self) -> None:
        """Runs still waiting are ``not_evaluated`` (``shutdown``), sent now."""
        if self.state.shutdown() and self.stage is not None:
            self.stage.close()

    def snapshot(self) -> Mapping[str, Any]:
        """The ``graders`` entry of ``/metrics`` (null without graders)."""
        return {"graders": self.stage.snapshot() if self.stage is not None else None}


class GradingFactory:
    """Builds the graders processor (on the running loop: the calls' spans are sent from it)."""

    kind = KIND

    def default_config(self) -> GradingConfig:
        """The defaults of the ``grader_*`` keys (``CollectorConfig``'s)."""
        return self.config_for(CollectorConfig())

    def config_for(self, settings: CollectorConfig) -> GradingConfig:
        """The collector's ``grader_*`` keys."""
        return GradingConfig(
            max_concurrent=settings.grader_max_concurrent,
            calls_per_minute=settings.grader_calls_per_minute,
            tokens_per_minute=settings.grader_tokens_per_minute,
            run_deadline=settings.grader_run_deadline,
            traces=settings.grader_traces,
            max_queue_bytes=settings.max_queue_bytes,
        )

    def create(self, config: GradingConfig, next: Consumer[Decided], context: Context) -> Grading:
        """The processor over ``context``'s grader rules: outcomes to the logs intake's
        evaluation records, verdicts scrubbed by the collector's scrubber, the calls' spans
        to the forward queues (not ``output``) when ``traces`` is on."""
        if not context.grader_rules:
            return Grading(None, next)
        spans = None
        if config.traces:
            forward = [q for q in context.queues if q.name != OUTPUT_NAME]
            spans = GraderSpans(
                forward, config.max_queue_bytes, context.scrubber, asyncio.get_running_loop()
            )
        logs = context.logs
        if logs.queue is None:
            log.warning("grader outcomes go to forward_logs; without it they are counted only")
        stage = GraderStage(
            context.grader_rules,
            context.clock,
            logs.evaluations,
            context.scrubber.verdict,
            config.max_concurrent,
            config.calls_per_minute,
            config.tokens_per_minute,
            spans,
            config.run_deadline,
        )
        return Grading(stage, next)
