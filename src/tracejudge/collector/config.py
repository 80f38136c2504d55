"""Collector settings: one dataclass, each setting declared once on its field.

Every field of ``CollectorConfig`` that users can set is a :func:`setting` with its kind,
its section and key (``graders.max_concurrent``), its unit and its meaning
(``config_kinds``); the parsers, the nested YAML sections, ``TRACEJUDGE_*`` variables,
``--set``, the docs table and the example file are derived from those declarations
(``config_sources``, ``config_docs``). The code reads the flat attributes
(``cfg.grader_max_concurrent``); a config file may write either form.

Bad configuration must stop the collector at start with a message naming the key, not
surface hours later as a dropped trace, so every value is parsed and range-checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import yaml

from tracejudge.collector import config_checks
from tracejudge.collector.config_kinds import (
    ConfigError,
    Kind,
    coerce,
    declared,
    parse_duration,
    parse_size,
    setting,
    setting_factory,
)
from tracejudge.collector.config_sources import Item, Table, read_sources, relabel
from tracejudge.collector.security import access
from tracejudge.collector.security.credentials import display_url
from tracejudge.collector.security.tls import ServerTls, TargetOptions
from tracejudge.collector.storage.files import DEFAULT_FILE_MODE

if TYPE_CHECKING:
    from tracejudge.collector.exporters.registry import ExporterRegistry

__all__ = [
    "SETTINGS",
    "CollectorConfig",
    "ConfigError",
    "build_config",
    "check_forward_url",
    "check_otlp_url",
    "config_from",
    "load_config_file",
    "parse_duration",
    "parse_size",
]

T = TypeVar("T")
D, Z, N, B = Kind.DURATION, Kind.SIZE, Kind.INT, Kind.BOOL
P, S, U = Kind.PATH, Kind.STR, Kind.URL


def check_forward_url(url: str, exporters: ExporterRegistry | None = None) -> str:
    """A target URL one of the registered exporter kinds serves, as that kind checks it:
    ``http(s)://host:port[/path]`` (OTLP/HTTP), ``grpc(s)://host:port`` (OTLP/gRPC, ``grpcs``
    with TLS), ``file:PATH`` (OTLP/JSON lines). ``exporters``: ``serve``'s registry."""
    from tracejudge.collector.exporters.registry import EXPORTERS

    registry = EXPORTERS if exporters is None else exporters
    try:
        factory = registry.for_url(url)
        factory.check_url(url)
    except ValueError as exc:
        raise ConfigError(f"forward: {display_url(url)!r}: {exc}") from None
    return url


def check_otlp_url(url: str) -> str:
    """``check_forward_url`` for an OTLP endpoint only (http(s) or grpc(s)): logs go to a
    backend, never to a file target."""
    if urlsplit(url).scheme not in ("http", "https", "grpc", "grpcs"):
        raise ConfigError(
            f"forward: {display_url(url)!r} is not http(s)://host:port or grpc(s)://host:port"
        )
    return check_forward_url(url)


