"""The repository stands on its own: a clone needs nothing beside it to pass its tests.

Why: the tests once read cassettes and OTLP payloads from a ``shared`` folder beside the checkout,
there on developers' machines but not in a clone from a public host, so ``git clone && make test``
failed 84 tests. The data now lives in ``tests/fixtures/`` (listed with origin and checksum in
its MANIFEST.tsv). These tests keep it that way: the manifest matches the files, no source
mentions the old folder, and the fixture-driven suites pass from a copy of the checkout with
no ``shared/`` beside it.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import paths
from tests.support.guards import PROCESS_S
from tests.support.replay import load_cassette

ROOT = paths.REPO_ROOT
FIXTURES = paths.FIXTURES

# What a clone would need from outside the repository: the old shared folder, by any spelling.
OUTSIDE = re.compile(r"\.\./shared|parent ?/ ?\"shared\"|/shared/(fixtures|datasets|reference)")
SCANNED = ("src", "tests", "scripts", "bench", "examples", "Makefile", ".ci")

# Suites that read the copied data: the replay server, the OpenAI and Anthropic instrumentation
# against their cassettes, the decoders on the OTLP reference payload, and collector conformance
# (~10 s on one core). The manifest test above covers the files no suite here opens.
CLONE_SUBSET = (
    "tests/instrumentation/test_replay_server.py",
    "tests/instrumentation/test_openai_chat.py",
    "tests/instrumentation/test_anthropic.py",
    "tests/model/test_model_decoders.py",
    "tests/collector/test_collector_conformance.py",
)


def _manifest() -> dict[str, str]:
    with (FIXTURES / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert rows, "MANIFEST.tsv lists no files"
    for row in rows:
        assert row["source"], row
        assert row["source_path"], row
        assert row["license"] == "Apache-2.0", row
    return {row["file"]: row["sha256_16"] for row in rows}


def test_manifest_lists_every_fixture_with_its_checksum() -> None:
    """Every copied file is listed (origin, licence, checksum) and unchanged since it was."""
    listed = _manifest()
    present = {
        p.relative_to(FIXTURES).as_posix()
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name not in {"MANIFEST.tsv", "LICENSE-Apache-2.0.txt", "README.md"}
    }
    assert present == set(listed)
    changed = {
        name
        for name, digest in listed.items()
        if hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest()[:16] != digest
    }
    assert changed == set()
    assert (
        (FIXTURES / "LICENSE-Apache-2.0.txt")
        .read_text(encoding="utf-8")
        .lstrip()
        .startswith("Apache License")
    )


def test_every_cassette_parses_and_has_interactions() -> None:
    """A cassette that fails to load would only show up in the one test that replays it."""
    cassettes = sorted(paths.CASSETTES.rglob("*.yaml"))
    assert {c.parent.name for c in cassettes} == {
        "openai",
        "anthropic",
        "openai-agents",
        "gemini",
        "bedrock",
        "mistral",
        "cohere",
    }
    empty = [c.name for c in cassettes if not load_cassette(c)]
    assert empty == []


def test_data_roots_lie_inside_the_repository() -> None:
    """Each place the tests read data from resolves inside this checkout."""
    for root in (paths.FIXTURES, paths.CASSETTES, paths.OTLP_REFERENCE, paths.GENAI_SCHEMAS):
        assert root.resolve().is_relative_to(ROOT), root
        assert root.is_dir(), root


def test_no_source_names_the_shared_folder() -> None:
    """Code, tests, scripts and CI never point at the ``shared`` folder beside the checkout
    (docstrings and comments included: they would send a reader looking for it)."""
    hits = []
    for top in SCANNED:
        base = ROOT / top
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for f in files:
            if not f.is_file() or "__pycache__" in f.parts or f.suffix in {".pyc", ".so"}:
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            for n, line in enumerate(text.splitlines(), 1):
                if OUTSIDE.search(line):
                    hits.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []


def _clone_files() -> list[str]:
    """What ``git clone`` of this checkout would hold, with the working tree's changes.

    A real ``git clone`` would test the last commit rather than the tree under test; git's own
    file list (tracked plus new files it does not ignore) gives the same set, uncommitted
    edits included.
    """
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in out.split("\0") if name and (ROOT / name).is_file()]


def test_fixture_suites_pass_from_a_clone_with_nothing_beside_it(tmp_path: Path) -> None:
    """The fixture-reading suites pass in a copy of the checkout that has no ``shared/`` beside
    it (and none of this checkout's untracked or ignored files, .venv included)."""
    clone = tmp_path / "tracejudge"
    for name in _clone_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    assert [p.name for p in clone.parent.iterdir()] == ["tracejudge"]  # nothing beside it
    env = dict(os.environ)
    # The dev venv imports tracejudge from this checkout's src (editable); the copy's own
    # sources go first so nothing is read from here.
    env["PYTHONPATH"] = str(clone / "src")
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import tracejudge, tests.support.paths as p; print(tracejudge.__file__, p.CASSETTES)",
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(w).is_relative_to(clone) for w in where), where
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CLONE_SUBSET],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, f"{summary}\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    assert re.search(r"\d+ passed", summary), summary
    assert "skipped" not in summary, summary
    assert "error" not in summary, summary
