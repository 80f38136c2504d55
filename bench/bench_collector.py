"""Collector benchmark: one ``tracejudge serve`` process on one core, load from another.

Measures, with the engine benchmark's rules (the refund rules plus five more: 24 rules over
all four layers, CEL included) and real recorded 10-span refund-agent traces (one passing, two
failing runs), for the compiled build (the wheel a release ships, ``.venv-compiled``) and the
pure-Python build (``.venv``) side by side:
- sustained spans/s received, judged and forwarded (closed-loop load over loopback gRPC and
  HTTP; the collector pushes back when full, so the rate is what it can really finish), and
  the collector's CPU per decided trace (spans per CPU-second: comparable on a busy box),
- p50/p99 time from a trace being finished (its decision deadline) to its forward being
  acknowledged, at half the sustained rate,
- memory per buffered span against its wire size (RSS growth while holding traces),
- optionally the OpenTelemetry Collector with tail_sampling as an anchor (``--anchor``),
- optionally the same with a grader rule on every run (``--graders off,held,answering``):
  ``held``, the judge model never answers during the window (every grader thread waits on
  it); ``answering``, it answers at once, within the default call budget. The deterministic
  verdicts' rate must not move: graders run off the decision path. No language model can
  run here, so the judge is the tests' scripted loopback server (``tests/support``).

Run: ``make bench-collector`` (builds ``.venv-compiled`` first) or
``.venv/bin/python bench/bench_collector.py [--seconds 10] [--builds compiled,pure]
[--anchor] [--graders off,held,answering]``; ``make bench-collector-graders`` runs the
graders comparison. The collector is pinned to CPU 0; the load generator and the sink share
CPU 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
BUILDS = {
    "compiled": ROOT / ".venv-compiled" / "bin" / "tracejudge",
    "pure": ROOT / ".venv" / "bin" / "tracejudge",
}
"""The ``tracejudge`` executable of each build."""
VARIANTS = ("healthy", "wrong_order", "half_amount")
"""Refund-agent variants recorded as load templates: 10 spans each; pass, fail, fail."""


def free_port() -> int:
    """A free loopback port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SinkThread:
    """A cheap OTLP/HTTP backend: reads each body, answers 200, counts bytes."""

    def __init__(self) -> None:
        import asyncio

        from aiohttp import web

        self.port = free_port()
        self.bytes = 0
        self.requests = 0
        self.log_requests = 0
        self.loop = asyncio.new_event_loop()

        async def post(request: web.Request) -> web.Response:
            body = await request.read()
            self.bytes += len(body)
            self.requests += 1
            return web.Response(body=b"", content_type="application/x-protobuf")

        async def logs(request: web.Request) -> web.Response:
            await request.read()
            self.log_requests += 1
            return web.Response(body=b"", content_type="application/x-protobuf")

        async def start() -> None:
            app = web.Application(client_max_size=1 << 30)
            app.router.add_post("/v1/traces", post)
            app.router.add_post("/v1/logs", logs)  # grader outcomes (--graders)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()

        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)


