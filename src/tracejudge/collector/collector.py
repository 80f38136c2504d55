"""The ``Collector``: wires receivers, pipeline, forwarders and sinks on one event loop.

Used by ``tracejudge serve`` and in-process by the demo and tests (ports 0 pick free ones;
the bound ports are readable after ``start``). ``stop`` is the graceful path SIGTERM takes:
stop accepting, decide every pending trace now, flush the queues within the shutdown
timeout, and leave what could not be sent in the disk queue (if configured).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracejudge._build import build_kind
from tracejudge.collector.assembly import build_stages, forward_queues, verdict_sinks
from tracejudge.collector.clock import Clock, SystemClock
from tracejudge.collector.component import Processor
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.dead_letter import DeadLetterFile
from tracejudge.collector.exporters.exporter import QueuedExporter
from tracejudge.collector.exporters.forward import ForwardTarget
from tracejudge.collector.exporters.registry import EXPORTERS, ExporterRegistry
from tracejudge.collector.exporters.sinks import VerdictSink
from tracejudge.collector.exporters.targets import TargetSpec, split_forward, target_specs
from tracejudge.collector.processors.admission import Admission
from tracejudge.collector.processors.cost import RuleCost, check_budget, measure
from tracejudge.collector.processors.decided import Decided
from tracejudge.collector.processors.decision import DecisionStage, scrubber_for
from tracejudge.collector.processors.graders import GraderStage, graders_for
from tracejudge.collector.processors.judge import Judge, load_judge
from tracejudge.collector.processors.logs_intake import LogsIntake
from tracejudge.collector.processors.redact import LogScrubber
from tracejudge.collector.processors.registry import PROCESSORS, DecidedRegistry
from tracejudge.collector.receivers.http_guard import GuardStats
from tracejudge.collector.receivers.inflight import InflightBytes
from tracejudge.collector.receivers.listeners import Listeners
from tracejudge.collector.security.auth import AuthStats
from tracejudge.collector.security.credentials import display_url
from tracejudge.collector.storage.headroom import Room
from tracejudge.collector.storage.replay import replay_disk_queue
from tracejudge.collector.storage.store import DiskStore, QueuedTarget, open_for_serve
from tracejudge.collector.telemetry.exposition import render as render_prometheus
from tracejudge.collector.telemetry.health import degraded_reasons
from tracejudge.collector.telemetry.metric_labels import MetricLabels
from tracejudge.collector.telemetry.server_log import ServerErrors, server_logger
from tracejudge.collector.telemetry.snapshot import disk_entry, merge
from tracejudge.collector.telemetry.stats import Stats, otlp_metric_reader
from tracejudge.engine.engine import Engine
from tracejudge.gate.recent import RecentVerdicts

log = logging.getLogger("tracejudge.collector")


def _shown(entry: str) -> str:
    """A forward entry (``URL`` or ``NAME=URL``) with the URL's credentials hidden."""
    name, url = split_forward(entry)
    return display_url(url) if name is None else f"{name}={display_url(url)}"


