"""Where the collector's CPU goes: py-spy on one ``tracejudge serve`` under the collector
benchmark's closed-loop gRPC load, its samples classified by stage.

Each sampled stack is put in the stage of its innermost tracejudge module (judge, build the
run model, decode, stamp, decide and settle, forward, receive, buffer, ...), by file name so
that builds with another layout (an earlier commit's flat ``collector/``) classify alike.
Use a pure-Python build: py-spy sees no frames inside mypyc-compiled modules.

Run: ``make profile-collector`` (py-spy comes from bench/requirements-peers.txt), or
``.venv/bin/python bench/profile_collector.py [--build NAME=PATH ...] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_collector as bc

_MODEL = "build|run|steps|conversation|readers|messages|places|turns"
_FORWARD = (
    r"exporters/|/forward\.py|/fanout\.py|/payload\.py|aiohttp/client|/targets\.py|/sinks\.py"
)
_SETTLE = (
    "decide|judge|worker|modes|pipeline|decision|shadow|logs_intake|graders|decided|grading"
    "|logs_join"
)
STAGES = [
    ("judge (engine)", r"tracejudge/engine/|celpy|/cel"),
    ("build the run model", rf"tracejudge/model/({_MODEL})"),
    ("decode to records", r"decode_proto|otlp/records|to_records|model/decode|\(tracejudge/otlp/"),
    ("stamp", r"/stamp\.py"),
    ("redact", r"/redact\.py|redaction\.py"),
    ("receive and split", r"codec/otlp\.py|collector/otlp\.py|_receiver\.py|receivers/|http_guard"),
    ("buffer and hold", r"/(hold|buffer|conversations|inflight)\.py"),
    ("forward and serialize", _FORWARD),
    ("decide and settle", rf"/({_SETTLE})\.py"),
    ("metrics", r"telemetry/|/stats\.py|/flagger\.py"),
    ("gRPC and asyncio runtime", r"grpc|asyncio|selectors"),
]
"""(stage, pattern over a frame); the first stage whose pattern matches the innermost frame
that matches any, checked from the leaf up."""


def classify(frames: list[str]) -> str:
    """The stage of one sampled stack (``other`` when no frame names one)."""
    for f in reversed(frames):
        for name, pattern in STAGES:
            if re.search(pattern, f):
                return name
    return "other"


def profile(exe: Path, seconds: float, py_spy: str, out: Path) -> collections.Counter[str]:
    """Samples per stage of one serve of ``exe`` under load."""
    bc.BUILDS["profiled"] = exe
    bc.Serve.build = "profiled"
    sink = bc.SinkThread()
    with tempfile.TemporaryDirectory() as tmp:
        templates = bc.record_templates(Path(tmp))
        bc.Serve.rules = bc.write_rules(Path(tmp))
        serve = bc.Serve(sink, "--decision-wait-after-root", "0.5s", "--decision-wait", "30s",
                         "--max-traces", "2000")  # fmt: skip
        try:
            gen = bc.loadgen(f"grpc://127.0.0.1:{serve.grpc}", templates, "--seconds",
                             str(seconds * 2))  # fmt: skip
            time.sleep(seconds / 2)  # the steady state: the buffer full, pushing back
            subprocess.run(
                [py_spy, "record", "-p", str(serve.proc.pid), "-d", str(int(seconds)), "-r", "200",
                 "-f", "raw", "-o", str(out), "--nonblocking"],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            gen.communicate(timeout=seconds * 2 + 60)
        finally:
            serve.stop()
    counts: collections.Counter[str] = collections.Counter()
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            counts[classify(stack.split(";"))] += int(n)
    return counts


def main() -> int:
    """Profile each build and print the stage table side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", default=[], metavar="NAME=PATH",
                        help="a tracejudge executable (default: this tree's .venv)")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--py-spy", default=str(bc.ROOT / ".venv-bench" / "bin" / "py-spy"))
    args = parser.parse_args()
    builds = [b.partition("=")[::2] for b in args.build] or [("this", str(bc.BUILDS["pure"]))]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in builds:
            results[name] = profile(Path(path), args.seconds, args.py_spy, Path(tmp) / name)
    stages = sorted(
        {s for c in results.values() for s in c}, key=lambda s: -results[builds[0][0]][s]
    )
    print("| stage | " + " | ".join(n for n, _ in builds) + " |")
    print("|---|" + "---|" * len(builds))
    for stage in stages:
        cells = [
            f"{100 * results[n][stage] / max(1, sum(results[n].values())):.1f}%" for n, _ in builds
        ]
        print(f"| {stage} | " + " | ".join(cells) + " |")
    print("| samples | " + " | ".join(str(sum(results[n].values())) for n, _ in builds) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
