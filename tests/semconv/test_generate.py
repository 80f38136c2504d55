"""``semconv/generate.py``: the generated files are current and the registry is coherent.

The generator is a script, not part of the package; it is loaded from its path. Cases
that must fail run it on a copy of ``semconv/`` in a temporary directory.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tracejudge import semconv as sc

ROOT = Path(__file__).resolve().parents[2]


def _load(semconv_dir: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"generate_{abs(hash(semconv_dir))}", semconv_dir / "generate.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the repository's ``semconv/`` and generated module, to break on purpose."""
    shutil.copytree(ROOT / "semconv", tmp_path / "semconv")
    (tmp_path / "src" / "tracejudge").mkdir(parents=True)
    shutil.copy(ROOT / "src" / "tracejudge" / "semconv.py", tmp_path / "src" / "tracejudge")
    return tmp_path / "semconv"


def test_committed_output_is_current() -> None:
    """``generate.py --check`` passes on the committed tree (what ``make lint`` runs)."""
    assert _load(ROOT / "semconv").main(["--check"]) == 0


def test_one_core_version_everywhere(copy: Path) -> None:
    """core.yaml must name the core release the pinned GenAI registry depends on; it named
    v1.44.0 while the pin depends on 1.43.0."""
    assert sc.CORE_VERSION == _load(ROOT / "semconv").upstream_core_version() == "1.43.0"
    core = copy / "registry" / "core.yaml"
    doc = yaml.safe_load(core.read_text(encoding="utf-8"))
    doc["version"] = "1.44.0"
    core.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"core 1\.44\.0, but the pinned GenAI registry depends"):
        _load(copy).build()


def test_error_type_is_cores_open_enum() -> None:
    """``error.type`` is typed as core types it: an enum whose one member is ``_OTHER``."""
    doc = yaml.safe_load((ROOT / "semconv" / "registry" / "core.yaml").read_text())
    (error_type,) = [a for a in doc["attributes"] if a["key"] == sc.ERROR_TYPE]
    assert error_type["type"] == {
        "members": [
            {
                "id": "other",
                "value": "_OTHER",
                "brief": "A fallback error value to be used when the instrumentation doesn't "
                "define a custom value.",
            }
        ]
    }
    assert sc.ErrorTypeValues.OTHER == "_OTHER"