class Collector:
    """One judging OTLP collector. ``await start()``, then ``await stop()``."""

    def __init__(
        self,
        config: CollectorConfig,
        judge: Judge | None = None,
        clock: Clock | None = None,
        exporters: ExporterRegistry = EXPORTERS,
        processors: DecidedRegistry = PROCESSORS,
        sinks: Sequence[VerdictSink] = (),
    ) -> None:
        """``sinks``: verdict sinks beside those the config names (an embedding program's
        own reader of the verdict stream), given to the graph when it is built."""
        if judge is None:
            if config.rules is None:
                raise ValueError("Collector needs a rules file (config.rules) or a judge")
            judge = load_judge(config.rules, config.baselines, config.cases, strict=config.strict)
        self.config = config
        self.judge = judge
        self.grader_rules = graders_for(config, judge)  # keys read now: fail fast
        self.graders: GraderStage | None = None
        self.exporters = exporters  # the kinds its targets are built from
        self.processors = processors  # the decided edge's kinds, in their order
        self.extra_sinks = list(sinks)
        self.chain: list[Processor[Decided]] = []
        """The decided edge's processors as built (``assembly.build_stages``)."""
        self.rule_cost: RuleCost | None = None
        """The rules' cost on the synthetic run (None for a judge that is not the engine)."""
        if isinstance(judge, Engine):
            self.rule_cost = measure(judge, config.max_rule_cost)
            check_budget(self.rule_cost, config.max_rule_cost, str(config.rules or "rules"))
        self.clock: Clock = SystemClock() if clock is None else clock
        """Decision deadlines and the judge's lag are read from it and the decision timer
        sleeps on it (a ``ManualClock`` lets a test move the collector's time by hand)."""
        self.recent = RecentVerdicts()
        """The runs this collector decided, for ``GET /v1/gate`` (bounded; agent, variant,
        outcome and policy-failure code only)."""
        readers = []
        if config.metrics_otlp_endpoint:
            readers.append(
                otlp_metric_reader(config.metrics_otlp_endpoint, config.metrics_interval)
            )
        self.stats = Stats(
            readers,
            MetricLabels(config.metrics_case_slices, config.metrics_max_label_values),
            gauges=self,  # its gauges read the graph built at start (``queue_depth``...)
        )
        self.store: DiskStore | None = None
        self.disk_room: Room | None = None
        """The disk queue's cap and reserve, as chosen at start."""
        self.dead_letter: DeadLetterFile | None = None
        self.removed_targets: list[QueuedTarget] = []
        """Disk-queue payloads of targets no longer configured, as counted at start."""
        self.admission: Admission | None = None
        """The receivers' trace consumer, the graph's first stage (``processors/admission.py``)."""
        self.decision: DecisionStage | None = None
        self.logs: LogsIntake | None = None
        """The OTLP logs side (``logs_intake.py``): records held with their traces."""
        self.auth_stats = AuthStats()
        """Requests refused for want of a valid bearer token, by listener."""
        self.inflight = InflightBytes(config.max_inflight_request_bytes)
        """OTLP request bytes being read, over HTTP and gRPC (``max_inflight_request_bytes``)."""
        self.http_guard = GuardStats()
        """Connections the OTLP/HTTP (and health) listeners closed or refused."""
        self.listeners = Listeners(
            config,
            snapshot=self.snapshot,
            gate=self.gate_answer,
            prometheus=self.prometheus_text,
            auth_stats=self.auth_stats,
            inflight=self.inflight,
            guard=self.http_guard,
            clock=self.clock,
        )
        """OTLP/gRPC, OTLP/HTTP and the management listener (``receivers/listeners.py``)."""
        self._timer: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self._stopping = False
        self._log_filter: LogScrubber | None = None
        self._server_errors: ServerErrors | None = None
        self._server_log = log
        """What aiohttp logs its listeners' errors to: scrubbed and rate-limited once the
        collector's scrubber exists (``server_log.py``)."""

    def snapshot(self) -> dict[str, Any]:
        """``/metrics`` (and ``/healthz``): the sum of the components' snapshots (the
        counters, the listeners, admission, the decision stage, the disk queue and dead-letter
        file, the decided edge's processors), with the status they add up to."""
        p = self.decision
        queues = p.queues if p is not None else []
        disk: dict[str, Any] | None = None
        if self.store is not None:
            disk = disk_entry(
                self.store,
                self.disk_room,
                queues,
                self.removed_targets,
                self.config.retry_after_hint,
            )
        parts = merge(
            [
                self.listeners.snapshot(),
                self.admission.snapshot() if self.admission is not None else {},
                p.snapshot() if p is not None else {},
                {
                    "disk_queue": disk,
                    "dead_letter": (
                        self.dead_letter.snapshot() if self.dead_letter is not None else None
                    ),
                },
                *(processor.snapshot() for processor in self.chain),
            ]
        )
        # A backend failing with data waiting for it, a disk queue refusing or failing.
        reasons = degraded_reasons(parts.get("targets", {}), disk)
        status = "stopping" if self._stopping else "degraded" if reasons else "ok"
        own = {"status": status, "reasons": reasons, "build": build_kind()}
        return merge([self.stats.snapshot(), own, parts])

    def queue_depth(self) -> int:
        """Spans waiting in all forward queues (0 before ``start``); a ``Gauges`` read."""
        return self.decision.queue_depth() if self.decision is not None else 0

    def shadow_pending(self) -> int:
        """Shadows waiting for their stable run (0 before ``start``); a ``Gauges`` read."""
        p = self.decision
        return p.shadow.pending() if p is not None and p.shadow is not None else 0

    @property
    def grpc_port(self) -> int:
        """The OTLP/gRPC port (0 before ``start``)."""
        return self.listeners.grpc_port

    @property
    def http_port(self) -> int:
        """The OTLP/HTTP port (0 before ``start``)."""
        return self.listeners.http_port

    @property
    def management_port(self) -> int | None:
        """The management listener's port (None before ``start`` or without one)."""
        return self.listeners.management_port

    @property
    def health_port(self) -> int | None:
        """The management listener's port (its former name)."""
        return self.management_port

    def gate_answer(self, query: Mapping[str, str]) -> dict[str, Any]:
        """The ``GET /v1/gate`` answer over the runs this collector decided (``ParamError``
        for a malformed query)."""
        return self.recent.answer(query, self.clock.wall()).to_dict()

    def prometheus_text(self) -> str:
        """The verdict metrics in Prometheus text format (``/metrics`` when asked for)."""
        extra = self.graders.prometheus() if self.graders is not None else ""
        return render_prometheus(self.stats) + extra

    async def start(self, announce: Callable[[str], None] | None = None) -> None:
        """Open the disk queue (replaying it), start forwarders, receivers and the timer.

        ``announce`` receives the one-line start-up message (``describe()``); without it
        the line is logged at INFO level (an embedded collector stays quiet)."""
        cfg = self.config
        if cfg.queue_dir is not None:
            self.store, self.disk_room = open_for_serve(
                cfg.queue_dir, cfg.max_disk_queue_bytes, cfg.file_mode, cfg.decided_cache_size
            )
            log.info("disk queue %s: %s", cfg.queue_dir, self.disk_room.describe())
        for warning in cfg.security_warnings():
            log.warning("%s", warning)
        specs = target_specs(cfg.forward, cfg.output)
        exporters = [self.exporters.build(spec.url, cfg) for spec in specs]
        for exporter in exporters:
            await exporter.start()
        targets: list[ForwardTarget] = [QueuedExporter(e) for e in exporters]
        scrubber = scrubber_for(cfg)
        if cfg.dead_letter is not None:  # a backend's refusal text may quote span content
            self.dead_letter = DeadLetterFile(cfg.dead_letter, scrubber.text, cfg.file_mode)
        queues = forward_queues(
            cfg, targets, specs, self.stats, self.store, self.dead_letter, scrubber
        )
        stages = build_stages(
            cfg,
            self.judge,
            self.grader_rules,
            queues,
            [*verdict_sinks(cfg, self.stats), *self.extra_sinks],
            stats=self.stats,
            store=self.store,
            clock=self.clock,
            recent=self.recent,
            scrubber=scrubber,
            processors=self.processors,
            rule_cost=self.rule_cost,
        )
        self.admission, self.decision = stages.admission, stages.decision
        self.logs, self.graders = stages.logs, stages.graders
        self.chain = stages.processors
        # Log lines can quote span content (exception texts, backend answers).
        self._log_filter = LogScrubber(scrubber)
        log.addFilter(self._log_filter)
        self._server_log, self._server_errors = server_logger(scrubber, self.clock)
        if self.logs.queue is not None:
            self.logs.queue.start()
        for processor in self.chain:
            processor.start()
        self.decision.start()
        self.decision.hold.start()
        self.admission.start()
        if self.store is not None:
            # The store keeps each target's URL for `tracejudge queue`: never its credentials.
            shown = [TargetSpec(spec.name, display_url(spec.url)) for spec in specs]
            self.removed_targets = replay_disk_queue(self.store, queues, shown, self.decision)
        for q in queues:
            q.start()
        try:
            await self.listeners.start(self.admission, self.logs, self._server_log)
        except BaseException:
            await self._abort_start()
            raise
        hold = self.decision.hold  # its timer hands due traces to the decision stage
        self._timer = asyncio.get_running_loop().create_task(
            hold.run_timer(self.decision, self.stopping)
        )
        if announce is not None:
            announce(self.describe())
        else:
            log.info("%s", self.describe())

    def describe(self) -> str:
        """One line saying where the collector listens and where judged data goes (the
        start-up message); valid after ``start``."""
        cfg = self.config
        scheme = "http" if cfg.server_tls() is None else "https"
        listen = (
            f"OTLP/gRPC {cfg.host}:{self.grpc_port}{' (TLS)' if scheme == 'https' else ''}, "
            f"OTLP/HTTP {scheme}://{cfg.host}:{self.http_port}"
        )
        if self.management_port is not None:
            where = cfg.management_host or cfg.host
            listen += f", management {scheme}://{where}:{self.management_port}"
        places = [
            *(_shown(entry) for entry in cfg.forward),
            *([str(cfg.output)] if cfg.output is not None else []),
        ]
        spans = (
            f"judged traces to {', '.join(places)}"
            if places
            else "no backend: judged spans are not kept (--forward URL or --output FILE)"
        )
        parts = [f"tracejudge serve: listening on {listen}", spans]
        if cfg.tokens_configured():
            parts.append("bearer token required")
        if cfg.tls_client_ca is not None:
            parts.append("client certificates required")
        verdicts = []
        if cfg.verdict_lines:
            verdicts.append("one line per run on stdout")
        if cfg.verdicts_jsonl is not None:
            where = "stdout" if cfg.verdicts_jsonl == "-" else cfg.verdicts_jsonl
            verdicts.append(f"JSON lines to {where}")
        if cfg.webhook is not None:
            verdicts.append(f"POST to {display_url(cfg.webhook, hide_path=True)}")
        parts.append(
            f"verdicts: {', '.join(verdicts)}"
            if verdicts
            else "verdicts: off (--verdict-lines prints one line per run on stdout)"
        )
        if cfg.conversation_wait > 0:
            parts.append(
                f"conversations judged after {cfg.conversation_wait:g}s quiet "
                f"(at most {cfg.conversation_max_hold:g}s held)"
            )
        if cfg.forward_logs is not None:
            extra = " with evaluation records" if cfg.evaluation_logs else ""
            parts.append(f"log records to {display_url(cfg.forward_logs)}{extra}")
        if self.rule_cost is not None:
            parts.append(f"rules cost {self.rule_cost.describe()}")
        return "; ".join(parts) + f" ({build_kind()} build)"

    async def _abort_start(self) -> None:
        """Undo a half-finished start (e.g. a port in use) so nothing is left running."""
        await self.listeners.abort()
        if self.admission is not None:
            self.admission.shutdown()
        if self.decision is not None:
            self.decision.hold.shutdown()
            self.decision.shutdown()
            for processor in self.chain:
                processor.shutdown()
            for q in self.decision.queues:
                await q.flush(0.0)
            for sink in self.decision.sinks:
                await sink.close()
        if self.logs is not None and self.logs.queue is not None:
            await self.logs.queue.flush(0.0)
        if self.dead_letter is not None:
            self.dead_letter.close()
        if self.store is not None:
            self.store.close()
        if self._log_filter is not None:
            log.removeFilter(self._log_filter)
        self.stats.shutdown(0.1)

    def stopping(self) -> bool:
        """True once ``stop`` has begun (the timer ends after its current tick)."""
        return self._stopping

    async def stop(self, timeout: float | None = None) -> None:
        """Graceful shutdown: refuse new data, decide everything, flush, persist the rest."""
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        budget = self.config.shutdown_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        end = loop.time() + budget
        await self.listeners.stop_intake(min(1.0, budget))
        if self.admission is not None:  # the receivers are stopped: nothing more comes
            self.admission.shutdown()
        p = self.decision
        if self._timer is not None:
            # Let a tick judging a chunk finish rather than cancel it mid-way (a cancelled
            # batch puts its traces back, but their judging would be done twice).
            if p is not None:
                p.wake.set()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        if p is not None:
            await p.decide_all()
            p.hold.shutdown()
            p.shutdown()
            for processor in self.chain:  # graders: waiting runs not_evaluated, sent below
                processor.shutdown()
            results = await asyncio.gather(
                *(q.flush(max(0.1, end - loop.time())) for q in p.queues)
            )
            left = sum(q.spans for q in p.queues)
            if self.logs is not None and self.logs.queue is not None:
                lq = self.logs.queue
                if not await lq.flush(max(0.1, end - loop.time())):
                    log.error("shutdown: %d log records could not be delivered", lq.spans)
            if not all(results):
                if self.store is not None:
                    log.warning(
                        "shutdown: %d spans kept in the disk queue for the next start", left
                    )
                else:
                    log.error("shutdown: %d spans could not be delivered and are lost", left)
                    self.stats.count("dropped", left)
            for sink in p.sinks:
                await sink.close()
        await self.listeners.stop_management()
        if self.dead_letter is not None:
            self.dead_letter.close()
        if self.store is not None:
            self.store.close()
        # In a thread: a final metrics export to a dead endpoint must not block the loop.
        await asyncio.to_thread(self.stats.shutdown, max(0.1, end - loop.time()))
        if self._server_errors is not None:
            self._server_errors.flush(self._server_log)
        if self._log_filter is not None:
            log.removeFilter(self._log_filter)
        self._stopped.set()

    async def serve_forever(self, announce: Callable[[str], None] | None = None) -> None:
        """Start, run until SIGTERM/SIGINT, then stop gracefully."""
        await self.start(announce)
        # This process is the collector: move everything alive after start-up (modules, the
        # compiled rules) out of the collector's generations, so full collections walk only
        # what traffic made and no longer pause decisions for tens of milliseconds.
        gc.freeze()
        loop = asyncio.get_running_loop()
        stop_requested = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop_requested.set)
        await stop_requested.wait()
        log.info("tracejudge serve: shutting down")
        await self.stop()
