"""bench/profile_collector.py classifies a sampled stack by its innermost tracejudge module,
by file name, so that the current layout (``collector/processors/stamp.py``) and an earlier
commit's flat ``collector/`` classify alike: the two columns of its table compare the same
stages. (Recording needs py-spy, which .venv-bench has and the dev venv does not; the
classification is what decides the table.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            "profile_collector", BENCH / "profile_collector.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_old_and_new_layouts_classify_alike_and_the_innermost_module_decides() -> None:
    classify = _module().classify
    loop = "BaseEventLoop._run_once (asyncio/base_events.py:1922)"
    tick = "Pipeline.tick (tracejudge/collector/pipeline.py:200)"
    new = "stamp (tracejudge/collector/processors/stamp.py:80)"
    old = "stamp (tracejudge/collector/stamp.py:75)"
    engine = "Engine.judge (tracejudge/engine/engine.py:105)"
    assert classify([loop, tick, new]) == classify([loop, tick, old]) == "stamp"
    assert classify([loop, tick, engine]) == "judge (engine)"
    assert classify([loop, tick]) == "decide and settle"
    decision = "DecisionStage.tick (tracejudge/collector/processors/decision.py:380)"
    assert classify([loop, decision]) == "decide and settle"
    assert classify([loop]) == "gRPC and asyncio runtime"
    assert classify(["_worker (concurrent/futures/thread.py:81)"]) == "other"
