"""The installed package works on its own: a wheel in a fresh venv, run from an empty directory.

Why: every other test runs tracejudge from this checkout (an editable install), where files
outside the package are within reach. ``pip install tracejudge && tracejudge demo`` once failed
anywhere else, because the demo read its rules from the repository's ``examples/``. Here the
wheel is built from the checkout (pure Python, what an install without a C compiler gets),
installed into new venvs in a temporary directory and run from an empty directory, the way a
user meets it.

Installs are offline: uv resolves from its cache (filled when .venv was set up), pinned to the
versions in .venv, so the wheel is checked against the dependencies the rest of the suite used
and no registry is needed.
"""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.demo.test_demo import VARIANTS, _table
from tests.support.guards import PROCESS_S
from tests.support.paths import REPO_ROOT
from tests.support.ports import ReservedPort

PACKAGED = REPO_ROOT / "src" / "tracejudge" / "demo" / "data"
EXAMPLE = REPO_ROOT / "examples" / "refund"
UV = Path(sys.executable).parent / "uv"
EXPORT_NOISE = re.compile(r"transient error|failed to export|connection refused|retrying", re.I)


@dataclass(frozen=True)
class Installed:
    """A fresh venv holding the wheel built from this checkout, and an empty directory."""

    venv: Path
    empty: Path

    def run(
        self,
        *args: str | Path,
        timeout: float = PROCESS_S,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a venv command from the empty directory, nothing of the checkout in reach
        (``env``: variables set on top of the cleaned environment)."""
        program, *rest = args
        return subprocess.run(
            [str(self.venv / "bin" / program), *map(str, rest)],
            cwd=self.empty,
            env={**_clean_env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _clean_env() -> dict[str, str]:
    """The environment minus whatever could point back at the checkout or its venvs."""
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "HATCH_BUILD_HOOK_ENABLE_CUSTOM"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("OTEL_")}


def _uv(*args: str | Path) -> str:
    done = subprocess.run(
        [str(UV), *map(str, args)],
        cwd=REPO_ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert done.returncode == 0, f"uv {' '.join(map(str, args))}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pure-Python wheel built from this checkout (the build hook off, as by default)."""
    dist = tmp_path_factory.mktemp("dist")
    _uv(
        "build",
        "--quiet",
        "--wheel",
        "--no-build-isolation",
        "--python",
        sys.executable,
        "-o",
        dist,
    )
    (built,) = dist.glob("tracejudge-*.whl")
    assert built.name.endswith("-py3-none-any.whl"), built.name
    return built


@pytest.fixture(scope="module")
def pins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The versions installed in .venv, as constraints (tracejudge itself left out)."""
    path = tmp_path_factory.mktemp("pins") / "pins.txt"
    path.write_text(
        _uv("pip", "freeze", "--exclude-editable", "--python", sys.executable), encoding="utf-8"
    )
    return path


def _install(tmp: Path, requirement: str, pins: Path) -> Installed:
    venv = tmp / "venv"
    _uv("venv", "--quiet", "--python", sys.executable, venv)
    _uv("pip", "install", "--quiet", "--offline", "--python", venv / "bin" / "python",
        "-c", pins, requirement)  # fmt: skip
    empty = tmp / "empty"
    empty.mkdir()
    return Installed(venv=venv, empty=empty)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, wheel: Path, pins: Path) -> Installed:
    """``pip install tracejudge``: no extras, so no model SDK at all."""
    return _install(tmp_path_factory.mktemp("plain"), str(wheel), pins)


@pytest.fixture(scope="module")
def with_openai(tmp_path_factory: pytest.TempPathFactory, wheel: Path, pins: Path) -> Installed:
    """``pip install 'tracejudge[openai]'``: what the demo's agent needs."""
    return _install(
        tmp_path_factory.mktemp("openai"), f"tracejudge[openai] @ {wheel.as_uri()}", pins
    )


def test_the_packaged_demo_data_is_the_examples() -> None:
    """One set of refund rules and baselines: the copy the package ships for ``tracejudge demo``
    and the one ``examples/refund/`` shows users are byte-identical."""
    compared = filecmp.dircmp(PACKAGED / "baselines", EXAMPLE / "baselines")
    assert compared.left_only == compared.right_only == [], "baseline files differ"
    names = ["rules.yaml", *(f"baselines/{n}" for n in compared.common_files)]
    differ = [n for n in names if not filecmp.cmp(PACKAGED / n, EXAMPLE / n, shallow=False)]
    assert differ == [], (
        f"{differ} differ between src/tracejudge/demo/data/ and examples/refund/: copy the "
        "file you edited over the other (examples/refund/make_traces.py rewrites both baselines)"
    )


def test_the_wheel_ships_the_demo_data(wheel: Path) -> None:
    """The rules and baselines are package data, next to the rules schema the engine reads."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "tracejudge/demo/data/rules.yaml",
        "tracejudge/engine/schema/rules.schema.json",
        *(f"tracejudge/demo/data/baselines/{p.name}" for p in (PACKAGED / "baselines").iterdir()),
    }
    assert expected - names == set()


def test_demo_runs_from_an_empty_directory(with_openai: Installed) -> None:
    """``tracejudge demo`` from the installed wheel, in a directory with nothing in it: the
    packaged rules and baselines give each variant its verdict."""
    done = with_openai.run("tracejudge", "demo", timeout=PROCESS_S)
    assert done.returncode == 0, done.stdout + done.stderr
    header = re.search(r"; rules (\S+); baselines (\S+)", done.stdout)
    assert header is not None, done.stdout
    for used in header.groups():
        assert Path(used).is_relative_to(with_openai.venv), used  # the installed copy
    rows = _table(done.stdout)
    assert set(rows) == set(VARIANTS), done.stdout
    assert rows["healthy"][1:3] == ["pass", "-"]
    assert rows["silent_failure"][1:3] == ["fail", "F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert rows["wrong_order"][1:3] == ["fail", "F-ACTION-ARG-ENTITY_BINDING"]
    assert rows["half_amount"][2].startswith("F-BASELINE-ARG_DRIFT")  # the baseline was read
    assert list(with_openai.empty.iterdir()) == []  # and nothing was written where it ran


def test_demo_without_the_openai_sdk_says_what_to_install(plain: Installed) -> None:
    """The demo's agent uses the real OpenAI SDK, an extra: without it, one line saying which
    extra to install, not a traceback."""
    done = plain.run("tracejudge", "demo")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "pip install 'tracejudge[openai]'" in done.stderr


def test_readme_instrument_snippet_runs_quietly_without_a_collector(
    reserve_port: Callable[[], ReservedPort], plain: Installed
) -> None:
    """The README's snippet in a plain install with no collector listening: the guard drops
    its spans at once with one warning, so no exporter retries (the stall of about eight
    seconds it used to cost) and no export noise (the spans it cannot deliver are not the
    user's problem yet). Counted, not timed: the one warning is the guard's drop, and a
    retry would log."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"## Instrument your agent\n+```python\n(.*?)```", readme, re.S)
    assert found is not None, "the README's instrument snippet moved"
    script = plain.empty.parent / "snippet.py"
    script.write_text(found.group(1), encoding="utf-8")
    url = reserve_port().url  # a port nothing listens on (4318 may be taken here)
    done = plain.run("python", script, env={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert EXPORT_NOISE.findall(done.stderr) == [], done.stderr
    assert done.stderr.count(f"tracejudge: nothing listens at {url}") == 1


def test_collector_docs_in_process_example_runs_from_an_install(plain: Installed) -> None:
    """docs/collector.md's in-process collector, run by an installed package in an empty
    directory: it used to find its rules through the checkout's examples/ and failed here."""
    page = (REPO_ROOT / "docs" / "collector.md").read_text(encoding="utf-8")
    found = re.search(r"## In-process use\n+```python\n(.*?)```", page, re.S)
    assert found is not None, "the collector page's in-process example moved"
    script = plain.empty.parent / "in_process.py"
    script.write_text(found.group(1), encoding="utf-8")
    done = plain.run("python", script, timeout=PROCESS_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"OTLP/gRPC on \d+ OTLP/HTTP on \d+\n", done.stdout), done.stdout


def test_rules_init_and_python_m_from_an_install(plain: Installed) -> None:
    """``python -m tracejudge rules init`` in an empty directory: the starter file ships in
    the wheel and passes ``rules check``; its schema line names the installed schema."""
    done = plain.run("python", "-m", "tracejudge", "rules", "init")
    assert done.returncode == 0, done.stdout + done.stderr
    first = (plain.empty / "rules.yaml").read_text("utf-8").splitlines()[0]
    schema = Path(first.removeprefix("# yaml-language-server: $schema="))
    assert schema.is_relative_to(plain.venv)
    assert schema.is_file()
    check = plain.run("tracejudge", "rules", "check", "rules.yaml")
    assert check.stdout == "1 rules file(s) valid, 7 rule(s)\n", check.stderr
    (plain.empty / "rules.yaml").unlink()
