"""Every shell block in the docs runs, or says why it cannot run here.

A block a reader copies into a terminal is code: it runs in ``bash -eo pipefail`` from a
sandbox that looks like a checkout of this repository (``examples/``, ``collector/`` and
``.venv`` linked in) plus the placeholder files the pages name (``rules.yaml``,
``cases.yaml``, ``traces/*.json``, ``verdicts.jsonl``, ``baselines/``), with the project's
``tracejudge`` first on ``PATH``. A block that cannot run on this machine is preceded by
``<!-- docs-test: skip REASON -->`` naming one of :data:`SKIP_REASONS`; a block with a command
meant to fail says so with ``<!-- docs-test: exit N -->`` (each command may then exit 0 or N). A block with neither
that fails is a documentation bug.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("README.md")]
)
SHELL_FENCE = re.compile(
    r"(?:<!-- docs-test: (?P<mark>skip|exit) (?P<arg>[^>]*?) -->\s*)?```(?:sh|bash|shell)\n(?P<code>.*?)```",
    re.S,
)
SKIP_REASONS = frozenset(
    {
        "synopsis",  # a usage line with [optional] parts and placeholders, not a command
        "the test command itself",  # `make test` would run this suite inside itself
        "a server",  # `serve` runs until stopped; tests/collector runs it
        "needs docker",
        "needs kubernetes",
        "needs weaver",  # the semconv registry tool is not installed by make test
        "needs a model",  # a grader's endpoint and key; tests/graders runs it on a scripted judge
        "a deployment's files",  # secrets, certificates and hosts of a real deployment
        "other shells",  # zsh and fish lines beside the bash one
        "a fresh machine",  # clone / pip install of the project, done by make test itself
        "a benchmark",  # `make bench-*` runs in `make bench`; tests/examples checks its figures
    }
)


@dataclass(frozen=True)
class ShellBlock:
    where: str
    code: str
    skip: str | None
    exit_code: int


def _blocks() -> list[ShellBlock]:
    out: list[ShellBlock] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for i, m in enumerate(SHELL_FENCE.finditer(text)):
            mark, arg = m.group("mark"), (m.group("arg") or "").strip()
            out.append(
                ShellBlock(
                    where=f"{page.relative_to(ROOT)}#{i}",
                    code=m.group("code"),
                    skip=arg if mark == "skip" else None,
                    exit_code=int(arg) if mark == "exit" else 0,
                )
            )
    return out


BLOCKS = _blocks()


def _sandbox(tmp: Path) -> Path:
    """A directory where the pages' relative paths and placeholder names resolve."""
    for name in ("examples", "collector", ".venv"):
        (tmp / name).symlink_to(ROOT / name)
    refund = ROOT / "examples" / "refund"
    shutil.copy(refund / "rules.yaml", tmp / "rules.yaml")
    shutil.copytree(refund / "traces", tmp / "traces")
    shutil.copytree(refund / "baselines", tmp / "baselines")
    (tmp / "cases.yaml").write_text(
        "version: 1\n"
        "cases:\n"
        "  - id: refund-duplicate-charge\n"
        "    expected_actions:\n"
        "      - tool: refund_api.create\n",
        encoding="utf-8",
    )
    (tmp / "results.json").symlink_to(
        ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
    )
    _verdicts(tmp / "verdicts.jsonl")
    healthy = json.loads((refund / "traces" / "healthy.json").read_text(encoding="utf-8"))
    (tmp / "traces.jsonl").write_text(json.dumps(healthy) + "\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp)], check=True, timeout=PROCESS_S)
    return tmp


def _verdicts(path: Path) -> None:
    """Verdict lines of an agent ``refund`` under the variants the pages compare: 100 passing
    runs each (enough for the gate to decide)."""
    lines: list[str] = []
    for variant in ("stable", "v2-canary", "candidate"):
        for i in range(100):
            verdict: dict[str, object] = {
                "trace_id": f"{len(lines) + 1:032x}",
                "root_span_id": f"{len(lines) + 1:016x}",
                "agent": "refund",
                "case_id": f"refund-{i % 4}",
                "variant": variant,
                "run_id": f"{variant}-{i}",
                "experiment_id": None,
                "verdict": "pass",
                "layers": {
                    "outcome": "pass",
                    "trajectory": "pass",
                    "policy": "pass",
                    "budget": "pass",
                },
                "primary": None,
                "findings": [],
                "metrics": {},
                "rules_version": "sha256:0000000000000000",
            }
            lines.append(json.dumps(verdict))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for signal in ("TRACES", "METRICS", "LOGS"):
        env[f"OTEL_{signal}_EXPORTER"] = "none"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "120"
    return env


def test_every_skip_names_a_known_reason() -> None:
    """A skip is a claim about this machine; an unknown reason is a typo or an excuse."""
    unknown = {b.where: b.skip for b in BLOCKS if b.skip and b.skip not in SKIP_REASONS}
    assert unknown == {}


STATUS = re.compile(r"^::status (\d+) (.*)$", re.M)
TRAP = "trap 'echo \"::status $? $BASH_COMMAND\" >&2' ERR\n"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if not b.skip], ids=[b.where for b in BLOCKS if not b.skip]
)
def test_shell_block_runs(block: ShellBlock, tmp_path: Path) -> None:
    """Each command of a runnable block exits 0, or the status its page marks (``exit N``:
    eval's 1 for a failing run), and no command prints a traceback."""
    cwd = _sandbox(tmp_path)
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", TRAP + block.code],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    report = f"{block.where}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    allowed = {0, block.exit_code}
    failed = [(int(m.group(1)), m.group(2)) for m in STATUS.finditer(proc.stderr)]
    assert [f for f in failed if f[0] not in allowed] == [], report
    assert proc.returncode in allowed, report
    assert "Traceback (most recent call last)" not in proc.stderr, report
