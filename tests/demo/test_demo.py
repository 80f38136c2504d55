"""``tracejudge demo``: real OpenAI SDK, scripted model server, embedded collector, real engine."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.guards import PROCESS_S
from tests.support.ports import ReservedPort
from tracejudge import semconv
from tracejudge.cli import main
from tracejudge.demo.runner import DemoOptions, run_demo

from .otlp_sink import OtlpSink

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
BASELINES = ROOT / "examples" / "refund" / "baselines"
VARIANTS = ("healthy", "silent_failure", "wrong_order", "half_amount")


def _table(output: str) -> dict[str, list[str]]:
    """The rows of the printed table, by variant: [answer, verdict, code, span] (the answer
    from the run's "said:" line below the table)."""
    rows: dict[str, list[str]] = {}
    variant = None
    for line in output.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] in VARIANTS and len(cells) == 4:
            rows[cells[0]] = ["", *cells[1:]]
        elif line.split(":")[0] in VARIANTS:
            variant = line.split(":")[0]
        elif variant in rows and line.startswith("    said: "):
            rows[variant][0] = line.removeprefix("    said: ")
    return rows


def test_demo_command_judges_the_four_variants() -> None:
    """The README's main job: one command, no key, no network, the right verdict per variant."""
    command = [str(Path(sys.executable).parent / "tracejudge"), "demo"]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _table(done.stdout)
    assert set(rows) == set(VARIANTS), done.stdout
    assert rows["healthy"][1:3] == ["pass", "-"]
    assert rows["silent_failure"][1:3] == ["fail", "F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert rows["wrong_order"][1:3] == ["fail", "F-ACTION-ARG-ENTITY_BINDING"]
    assert rows["half_amount"][2].startswith("F-BASELINE-ARG_DRIFT")
    assert re.fullmatch(r"execute_tool refund_api\.create \([0-9a-f]{16}\)", rows["wrong_order"][3])
    assert "ord_A1001" in rows["wrong_order"][0]
    assert "4 runs judged in" in done.stdout


def test_demo_forwards_judged_traces_and_prints_links(tmp_path: Path) -> None:
    """--forward sends the stamped spans to a real OTLP receiver and prints a link per run."""
    page = tmp_path / "report.html"
    with OtlpSink() as sink:
        result = CliRunner().invoke(
            main,
            [
                "demo",
                "--rules",
                str(RULES),
                "--forward",
                sink.url,
                "--ui-url",
                "http://jaeger.example:16686/",
                "--html",
                str(page),
            ],
        )
        received = sink.spans
    assert result.exit_code == 0, result.output
    links = re.findall(r"open: http://jaeger\.example:16686/trace/([0-9a-f]{32})", result.output)
    assert len(set(links)) == 4
    roots = {s.trace_id: s for s in received if s.parent_span_id is None}
    assert set(roots) == set(links)
    verdicts = {s.attributes.get(semconv.TRACEJUDGE_VERDICT) for s in roots.values()}
    assert verdicts >= {"pass", "fail"}
    assert re.search(r"forwarded \d+ judged spans to http://127\.0\.0\.1:\d+", result.output)
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "F-ACTION-ARG-ENTITY_BINDING" in html


def test_a_dead_backend_gets_no_links_and_a_nonzero_exit(
    reserve_port: Callable[[], ReservedPort],
) -> None:
    """--forward to a port where nothing listens: the judged spans are lost, so no trace
    link is printed as if it worked, the exit status is 1 and the message says how to keep
    them next time (--queue-dir)."""
    dead = reserve_port().url
    result = CliRunner().invoke(main, ["demo", "--rules", str(RULES), "--forward", dead])
    assert result.exit_code == 1, result.output
    assert set(_table(result.stdout)) == set(VARIANTS)
    assert "open: " not in result.output
    assert re.search(
        rf"forwarded 0 judged spans to {dead}; \d+ could not be delivered \(no trace links",
        result.output,
    )
    assert "judged spans were lost" in result.output
    assert "--queue-dir DIR" in result.output


def test_bad_forward_url_is_a_clear_error() -> None:
    """A typo in --forward stops before anything runs, naming the accepted forms."""
    result = CliRunner().invoke(main, ["demo", "--rules", str(RULES), "--forward", "jaeger:4317"])
    assert result.exit_code == 1
    assert "grpc://host:port" in result.output


def test_a_variant_that_cannot_run_still_gets_a_row() -> None:
    """A broken run is reported as an error row next to the judged ones, never dropped."""
    outcome = run_demo(
        DemoOptions(rules=RULES, baselines=BASELINES, variants=("healthy", "no_such_script"))
    )
    rows = {r.variant: r for r in outcome.rows}
    assert rows["healthy"].verdict == "pass"
    assert rows["no_such_script"].verdict == "error"
    assert "unknown script 'no_such_script'" in rows["no_such_script"].explanation


@pytest.mark.parametrize("stream", [False, True])
def test_streaming_and_plain_completions_get_the_same_verdicts(stream: bool) -> None:
    """Judging must not depend on whether the agent streamed its model calls."""
    outcome = run_demo(
        DemoOptions(rules=RULES, baselines=BASELINES, stream=stream, variants=("wrong_order",))
    )
    (row,) = outcome.rows
    assert (row.verdict, row.code) == ("fail", "F-ACTION-ARG-ENTITY_BINDING")


def test_bad_rules_file_fails_fast_with_every_error(tmp_path: Path) -> None:
    """A broken rules file stops the demo before anything runs, listing each problem."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\nrules:\n  - id: x\n    layer: nope\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["demo", "--rules", str(rules)])
    assert result.exit_code == 1
    assert "rules[0].layer" in result.output
    assert "rules[0]: 'check' is a required property" in result.output
