"""The collector's stages built from config, each given its collaborators when it is made.

``Collector.start`` opens what touches the outside (the disk queue, the exporters, the
dead-letter file) and builds the graph here, in the order the constructors need: one
``Scrubber`` for everything that may quote span content (``decision.scrubber_for``, made
first: the dead-letter file takes it too), the forward queues and verdict sinks, then one
``TraceHold`` shared by the decision stage and the logs intake, shadow pairing, the logs
intake, the processors of the decided edge in their declared order
(``processors/registry.py``: the logs join, the graders, which send their outcomes through
the logs intake), each created with the next, the decision stage over all of them
(``DecisionFactory``: its next the first of them, its context what the graph shares), and
last the receivers' entry in front of it, admission (``processors/admission.py``: its next
consumer the hold, its back-pressure the decision stage's decisions). Observers (the gate's
window, shadow pairing, verdict sinks) are given to the stage that tells them when it is
built: nothing is attached to a stage after it is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.collector.clock import Clock
from tracejudge.collector.component import Consumer, Discard, Processor
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.dead_letter import DeadLetterFile
from tracejudge.collector.exporters.forward import ForwardTarget, TargetQueue
from tracejudge.collector.exporters.sinks import JsonlSink, TextSink, VerdictSink, WebhookSink
from tracejudge.collector.exporters.targets import TargetSpec
from tracejudge.collector.processors.admission import (
    Admission,
    AdmissionContext,
    AdmissionFactory,
)
from tracejudge.collector.processors.cost import RuleCost
from tracejudge.collector.processors.decided import Context, Decided
from tracejudge.collector.processors.decision import (
    DecisionContext,
    DecisionFactory,
    DecisionStage,
)
from tracejudge.collector.processors.graders import GraderStage
from tracejudge.collector.processors.grading import Grading
from tracejudge.collector.processors.hold import TraceHold
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.logs_intake import LogsIntake, logs_intake_for
from tracejudge.collector.processors.modes import forward_mode
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.registry import PROCESSORS, DecidedRegistry
from tracejudge.collector.processors.shadow import shadow_pairs_for
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.gate.recent import RecentVerdicts
from tracejudge.graders.apply import GraderRule

__all__ = ["Stages", "admission_for", "build_stages", "forward_queues", "verdict_sinks"]


@dataclass(slots=True)
class Stages:
    """What ``build_stages`` made: the receivers' consumers (admission for traces, the
    logs intake), the decision stage and the processors of the decided edge, in order."""

    admission: Admission
    decision: DecisionStage
    logs: LogsIntake
    processors: list[Processor[Decided]]

    @property
    def graders(self) -> GraderStage | None:
        """The grader threads, when the rules file has graders."""
        for p in self.processors:
            if isinstance(p, Grading):
                return p.stage
        return None


def forward_queues(
    config: CollectorConfig,
    targets: Sequence[ForwardTarget],
    specs: Sequence[TargetSpec],
    stats: Stats,
    store: DiskStore | None,
    dead_letter: DeadLetterFile | None,
    scrubber: Scrubber,
) -> list[TargetQueue]:
    """One queue per forward target, named by its spec; a backend's error text may quote
    span content, so what /metrics and /healthz show of it is scrubbed."""
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
            scrub=scrubber.text,
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
    scrubber: Scrubber,
    processors: DecidedRegistry = PROCESSORS,
    rule_cost: RuleCost | None = None,
) -> Stages:
    """The decision stage and the stages around it, each built with its collaborators; the
    decided edge chains one processor of each kind of ``processors``, in its order."""
    ruleset = getattr(judge, "ruleset", None)
    hold = TraceHold(config, clock)
    shadow = shadow_pairs_for(config, stats, sinks, scrubber, ruleset, recent)
    logs = logs_intake_for(config, hold, stats, scrubber)
    context = Context(clock, stats, scrubber, queues, logs, grader_rules)
    chain = processors.chain(config, context, Discard[Decided]())
    edge: Consumer[Decided] = chain[0] if chain else Discard[Decided]()
    factory = DecisionFactory()
    decision = factory.create(
        factory.config_for(config),
        edge,
        DecisionContext(
            clock,
            stats,
            judge,
            hold,
            scrubber,
            forward_mode(config, scrubber),
            queues,
            sinks,
            store,
            [recent, shadow],  # every observer registered here: the decision stage adds none
            shadow,
            str(getattr(ruleset, "version", "")),
            rule_cost,
        ),
    )
    return Stages(admission_for(config, decision), decision, logs, chain)


def admission_for(config: CollectorConfig, decision: DecisionStage) -> Admission:
    """The receivers' stage in front of ``decision``, from ``config``: fresh fragments to
    its hold, direct payloads (late spans, passthrough) to its fan-out, back-pressure from
    its decisions."""
    factory = AdmissionFactory()
    context = AdmissionContext(
        decision.clock, decision.stats, decision.hold, decision.fanout, decision.mode, decision
    )
    return factory.create(factory.config_for(config), decision.hold, context)
