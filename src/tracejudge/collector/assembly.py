"""The collector's stages built from config: the forward queues, the verdict sinks, and the
pipeline with the stages around it (shadow pairing, the logs intake, the graders).

``Collector.start`` opens what touches the outside (the disk queue, the exporters, the
dead-letter file), builds the stages here, then starts them and the listeners.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.collector.clock import Clock
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.dead_letter import DeadLetterFile
from tracejudge.collector.exporters.forward import ForwardTarget, TargetQueue
from tracejudge.collector.exporters.sinks import JsonlSink, TextSink, VerdictSink, WebhookSink
from tracejudge.collector.exporters.targets import TargetSpec
from tracejudge.collector.pipeline import Pipeline
from tracejudge.collector.processors.graders import GraderStage, grader_stage
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.logs_intake import LogsIntake, logs_intake_for
from tracejudge.collector.processors.shadow import attach_shadow_pairs
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.gate.recent import RecentVerdicts
from tracejudge.graders.apply import GraderRule

__all__ = ["Stages", "build_stages", "forward_queues", "verdict_sinks"]


@dataclass(slots=True)
class Stages:
    """What ``build_stages`` made: the receivers' consumers and the graders."""

    pipeline: Pipeline
    logs: LogsIntake
    graders: GraderStage | None


def forward_queues(
    config: CollectorConfig,
    targets: Sequence[ForwardTarget],
    specs: Sequence[TargetSpec],
    stats: Stats,
    store: DiskStore | None,
    dead_letter: DeadLetterFile | None,
) -> list[TargetQueue]:
    """One queue per forward target, named by its spec."""
    return [
        TargetQueue(
            target,
            stats=stats,
            store=store,
            max_batch_bytes=config.max_batch_bytes,
            retry_initial=config.retry_initial,
            retry_max=config.retry_max,
            name=spec.name,
            dead_letter=dead_letter,
        )
        for target, spec in zip(targets, specs, strict=True)
    ]


def verdict_sinks(config: CollectorConfig, stats: Stats) -> list[VerdictSink]:
    """The verdict stream's sinks: JSON lines, one line per run, the webhook."""
    sinks: list[VerdictSink] = []
    if config.verdicts_jsonl:
        sinks.append(JsonlSink(config.verdicts_jsonl, config.file_mode))
    if config.verdict_lines:
        sinks.append(TextSink())
    if config.webhook:
        sinks.append(WebhookSink(config.webhook, stats))
    return sinks


def build_stages(
    config: CollectorConfig,
    judge: Judge,
    grader_rules: Sequence[GraderRule],
    queues: Sequence[TargetQueue],
    sinks: Sequence[VerdictSink],
    *,
    stats: Stats,
    store: DiskStore | None,
    clock: Clock,
    recent: RecentVerdicts,
    dead_letter: DeadLetterFile | None,
) -> Stages:
    """The pipeline and the stages around it."""
    pipeline = Pipeline(config, judge, queues, sinks, stats, store, clock, [recent])
    attach_shadow_pairs(pipeline, getattr(judge, "ruleset", None), recent)
    if dead_letter is not None:  # a backend's refusal text may quote span content
        dead_letter.scrub = pipeline.scrubber.text
    for q in queues:  # and so may the error /metrics and /healthz show
        q.scrub = pipeline.scrubber.text
    pipeline.decider.rules_version = str(getattr(getattr(judge, "ruleset", None), "version", ""))
    logs = logs_intake_for(config, pipeline)
    graders = None
    if grader_rules:
        graders = pipeline.graders = grader_stage(config, grader_rules, clock, pipeline, logs)
    return Stages(pipeline, logs, graders)