@dataclass(slots=True)
class CollectorConfig:
    """Everything ``tracejudge serve`` can be told. Durations are seconds, sizes bytes."""

    # --- judge: what runs are judged with ---
    rules: Path | None = setting(
        None, P, "judge.rules", "Rules file every finished run is judged with (required by serve)."
    )
    baselines: Path | None = setting(
        None,
        P,
        "judge.baselines",
        "Baselines directory (as `eval --baselines`) for baseline rules.",
    )
    cases: Path | None = setting(
        None,
        P,
        "judge.cases",
        "Cases file (as `eval --cases`): runs are judged against their case.",
    )
    strict: bool = setting(
        False, B, "judge.strict",
        "Undecided findings take their rule's severity (as `eval --strict`).",
    )  # fmt: skip
    max_rule_cost: float | None = setting(
        0.1, D, "judge.max_rule_cost",
        "Budget for judging one run: a rules file costing more on the synthetic 10-span run is "
        "refused at start, and each live run over it is counted and logged (null or 0: off).",
    )  # fmt: skip
    max_judge_time: float | None = setting(
        10.0, D, "judge.max_time",
        "CPU time judging one trace may take; a run not judged by then gets verdict `error` "
        "and its spans are forwarded (null or 0: off).",
    )  # fmt: skip
    max_judge_lag: float = setting(
        5.0, D, "judge.max_lag",
        "Receivers push back (retry later) while the oldest due trace waits longer than this "
        "to be judged.",
    )  # fmt: skip

    # --- receivers: where OTLP comes in ---
    host: str = setting(
        "127.0.0.1", S, "receivers.host",
        "Listen address; loopback by default (spans carry prompts), 0.0.0.0 to expose (needs "
        "auth or tls.client_ca, or auth.insecure_no_auth).",
    )  # fmt: skip
    grpc_port: int = setting(
        4317, N, "receivers.grpc_port", "OTLP/gRPC port (0: any free).", unit="port"
    )
    http_port: int = setting(
        4318, N, "receivers.http_port",
        "OTLP/HTTP port: /v1/traces, /v1/logs (and /healthz, /metrics, /v1/gate unless "
        "management.port is set; 0: any free).",
        unit="port",
    )  # fmt: skip
    max_request_bytes: int = setting(
        4 * 1024**2, Z, "receivers.max_request_bytes",
        "Largest request after decompression (the default gRPC limit, as Jaeger, Tempo and "
        "otelcol).",
    )  # fmt: skip
    max_inflight_request_bytes: int = setting(
        32 * 1024**2, Z, "receivers.max_inflight_request_bytes",
        "OTLP request bodies being read at once (HTTP and gRPC); beyond it 503 + Retry-After "
        "/ UNAVAILABLE.",
    )  # fmt: skip
    max_traces_per_request: int = setting(
        10_000, N, "receivers.max_traces_per_request",
        "Traces one request may bring; spans of the others are refused with partial success.",
        unit="traces",
    )  # fmt: skip
    retry_after_hint: float = setting(
        1.0, D, "receivers.retry_after_hint",
        "Retry-After sent to clients when the collector throttles them.",
    )  # fmt: skip
    grpc_max_concurrent_streams: int = setting(
        4, N, "receivers.grpc_max_concurrent_streams",
        "OTLP/gRPC calls in flight per connection (more wait at the client).",
        unit="streams",
    )  # fmt: skip
    grpc_bdp_probe: bool = setting(
        False, B, "receivers.grpc_bdp_probe",
        "grpc-core's BDP probing: grow each stream's flow-control window (clients on "
        "high-latency links; off: 64 KiB windows, unread messages wait at the client).",
    )  # fmt: skip
    grpc_keepalive_time: float = setting(
        60.0, D, "receivers.grpc_keepalive_time", "Ping a gRPC connection idle this long..."
    )
    grpc_keepalive_timeout: float = setting(
        20.0, D, "receivers.grpc_keepalive_timeout",
        "...and drop it when the ping is not answered this soon.",
    )  # fmt: skip
    grpc_max_connection_idle: float | None = setting(
        300.0, D, "receivers.grpc_max_connection_idle",
        "Close a gRPC connection with no call this long (null: never).",
    )  # fmt: skip
    grpc_max_connection_age: float | None = setting(
        None, D, "receivers.grpc_max_connection_age",
        "Send a GOAWAY to gRPC connections this old (null: never, as otelcol).",
    )  # fmt: skip
    grpc_max_connection_age_grace: float = setting(
        10.0, D, "receivers.grpc_max_connection_age_grace",
        "Time calls in flight get after that GOAWAY.",
    )  # fmt: skip
    grpc_handshake_timeout: float = setting(
        10.0, D, "receivers.grpc_handshake_timeout",
        "A gRPC connection must finish its HTTP/2 handshake this soon.",
    )  # fmt: skip
    http_idle_timeout: float = setting(
        60.0, D, "receivers.http_idle_timeout",
        "An OTLP/HTTP connection must start a request this soon after opening or after its "
        "previous answer (the keep-alive timeout too).",
    )  # fmt: skip
    http_header_timeout: float = setting(
        10.0, D, "receivers.http_header_timeout",
        "A request head must be complete this soon after its first byte (slowloris).",
    )  # fmt: skip
    http_body_timeout: float = setting(
        30.0, D, "receivers.http_body_timeout",
        "A request body must be complete this soon after its head (408 otherwise).",
    )  # fmt: skip
    http_max_connections_per_client: int = setting(
        256, N, "receivers.http_max_connections_per_client",
        "Open OTLP/HTTP connections one client address may hold; more are refused.",
        unit="connections",
    )  # fmt: skip

    # --- management: /healthz, /metrics, /v1/gate on a listener of their own ---
    management_port: int | None = setting(
        None, N, "management.port",
        "A separate listener for /healthz, /metrics and /v1/gate; the OTLP/HTTP port then "
        "serves /v1/traces only (formerly health_port).",
        unit="port",
    )  # fmt: skip
    management_host: str | None = setting(
        None, S, "management.host", "The management listener's address (null: receivers.host)."
    )

    # --- auth and tls: who may send, and over what ---
    auth_token_file: Path | None = setting(
        None, P, "auth.token_file",
        "Bearer tokens, one per line, that every request must present (/healthz aside).",
    )  # fmt: skip
    auth_token_env: str | None = setting(
        None, S, "auth.token_env",
        "Name of an environment variable holding a bearer token (as auth.token_file).",
    )  # fmt: skip
    insecure_no_auth: bool = setting(
        False, B, "auth.insecure_no_auth",
        "Allow a non-loopback address without tokens or client certificates (loud warning).",
    )  # fmt: skip
    tls_cert: Path | None = setting(
        None, P, "tls.cert",
        "PEM certificate (chain): TLS on both receivers and the management listener.",
    )  # fmt: skip
    tls_key: Path | None = setting(None, P, "tls.key", "PEM key of tls.cert.")
    tls_client_ca: Path | None = setting(
        None, P, "tls.client_ca",
        "Require client certificates signed by this CA (mutual TLS; authenticates clients).",
    )  # fmt: skip

    # --- exporters: where judged traces go ---
    forward: list[str] = setting_factory(
        list, Kind.TARGETS, "exporters.targets",
        "Backends judged traces are forwarded to: URL, NAME=URL, a mapping with url, name, "
        "headers and TLS keys, or a mapping of names to URLs (grpc://, grpcs://, http://, "
        "https://, file:); each has its own queue, and disk-queue rows follow the name.",
    )  # fmt: skip
    forward_headers: dict[str, str] = setting_factory(
        dict, Kind.HEADERS, "exporters.headers",
        "Headers sent to every backend; values env:NAME, file:PATH or literal.",
    )  # fmt: skip
    forward_ca_file: Path | None = setting(
        None, P, "exporters.ca_file",
        "CA bundle to verify https:// and grpcs:// backends (null: the system store).",
    )  # fmt: skip
    forward_client_cert: Path | None = setting(
        None, P, "exporters.client_cert", "Client certificate for backends that want mutual TLS."
    )
    forward_client_key: Path | None = setting(None, P, "exporters.client_key", "Its key.")
    forward_insecure_skip_verify: bool = setting(
        False, B, "exporters.insecure_skip_verify",
        "Do not verify https backends' certificates (testing only; not for grpcs).",
    )  # fmt: skip
    forward_target_options: dict[str, TargetOptions] = field(default_factory=dict)
    """Per-target headers and TLS, from ``forward:`` entries written as mappings (internal:
    set from ``exporters.targets``)."""
    output: Path | None = setting(
        None, P, "exporters.output",
        "File to append judged traces to as OTLP/JSON lines (eval reads it); with no targets "
        "and no output the judged spans are not kept, only verdicts.",
    )  # fmt: skip
    forward_logs: str | None = setting(
        None, U, "exporters.logs",
        "Where received OTLP log records go after their trace is judged (http:// or grpc://; "
        "null: used for judging and counted as not kept).",
    )  # fmt: skip
    evaluation_logs: bool = setting(
        False, B, "exporters.evaluation_logs",
        "Also send each rule outcome to exporters.logs as a gen_ai.evaluation.result log record.",
    )  # fmt: skip
    passthrough: bool = setting(
        False, B, "exporters.passthrough",
        "Forward spans at once and add a verdict span when the trace is decided.",
    )  # fmt: skip
    forward_timeout: float = setting(10.0, D, "exporters.timeout", "Per export call.")
    retry_initial: float = setting(
        0.2, D, "exporters.retry_initial",
        "First backoff (exponential, jittered; Retry-After and RetryInfo win).",
    )  # fmt: skip
    retry_max: float = setting(10.0, D, "exporters.retry_max", "Longest backoff.")
    max_queue_bytes: int = setting(
        64 * 1024**2, Z, "exporters.max_queue_bytes",
        "Per backend, in memory, before back-pressure on the receivers.",
    )  # fmt: skip
    max_batch_bytes: int = setting(
        4 * 1024**2, Z, "exporters.max_batch_bytes",
        "Largest forwarded request (big traces are split at fragments).",
    )  # fmt: skip
    shutdown_timeout: float = setting(
        10.0, D, "exporters.shutdown_timeout",
        "On SIGTERM: decide everything, flush this long, persist the rest.",
    )  # fmt: skip

    # --- storage: what survives a restart ---
    queue_dir: Path | None = setting(
        None, P, "storage.queue_dir", "Disk queue (SQLite WAL), replayed on start."
    )
    max_disk_queue_bytes: int | None = setting(
        None, Z, "storage.max_disk_queue_bytes",
        "Cap on the disk queue's database file (503 beyond it; null: what it holds plus half "
        "its volume's free space at start).",
    )  # fmt: skip
    dead_letter: Path | None = setting(
        None, P, "storage.dead_letter",
        "File for batches a target refused for good (OTLP/JSON lines with target, status and "
        "reason); null: they are dropped and counted.",
    )  # fmt: skip
    file_mode: int = setting(
        DEFAULT_FILE_MODE, Kind.MODE, "storage.file_mode",
        "Mode of every file serve creates (queue, output, dead letter, verdict lines); 0640 "
        "lets the group read them; the umask still applies.",
    )  # fmt: skip

    # --- decision: when a trace is judged ---
    decision_wait_after_root: float = setting(
        2.0, D, "decision.wait_after_root",
        "Judge a trace this long after its last span once its root is in.",
    )  # fmt: skip
    decision_wait: float = setting(
        30.0, D, "decision.wait", "...and at the latest this long after its first span."
    )
    tick: float = setting(
        0.02, D, "decision.tick",
        "How often the decision timer runs; latency beyond the waits is at most one tick.",
    )  # fmt: skip
    conversation_wait: float = setting(
        0.0, D, "decision.conversation_wait",
        "Hold finished traces whose runs carry gen_ai.conversation.id (or session.id) until "
        "the conversation is quiet this long, then judge them as one run (0: off).",
    )  # fmt: skip
    conversation_max_hold: float = setting(
        600.0, D, "decision.conversation_max_hold",
        "Judge a held conversation at the latest this long after its first trace was held.",
    )  # fmt: skip
    shadow_wait: float = setting(
        300.0, D, "decision.shadow_wait",
        "How long a decided shadow run waits for the stable run of its request before it is "
        "reported unpaired.",
    )  # fmt: skip
    shadow_max_pending: int = setting(
        10_000, N, "decision.shadow_max_pending",
        "Requests kept waiting for a partner, per side; the oldest gives way beyond it.",
        unit="requests",
    )  # fmt: skip

    # --- buffer: traces held until they are decided ---
    max_traces: int = setting(
        100_000, N, "buffer.max_traces",
        "Traces buffered at once before back-pressure (503 / UNAVAILABLE).",
        unit="traces",
    )  # fmt: skip
    max_buffered_bytes: int = setting(
        64 * 1024**2, Z, "buffer.max_bytes",
        "Span bytes buffered until their traces are decided (those being judged included).",
    )  # fmt: skip
    max_spans_per_trace: int = setting(
        20_000, N, "buffer.max_spans_per_trace",
        "A trace is judged early at this many spans; one request may bring no more of a "
        "trace (the rest are refused with partial success).",
        unit="spans",
    )  # fmt: skip
    decided_cache_size: int = setting(
        100_000, N, "buffer.decided_cache_size",
        "Decisions remembered to stamp late spans (in memory, and in the disk queue).",
        unit="decisions",
    )  # fmt: skip
    decided_cache_bytes: int = setting(
        8 * 1024**2, Z, "buffer.decided_cache_bytes",
        "Memory the remembered decisions may take; the oldest are forgotten beyond it.",
    )  # fmt: skip

    # --- graders: model graders after the verdict ---
    grader_max_concurrent: int = setting(
        4, N, "graders.max_concurrent", "Grader model calls open at once.", unit="calls"
    )
    grader_calls_per_minute: int = setting(
        60, N, "graders.calls_per_minute",
        "Grader model calls in any minute of the collector's clock, all graders together; a "
        "call over it is not made (not_evaluated, reason budget).",
        unit="calls/min",
    )  # fmt: skip
    grader_tokens_per_minute: int = setting(
        0, N, "graders.tokens_per_minute",
        "Tokens (input and output) grader calls may use in any minute of the collector's "
        "clock; a call while they are spent is not made (0: no token budget).",
        unit="tokens/min",
    )  # fmt: skip
    grader_run_deadline: float = setting(
        300.0, D, "graders.run_deadline",
        "Time from a run's verdict after which no grader call is made for it (not_evaluated, "
        "reason deadline; 0: none); an open call is bounded by its timeout_s.",
    )  # fmt: skip
    grader_traces: bool = setting(
        False, B, "graders.traces",
        "Send each grader model call's chat span (service tracejudge) to exporters.targets.",
    )  # fmt: skip

    # --- content: what forwarded spans keep ---
    drop_content: bool = setting(
        False, B, "content.drop",
        "Strip message and tool content from forwarded spans, and the values explanations "
        "quote (after judging: the rules see everything).",
    )  # fmt: skip
    redact_attributes: bool = setting(
        False, B, "content.redact_attributes",
        "Also redact secrets in every string attribute of forwarded spans (explanations, "
        "verdict lines, webhooks and logs are always scrubbed).",
    )  # fmt: skip
    redact_patterns: list[str] = setting_factory(
        list, Kind.REGEXES, "content.redact_patterns",
        "Extra regular expressions to redact, besides the shared secret detectors.",
    )  # fmt: skip

    # --- verdicts: the verdict stream ---
    verdicts_jsonl: str | None = setting(
        None, Kind.PATH_OR_STDOUT, "verdicts.jsonl",
        "Write each verdict as a JSON line to this file, or - for stdout (serve's default "
        "with no targets and no output).",
    )  # fmt: skip
    verdict_lines: bool = setting(
        False, B, "verdicts.lines",
        "One human line per judged run on stdout (serve turns it on unless the verdicts go "
        "to stdout as JSON lines).",
    )  # fmt: skip
    webhook: str | None = setting(
        None, U, "verdicts.webhook", "POST each verdict as JSON here (retried, never blocks)."
    )

    # --- metrics: the collector's own ---
    metrics_otlp_endpoint: str | None = setting(
        None, U, "metrics.otlp_endpoint", "Export the tracejudge.* metrics over OTLP/HTTP here."
    )
    metrics_interval: float = setting(10.0, D, "metrics.interval", "OTLP metrics export period.")
    metrics_case_slices: dict[str, list[str]] = setting_factory(
        dict, Kind.SLICES, "metrics.case_slices",
        "Case-slice label of the verdict metrics: slice name to case-id globs (first match; "
        "unmatched ids are other); case ids themselves are never a label.",
    )  # fmt: skip
    metrics_max_label_values: int = setting(
        100, N, "metrics.max_label_values",
        "Distinct values kept per verdict-metric label (agent, variant, version, failure "
        "code); later new values are counted as _overflow.",
        unit="values",
    )  # fmt: skip

    def tokens(self) -> list[str]:
        """The configured bearer tokens, read from their file and variable now."""
        return _access(access.tokens, self)

    def tokens_configured(self) -> bool:
        """Whether bearer tokens are required (a file or a variable is configured)."""
        return self.auth_token_file is not None or self.auth_token_env is not None

    def server_tls(self) -> ServerTls | None:
        """The receivers' TLS settings, or None for plaintext."""
        return access.server_tls(self)

    def target_options(self, url: str) -> TargetOptions:
        """Headers and TLS for one forward URL: its own entry over the global settings."""
        return access.target_options(self, url)

    def security_warnings(self) -> list[str]:
        """What start-up says loudly (``access.security_warnings``)."""
        return access.security_warnings(self)

    def validate(self, exporters: ExporterRegistry | None = None) -> CollectorConfig:
        """Check cross-field rules (``config_checks``), all of them; returns self so calls
        chain, or raises one ``ConfigError`` listing every problem. ``exporters``: the
        registry whose URL schemes ``forward`` may use (None: ``serve``'s)."""
        found = config_checks.problems(self, exporters=exporters)
        if found:
            raise ConfigError(*found)
        return self


