"""Scale-out sizing benchmark: one ``tracejudge serve`` alone, then the real OpenTelemetry
Collector's ``load_balancing`` exporter in front of N instances, in one run.

The primary figure is CPU, not wall time: collector CPU-seconds per 1,000 spans, read from
/proc for each process (user + system, all threads) over a measuring window. It does not
depend on what else the machine runs, so it stays meaningful on a shared, loaded box; wall
throughput is printed as context together with the load average.

Phases, with the collector benchmark's rules (24 rules over all four layers, CEL included)
and its real recorded 10-span refund-agent traces (one passing, two failing runs):
- ``single``: one instance under closed-loop OTLP/gRPC load (the load generator sends as
  fast as the instance accepts): judged spans/s, CPU-seconds per 1,000 spans.
- ``lb-N`` for each N in ``--instances`` (default 2,3): the shipped
  collector/loadbalancing/otelcol-loadbalancing.yaml (transform processor for keyless spans,
  batch, ``load_balancing`` with ``routing_key: attributes``), its addresses changed to
  loopback, in front of N instances, under open-loop load at ``--lb-rate-factor`` (0.5) of
  the single instance's judged rate, so nothing queues: the balancer's own CPU per 1,000
  spans and each instance's. The recorded traces carry no route key, so every span takes
  the transform processor's trace-id fallback as well (the balancer's dearer path).

From these: per-core capacity = 1,000 / (CPU-seconds per 1,000 spans); instances for a load
L = ceil(L / (per-instance capacity * headroom)); balancer cores = L * its CPU per span.
``--plan L`` prints that for a load L (spans/s).

Run: ``make bench-scaleout`` or ``.venv/bin/python bench/bench_scaleout.py [--seconds 20]
[--build compiled|pure] [--instances 2,3] [--headroom 0.7] [--plan 50000]``. The OTel
Collector binary is the one tests/e2e use (``TRACEJUDGE_OTELCOL_BIN`` or
scripts/build-backends.sh's cache). ``--plan-only`` does the arithmetic on figures given
with ``--instance-cpu-ms`` and ``--lb-cpu-ms`` (CPU-milliseconds per 1,000 spans), without
running anything.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHIPPED_LB = ROOT / "collector" / "loadbalancing" / "otelcol-loadbalancing.yaml"
"""The load-balancer configuration the project ships."""


# --------------------------------------------------------------------------- arithmetic


def cpu_ms_per_1000(cpu_seconds: float, spans: float) -> float:
    """CPU-milliseconds spent per 1,000 spans."""
    if spans <= 0:
        raise ValueError(f"no spans in the window (cpu {cpu_seconds:.3f}s): nothing to divide by")
    return cpu_seconds * 1e6 / spans


def per_core_capacity(cpu_ms: float) -> float:
    """Spans/s one fully used core sustains at ``cpu_ms`` CPU-milliseconds per 1,000 spans."""
    if cpu_ms <= 0:
        raise ValueError(f"CPU per 1,000 spans must be positive, got {cpu_ms}")
    return 1e6 / cpu_ms


@dataclass(frozen=True)
class Plan:
    """What a load needs: tracejudge instances (one core each) and balancer cores."""

    load_spans_per_s: float
    headroom: float
    instance_capacity_spans_per_s: float
    instances: int
    lb_cores: float


def plan(load: float, instance_cpu_ms: float, lb_cpu_ms: float, headroom: float) -> Plan:
    """Instances for ``load`` spans/s = ceil(load / (per-core capacity * headroom)), each
    instance one core (``tracejudge serve`` judges on one core); balancer cores = load *
    its CPU per span / headroom."""
    if not 0 < headroom <= 1:
        raise ValueError(f"headroom must be in (0, 1], got {headroom}")
    if load < 0:
        raise ValueError(f"load must not be negative, got {load}")
    capacity = per_core_capacity(instance_cpu_ms)
    return Plan(
        load_spans_per_s=load,
        headroom=headroom,
        instance_capacity_spans_per_s=round(capacity),
        instances=max(1, math.ceil(load / (capacity * headroom))),
        lb_cores=round(load * lb_cpu_ms / 1e6 / headroom, 2),
    )


# --------------------------------------------------------------------------- measuring


def lb_config(backends: list[int]) -> str:
    """The shipped load-balancer config with loopback addresses for ``backends``."""
    import yaml

    cfg = yaml.safe_load(SHIPPED_LB.read_text(encoding="utf-8"))
    protocols = cfg["receivers"]["otlp"]["protocols"]
    protocols["grpc"]["endpoint"] = "127.0.0.1:${env:OTLP_GRPC_PORT}"
    protocols["http"]["endpoint"] = "127.0.0.1:${env:OTLP_HTTP_PORT}"
    cfg["extensions"]["health_check"]["endpoint"] = "127.0.0.1:${env:HEALTH_PORT}"
    cfg["exporters"]["load_balancing"]["resolver"]["static"]["hostnames"] = [
        f"127.0.0.1:{p}" for p in backends
    ]
    return str(yaml.safe_dump(cfg, sort_keys=False))


def _unpin(pid: int) -> None:
    """Let a process run on every CPU (the collector benchmark's Serve pins to CPU 0)."""
    os.sched_setaffinity(pid, set(range(os.cpu_count() or 1)))


def _window(serves: list[Any], lb_pid: int | None, seconds: float) -> dict[str, Any]:
    """CPU and span counts over the middle half of a ``seconds`` load (after a quarter)."""
    from bench_collector import cpu_seconds, metrics

    # The load generator takes a while to start on a busy machine: the warm-up begins when
    # the first spans have arrived.
    end = time.monotonic() + 120
    while sum(metrics(s.http)["spans"]["received"] for s in serves) == 0:
        if time.monotonic() > end:
            raise RuntimeError("no spans arrived within 120 s of starting the load")
        time.sleep(0.1)
    time.sleep(seconds / 4)
    m0 = [metrics(s.http) for s in serves]
    c0 = [cpu_seconds(s.proc.pid) for s in serves]
    l0 = cpu_seconds(lb_pid) if lb_pid else 0.0
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    time.sleep(seconds / 2)
    m1 = [metrics(s.http) for s in serves]
    c1 = [cpu_seconds(s.proc.pid) for s in serves]
    l1 = cpu_seconds(lb_pid) if lb_pid else 0.0
    dt = time.monotonic() - t0
    return {
        "dt": dt,
        "received": [
            b["spans"]["received"] - a["spans"]["received"] for a, b in zip(m0, m1, strict=True)
        ],
        "decided": [b["traces_decided"] - a["traces_decided"] for a, b in zip(m0, m1, strict=True)],
        "cpu": [b - a for a, b in zip(c0, c1, strict=True)],
        "lb_cpu": l1 - l0,
        "loadavg_1m": round((load0 + os.getloadavg()[0]) / 2, 2),
    }


def _instance_row(received: int, decided: int, cpu: float, dt: float,
                  spans_per_trace: float) -> dict[str, Any]:  # fmt: skip
    judged = decided * spans_per_trace
    return {
        "judged_spans_per_s": round(judged / dt),
        "received_spans_per_s": round(received / dt),
        "cpu_share": round(cpu / dt, 2),
        "cpu_ms_per_1000_spans": round(cpu_ms_per_1000(cpu, judged), 1),
    }


def single(sink: Any, templates: list[Path], seconds: float, wait: str) -> dict[str, Any]:
    """One instance, closed-loop OTLP/gRPC load: what one instance finishes."""
    from bench_collector import Serve, loadgen

    serve = Serve(
        sink, "--decision-wait-after-root", wait, "--decision-wait", "30s", "--max-traces", "2000"
    )
    try:
        gen = loadgen(f"grpc://127.0.0.1:{serve.grpc}", templates, "--seconds", str(seconds))
        w = _window([serve], None, seconds)
        sent = json.loads(gen.communicate(timeout=seconds + 60)[0])
    finally:
        serve.stop()
    spt = sent["sent_spans"] / max(1, sent["sent_traces"])
    row = _instance_row(w["received"][0], w["decided"][0], w["cpu"][0], w["dt"], spt)
    return {"phase": "single", "loadavg_1m": w["loadavg_1m"], **row, "loadgen": sent}


def balanced(sink: Any, templates: list[Path], n: int, rate: float, seconds: float,
             wait: str) -> dict[str, Any]:  # fmt: skip
    """The shipped load balancer in front of ``n`` instances at ``rate`` spans/s."""
    from bench_collector import Serve, loadgen

    sys.path.insert(0, str(ROOT))
    from tests.e2e.backends import start_otelcol

    serves: list[Any] = []
    col = None
    try:
        for _ in range(n):
            serves.append(Serve(sink, "--decision-wait-after-root", wait, "--decision-wait", "30s"))
            _unpin(serves[-1].proc.pid)
        col = start_otelcol(lb_config([s.grpc for s in serves]))
        gen = loadgen(
            f"grpc://{col.otlp_grpc_endpoint}", templates, "--seconds", str(seconds),
            "--rate", str(rate), "--traces-per-request", "10",
        )  # fmt: skip
        w = _window(serves, col.process.pid, seconds)
        sent = json.loads(gen.communicate(timeout=seconds + 60)[0])
    finally:
        if col is not None:
            col.stop()
        for s in serves:
            s.stop()
    spt = sent["sent_spans"] / max(1, sent["sent_traces"])
    rows = [
        _instance_row(r, d, c, w["dt"], spt)
        for r, d, c in zip(w["received"], w["decided"], w["cpu"], strict=True)
    ]
    judged = sum(w["decided"]) * spt
    return {
        "phase": f"lb-{n}",
        "loadavg_1m": w["loadavg_1m"],
        "offered_spans_per_s": round(rate),
        "judged_spans_per_s": round(judged / w["dt"]),
        "lb_cpu_share": round(w["lb_cpu"] / w["dt"], 2),
        "lb_cpu_ms_per_1000_spans": round(cpu_ms_per_1000(w["lb_cpu"], judged), 1),
        "instances_cpu_ms_per_1000_spans": round(cpu_ms_per_1000(sum(w["cpu"]), judged), 1),
        "instances": rows,
        "loadgen": sent,
    }


def main() -> int:
    """Run the phases (or only the arithmetic) and print a JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--wait", default="0.5s", help="decision_wait_after_root")
    parser.add_argument("--build", default="compiled", choices=("compiled", "pure"))
    parser.add_argument("--instances", default="2,3", help="comma-separated instance counts")
    parser.add_argument("--lb-rate-factor", type=float, default=0.5)
    parser.add_argument("--headroom", type=float, default=0.7)
    parser.add_argument("--plan", type=float, action="append", default=[], metavar="SPANS_PER_S")
    parser.add_argument("--plan-only", action="store_true", help="no measuring: arithmetic only")
    parser.add_argument("--instance-cpu-ms", type=float, help="with --plan-only")
    parser.add_argument("--lb-cpu-ms", type=float, help="with --plan-only")
    args = parser.parse_args()
    counts = [int(c) for c in args.instances.split(",") if c]
    if any(c < 1 for c in counts):
        parser.error(f"--instances {args.instances!r}: counts must be at least 1")
    if not 0 < args.headroom <= 1:
        parser.error(f"--headroom {args.headroom}: must be in (0, 1]")
    if args.plan_only:
        if args.instance_cpu_ms is None or args.lb_cpu_ms is None or not args.plan:
            parser.error("--plan-only needs --plan, --instance-cpu-ms and --lb-cpu-ms")
        try:
            plans = [
                plan(p, args.instance_cpu_ms, args.lb_cpu_ms, args.headroom) for p in args.plan
            ]
        except ValueError as exc:
            parser.error(str(exc))
        print(json.dumps({"plans": [asdict(p) for p in plans]}, indent=1))
        return 0

    sys.path.insert(0, str(HERE))
    from bench_collector import BUILDS, Serve, SinkThread, record_templates, write_rules

    if not BUILDS[args.build].exists():
        parser.error(f"{BUILDS[args.build]} is missing (make compiled / make bootstrap)")
    Serve.build = args.build
    Serve.stdout = subprocess.DEVNULL
    sink = SinkThread()
    report: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "build": args.build,
        "loadavg_at_start": os.getloadavg(),
        "phases": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        templates = record_templates(Path(tmp))
        Serve.rules = write_rules(Path(tmp))
        one = single(sink, templates, args.seconds, args.wait)
        report["phases"].append(one)
        print(json.dumps(one, indent=1), flush=True)
        rate = one["judged_spans_per_s"] * args.lb_rate_factor
        for n in counts:
            row = balanced(sink, templates, n, rate, args.seconds, args.wait)
            report["phases"].append(row)
            print(json.dumps(row, indent=1), flush=True)
    lbs = [p for p in report["phases"] if p["phase"].startswith("lb-")]
    instance_ms = one["cpu_ms_per_1000_spans"]
    lb_ms = max((p["lb_cpu_ms_per_1000_spans"] for p in lbs), default=0.0)
    report["sizing"] = {
        "instance_cpu_ms_per_1000_spans": instance_ms,
        "per_core_capacity_spans_per_s": round(per_core_capacity(instance_ms)),
        "lb_cpu_ms_per_1000_spans": lb_ms,
        "lb_per_core_capacity_spans_per_s": round(per_core_capacity(lb_ms)) if lb_ms else None,
        "plans": [asdict(plan(p, instance_ms, lb_ms, args.headroom)) for p in args.plan],
    }
    report["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
