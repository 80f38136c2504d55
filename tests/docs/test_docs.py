"""The documentation is tested like code: links resolve and Python examples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("README.md")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"(<!-- docs-test: no-run[^>]*-->\s*)?```python\n(.*?)```", re.S)


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [m.group(1) for m in LINK.finditer(text)]


def _blocks() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for page in PAGES:
        for i, m in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            if m.group(1) is None:
                out.append((f"{page.relative_to(ROOT)}#{i}", m.group(2)))
    return out


def test_every_page_is_reachable_from_the_index() -> None:
    """A page nobody links to is a page nobody reads; docs/index.md must list every page."""
    index_links = {link.split("#")[0] for link in _links(ROOT / "docs" / "index.md")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md"}
    assert pages - index_links == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    """Broken links in docs are bugs: every relative link must name an existing file."""
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_python_examples_run(where: str, code: str, tmp_path: Path) -> None:
    """Examples users copy must work: each ```python block runs in a fresh interpreter."""
    env = dict(os.environ)
    env["OTEL_TRACES_EXPORTER"] = "none"
    env["OTEL_METRICS_EXPORTER"] = "none"
    env["OTEL_LOGS_EXPORTER"] = "none"
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    assert proc.returncode == 0, f"{where} failed:\n{proc.stdout}\n{proc.stderr}"


_TEST_REF = re.compile(r"`(test_[a-z0-9_]+\.py)::(test_[a-z0-9_]+)`")


def test_the_reliability_table_names_tests_that_exist() -> None:
    """Each row of the collector's fault table names the test that proves it; a renamed or
    deleted test would leave a claim with nothing behind it."""
    page = (ROOT / "docs" / "collector.md").read_text(encoding="utf-8")
    table = page[page.index("### Faults and what they cost") :]
    refs = _TEST_REF.findall(table)
    assert len(refs) >= 25
    missing = []
    for file, name in refs:
        source = ROOT / "tests" / "collector" / file
        if not source.is_file() or not re.search(rf"^def {name}\(", source.read_text(), re.M):
            missing.append(f"{file}::{name}")
    assert missing == []
