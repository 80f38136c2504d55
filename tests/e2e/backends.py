"""Real trace backends (Jaeger v2, OpenTelemetry Collector) for end-to-end tests; the
binaries of Prometheus and promtool too (their instances: tests/e2e/prometheus.py).

The binaries are built from the Go module proxy at pinned versions by
``scripts/build-backends.sh`` into ``${TRACEJUDGE_CACHE_DIR:-~/.cache/tracejudge}/bin``
(outside the repository). This module asks that script for their paths (it
builds them the first time, several minutes cold; afterwards it answers in
milliseconds), runs them as subprocesses bound to 127.0.0.1 on ports reserved
for them (tests/support/ports.py), waits for readiness over HTTP/TCP and stops
them cleanly.

Only the standard library is used, so the fixtures work in any test venv.

Environment knobs:
    TRACEJUDGE_JAEGER_BIN / TRACEJUDGE_OTELCOL_BIN /
    TRACEJUDGE_PROMETHEUS_BIN / TRACEJUDGE_PROMTOOL_BIN
        use this binary instead of asking the build script.
    TRACEJUDGE_CACHE_DIR
        cache root for the build script (binaries, GOPATH, GOCACHE).
"""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from tests.support.guards import IO_S, WAIT_S
from tests.support.ports import ReservedPort

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "scripts" / "build-backends.sh"
JAEGER_CONFIG = REPO_ROOT / "collector" / "jaeger" / "config-memory.yaml"
LOOPBACK = "127.0.0.1"

BackendName = Literal["jaeger", "otelcol", "prometheus", "promtool"]
_BIN_ENV: dict[BackendName, str] = {
    "jaeger": "TRACEJUDGE_JAEGER_BIN",
    "otelcol": "TRACEJUDGE_OTELCOL_BIN",
    "prometheus": "TRACEJUDGE_PROMETHEUS_BIN",
    "promtool": "TRACEJUDGE_PROMTOOL_BIN",
}
# A cold build of both backends takes ~10 minutes on a 2-core machine.
BUILD_TIMEOUT_S = 45 * 60.0
# Port names every collector started by start_otelcol gets by default; the config
# text refers to them as ${env:OTLP_GRPC_PORT}, ${env:OTLP_HTTP_PORT}, ${env:HEALTH_PORT}.
DEFAULT_OTELCOL_PORTS: tuple[str, ...] = ("otlp_grpc", "otlp_http", "health")


class BackendError(RuntimeError):
    """A backend could not be built, started, or did not become ready."""


_located: dict[BackendName, Path] = {}
# A failed build is not retried within one test process (it would fail the same
# way, slowly, for every test); each later call re-raises it.
_failed: dict[BackendName, BackendError] = {}


# --------------------------------------------------------------------------- binaries


def locate_binary(name: BackendName, *, build: bool = True) -> Path:
    """Return the path of the cached ``jaeger`` or ``otelcol`` binary.

    ``TRACEJUDGE_<NAME>_BIN`` wins if set. Otherwise ``scripts/build-backends.sh``
    is asked (it only builds when the versioned binary is missing; its progress
    goes to stderr). With ``build=False`` a binary that is not built yet raises
    BackendError instead of being built.
    """
    override = os.environ.get(_BIN_ENV[name])
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise BackendError(f"{_BIN_ENV[name]}={override} is not an executable file")
        return path
    cached = _located.get(name)
    if cached is not None and os.access(cached, os.X_OK):
        return cached
    failed = _failed.get(name)
    if failed is not None:
        raise BackendError(str(failed))
    try:
        path = _run_build_script(name, build=build)
    except BackendError as exc:
        if build:
            _failed[name] = exc
        raise
    _located[name] = path
    return path


def _run_build_script(name: BackendName, *, build: bool) -> Path:
    argv = (
        ["bash", str(BUILD_SCRIPT), name]
        if build
        else ["bash", str(BUILD_SCRIPT), "--no-build", name]
    )
    try:
        result = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=None,  # build progress goes straight to our stderr
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"{BUILD_SCRIPT} {name} took over {BUILD_TIMEOUT_S:.0f}s") from exc
    if result.returncode != 0:
        raise BackendError(
            f"{BUILD_SCRIPT} {name} failed with exit code {result.returncode} (see its stderr)"
        )
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key == name:
            path = Path(value)
            if not os.access(path, os.X_OK):
                raise BackendError(f"{BUILD_SCRIPT} reported {path}, which is not executable")
            return path
    raise BackendError(f"{BUILD_SCRIPT} printed no '{name}=' line: {result.stdout!r}")


# --------------------------------------------------------------------------- ports


