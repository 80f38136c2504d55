"""``tracejudge eval`` pairs the shadow runs of its files with their stable runs, and the
verdict readers (``gate``, ``report``) leave shadows out of user traffic.

The trace file holds runs made by the real instrumentation (tests/support/shadow_runs.py),
encoded by the OTel OTLP encoder and written as OTLP/JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.cli.cli_traces import write_json
from tests.support import shadow_runs
from tests.support.shadow_runs import run_once
from tracejudge.cli import main
from tracejudge.report.records import read_records

pytestmark = pytest.mark.usefixtures("instrumented")


def _files(tmp_path: Path, exporter: InMemorySpanExporter) -> tuple[Path, Path]:
    run_once("refund", request_id="r-1")
    run_once("no_refund", request_id="r-1", shadow=True, variant="v2")
    run_once("refund", request_id="r-2", shadow=True, variant="v2")  # no stable run
    rules = tmp_path / "rules.yaml"
    rules.write_text(shadow_runs.RULES, encoding="utf-8")
    traces = write_json(tmp_path / "traces.json", encode_spans(exporter.get_finished_spans()))
    return rules, traces


def test_eval_json_pairs_a_stable_and_a_shadow_run(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    """One verdict line per run, then one shadow line per shadow: r-1 diverged with the
    missing refund, r-2 unpaired (its stable run is not in the files). The runs pass their
    rules, so eval exits 0: a divergence is a report, not a failed run."""
    rules, traces = _files(tmp_path, span_exporter)
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(
        main,
        ["eval", "--rules", str(rules), "--format", "json", "--output", str(out), str(traces)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [ln.get("record") for ln in lines] == [None, None, None, "shadow", "shadow"]
    assert [ln.get("shadow", False) for ln in lines[:3]] == [False, True, True]
    diverged, lonely = lines[3:]
    assert (diverged["request_id"], diverged["outcome"]) == ("r-1", "diverged")
    assert diverged["findings"][0]["code"] == "F-SHADOW-MISSING_CALL"
    assert diverged["stable"]["trace_id"] == lines[0]["trace_id"]
    assert (lonely["request_id"], lonely["outcome"]) == ("r-2", "unpaired")
    assert out.read_text("utf-8").count('"record": "shadow"') == 2
    records = read_records(out)  # the shadow lines are skipped, the shadow runs flagged
    assert [r.shadow for r in records] == [False, True, True]


def test_eval_table_says_what_the_shadows_did(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    rules, traces = _files(tmp_path, span_exporter)
    result = CliRunner().invoke(
        main, ["eval", "--rules", str(rules), str(traces)], catch_exceptions=False
    )
    assert "shadow runs: 0 paired, 1 diverged, 1 unpaired" in result.output
    assert "diverged shadow" in result.output
    assert "F-SHADOW-MISSING_CALL" in result.output


def test_gate_over_eval_output_leaves_shadows_out(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    """The shadows' variant has runs in the file, but none of them is user traffic: the
    gate sees no run of it (inconclusive, exit 3) and one of the stable variant."""
    rules, traces = _files(tmp_path, span_exporter)
    out = tmp_path / "verdicts.jsonl"
    CliRunner().invoke(main, ["eval", "--rules", str(rules), "--output", str(out), str(traces)])

    def gate(variant: str) -> dict[str, object]:
        args = ["gate", str(out), "--agent", "support", "--variant", variant, "--min-runs", "1"]
        result = CliRunner().invoke(main, [*args, "--format", "json"], catch_exceptions=False)
        answer: dict[str, object] = json.loads(result.output)
        return answer

    assert gate("v2")["runs"] == 0
    assert gate("stable")["runs"] == 1


def test_report_leaves_shadows_out_and_counts_their_pairing(
    tmp_path: Path, span_exporter: InMemorySpanExporter
) -> None:
    """``report`` over eval's output: the statistics are the stable run's; one line says
    what the two shadows were judged and how pairing went."""
    rules, traces = _files(tmp_path, span_exporter)
    out = tmp_path / "verdicts.jsonl"
    CliRunner().invoke(main, ["eval", "--rules", str(rules), "--output", str(out), str(traces)])
    result = CliRunner().invoke(main, ["report", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (
        "shadow runs (not counted above): 2 judged; pairing: 0 paired, 1 diverged, 1 unpaired"
        in result.output
    )
    assert "v2" not in result.output.split("shadow runs")[0]
