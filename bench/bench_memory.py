"""Collector memory under a closed-loop burst: peak RSS of ``tracejudge serve`` with its
default limits.

Starts one ``tracejudge serve`` (the rules of the collector benchmark, default limits unless
``--serve-arg`` adds some) and fires the load generator (``bench/loadgen.py``, raw OTLP
protobuf requests over loopback, as fast as the collector takes them: it retries each
refused request after 10 ms) from several processes at once, over gRPC and HTTP, with
small (50 traces, ~360 KB) and large (500 traces, ~3.6 MB: near the 4 MiB request
limit) requests. The backend is a real
OTLP/HTTP receiver that is either quick (``--backend ok``) or down (``--backend down``:
the forward queue fills and stays full, the worst case). Reports the collector's peak RSS
(``VmHWM``), its RSS at the end, what was accepted and refused, and ``/metrics`` figures.

Run: ``.venv/bin/python bench/bench_memory.py [--seconds 20] [--backend ok|down]
[--serve-arg=--max-buffered-bytes=64MiB ...] [--tracejudge PATH]``. Loopback only; every
process it starts is stopped at the end. One JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_collector import (
    ROOT,
    SinkThread,
    free_port,
    metrics,
    record_templates,
    write_rules,
)


def status_kib(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` size field (``VmRSS``, ``VmHWM``), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def wait_listening(serve: subprocess.Popen[bytes], log_path: Path) -> tuple[int, int]:
    """The ports from the start-up line (ports 0: the collector picks free ones)."""
    end = time.monotonic() + 60
    while time.monotonic() < end and serve.poll() is None:
        m = re.search(
            r"OTLP/gRPC [\d.]+:(\d+), OTLP/HTTP http://[\d.]+:(\d+)", log_path.read_text()
        )
        if m:
            return int(m.group(1)), int(m.group(2))
        time.sleep(0.1)
    raise RuntimeError(f"tracejudge serve did not start: {log_path.read_text()[-2000:]}")


def main() -> int:
    """Run the burst and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--backend", choices=("ok", "down"), default="ok")
    ap.add_argument("--generators", type=int, default=4, help="load generator processes")
    ap.add_argument("--concurrency", type=int, default=16, help="requests in flight per one")
    ap.add_argument("--transports", default="grpc,http", help="spread over these")
    ap.add_argument("--sizes", default="50,50,500,500", help="traces per request, per generator")
    ap.add_argument("--serve-arg", action="append", default=[])
    ap.add_argument("--tracejudge", default=str(ROOT / ".venv" / "bin" / "tracejudge"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        templates = record_templates(tmp)
        rules = write_rules(tmp)
        sink = SinkThread()
        forward = f"http://127.0.0.1:{sink.port if args.backend == 'ok' else free_port()}"
        log_path = tmp / "serve.log"
        serve = subprocess.Popen(
            [args.tracejudge, "serve", "--rules", str(rules), "--forward", forward,
             "--grpc-port", "0", "--http-port", "0", *args.serve_arg],
            stderr=log_path.open("w"),
        )  # fmt: skip
        try:
            grpc_port, http_port = wait_listening(serve, log_path)
            start_rss = status_kib(serve.pid, "VmRSS")
            gens = []
            for i in range(args.generators):
                kinds = args.transports.split(",")
                kind = kinds[i % len(kinds)]
                port = grpc_port if kind == "grpc" else http_port
                target = f"{kind}://127.0.0.1:{port}"
                sizes = args.sizes.split(",")
                per_request = sizes[i % len(sizes)]
                cmd = [sys.executable, str(ROOT / "bench" / "loadgen.py"), "--target", target,
                       "--seconds", str(args.seconds), "--traces-per-request", per_request,
                       "--concurrency", str(args.concurrency)]  # fmt: skip
                for t in templates:
                    cmd += ["--template", str(t)]
                gens.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
            samples = []
            while any(g.poll() is None for g in gens):
                samples.append(status_kib(serve.pid, "VmRSS"))
                time.sleep(0.25)
            sent: dict[str, int] = {}
            for g in gens:
                out, _ = g.communicate(timeout=60)
                for k, v in json.loads(out.strip().splitlines()[-1]).items():
                    if isinstance(v, int):
                        sent[k] = sent.get(k, 0) + v
            snap = metrics(http_port)
            result: dict[str, Any] = {
                "backend": args.backend,
                "serve_args": args.serve_arg,
                "seconds": args.seconds,
                "start_rss_mib": round(start_rss / 1024, 1),
                "peak_rss_mib": round(status_kib(serve.pid, "VmHWM") / 1024, 1),
                "end_rss_mib": round(status_kib(serve.pid, "VmRSS") / 1024, 1),
                "sampled_max_rss_mib": round(max(samples or [0]) / 1024, 1),
                "accepted_spans": sent.get("sent_spans", 0),
                "refused_requests": sent.get("throttled", 0),
                "failed_requests": sent.get("errors", 0),
                "received_spans": snap["spans"]["received"],
                "forwarded_spans": snap["spans"]["forwarded"],
                "buffered_bytes": snap["buffered_bytes"],
                "decided_cache": snap["decided_cache"],
                "decided_cache_bytes": snap.get("decided_cache_bytes"),
                "memory": snap.get("memory"),
            }
        finally:
            serve.terminate()
            try:
                serve.wait(30)
            except subprocess.TimeoutExpired:
                serve.kill()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
