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
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
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


def test_weaver_registry_is_checked_for_staleness(copy: Path) -> None:
    """``--check`` fails on a stale ``semconv/weaver/`` file like on a stale module."""
    generate = _load(copy)
    assert generate.main(["--check"]) == 0
    registry = copy / "weaver" / "tracejudge.yaml"
    registry.write_text(registry.read_text().replace("development", "stable", 1))
    assert generate.main(["--check"]) == 1
    assert generate.main([]) == 0  # regenerating puts it right
    assert generate.main(["--check"]) == 0


def test_weaver_registry_is_in_weavers_format() -> None:
    """The emitted files follow Weaver's definition/2 schema (the vendored JSON schema), as
    the pinned upstream files do, and define every ``tracejudge.*`` attribute and metric."""
    generate = _load(ROOT / "semconv")
    doc = yaml.safe_load((ROOT / "semconv" / "weaver" / "tracejudge.yaml").read_text())
    assert doc["file_format"] == "definition/2"
    assert generate.weaver_errors(doc) == []
    for path in sorted((ROOT / "semconv" / "upstream").rglob("*.yaml")):
        if path.name != "manifest.yaml":
            assert generate.weaver_errors(yaml.safe_load(path.read_text())) == [], path
    ours = {
        value
        for name, value in vars(sc).items()
        if name.startswith("TRACEJUDGE_") and isinstance(value, str)
    }
    assert {a["key"] for a in doc["attributes"]} == ours
    metrics = {v for n, v in vars(sc).items() if n.startswith("METRIC_TRACEJUDGE_")}
    assert {m["name"] for m in doc["metrics"]} == metrics
    manifest = yaml.safe_load((ROOT / "semconv" / "weaver" / "manifest.yaml").read_text())
    (dependency,) = manifest["dependencies"]
    upstream = yaml.safe_load((ROOT / "semconv" / "upstream" / "manifest.yaml").read_text())
    # Weaver resolves a local registry_path against the working directory: the documented
    # `weaver registry check -r semconv/weaver` runs from the repository root
    assert dependency == {"schema_url": upstream["schema_url"], "registry_path": "semconv/upstream"}
    assert (ROOT / dependency["registry_path"] / "manifest.yaml").is_file()


def test_every_signal_of_ours_declares_its_requirement_level() -> None:
    """Weaver warns about a metric, span or event without a signal-level
    ``requirement_level`` and refuses it under ``registry check --future``: every one of
    ours has one (the 8 metrics and the guardrail span had none)."""
    doc = yaml.safe_load((ROOT / "semconv" / "weaver" / "tracejudge.yaml").read_text())
    signals = [
        (kind, signal.get("name") or signal.get("type"))
        for kind in ("metrics", "spans", "events")
        for signal in doc.get(kind) or []
    ]
    assert len(signals) == 9
    missing = [
        (kind, name)
        for kind in ("metrics", "spans", "events")
        for signal in doc.get(kind) or []
        if "requirement_level" not in signal
        for name in [signal.get("name") or signal.get("type")]
    ]
    assert missing == []


def test_a_registry_entry_weaver_would_refuse_fails_generation(copy: Path) -> None:
    """A type Weaver does not know stops the generator with the schema's complaint."""
    own = copy / "registry" / "tracejudge.yaml"
    own.write_text(own.read_text().replace("type: boolean", "type: bool", 1))
    with pytest.raises(SystemExit, match="breaks Weaver's schema"):
        _load(copy).build_weaver()