SETTINGS = declared(CollectorConfig)
"""Every setting, in declaration order (the docs table's and the example file's)."""
TABLE = Table(SETTINGS, renamed={"health_port": "management_port"})
"""The settings by flat key, by section and key, by variable; ``health_port`` is
``management_port``'s former name."""
_EMPTY_MEANS_UNSET = frozenset({Kind.TARGETS, Kind.REGEXES, Kind.HEADERS})
"""Kinds whose empty value (a flag not repeated) leaves the layer below in place."""


def _access(check: Callable[[CollectorConfig], T], cfg: CollectorConfig) -> T:
    """Run an ``access`` function, its errors as ``ConfigError`` (naming the key)."""
    try:
        return check(cfg)
    except access.AccessError as exc:
        raise ConfigError(*exc.problems) from exc


def build_config(
    file_values: Mapping[str, Any],
    overrides: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    sets: Sequence[str] = (),
) -> CollectorConfig:
    """Merge a config file's mapping, ``TRACEJUDGE_*`` variables (``env``; none unless
    given), ``--set`` items and flag overrides (``None`` = not given), and validate.

    Precedence: defaults < file < environment < ``--set`` < flags. Keys may use ``-`` or
    ``_``; a file writes them nested or flat (``config_sources``). Unknown keys fail, so a
    typo never silently keeps a default. Every problem is collected, parse errors and rule
    findings alike, each naming the key as written, and raised as one ``ConfigError``; a
    rule over a key that failed to parse is skipped (``config_checks``).
    """
    return config_from(read_sources(TABLE, file_values, overrides, env, sets))


