"""A hand-labelled validation set for ``tracejudge validate``'s tests.

The verdicts are written by hand in the public verdict JSON form (``Verdict.to_dict``, what
``eval --output`` writes), so every reading is known without running rules; the labels
are hand-written too. Eleven runs, two axes (``policy``, ``task_success``), one tag
(``team``):

====  =======  ===========================================  ======  ============  ====
run   verdict  findings (rule, severity)                    policy  task_success  team
====  =======  ===========================================  ======  ============  ====
r1    fail     no-refund-twice fail                         fail    fail          a
r2    fail     tracejudge.case fail                         pass    fail          a
r3    pass     -                                            pass    pass          a
r4    pass     -                                            fail    pass          a
r5    warn     confirm-first warn, undecided                fail    pass          b
r6    error    -                                            pass    fail          b
r7    fail     confirm-first fail                           fail    (null)        b
r8    fail     no-refund-twice fail, tracejudge.case fail   fail    fail          b
r9    pass     -                                            pass    pass          b
r10   fail     no-refund-twice fail                         pass    pass          b
r11   pass     -                                            (not in the labels file)
====  =======  ===========================================  ======  ============  ====
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_RUNS: list[tuple[str, str, list[tuple[str, str, bool]], str | None, str | None, str]] = [
    ("r1", "fail", [("no-refund-twice", "fail", False)], "fail", "fail", "a"),
    ("r2", "fail", [("tracejudge.case", "fail", False)], "pass", "fail", "a"),
    ("r3", "pass", [], "pass", "pass", "a"),
    ("r4", "pass", [], "fail", "pass", "a"),
    ("r5", "warn", [("confirm-first", "warn", True)], "fail", "pass", "b"),
    ("r6", "error", [], "pass", "fail", "b"),
    ("r7", "fail", [("confirm-first", "fail", False)], "fail", None, "b"),
    (
        "r8",
        "fail",
        [("no-refund-twice", "fail", False), ("tracejudge.case", "fail", False)],
        "fail",
        "fail",
        "b",
    ),
    ("r9", "pass", [], "pass", "pass", "b"),
    ("r10", "fail", [("no-refund-twice", "fail", False)], "pass", "pass", "b"),
]


def _verdict(run: str, verdict: str, findings: list[tuple[str, str, bool]]) -> dict[str, Any]:
    trace = f"{int(run[1:]):032x}"
    out: dict[str, Any] = {
        "trace_id": trace,
        "root_span_id": f"{int(run[1:]):016x}",
        "run_id": run,
        "case_id": "refund",
        "verdict": verdict,
        "findings": [
            {"code": f"F-{rule.upper()}", "severity": sev, "rule": rule, "span_ids": ["ab" * 8]}
            | ({"undecided": True} if undecided else {})
            for rule, sev, undecided in findings
        ],
    }
    if findings:
        out["primary"] = {"code": f"F-{findings[0][0].upper()}", "span_id": "ab" * 8}
    if verdict == "error":
        out["error"] = "engine error: RuntimeError: boom"
    return out


def write_set(directory: Path) -> tuple[Path, Path]:
    """(verdicts file, labels file) of the hand-labelled set, written in ``directory``."""
    verdicts = [_verdict(r, v, f) for r, v, f, _, _, _ in _RUNS]
    verdicts.append(_verdict("r11", "pass", []))
    labels = [
        {"run": r, "labels": {"policy": p, "task_success": t}, "tags": {"team": team}}
        for r, _, _, p, t, team in _RUNS
    ]
    v_path = directory / "verdicts.jsonl"
    l_path = directory / "labels.jsonl"
    v_path.write_text("".join(json.dumps(v) + "\n" for v in verdicts), encoding="utf-8")
    l_path.write_text("".join(json.dumps(d) + "\n" for d in labels), encoding="utf-8")
    return v_path, l_path
