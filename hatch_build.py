"""Wheel build hook: compile the judging hot path to C extensions with mypyc.

Why: the collector's work per trace (decode spans, build the run, judge it, stamp the
verdict) is pure Python bound by interpreter overhead, and the strictly typed modules on
that path compile with mypyc unchanged, ~1.35x faster end to end (docs/performance.md).
This is how black and mypy ship: the same sources, compiled in release wheels, pure Python
everywhere else.

The hook is off by default (hatch's own switch turns it on:
``HATCH_BUILD_HOOK_ENABLE_CUSTOM=true``, which ``make compiled`` sets), so an sdist install
without a C compiler, and every editable development install, stay pure Python: an edited
module takes effect at once. When it is on, a failed compile fails the build instead of
quietly producing a slower wheel. It type-checks with the building environment's packages,
so build with ``--no-build-isolation`` from the dev venv (``make compiled`` does).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class MypycBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compiles ``compile`` (paths relative to the project root) into the wheel."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile into a scratch tree and map every extension into the wheel."""
        if self.target_name != "wheel" or version == "editable":
            return
        modules: list[str] = list(self.config.get("compile", []))
        if not modules:
            raise ValueError("the mypyc build hook needs a non-empty `compile` list")
        root = Path(self.root)
        self._scratch = Path(tempfile.mkdtemp(prefix="tracejudge-mypyc-"))
        src = self._scratch / "src"
        shutil.copytree(root / "src", src)
        shutil.copy(root / "pyproject.toml", self._scratch / "pyproject.toml")
        rel = [str(Path(m).relative_to("src")) for m in modules]
        for m in rel:
            if not (src / m).is_file():
                raise FileNotFoundError(f"mypyc build hook: {m} does not exist")
        proc = subprocess.run(
            [sys.executable, "-m", "mypyc", "--config-file", "../pyproject.toml", *rel],
            cwd=src,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"mypyc failed:\n{proc.stdout}\n{proc.stderr}")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = 0
        for ext in src.rglob(f"*{suffix}"):
            if "build" in ext.relative_to(src).parts:
                continue
            build_data["force_include"][str(ext)] = str(ext.relative_to(src))
            built += 1
        if built < len(rel):
            raise RuntimeError(f"mypyc built {built} extensions for {len(rel)} modules")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the scratch tree once the wheel is written."""
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