def config_from(items: Sequence[Item]) -> CollectorConfig:
    """The config the read layers describe (``read_sources``), or one ``ConfigError``."""
    merged: dict[str, Any] = {}
    found: list[str] = []
    failed: set[str] = set()
    labels: dict[str, str] = {}
    for item in items:
        if isinstance(item, str):
            found.append(item)
            continue
        kind = TABLE.by_name[item.name].kind
        if item.value is None or (kind in _EMPTY_MEANS_UNSET and item.value in ((), [], {})):
            continue
        try:
            value = coerce(kind, item.label, item.value)
        except ConfigError as exc:
            found.extend(exc.problems)
            failed.add(item.name)
            continue
        if kind is Kind.TARGETS:
            merged["forward"], merged["forward_target_options"] = value
        else:
            merged[item.name] = value
        labels[item.name] = item.label
    config = CollectorConfig(**merged)
    if any("." in label for label in labels.values()):  # the nested style: name keys so
        labels = {s.name: s.path for s in SETTINGS} | labels
    found.extend(relabel(config_checks.problems(config, frozenset(failed)), labels))
    if found:
        raise ConfigError(*found)
    return config


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML config file into a mapping, its relative paths made relative to the
    file's directory (``config_paths``); a non-mapping or bad YAML is a ConfigError."""
    from tracejudge.collector.config_paths import resolve_config_paths

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"config {path}: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"config {path}: expected a mapping at the top level")
    return resolve_config_paths(doc, path.parent, TABLE)
