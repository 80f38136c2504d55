"""Collector settings: one dataclass, loaded from YAML and overridden by flags.

Bad configuration must stop the collector at start with a message naming the key, not
surface hours later as a dropped trace, so every value is parsed and range-checked here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import yaml

from tracejudge.collector import config_checks
from tracejudge.collector.security import access
from tracejudge.collector.security.credentials import display_url
from tracejudge.collector.security.tls import ServerTls, TargetOptions
from tracejudge.collector.storage.files import DEFAULT_FILE_MODE

if TYPE_CHECKING:
    from tracejudge.collector.exporters.registry import ExporterRegistry


class ConfigError(ValueError):
    """Configuration values that are missing, unknown or out of range: ``problems`` lists
    every one found, each starting with its key path (``forward[1].headers: ...``)."""

    def __init__(self, *problems: str) -> None:
        super().__init__(*problems)
        self.problems: tuple[str, ...] = problems

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0]
        lines = "\n".join(f"  {p}" for p in self.problems)
        return f"{len(self.problems)} problems in the configuration:\n{lines}"


T = TypeVar("T")


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*$")
_SIZE = re.compile(r"^\s*([0-9]+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(key: str, value: Any) -> float:
    """Seconds from ``2s``, ``200ms``, ``1m`` or a bare number of seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a duration like '2s' or '200ms', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ConfigError(f"{key}: expected a duration like '2s' or '200ms', got {value!r}")
        seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
    if seconds < 0:
        raise ConfigError(f"{key}: must not be negative, got {value!r}")
    return seconds


