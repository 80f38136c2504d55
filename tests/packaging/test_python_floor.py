"""tracejudge needs Python 3.11, and every place that states the floor says so.

Why: 3.10 was advertised while the CEL binding (cel-expr-python) needs 3.11, so on 3.10
`tracejudge demo` exited 1 and CEL rules failed to load. pip now refuses 3.10 by
``requires-python``; a checkout put on ``sys.path`` and ``make bootstrap`` say it in words.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.paths import REPO_ROOT

FLOOR_TEXT = "3.11"


def test_importing_on_python_3_10_says_what_is_needed() -> None:
    """The interpreter claims 3.10 before the import: the guard in ``tracejudge/__init__``."""
    code = (
        "import sys; sys.version_info = (3, 10, 14, 'final', 0); "
        "sys.version = '3.10.14 (main)'\n"
        "try:\n    import tracejudge\nexcept ImportError as exc:\n    print(exc)\n"
        "else:\n    print('imported')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
    ).stdout
    assert out.strip() == (
        "tracejudge needs Python 3.11 or newer (its CEL binding, cel-expr-python, does); "
        "this is Python 3.10.14"
    )


def test_bootstrap_refuses_an_older_python(tmp_path: Path) -> None:
    """``make bootstrap`` with a 3.10 interpreter stops before making a venv, and says how."""
    fake = tmp_path / "python3.10"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Python 3.10.14"; exit 0; fi\n'
        "exit 1\n"  # `-c 'sys.exit(sys.version_info < (3, 11))'` on 3.10
    )
    fake.chmod(0o755)
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "bootstrap.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": str(fake)},
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"bootstrap: tracejudge needs Python 3.11 or newer; {fake} is Python 3.10.14.",
        "bootstrap: run with PYTHON=python3.11 (or newer), e.g. PYTHON=python3.12 make test",
    ]


def test_every_statement_of_the_floor_agrees() -> None:
    """requires-python, the classifiers, ruff's and mypy's targets and the docs say 3.11."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["requires-python"] == f">={FLOOR_TEXT}"
    versions = [
        c.rsplit("::", 1)[1].strip()
        for c in project["project"]["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == FLOOR_TEXT
    assert project["tool"]["ruff"]["target-version"] == "py311"
    assert project["tool"]["mypy"]["python_version"] == FLOOR_TEXT
    deps = project["project"]["dependencies"]
    assert not [d for d in deps if "python_version" in d], "no dependency is version-gated"
    stated: dict[str, list[str]] = {}
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    pages += sorted((REPO_ROOT / "examples").glob("*/README.md"))
    for page in pages:
        text = page.read_text("utf-8")
        for found in re.findall(r"Python\s*(?:≥|>=|version)\s*(3\.\d+)", text):
            stated.setdefault(found, []).append(page.name)
    assert stated, "the README states the Python floor"
    assert set(stated) == {FLOOR_TEXT}, stated
