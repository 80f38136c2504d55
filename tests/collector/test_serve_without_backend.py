"""``tracejudge serve`` with no trace backend: the real command, the real refund agent.

It used to refuse to start without ``--forward`` and said nothing at start without ``-v``.
Now, alone, it prints one start-up line with its addresses and the verdicts as JSON lines;
with ``--output FILE`` it keeps the judged traces as OTLP/JSON lines that ``tracejudge
eval`` reads back.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.collector.collector_support import make_request, make_span, new_ids, post
from tracejudge import semconv as sc
from tracejudge.model.files import load_spans

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
BIN = Path(sys.executable).parent
START = re.compile(
    r"^tracejudge serve: listening on OTLP/gRPC 127\.0\.0\.1:(\d+), "
    r"OTLP/HTTP http://127\.0\.0\.1:(\d+); (.*); rules cost ([0-9.]+) ms per 10-span run "
    r"\((\d+) rules\) \((pure-python|compiled) build\)$"
)


def _serve(*flags: str) -> tuple[subprocess.Popen[str], re.Match[str]]:
    """Start the real command on free ports; returns it once its start-up line is out.

    The line is the readiness signal: it is printed after the receivers are bound, and it
    carries the ports chosen for ``0``."""
    proc = subprocess.Popen(
        [
            str(BIN / "tracejudge"), "serve", "--rules", str(RULES),
            "--grpc-port", "0", "--http-port", "0", "--decision-wait-after-root", "200ms",
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        match = START.match(line.rstrip("\n"))
        if match:
            return proc, match
    proc.wait(timeout=10)
    raise AssertionError(f"no start-up line; stderr: {''.join(seen)}")


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out, err


def _agent(variant: str, http_port: str) -> str:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{http_port}"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "refund" / "agent.py"), "--variant", variant],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=90, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"trace: ([0-9a-f]{32})", out)
    assert match, out
    return match.group(1)


def test_alone_it_prints_its_addresses_and_the_verdicts() -> None:
    """``serve --rules R``: one start-up line on stderr (no ``-v``), verdict JSON on stdout;
    the line reports what the rules cost per run, measured on the synthetic run."""
    proc, start = _serve()
    try:
        assert start.group(3) == (
            "no backend: judged spans are not kept (--forward URL or --output FILE); "
            "verdicts as JSON lines to stdout"
        )
        assert 0 < float(start.group(4)) < 100  # the refund rules: well under the budget
        assert int(start.group(5)) > 10
        trace_id = _agent("wrong_order", start.group(2))
    finally:
        out, err = _stop(proc)
    (verdict,) = [json.loads(line) for line in out.splitlines()]
    assert verdict["trace_id"] == trace_id
    assert verdict["verdict"] == "fail"
    assert verdict["primary"]["code"] == "F-ACTION-ARG-ENTITY_BINDING"
    assert "Traceback" not in err


def test_output_keeps_the_judged_traces_for_eval(tmp_path: Path) -> None:
    """``--output FILE``: the stamped spans as OTLP/JSON lines; ``eval`` judges the file
    alike, and the root span carries the collector's verdict."""
    judged = tmp_path / "judged.jsonl"
    proc, start = _serve("--output", str(judged))
    try:
        assert start.group(3) == f"judged traces to {judged}"
        trace_id = _agent("silent_failure", start.group(2))
        # a trace with no agent run is kept too, unjudged
        tid, rid = new_ids()
        assert (
            post(int(start.group(2)), make_request([make_span(tid, rid)]).SerializeToString())[0]
            == 200
        )
    finally:
        out, _ = _stop(proc)
    assert out == ""  # verdicts are not printed when the traces are kept
    spans = load_spans(judged)
    assert {s.trace_id for s in spans} == {trace_id, tid.hex()}
    (root,) = [s for s in spans if s.trace_id == trace_id and s.parent_span_id is None]
    assert root.attributes[sc.TRACEJUDGE_VERDICT] == "fail"
    assert root.attributes[sc.TRACEJUDGE_FAILURE_CODE] == "F-OUTPUT-UNSUPPORTED_CLAIM"
    done = subprocess.run(
        [str(BIN / "tracejudge"), "eval", "--rules", str(RULES), "--format", "json", str(judged)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    verdicts = {v["trace_id"]: v for v in map(json.loads, done.stdout.splitlines())}
    verdict = verdicts[trace_id]
    assert verdict["verdict"] == "fail"
    assert verdict["primary"]["code"] == "F-OUTPUT-UNSUPPORTED_CLAIM"
