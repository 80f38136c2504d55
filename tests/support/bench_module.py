"""The accuracy benchmark as a module, for the examples' tests that hold its figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def bench_accuracy() -> ModuleType:
    """``bench/bench_accuracy.py`` imported (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "bench_accuracy", ROOT / "bench" / "bench_accuracy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module