def parse_size(key: str, value: Any) -> int:
    """Bytes from ``16MiB``, ``512KB`` or a bare integer."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a size like '16MiB', got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise ConfigError(f"{key}: expected a size like '16MiB', got {value!r}")
        size = int(m.group(1)) * _SIZE_UNITS[(m.group(2) or "b").lower()]
    if size <= 0:
        raise ConfigError(f"{key}: must be positive, got {value!r}")
    return size


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

    rules: Path | None = None
    """Rules file; required unless a judge object is handed to ``Collector`` directly."""
    forward: list[str] = field(default_factory=list)
    """Backends to forward judged traces to, ``URL`` or ``NAME=URL``; none is allowed (see
    ``output``). Disk-queue rows follow the name (``targets.py``), not the URL."""
    forward_logs: str | None = None
    """Where received OTLP log records go after their trace is judged (``http://`` or
    ``grpc://``; Jaeger takes no logs, so this is apart from ``forward``). None: they are
    used for judging and counted as not kept."""
    evaluation_logs: bool = False
    """Also send each rule outcome to ``forward_logs`` as a ``gen_ai.evaluation.result``
    log record (the span-event copy stays)."""
    output: Path | None = None
    """File to append the judged traces to as OTLP/JSON lines (``tracejudge eval`` reads it);
    with no ``forward`` and no ``output`` the judged spans are not kept, only verdicts."""
    baselines: Path | None = None
    """Baselines directory (as ``tracejudge eval --baselines``) for the baseline rules."""
    cases: Path | None = None
    """Cases file (as ``tracejudge eval --cases``): runs are judged against their case."""
    strict: bool = False
    """Undecided findings take their rule's severity (as ``tracejudge eval --strict``)."""
    host: str = "127.0.0.1"
    """Listen address. Loopback by default: spans carry prompts, so exposing them is opt-in."""
    grpc_port: int = 4317
    http_port: int = 4318
    management_port: int | None = None
    """A separate listener for ``/healthz``, ``/metrics`` and ``/v1/gate``; when set, the
    OTLP/HTTP port serves ``/v1/traces`` only (``health_port`` is its former name)."""
    management_host: str | None = None
    """The management listener's address (None: ``host``)."""
    auth_token_file: Path | None = None
    """Bearer tokens, one per line, that every request must present (``/healthz`` aside)."""
    auth_token_env: str | None = None
    """Name of an environment variable holding a bearer token (as ``auth_token_file``)."""
    insecure_no_auth: bool = False
    """Allow a non-loopback address without tokens or client certificates (refused
    otherwise: anyone who can reach the port could send spans and read ``/metrics``)."""
    tls_cert: Path | None = None
    """PEM certificate (chain) for both receivers and the management listener."""
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    """Require client certificates signed by this CA (mutual TLS; authenticates clients)."""
    forward_headers: dict[str, str] = field(default_factory=dict)
    """Headers sent to every backend; values ``env:NAME``, ``file:PATH`` or literal."""
    forward_ca_file: Path | None = None
    """CA bundle to verify ``https://`` / ``grpcs://`` backends (default: system store)."""
    forward_client_cert: Path | None = None
    forward_client_key: Path | None = None
    forward_insecure_skip_verify: bool = False
    """Do not verify https backends' certificates (explicit only; not for grpcs)."""
    forward_target_options: dict[str, TargetOptions] = field(default_factory=dict)
    """Per-target headers and TLS, from ``forward:`` entries written as mappings."""
    decision_wait_after_root: float = 2.0
    decision_wait: float = 30.0
    conversation_wait: float = 0.0
    """Hold finished traces whose runs carry ``gen_ai.conversation.id`` (or ``session.id``)
    until their conversation has been quiet this long, then judge its traces as one run
    (as ``tracejudge eval`` does). 0 (the default): off, every trace is judged alone."""
    conversation_max_hold: float = 600.0
    """Judge a held conversation at the latest this long after its first trace was held."""
    shadow_wait: float = 300.0
    """How long a decided shadow run waits for the stable run of its request (and a stable
    run that names a request id for its shadows) before it is reported unpaired."""
    shadow_max_pending: int = 10_000
    """Requests kept waiting for a partner, per side; the oldest gives way beyond it."""
    grader_max_concurrent: int = 4
    """Grader rules' model calls open at once (grader threads; ``processors/graders.py``)."""
    grader_calls_per_minute: int = 60
    """Grader model calls in any minute of the collector's clock, all graders together;
    a call over it is not made (``not_evaluated``, reason ``budget``)."""
    grader_tokens_per_minute: int = 0
    """Tokens (input and output, as the providers report them) grader calls may use in any
    minute of the collector's clock, all graders together; a call while they are spent is
    not made (``not_evaluated``, reason ``budget``). 0 (the default): no token budget."""
    grader_run_deadline: float = 300.0
    """Seconds of the collector's clock from a run's verdict after which no grader call is
    made for it (``not_evaluated``, reason ``deadline``): grades that come later than this
    are stale. 0: no deadline. A call already open is bounded by its ``timeout_s``."""
    grader_traces: bool = False
    """Send each grader model call's ``chat`` span (a span of the collector's own service)
    to the ``forward`` targets; off, they are not made."""
    tick: float = 0.02
    """How often the decision timer runs; latency beyond the waits is at most one tick."""
    drop_content: bool = False
    """Strip message and tool content from forwarded spans, and the values explanations
    quote (after judging: the rules see everything)."""
    redact_attributes: bool = False
    """Also redact secrets in every string attribute of forwarded spans (explanations,
    verdict lines, webhooks and logs are always scrubbed)."""
    redact_patterns: list[str] = field(default_factory=list)
    """Extra regular expressions to redact, besides the shared secret detectors."""
    passthrough: bool = False
    verdicts_jsonl: str | None = None
    verdict_lines: bool = False
    """One human line per judged run on stdout (``serve`` turns it on unless the verdicts
    already go to stdout as JSON lines)."""
    webhook: str | None = None
    queue_dir: Path | None = None
    dead_letter: Path | None = None
    """File for batches a target refused permanently (OTLP/JSON lines with the target, status
    and reason); None: they are dropped and counted, as before."""
    max_traces: int = 100_000
    max_buffered_bytes: int = 64 * 1024**2
    """Span bytes buffered until their traces are decided (with those being judged)."""
    max_spans_per_trace: int = 20_000
    """A trace is judged early at this many spans; one request may bring no more of a
    trace (the rest are refused with partial success)."""
    max_traces_per_request: int = 10_000
    """Traces one request may bring (at most ``max_traces`` too); spans of the others are
    refused with partial success naming the limit."""
    max_request_bytes: int = 4 * 1024**2
    """4 MiB, the default gRPC message limit that Jaeger, Tempo and otelcol also use."""
    max_queue_bytes: int = 64 * 1024**2
    """Per backend, in memory; held exactly (decisions wait while a queue lacks room)."""
    max_inflight_request_bytes: int = 32 * 1024**2
    """OTLP request bodies being read at once (HTTP and gRPC); beyond it 503 + Retry-After
    / UNAVAILABLE."""
    grpc_max_concurrent_streams: int = 4
    """OTLP/gRPC calls in flight per connection (more wait at the client). Each may hold a
    message of up to ``max_request_bytes`` in grpc-core before the collector reads it; 4
    took no throughput in ``bench/bench_memory.py`` (docs/collector.md, Memory)."""
    grpc_bdp_probe: bool = False
    """grpc-core's BDP probing, which grows each stream's flow-control window so a client
    can send whole messages before they are read. Off, a stream has a 64 KiB window and
    unread messages wait at the client; turn it on for clients on high-latency links."""
    max_disk_queue_bytes: int | None = None
    """Cap on the disk queue's database file (SQLite ``max_page_count``); None: what it
    holds plus half its volume's free space at start (``headroom.py``)."""
    file_mode: int = DEFAULT_FILE_MODE
    """Mode of every file the collector creates (disk queue, ``output``, ``dead_letter``,
    ``verdicts_jsonl``); the umask still applies. 0600: the owner only."""
    max_batch_bytes: int = 4 * 1024**2
    decided_cache_size: int = 100_000
    """Most decisions remembered for late spans (in memory, and in the disk queue)."""
    decided_cache_bytes: int = 8 * 1024**2
    """Memory the remembered decisions may take (estimated per entry, see
    ``buffer.decision_bytes``); the oldest are forgotten beyond it or ``decided_cache_size``."""
    max_judge_lag: float = 5.0
    """Receivers push back ("retry later") while the oldest due trace waits longer than
    this to be judged: judging has fallen behind the arrivals."""
    max_rule_cost: float | None = 0.1
    """Budget for judging one run: a rules file costing more on the synthetic 10-span run
    is refused at start, and each live run over it is counted and logged (None or 0: off)."""
    max_judge_time: float | None = 10.0
    """CPU time judging one trace may take (the rules engine's); a run not judged by then
    gets verdict ``error`` saying so and its spans are forwarded (None or 0: off)."""
    forward_timeout: float = 10.0
    retry_initial: float = 0.2
    retry_max: float = 10.0
    retry_after_hint: float = 1.0
    """Retry-After sent to clients when the collector throttles them."""
    shutdown_timeout: float = 10.0
    http_idle_timeout: float = 60.0
    """An OTLP/HTTP connection must start a request this soon after opening or after its
    previous answer (aiohttp's keep-alive timeout too)."""
    http_header_timeout: float = 10.0
    """A request head must be complete this soon after its first byte (slowloris)."""
    http_body_timeout: float = 30.0
    """A request body must be complete this soon after its head (408 otherwise)."""
    http_max_connections_per_client: int = 256
    """Open OTLP/HTTP connections one client address may hold; more are refused."""
    grpc_keepalive_time: float = 60.0
    """The gRPC server pings a connection idle this long..."""
    grpc_keepalive_timeout: float = 20.0
    """...and drops it when the ping is not answered this soon."""
    grpc_max_connection_idle: float | None = 300.0
    """A gRPC connection with no call this long is closed (None: never)."""
    grpc_max_connection_age: float | None = None
    """A gRPC connection older than this gets a GOAWAY (None: never, as otelcol)."""
    grpc_max_connection_age_grace: float = 10.0
    """Time calls in flight get after that GOAWAY."""
    grpc_handshake_timeout: float = 10.0
    """A gRPC connection must finish its HTTP/2 handshake this soon."""
    metrics_otlp_endpoint: str | None = None
    metrics_interval: float = 10.0
    metrics_case_slices: dict[str, list[str]] = field(default_factory=dict)
    """Case-slice label of the verdict metrics: slice name -> case-id globs (first match in
    order; unmatched ids are ``other``). Case ids themselves are never a label."""
    metrics_max_label_values: int = 100
    """Distinct values kept per verdict-metric label (agent, variant, version, failure
    code); later new values are counted as ``_overflow``."""

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


_DURATIONS = {
    "grader_run_deadline",
    "decision_wait_after_root",
    "decision_wait",
    "conversation_wait",
    "conversation_max_hold",
    "shadow_wait",
    "tick",
    "forward_timeout",
    "retry_initial",
    "retry_max",
    "retry_after_hint",
    "shutdown_timeout",
    "metrics_interval",
    "http_idle_timeout",
    "http_header_timeout",
    "http_body_timeout",
    "grpc_keepalive_time",
    "grpc_keepalive_timeout",
    "grpc_max_connection_idle",
    "grpc_max_connection_age",
    "grpc_max_connection_age_grace",
    "grpc_handshake_timeout",
    "max_judge_lag",
    "max_rule_cost",
    "max_judge_time",
}
_SIZES = {"max_buffered_bytes", "max_request_bytes", "max_queue_bytes", "max_batch_bytes"}
_SIZES |= {"max_disk_queue_bytes", "decided_cache_bytes", "max_inflight_request_bytes"}
_INTS = {"grpc_port", "http_port", "management_port", "max_traces", "max_spans_per_trace"}
_INTS |= {"decided_cache_size", "http_max_connections_per_client", "metrics_max_label_values"}
_INTS |= {"grpc_max_concurrent_streams", "max_traces_per_request"}
_BOOLS = {"drop_content", "passthrough", "redact_attributes", "insecure_no_auth"}
_BOOLS |= {"forward_insecure_skip_verify", "grpc_bdp_probe"}
_STRS = {"host", "verdicts_jsonl", "webhook", "metrics_otlp_endpoint", "management_host"}
_STRS |= {"auth_token_env"}
_BOOLS |= {"evaluation_logs", "verdict_lines", "strict"}
_STRS |= {"forward_logs"}
_INTS |= {"shadow_max_pending", "grader_max_concurrent", "grader_calls_per_minute"}
_INTS |= {"grader_tokens_per_minute"}
_BOOLS |= {"grader_traces"}
_PATHS = {"rules", "queue_dir", "baselines", "cases", "output", "dead_letter"}
_PATHS |= {"auth_token_file", "tls_cert", "tls_key", "tls_client_ca", "forward_ca_file"}
_PATHS |= {"forward_client_cert", "forward_client_key"}
_RENAMED = {"health_port": "management_port"}
"""Former key names still accepted."""
_INTERNAL = {"forward_target_options"}
"""Fields set from other keys, not settable themselves."""


def _access(check: Callable[[CollectorConfig], T], cfg: CollectorConfig) -> T:
    """Run an ``access`` function, its errors as ``ConfigError`` (naming the key)."""
    try:
        return check(cfg)
    except access.AccessError as exc:
        raise ConfigError(*exc.problems) from exc


def _coerce(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key == "forward_headers":
        try:
            return access.parse_headers(key, value)
        except access.AccessError as exc:
            raise ConfigError(*exc.problems) from exc
    if key in _DURATIONS:
        return parse_duration(key, value)
    if key in _SIZES:
        return parse_size(key, value)
    if key in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if key in _STRS:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    if key in _PATHS:
        if not isinstance(value, str | Path):
            raise ConfigError(f"{key}: expected a path, got {value!r}")
        return Path(value)
    if key == "redact_patterns":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(p, str) for p in items):
            raise ConfigError(f"redact_patterns: expected a list of regexes, got {value!r}")
        for pattern in items:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"redact_patterns: {pattern!r} is not a regex: {exc}") from exc
        return list(items)
    if key == "metrics_case_slices":
        return _case_slices(value)
    if key == "file_mode":
        return _file_mode(value)
    raise ConfigError(f"unknown key {key!r}")