def record_templates(tmp: Path) -> list[Path]:
    """Record the refund runs of ``VARIANTS`` with the instrumented demo agent."""
    out = []
    for variant in VARIANTS:
        path = tmp / f"{variant}.json"
        subprocess.run(
            [PY, str(ROOT / "examples/refund/agent.py"), "--variant", variant, "--trace-out",
             str(path)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        out.append(path)
    return out


def metrics(port: int) -> dict[str, Any]:
    """The collector's /metrics JSON."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    """Resident set size of a process, KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def write_rules(tmp: Path, extra: str = "", name: str = "rules.yaml") -> Path:
    """The engine benchmark's rule set as a rules file, ``extra`` rules appended."""
    from bench_engine import EXTRA_RULES

    path = tmp / name
    rules = (ROOT / "examples" / "refund" / "rules.yaml").read_text() + EXTRA_RULES + extra
    path.write_text(rules)
    return path


GRADER_RULE = """
  - id: bench-claims-backed
    layer: outcome
    severity: warn
    check:
      type: grader
      model: judge-1
      when: always
      timeout_s: 600
      base_url: {base_url}
      api_key_file: judge-key.txt
      properties:
        - id: claims_backed
          question: Every action the agent says it took is backed by a successful tool result.
"""
"""A grader on every run (``when: always``), so every verdict queues a model call."""
GRADER_MODES = ("off", "held", "answering")


def judge_server(mode: str) -> Any:
    """The scripted judge for ``mode`` (started), from the tests' support code."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.judge_server import HOLD, JudgeServer, openai_reply

    answer = {"properties": [{"id": "claims_backed", "answer": "insufficient_evidence",
                              "span_ids": [], "reason": "bench"}]}  # fmt: skip
    reply = HOLD if mode == "held" else openai_reply(json.dumps(answer))
    return JudgeServer([reply]).__enter__()


def grader_summary(m: dict[str, Any]) -> dict[str, Any] | None:
    """What the graders did, from a /metrics snapshot (None: no graders)."""
    g = m.get("graders")
    if not g:
        return None
    return {k: g.get(k) for k in ("runs", "waiting", "calls", "not_evaluated", "over_budget")}


class Serve:
    """A ``tracejudge serve`` process of one build, pinned to CPU 0."""

    rules: Path
    build = "compiled"
    graders = "off"
    """Which grader mode the rules file was written for (``GRADER_MODES``)."""
    stdout: int | None = None
    """Where the process's verdict lines go (None: this process's stdout)."""

    def __init__(self, sink: SinkThread, *extra: str) -> None:
        self.grpc = free_port()
        self.http = free_port()
        self.proc = subprocess.Popen(
            [str(BUILDS[self.build]), "serve", "--rules", str(self.rules),
             "--forward", f"http://127.0.0.1:{sink.port}",
             "--grpc-port", str(self.grpc), "--http-port", str(self.http), *extra],
            stdout=self.stdout,
        )  # fmt: skip
        os.sched_setaffinity(self.proc.pid, {0})
        end = time.monotonic() + 30
        while True:
            try:
                metrics(self.http)
                break
            except OSError:
                if time.monotonic() > end or self.proc.poll() is not None:
                    raise RuntimeError("tracejudge serve did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM and wait."""
        self.proc.terminate()
        self.proc.wait(30)


def loadgen(target: str, templates: list[Path], *args: str) -> subprocess.Popen[str]:
    """Start the load generator pinned to CPU 1."""
    cmd = [PY, str(ROOT / "bench/loadgen.py"), "--target", target]
    for t in templates:
        cmd += ["--template", str(t)]
    proc = subprocess.Popen([*cmd, *args], stdout=subprocess.PIPE, text=True)
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(proc.pid, {1})
    return proc


def throughput(sink: SinkThread, templates: list[Path], transport: str, seconds: float,
               wait: str, judge: Any = None) -> dict[str, Any]:  # fmt: skip
    """Closed-loop load; rates over the window after a warm-up of a quarter of it. ``judge``:
    the grader mode's judge server, whose held calls are let go before the collector stops."""
    # A small buffer makes back-pressure engage within the warm-up, so the window measures
    # the steady state (received = judged = forwarded), not a buffer filling up.
    # With graders, their outcomes go to the sink as log records, as a deployment sends them.
    logs = () if Serve.graders == "off" else ("--forward-logs", f"http://127.0.0.1:{sink.port}")
    serve = Serve(
        sink, "--decision-wait-after-root", wait, "--decision-wait", "30s", "--max-traces", "2000",
        *logs,
    )  # fmt: skip
    try:
        port = serve.grpc if transport == "grpc" else serve.http
        scheme = "grpc" if transport == "grpc" else "http"
        gen = loadgen(f"{scheme}://127.0.0.1:{port}", templates, "--seconds", str(seconds))
        time.sleep(seconds / 4)
        m0, t0, c0 = metrics(serve.http), time.monotonic(), cpu_seconds(serve.proc.pid)
        r0 = sink.requests
        time.sleep(seconds / 2)
        m1, t1, c1 = metrics(serve.http), time.monotonic(), cpu_seconds(serve.proc.pid)
        forwards = sink.requests - r0
        sent = json.loads(gen.communicate(timeout=seconds + 60)[0])
        dt = t1 - t0
        decided = m1["traces_decided"] - m0["traces_decided"]
        spans_per_trace = sent["sent_spans"] / max(1, sent["sent_traces"])
        return {
            "build": Serve.build,
            "graders": Serve.graders,
            "transport": transport,
            "received_spans_per_s": round((m1["spans"]["received"] - m0["spans"]["received"]) / dt),
            "judged_traces_per_s": round((m1["traces_decided"] - m0["traces_decided"]) / dt),
            "judged_spans_per_s": round(
                sent["sent_spans"]
                / max(1, sent["sent_traces"])
                * (m1["traces_decided"] - m0["traces_decided"])
                / dt
            ),
            "forwarded_spans_per_s": round(
                (m1["spans"]["forwarded"] - m0["spans"]["forwarded"]) / dt
            ),
            # CPU the collector spent per decided trace (receive, refusals, judging,
            # forwarding): the figure that does not depend on what else the machine runs.
            "collector_cpu_share": round((c1 - c0) / dt, 2),
            "cpu_us_per_trace": round((c1 - c0) / max(1, decided) * 1e6),
            "spans_per_cpu_second": round(decided * spans_per_trace / max(1e-9, c1 - c0)),
            "throttled_requests": sent["throttled"],
            "forward_requests_per_s": round(forwards / dt),
            # where judging ran at the end of the window and how often it moved (adaptive
            # judging; absent in builds before it)
            "judging": {k: m1.get("judging", {}).get(k) for k in ("on", "moves")},
            "grader_activity": grader_summary(m1),
            "loadgen": sent,
        }
    finally:
        if judge is not None:
            judge.release()
        serve.stop()


def latency(sink: SinkThread, templates: list[Path], rate: float, seconds: float,
            wait: str) -> dict[str, Any]:  # fmt: skip
    """Open-loop load at ``rate`` spans/s; decision latency percentiles beyond the wait."""
    serve = Serve(sink, "--decision-wait-after-root", wait, "--decision-wait", "30s")
    try:
        gen = loadgen(
            f"grpc://127.0.0.1:{serve.grpc}", templates, "--seconds", str(seconds),
            "--rate", str(rate), "--traces-per-request", "10",
        )  # fmt: skip
        gen.communicate(timeout=seconds + 60)
        time.sleep(float(wait.rstrip("s")) + 1.0)
        m = metrics(serve.http)
        lat = m["decision_latency_s"]
        return {
            "rate_spans_per_s": round(rate),
            "p50_ms": round(lat["p50"] * 1000, 1),
            "p99_ms": round(lat["p99"] * 1000, 1),
            "traces": lat["count"],
        }
    finally:
        serve.stop()


def memory(sink: SinkThread, templates: list[Path], traces: int) -> dict[str, Any]:
    """Hold ``traces`` traces (long waits) and compare RSS growth with their wire size."""
    serve = Serve(sink, "--decision-wait-after-root", "300s", "--decision-wait", "300s")
    try:
        time.sleep(0.5)
        before = rss_kib(serve.proc.pid)
        gen = loadgen(
            f"grpc://127.0.0.1:{serve.grpc}", templates, "--seconds", "120",
            "--traces", str(traces), "--traces-per-request", "50",
        )  # fmt: skip
        sent = json.loads(gen.communicate(timeout=180)[0])
        time.sleep(1.0)
        after = rss_kib(serve.proc.pid)
        m = metrics(serve.http)
        wire = sent["wire_bytes"]
        return {
            "buffered_spans": m["buffered_spans"],
            "wire_bytes": wire,
            "buffered_bytes": m["buffered_bytes"],
            "rss_growth_bytes": (after - before) * 1024,
            "buffer_over_wire": round(m["buffered_bytes"] / wire, 2),
            "rss_growth_over_wire": round((after - before) * 1024 / wire, 2),
            "rss_bytes_per_span": round((after - before) * 1024 / max(1, m["buffered_spans"])),
            "wire_bytes_per_span": round(wire / max(1, sent["sent_spans"])),
        }
    finally:
        serve.stop()


OTELCOL_CONFIG = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:OTLP_GRPC_PORT}
processors:
  batch:
    timeout: 100ms
    send_batch_size: 2048
  tail_sampling:
    decision_wait: ${env:WAIT}
    num_traces: 200000
    policies:
      - name: all
        type: always_sample
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:${env:SINK_PORT}
    compression: none
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [tail_sampling, batch]
      exporters: [otlphttp]
