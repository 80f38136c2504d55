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
from collections.abc import Callable
from pathlib import Path

from tests.collector.collector_support import make_request, make_span, new_ids, post
from tests.support.guards import PROCESS_S
from tests.support.ports import ReservedPort
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
    proc.wait(timeout=PROCESS_S)
    raise AssertionError(f"no start-up line; stderr: {''.join(seen)}")


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=PROCESS_S)
    assert proc.returncode == 0, err
    return out, err


def _agent(variant: str, http_port: str) -> str:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{http_port}"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "refund" / "agent.py"), "--variant", variant],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=True,
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
            "verdicts: JSON lines to stdout"
        )
        # measured (CPU time): a file over the budget (max_rule_cost) would not have started
        assert float(start.group(4)) > 0
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
        assert start.group(3) == f"judged traces to {judged}; verdicts: one line per run on stdout"
        trace_id = _agent("silent_failure", start.group(2))
        # a trace with no agent run is kept too, unjudged
        tid, rid = new_ids()
        assert (
            post(int(start.group(2)), make_request([make_span(tid, rid)]).SerializeToString())[0]
            == 200
        )
    finally:
        out, _ = _stop(proc)
    # one human line per judged run (it used to go silent once the traces were kept)
    agent_line, bare_line = out.splitlines()
    assert re.fullmatch(
        r"fail  refund-duplicate-charge/silent_failure/\S+  F-OUTPUT-UNSUPPORTED_CLAIM "
        rf"\[refund-claim-needs-refund\]: the answer claims .+  \(trace {trace_id}\)",
        agent_line,
    ), out
    assert bare_line.startswith("warn  (unnamed run)  F-EVIDENCE-NO_FINAL_ANSWER")
    assert bare_line.endswith(f"(trace {tid.hex()})")
    spans = load_spans(judged)
    assert {s.trace_id for s in spans} == {trace_id, tid.hex()}
    (root,) = [s for s in spans if s.trace_id == trace_id and s.parent_span_id is None]
    assert root.attributes[sc.TRACEJUDGE_VERDICT] == "fail"
    assert root.attributes[sc.TRACEJUDGE_FAILURE_CODE] == "F-OUTPUT-UNSUPPORTED_CLAIM"
    done = subprocess.run(
        [str(BIN / "tracejudge"), "eval", "--rules", str(RULES), "--format", "json", str(judged)],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    verdicts = {v["trace_id"]: v for v in map(json.loads, done.stdout.splitlines())}
    verdict = verdicts[trace_id]
    assert verdict["verdict"] == "fail"
    assert verdict["primary"]["code"] == "F-OUTPUT-UNSUPPORTED_CLAIM"


def test_no_verdict_lines_says_verdicts_are_off(tmp_path: Path) -> None:
    """--no-verdict-lines with --output: nothing on stdout, and the start-up line says the
    verdicts are off and how to turn them on."""
    proc, start = _serve("--output", str(tmp_path / "judged.jsonl"), "--no-verdict-lines")
    try:
        assert start.group(3) == (
            f"judged traces to {tmp_path / 'judged.jsonl'}; "
            "verdicts: off (--verdict-lines prints one line per run on stdout)"
        )
        _agent("healthy", start.group(2))
    finally:
        out, _ = _stop(proc)
    assert out == ""


def test_an_unwritable_output_fails_at_start() -> None:
    """--output or --dead-letter to a file that cannot be written stops the start, as
    --verdicts-jsonl does (they used to start and lose every judged trace, or every refused
    batch, at the first write)."""
    for flag in ("--output", "--verdicts-jsonl", "--dead-letter"):
        done = subprocess.run(
            [str(BIN / "tracejudge"), "serve", "--rules", str(RULES), flag, "/proc/version",
             "--grpc-port", "0", "--http-port", "0"],
            capture_output=True, text=True, timeout=PROCESS_S, check=False,
        )  # fmt: skip
        key = flag.removeprefix("--").replace("-", "_")
        assert done.returncode == 2, (flag, done.stderr)
        assert done.stderr.splitlines()[-1] == (
            f"Error: {key}: cannot write /proc/version: Invalid argument"
        )
        assert "listening on" not in done.stderr


def test_lost_spans_make_the_exit_status_one(reserve_port: Callable[[], ReservedPort]) -> None:
    """A backend that never answers: the accepted spans are lost at shutdown, serve exits 1
    and says how to keep them next time (--queue-dir)."""
    dead = reserve_port().url
    proc, start = _serve("--forward", dead, "--shutdown-timeout", "1s")
    try:
        _agent("healthy", start.group(2))
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=PROCESS_S)
    assert proc.returncode == 1, err
    assert out.startswith("pass  refund-duplicate-charge/healthy/")
    last = err.splitlines()[-1]
    assert re.fullmatch(
        r"Error: \d+ accepted spans were lost; --queue-dir DIR keeps undelivered spans on "
        r"disk until the backend is back",
        last,
    ), err