def _file_mode(value: Any) -> int:
    """An octal mode: ``"0640"`` or ``"640"`` (flags and quoted YAML), or the number YAML
    reads from an unquoted ``0640``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"0?o?[0-7]{3}", value.strip()):
        return int(value.strip().lstrip("0o") or "0", 8)
    raise ConfigError(f"file_mode: expected an octal mode like '0600' or '0640', got {value!r}")


def _case_slices(value: Any) -> dict[str, list[str]]:
    """``{slice: glob | [glob, ...]}``; a slice named ``other`` would merge with the unmatched."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"metrics_case_slices: expected a mapping of slice name to case-id globs, got {value!r}"
        )
    out: dict[str, list[str]] = {}
    for name, globs in value.items():
        items = [globs] if isinstance(globs, str) else globs
        if not isinstance(name, str) or not name or name == "other":
            raise ConfigError(f"metrics_case_slices: {name!r} is not a usable slice name")
        if not isinstance(items, list) or not items or not all(isinstance(g, str) for g in items):
            raise ConfigError(
                f"metrics_case_slices.{name}: expected a glob or a list of globs, got {globs!r}"
            )
        out[name] = list(items)
    return out


def build_config(file_values: dict[str, Any], overrides: dict[str, Any]) -> CollectorConfig:
    """Merge a config file's mapping with flag overrides (``None`` = not given) and validate.

    Keys may use ``-`` or ``_``. Unknown keys fail, so a typo never silently keeps a default.
    Every problem is collected, parse errors and rule findings alike, and raised as one
    ``ConfigError``; a rule over a key that failed to parse is skipped (``config_checks``).
    """
    known = {f.name for f in dataclasses.fields(CollectorConfig)} - _INTERNAL
    merged: dict[str, Any] = {}
    found: list[str] = []
    failed: set[str] = set()
    empty_means_unset = ("forward", "redact_patterns", "forward_headers")
    for source in (file_values, overrides):
        for raw_key, value in source.items():
            key = raw_key.replace("-", "_")
            key = _RENAMED.get(key, key)
            if key not in known:
                found.append(f"unknown key {raw_key!r} (known: {', '.join(sorted(known))})")
                continue
            if value is None or (key in empty_means_unset and value in ((), [], {})):
                continue
            try:
                if key == "forward":
                    try:
                        entries = access.forward_entries(value)
                    except access.AccessError as exc:
                        raise ConfigError(*exc.problems) from exc
                    merged["forward"], merged["forward_target_options"] = entries
                else:
                    merged[key] = _coerce(key, value)
            except ConfigError as exc:
                found.extend(exc.problems)
                failed.add(key)
    config = CollectorConfig(**merged)
    found.extend(config_checks.problems(config, frozenset(failed)))
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
    return resolve_config_paths(doc, path.parent, _PATHS)