def release_all(reserved: Mapping[str, ReservedPort]) -> dict[str, int]:
    """Release each reserved port; returns the ports by name.

    For a backend told its ports on its command line, environment or config, that cannot
    bind port 0 and say where it listens: Jaeger and the OpenTelemetry Collector report
    their OTLP receivers' bound addresses but not their health endpoints' (nor which of a
    config's named ports a log line is about). Call it immediately before starting the
    process: the ports were the test's until then, and what remains of the window is the
    process's own start-up, in which another test suite on this machine can still take one
    of them; the backend then fails with "address already in use" and start_* retry on
    fresh ports.
    """
    return {name: port.release() for name, port in reserved.items()}


# --------------------------------------------------------------------------- processes


@dataclass
class ManagedProcess:
    """A backend subprocess whose stdout+stderr go to ``log_path``."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def is_running(self) -> bool:
        return self.popen.poll() is None

    def read_log(self, max_chars: int = 20_000) -> str:
        """Return the last ``max_chars`` characters of the process log."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-max_chars:]

    def stop(self, timeout: float = WAIT_S) -> int:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL; returns the exit code."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=timeout)
        return int(self.popen.returncode)


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGTERM when the test process dies.

    So a backend never outlives a pytest that was killed (e.g. by a CI timeout)
    before its fixtures could tear down.
    """
    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    work_dir: Path,
    env: Mapping[str, str] | None = None,
) -> ManagedProcess:
    """Start ``argv`` with its output appended to ``work_dir/<name>.log``."""
    work_dir.mkdir(parents=True, exist_ok=True)
    log_path = work_dir / f"{name}.log"
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=work_dir,
            env=full_env,
            start_new_session=True,  # a Ctrl-C in the terminal is for pytest, not for us
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    return ManagedProcess(name=name, popen=popen, log_path=log_path)


def _fail(proc: ManagedProcess, message: str) -> BackendError:
    return BackendError(
        f"{proc.name}: {message}\n--- {proc.log_path} (tail) ---\n{proc.read_log(4000)}"
    )


def http_get(url: str, timeout: float = IO_S) -> tuple[int, bytes]:
    """GET ``url``; returns (status, body), also for 4xx/5xx answers."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def wait_until(
    proc: ManagedProcess,
    check: Callable[[], bool],
    *,
    what: str,
    timeout: float,
    interval: float = 0.1,
) -> None:
    """Poll ``check`` until true; fail early if ``proc`` exits, or after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if not proc.is_running():
            raise _fail(proc, f"exited with code {proc.popen.returncode} before {what}")
        try:
            if check():
                return
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() >= deadline:
            raise _fail(proc, f"not {what} after {timeout:.0f}s")
        time.sleep(interval)


def http_ok(url: str) -> Callable[[], bool]:
    """A readiness check: GET ``url`` answers 200."""

    def check() -> bool:
        status, _ = http_get(url, timeout=2.0)
        return status == 200

    return check


def tcp_open(port: int) -> Callable[[], bool]:
    """A readiness check: something accepts TCP connections on 127.0.0.1:``port``."""

    def check() -> bool:
        with socket.create_connection((LOOPBACK, port), timeout=1.0):
            return True

    return check


def _looks_like_port_clash(proc: ManagedProcess) -> bool:
    return "address already in use" in proc.read_log().lower()


def _new_work_dir(prefix: str, parent: Path | None) -> Path:
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


# --------------------------------------------------------------------------- Jaeger


@dataclass
class JaegerInstance:
    """A running Jaeger v2 with in-memory storage, all on 127.0.0.1."""

    process: ManagedProcess
    otlp_grpc_port: int
    otlp_http_port: int
    query_http_port: int
    query_grpc_port: int
    health_port: int

    @property
    def otlp_grpc_endpoint(self) -> str:
        """``127.0.0.1:PORT``, for collector configs and the gRPC exporter (insecure)."""
        return f"{LOOPBACK}:{self.otlp_grpc_port}"

    @property
    def otlp_http_endpoint(self) -> str:
        """Base URL ``http://127.0.0.1:PORT`` of OTLP/HTTP (see otlp_http_traces_url)."""
        return f"http://{LOOPBACK}:{self.otlp_http_port}"

    @property
    def otlp_http_traces_url(self) -> str:
        return f"{self.otlp_http_endpoint}/v1/traces"

    @property
    def query_url(self) -> str:
        """Base URL of the query service (``/api/traces/{id}``, ``/api/v3/traces/{id}``)."""
        return f"http://{LOOPBACK}:{self.query_http_port}"

    def get_trace(
        self, trace_id_hex: str, *, timeout: float = WAIT_S, min_spans: int = 1
    ) -> dict[str, Any]:
        """Poll ``GET /api/traces/{id}`` until the trace has ``min_spans`` spans.

        Returns the trace object of Jaeger's JSON API: ``{"traceID", "spans":
        [{"spanID", "operationName", "tags": [{"key", "type", "value"}], "processID",
        ...}], "processes": {id: {"serviceName", "tags"}}}``. Raises
        TimeoutError if it is not there in time.
        """
        url = f"{self.query_url}/api/traces/{trace_id_hex.lower()}"

        def fetch() -> dict[str, Any] | None:
            status, body = http_get(url)
            if status != 200:
                return None
            data = json.loads(body).get("data") or []
            if data and len(data[0].get("spans") or []) >= min_spans:
                return cast(dict[str, Any], data[0])
            return None

        return self._poll(fetch, f"trace {trace_id_hex} with >= {min_spans} span(s)", timeout)

    def get_trace_otlp(self, trace_id_hex: str, *, timeout: float = WAIT_S) -> dict[str, Any]:
        """Poll ``GET /api/v3/traces/{id}``; returns the OTLP-JSON ``{"resourceSpans": [...]}``."""
        url = f"{self.query_url}/api/v3/traces/{trace_id_hex.lower()}"

        def fetch() -> dict[str, Any] | None:
            status, body = http_get(url)
            if status != 200:
                return None
            result = json.loads(body).get("result") or {}
            return cast(dict[str, Any], result) if result.get("resourceSpans") else None

        return self._poll(fetch, f"trace {trace_id_hex} (api/v3)", timeout)

    def find_traces(
        self, service: str, *, limit: int = 20, lookback: str = "1h"
    ) -> list[dict[str, Any]]:
        """One ``GET /api/traces?service=...`` search (no polling); [] if none."""
        query = urllib.parse.urlencode({"service": service, "limit": limit, "lookback": lookback})
        status, body = http_get(f"{self.query_url}/api/traces?{query}")
        if status != 200:
            return []
        return cast(list[dict[str, Any]], json.loads(body).get("data") or [])

    def _poll(
        self, fetch: Callable[[], dict[str, Any] | None], what: str, timeout: float
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if not self.process.is_running():
                raise _fail(self.process, f"exited while waiting for {what}")
            try:
                found = fetch()
            except (OSError, http.client.HTTPException, ValueError):
                found = None
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise TimeoutError(f"jaeger at {self.query_url}: no {what} after {timeout:.0f}s")
            time.sleep(0.1)

    def stop(self, timeout: float = WAIT_S) -> int:
        return self.process.stop(timeout)


def start_jaeger(
    *,
    binary: Path | None = None,
    config: Path = JAEGER_CONFIG,
    work_dir: Path | None = None,
    ready_timeout: float = WAIT_S,
    attempts: int = 3,
) -> JaegerInstance:
    """Start Jaeger v2 with in-memory storage on loopback ports reserved for it (see
    release_all) and wait until ready.

    ``config`` must take its addresses from the JAEGER_* variables that
    collector/jaeger/config-memory.yaml documents. Logs go to
    ``<work_dir>/jaeger.log`` (``work_dir`` defaults to a new temp dir).
    """
    exe = binary if binary is not None else locate_binary("jaeger")
    last_error: BackendError | None = None
    names = ("OTLP_GRPC", "OTLP_HTTP", "QUERY_HTTP", "QUERY_GRPC", "HEALTH")
    for _ in range(attempts):
        reserved = {name: ReservedPort() for name in names}
        try:
            run_dir = _new_work_dir("jaeger-", work_dir)
        finally:
            chosen = release_all(reserved)  # see release_all: the window of the start-up
        proc = spawn(
            "jaeger",
            [str(exe), "--config", str(config)],
            work_dir=run_dir,
            env={
                "JAEGER_LISTEN_HOST": LOOPBACK,
                **{f"JAEGER_{name}_PORT": str(port) for name, port in chosen.items()},
            },
        )
        grpc, http, query_http, query_grpc, health = (chosen[name] for name in names)
        instance = JaegerInstance(proc, grpc, http, query_http, query_grpc, health)
        try:
            wait_until(
                proc,
                http_ok(f"http://{LOOPBACK}:{health}/status"),
                what="healthy",
                timeout=ready_timeout,
            )
            wait_until(
                proc,
                http_ok(f"{instance.query_url}/api/services"),
                what="serving queries",
                timeout=ready_timeout,
            )
            for port in (grpc, http):
                wait_until(proc, tcp_open(port), what=f"listening on {port}", timeout=ready_timeout)
        except BackendError as exc:
            proc.stop()
            last_error = exc
            if _looks_like_port_clash(proc):
                continue
            raise
        return instance
    assert last_error is not None
    raise last_error


# --------------------------------------------------------------------------- OTel Collector


def _env_var_for_port(port_name: str) -> str:
    return f"{port_name.upper()}_PORT"


@dataclass
class OtelcolInstance:
    """A running OpenTelemetry Collector (the ocb-built ``otelcol-tracejudge``)."""

    process: ManagedProcess
    config_path: Path
    ports: dict[str, int] = field(default_factory=dict)

    def port(self, name: str) -> int:
        """The port that the config saw as ``${env:<NAME>_PORT}``."""
        try:
            return self.ports[name]
        except KeyError:
            raise KeyError(f"no port named {name!r}; have {sorted(self.ports)}") from None

    def endpoint(self, name: str) -> str:
        """``127.0.0.1:PORT`` for the named port."""
        return f"{LOOPBACK}:{self.port(name)}"

    @property
    def otlp_grpc_endpoint(self) -> str:
        return self.endpoint("otlp_grpc")

    @property
    def otlp_http_endpoint(self) -> str:
        """Base URL ``http://127.0.0.1:PORT`` (traces: + ``/v1/traces``)."""
        return f"http://{self.endpoint('otlp_http')}"

    def read_log(self, max_chars: int = 20_000) -> str:
        return self.process.read_log(max_chars)

    def stop(self, timeout: float = WAIT_S) -> int:
        return self.process.stop(timeout)


def start_otelcol(
    config_text: str,
    *,
    ports: Sequence[str] = DEFAULT_OTELCOL_PORTS,
    env: Mapping[str, str] | None = None,
    binary: Path | None = None,
    work_dir: Path | None = None,
    ready_timeout: float = WAIT_S,
    attempts: int = 3,
) -> OtelcolInstance:
    """Start a collector from ``config_text`` (YAML) and wait until it is ready.

    Each name in ``ports`` gets a reserved loopback port (see release_all), passed as
    the environment variable ``<NAME>_PORT`` (``otlp_grpc`` -> ``OTLP_GRPC_PORT``), so
    the config says e.g. ``endpoint: 127.0.0.1:${env:OTLP_GRPC_PORT}``. ``env`` adds
    more variables (e.g. a Jaeger endpoint).

    Readiness: if the config uses ``${env:HEALTH_PORT}`` (the health_check
    extension), GET on it must answer 200; otherwise every port the config
    refers to must accept TCP connections. Unless the config sets
    ``service::telemetry`` itself, the collector's own metrics endpoint (which
    would bind 8888 in every instance) is switched off.
    """
    exe = binary if binary is not None else locate_binary("otelcol")
    last_error: BackendError | None = None
    for _ in range(attempts):
        reserved = {name: ReservedPort() for name in ports}
        try:
            run_env = {_env_var_for_port(name): str(p.port) for name, p in reserved.items()}
            if env:
                run_env.update(env)
            run_dir = _new_work_dir("otelcol-", work_dir)
            config_path = run_dir / "config.yaml"
            config_path.write_text(config_text, encoding="utf-8")
            argv = [str(exe), "--config", f"file:{config_path}"]
            if "telemetry:" not in config_text:
                argv += ["--config", "yaml:service::telemetry::metrics::level: none"]
        finally:
            chosen = release_all(reserved)  # see release_all: the window of the start-up
        proc = spawn("otelcol", argv, work_dir=run_dir, env=run_env)
        instance = OtelcolInstance(proc, config_path, chosen)
        referenced = [n for n in chosen if f"${{env:{_env_var_for_port(n)}}}" in config_text]
        try:
            if "health" in referenced:
                url = f"http://{LOOPBACK}:{chosen['health']}/"
                wait_until(proc, http_ok(url), what="healthy", timeout=ready_timeout)
            for name in referenced:
                wait_until(
                    proc, tcp_open(chosen[name]), what=f"listening on {name}", timeout=ready_timeout
                )
            if not referenced:
                # Nothing to probe: at least make sure the config was accepted.
                time.sleep(1.0)
                if not proc.is_running():
                    raise _fail(proc, f"exited with code {proc.popen.returncode}")
        except BackendError as exc:
            proc.stop()
            last_error = exc
            if _looks_like_port_clash(proc):
                continue
            raise
        return instance
    assert last_error is not None
    raise last_error


class OtelcolFactory(Protocol):
    """Type of the ``otelcol_factory`` fixture: start_otelcol bound to the test's tmp dir."""

    def __call__(
        self,
        config_text: str,
        *,
        ports: Sequence[str] = DEFAULT_OTELCOL_PORTS,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = WAIT_S,
    ) -> OtelcolInstance: ...