"""


def anchor(sink: SinkThread, templates: list[Path], seconds: float, wait: str) -> dict[str, Any]:
    """The OpenTelemetry Collector (tail_sampling, always_sample) under the same load."""
    sys.path.insert(0, str(ROOT / "tests"))
    from e2e.backends import start_otelcol  # type: ignore[import-not-found,unused-ignore]

    col = start_otelcol(
        OTELCOL_CONFIG,
        ports=("otlp_grpc",),
        env={"SINK_PORT": str(sink.port), "WAIT": wait, "GOMAXPROCS": "1"},
    )
    try:
        os.sched_setaffinity(col.process.pid, {0})
        gen = loadgen(f"grpc://{col.otlp_grpc_endpoint}", templates, "--seconds", str(seconds))
        time.sleep(seconds / 4)
        b0, t0 = sink.bytes, time.monotonic()
        time.sleep(seconds / 2)
        b1, t1 = sink.bytes, time.monotonic()
        sent = json.loads(gen.communicate(timeout=seconds + 60)[0])
        per_span = sent["wire_bytes"] / max(1, sent["sent_spans"])
        return {
            "forwarded_spans_per_s_est": round((b1 - b0) / per_span / (t1 - t0)),
            "received_spans_per_s": round(sent["sent_spans"] / sent["seconds"]),
            "note": "forwarded rate estimated from forwarded bytes / wire bytes per span",
        }
    finally:
        col.stop()


def main() -> int:
    """Run every phase and print a JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--wait", default="0.5s", help="decision_wait_after_root")
    parser.add_argument("--memory-traces", type=int, default=5000)
    parser.add_argument("--builds", default="compiled,pure", help="comma-separated: compiled,pure")
    parser.add_argument("--anchor", action="store_true", help="also run otelcol tail_sampling")
    parser.add_argument("--anchor-only", action="store_true", help="only the otelcol anchor")
    parser.add_argument(
        "--extra-build",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="another tracejudge executable to measure (e.g. an earlier commit's compiled "
        "wheel, for a before/after comparison in one run); name it in --builds",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat the throughput phase, builds alternating"
    )
    parser.add_argument("--throughput-only", action="store_true", help="skip latency and memory")
    parser.add_argument(
        "--graders",
        default="off",
        help="comma-separated grader modes for the throughput phase: off (no grader rule), "
        "held (a grader on every run; the judge never answers), answering (it answers at once)",
    )
    args = parser.parse_args()
    for extra in args.extra_build:
        name, _, path = extra.partition("=")
        if not name or not path:
            parser.error(f"--extra-build {extra!r}: expected NAME=PATH")
        BUILDS[name] = Path(path)
    sink = SinkThread()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "loadavg": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        templates = record_templates(Path(tmp))
        Serve.rules = base_rules = write_rules(Path(tmp))
        modes = [m for m in args.graders.split(",") if m]
        if any(m not in GRADER_MODES for m in modes) or not modes:
            parser.error(f"--graders {args.graders!r}: expected some of {', '.join(GRADER_MODES)}")
        (Path(tmp) / "judge-key.txt").write_text("sk-bench-judge-key-0123456789\n")
        builds = [b for b in args.builds.split(",") if b]
        for b in builds:
            if not BUILDS[b].exists():
                parser.error(f"{BUILDS[b]} is missing (make compiled / make bootstrap)")
        if not args.anchor_only:
            report["throughput"] = []
            configs = [(b, m) for b in builds for m in modes]
            for r in range(args.rounds):
                # alternate the order each round, so drifting load hits every build alike
                for b, mode in configs if r % 2 == 0 else configs[::-1]:
                    Serve.build, Serve.graders = b, mode
                    for t in ("grpc", "http"):
                        judge = None if mode == "off" else judge_server(mode)
                        if judge is not None:
                            extra = GRADER_RULE.format(base_url=judge.base_url)
                            Serve.rules = write_rules(Path(tmp), extra, f"rules-{mode}.yaml")
                        try:
                            report["throughput"].append(
                                throughput(sink, templates, t, args.seconds, args.wait, judge)
                            )
                        finally:
                            Serve.rules = base_rules
                            if judge is not None:
                                judge.__exit__(None, None, None)
                        print(json.dumps(report["throughput"][-1], indent=1), flush=True)
            if args.throughput_only:
                print(json.dumps(report, indent=1))
                return 0
            # Latency and memory on the build a release ships (the first one asked for).
            Serve.build = builds[0]
            best = min(
                r["forwarded_spans_per_s"] for r in report["throughput"] if r["build"] == builds[0]
            )
            report["latency"] = latency(sink, templates, best / 2, args.seconds, args.wait)
            print(json.dumps(report["latency"], indent=1), flush=True)
            report["memory"] = memory(sink, templates, args.memory_traces)
            print(json.dumps(report["memory"], indent=1), flush=True)
        if args.anchor or args.anchor_only:
            report["otelcol_tail_sampling"] = anchor(sink, templates, args.seconds, args.wait)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
