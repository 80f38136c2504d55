"""The cross-field rules of a ``CollectorConfig``, every one run, every failure reported.

A config file with several mistakes gets all of them at once, each starting with its key
path (``forward[1]: ...``, ``decision_wait_after_root: ...``), so a deploy is fixed in one
round rather than one restart per mistake. Each rule names the keys it reads; a rule is
skipped when one of them already failed to parse (its value is the default, not what the
file said, so a finding about it would be about a value nobody wrote).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tracejudge.collector.exporters.targets import split_forward, target_specs
from tracejudge.collector.security import access
from tracejudge.collector.security.credentials import display_url

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig
    from tracejudge.collector.exporters.registry import ExporterRegistry

Rule = Callable[["CollectorConfig"], Iterable[str]]


def _forward(cfg: CollectorConfig, exporters: ExporterRegistry | None = None) -> Iterator[str]:
    from tracejudge.collector.config import ConfigError, check_forward_url

    bad = False
    for i, entry in enumerate(cfg.forward):
        try:
            check_forward_url(split_forward(entry)[1], exporters)
        except (ConfigError, ValueError) as exc:
            bad = True
            yield f"forward[{i}]: {str(exc).removeprefix('forward: ')}"
    if bad:
        return
    try:
        specs = target_specs(cfg.forward, cfg.output)
    except ValueError as exc:
        yield f"forward: {exc}"
        return
    shown = [display_url(s.url) for s in specs]
    if len(set(shown)) != len(shown):
        yield "forward: two URLs differ only in their credentials"


def _access(cfg: CollectorConfig) -> Iterator[str]:
    try:
        access.validate(cfg)
    except access.AccessError as exc:
        yield from exc.problems


def _ports(cfg: CollectorConfig) -> Iterator[str]:
    for name in ("grpc_port", "http_port", "management_port"):
        port = getattr(cfg, name)
        if port is not None and not (0 <= port <= 65535):
            yield f"{name}: {port} is not a port number"


def _decision(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.decision_wait <= 0 or cfg.decision_wait_after_root <= 0:
        yield "decision_wait and decision_wait_after_root must be positive"
    elif cfg.decision_wait_after_root > cfg.decision_wait:
        yield "decision_wait_after_root must not exceed decision_wait"


def _conversation(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.conversation_wait < 0:
        yield "conversation_wait: must not be negative (0 turns it off)"
    if cfg.conversation_max_hold <= 0:
        yield "conversation_max_hold: must be positive"
    elif cfg.conversation_wait > cfg.conversation_max_hold:
        yield "conversation_wait must not exceed conversation_max_hold"


def _timing(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.shadow_wait <= 0:
        yield "shadow_wait: must be positive"
    if not (0 < cfg.tick <= 1.0):
        yield "tick: must be in (0, 1s]"
    if cfg.max_judge_time is not None and cfg.max_judge_time < 0:
        yield "max_judge_time: must not be negative (0 turns it off)"
    if cfg.max_judge_lag <= 0:
        yield "max_judge_lag: must be positive"


def _inputs(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.rules is not None and not Path(cfg.rules).is_file():
        yield f"rules: {cfg.rules} is not a file"
    if cfg.baselines is not None and not Path(cfg.baselines).is_dir():
        yield f"baselines: {cfg.baselines} is not a directory"
    if cfg.cases is not None and not Path(cfg.cases).is_file():
        yield f"cases: {cfg.cases} is not a file"


def _logs(cfg: CollectorConfig) -> Iterator[str]:
    from tracejudge.collector.config import ConfigError, check_otlp_url

    if cfg.forward_logs is not None:
        try:
            check_otlp_url(cfg.forward_logs)
        except ConfigError as exc:
            yield f"forward_logs: {str(exc).removeprefix('forward: ')}"
    if cfg.evaluation_logs and cfg.forward_logs is None:
        yield "evaluation_logs: needs forward_logs (a logs endpoint)"


def _graders(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.grader_traces and not cfg.forward:
        yield "grader_traces: needs forward (a trace backend; they never go to output)"


def _outputs(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.verdict_lines and cfg.verdicts_jsonl == "-":
        yield "verdict_lines: stdout already carries the verdicts as JSON lines"
    if cfg.output is not None:
        out = Path(cfg.output)
        if out.is_dir() or not out.parent.is_dir():
            yield f"output: {out} is not a file in an existing directory"
        elif cfg.verdicts_jsonl is not None and Path(cfg.verdicts_jsonl) == out:
            yield "output: the same file as verdicts_jsonl"
    if cfg.dead_letter is not None:
        dead = Path(cfg.dead_letter)
        others = [cfg.output, cfg.verdicts_jsonl]
        if dead.is_dir() or not dead.parent.is_dir():
            yield f"dead_letter: {dead} is not a file in an existing directory"
        elif any(o is not None and Path(o) == dead for o in others):
            yield "dead_letter: the same file as output or verdicts_jsonl"
    if cfg.webhook is not None and urlsplit(cfg.webhook).scheme not in ("http", "https"):
        yield f"webhook: {cfg.webhook!r} is not an http(s) URL"


_POSITIVE_OR_OFF = (
    "http_idle_timeout",
    "http_header_timeout",
    "http_body_timeout",
    "grpc_keepalive_time",
    "grpc_keepalive_timeout",
    "grpc_max_connection_idle",
    "grpc_max_connection_age",
    "grpc_handshake_timeout",
)
_POSITIVE = (
    "max_traces",
    "max_spans_per_trace",
    "max_traces_per_request",
    "decided_cache_size",
    "http_max_connections_per_client",
    "metrics_max_label_values",
    "grpc_max_concurrent_streams",
    "shadow_max_pending",
    "grader_max_concurrent",
    "grader_calls_per_minute",
)


_ZERO_IS_OFF = ("grader_tokens_per_minute", "grader_run_deadline")


def _limits(cfg: CollectorConfig) -> Iterator[str]:
    for name in _POSITIVE_OR_OFF:
        value = getattr(cfg, name)
        if value is not None and value <= 0:
            yield f"{name}: must be positive"
    for name in _POSITIVE:
        if getattr(cfg, name) <= 0:
            yield f"{name}: must be positive"
    for name in _ZERO_IS_OFF:
        if getattr(cfg, name) < 0:
            yield f"{name}: must not be negative (0 turns it off)"


def _disk(cfg: CollectorConfig) -> Iterator[str]:
    if cfg.max_disk_queue_bytes is not None and cfg.queue_dir is None:
        yield "max_disk_queue_bytes: needs queue_dir (there is no disk queue)"
    elif cfg.max_disk_queue_bytes is not None and cfg.max_disk_queue_bytes < 64 * 1024:
        yield "max_disk_queue_bytes: must be at least 64KiB"
    if cfg.file_mode & ~0o666 or cfg.file_mode & 0o600 != 0o600:
        yield (
            f"file_mode: {cfg.file_mode:04o} must give the owner read and write and "
            "nobody execute (e.g. 0600, 0640)"
        )


_ACCESS_KEYS = frozenset(
    {
        "host",
        "management_host",
        "management_port",
        "insecure_no_auth",
        "auth_token_file",
        "auth_token_env",
        "tls_cert",
        "tls_key",
        "tls_client_ca",
        "forward",
        "forward_headers",
        "forward_ca_file",
        "forward_client_cert",
        "forward_client_key",
        "forward_insecure_skip_verify",
    }
)

RULES: tuple[tuple[frozenset[str], Rule], ...] = (
    (frozenset({"forward", "output"}), _forward),
    (_ACCESS_KEYS, _access),
    (frozenset(), _ports),
    (frozenset({"decision_wait", "decision_wait_after_root"}), _decision),
    (frozenset({"conversation_wait", "conversation_max_hold"}), _conversation),
    (frozenset({"shadow_wait", "tick", "max_judge_time", "max_judge_lag"}), _timing),
    (frozenset(), _inputs),
    (frozenset({"forward_logs", "evaluation_logs"}), _logs),
    (frozenset({"grader_traces", "forward"}), _graders),
    (frozenset({"output", "verdicts_jsonl", "dead_letter", "verdict_lines"}), _outputs),
    (frozenset(), _limits),
    (frozenset({"max_disk_queue_bytes", "queue_dir", "file_mode"}), _disk),
)
"""Each rule with the keys it reads together. A rule reading one key at a time (ports,
limits, inputs) reads only values that parsed: a bad value never reaches the config."""

_VOUCHES = {_forward: "forward"}
"""A rule whose findings make its key count as failed for the rules after it: the access
rule reads the forward entries' URLs, which the forward rule found unusable."""


def problems(
    cfg: CollectorConfig,
    failed: frozenset[str] = frozenset(),
    exporters: ExporterRegistry | None = None,
) -> list[str]:
    """Every rule's findings, in declaration order, skipping rules over ``failed`` keys;
    forward URLs are checked against ``exporters`` (None: ``serve``'s registry)."""
    found: list[str] = []
    bad = set(failed)
    for keys, rule in RULES:
        if keys & bad:
            continue
        findings = list(_forward(cfg, exporters) if rule is _forward else rule(cfg))
        if findings and rule in _VOUCHES:
            bad.add(_VOUCHES[rule])
        found.extend(findings)
    return found
