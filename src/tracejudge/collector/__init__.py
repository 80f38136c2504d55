"""The judging OTLP collector behind ``tracejudge serve``.

Receivers (OTLP gRPC + HTTP) → trace assembly (bytes per trace, decision waits) → judge →
stamp → forward (retries, optional disk queue), plus a verdict stream. See docs/collector.md.
"""

from __future__ import annotations

from tracejudge.collector.collector import Collector
from tracejudge.collector.config import CollectorConfig, ConfigError, build_config
from tracejudge.collector.processors.judge import Judge, load_judge

__all__ = ["Collector", "CollectorConfig", "ConfigError", "Judge", "build_config", "load_judge"]
