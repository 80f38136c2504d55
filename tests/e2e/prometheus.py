"""A real Prometheus (built by scripts/build-backends.sh) for end-to-end tests.

``start_prometheus`` runs it on a loopback port it picks (port 0; its log says which) with
a config that scrapes the given targets every second and evaluates the given rule files
every second, its TSDB in the work directory; ``PrometheusInstance.query`` runs an instant
PromQL query over its HTTP API.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.backends import (
    LOOPBACK,
    BackendError,
    ManagedProcess,
    _new_work_dir,
    http_get,
    http_ok,
    locate_binary,
    spawn,
    wait_until,
)
from tests.support.guards import WAIT_S
from tests.support.ports import logged

Sample = tuple[dict[str, str], float]
"""One series of an instant vector: its labels and value."""

LISTENING = re.compile(r'msg="Listening on" component=web address=127\.0\.0\.1:(\d+)\s')
"""The web server's line with the address it bound (the exporter-toolkit logs the
listener's own address, so port 0 reads back as the port it got)."""


@dataclass
class PrometheusInstance:
    """A running Prometheus; ``url`` is its HTTP API."""

    process: ManagedProcess
    port: int

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def query(self, expr: str) -> list[Sample]:
        """An instant query now; raises BackendError on an API error."""
        status, body = http_get(
            f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        )
        doc: dict[str, Any] = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise BackendError(f"query {expr!r}: HTTP {status}: {doc.get('error', body[:300])!r}")
        data = doc["data"]
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        return [(dict(r["metric"]), float(r["value"][1])) for r in data["result"]]

    def wait_for(
        self, expr: str, check: Any, *, what: str, timeout: float = WAIT_S
    ) -> list[Sample]:
        """Poll ``expr`` until ``check(samples)`` is true; the samples seen last on timeout
        are in the error, with the scrape targets' health."""
        deadline = time.monotonic() + timeout
        samples: list[Sample] = []
        while True:
            samples = self.query(expr)
            if check(samples):
                return samples
            if time.monotonic() >= deadline:
                _, targets = http_get(f"{self.url}/api/v1/targets")
                raise BackendError(
                    f"{what}: {expr!r} gave {samples!r} after {timeout:.0f}s; targets: "
                    f"{targets[:1500]!r}\n{self.process.read_log(3000)}"
                )
            time.sleep(0.25)

    def stop(self, timeout: float = WAIT_S) -> int:
        return self.process.stop(timeout)


def _config(targets: Sequence[str], rule_files: Sequence[Path]) -> str:
    rules = "".join(f"  - {json.dumps(str(p))}\n" for p in rule_files)
    return (
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n{rules}"
        "scrape_configs:\n  - job_name: tracejudge\n    scrape_interval: 1s\n"
        f"    static_configs:\n      - targets: {json.dumps(list(targets))}\n"
    )


def start_prometheus(
    targets: Sequence[str],
    rule_files: Sequence[Path],
    *,
    work_dir: Path | None = None,
    ready_timeout: float = WAIT_S,
) -> PrometheusInstance:
    """Start Prometheus scraping ``targets`` (``host:port``, path /metrics) with the rules.

    It binds port 0 and the port is read from its log: no port is picked free and bound
    later (another test suite on this machine could take it in between), so there is no
    clash to retry."""
    exe = locate_binary("prometheus")
    wd = _new_work_dir("prometheus-", work_dir)
    config = wd / "prometheus.yml"
    config.write_text(_config(targets, rule_files), encoding="utf-8")
    proc = spawn(
        "prometheus",
        [
            str(exe),
            f"--config.file={config}",
            f"--storage.tsdb.path={wd / 'data'}",
            f"--web.listen-address={LOOPBACK}:0",
        ],
        work_dir=wd,
    )
    try:
        found = logged(proc.popen, proc.log_path, LISTENING, "Prometheus listening", ready_timeout)
        port = int(found.group(1))
        wait_until(
            proc,
            http_ok(f"http://{LOOPBACK}:{port}/-/ready"),
            what="ready",
            timeout=ready_timeout,
        )
    except BaseException:
        proc.stop()
        raise
    return PrometheusInstance(proc, port)
