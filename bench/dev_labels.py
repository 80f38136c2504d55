"""The labels files of the two real dev sets, for ``tracejudge validate``.

Run: ``make dev-labels`` writes examples/airline/labels.jsonl and examples/retail/labels.jsonl;
``make dev-labels-check`` fails when either differs from what this script builds. The labels
come from the benchmarks and the examples' READMEs, never from tracejudge's verdicts, as
bench_accuracy.py takes them:

- **task_success**: the benchmark's reward (1: ``pass``, 0: ``fail``);
- **policy** (does the run break the written policy?):
  - ``fail`` for a reward-1 run the README lists as a visible breach (both tables) and, on
    airline, for the reward-1 runs of tasks 26, 34 and 46, whose expected actions break the
    policy themselves (the README says how);
  - ``fail`` for a reward-0 run that is *visibly wrong*: a successful write no expected
    action matches, or a write the API rejected (bench_accuracy.py's classification);
  - ``pass`` for the other reward-1 runs (none of their breaches is listed);
  - not labelled (``null``) for the other reward-0 runs: they only miss a write, which no
    policy sentence forbids and the trace cannot show without the case.

Tags: ``task``, ``basis`` (why the policy label: ``listed breach``, ``expected actions break
policy``, ``visibly wrong``, ``reward 1, none listed``, ``reward 0, not visible``) and, on
retail, ``agent_policy`` (the learned policy the agent ran under).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from bench_accuracy import (
    AIRLINE,
    CONTRADICTING_TASKS,
    RETAIL,
    Label,
    airline_labels,
    retail_labels,
)

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.*?)\s*\|", re.MULTILINE)


def listed_breaches(readme: Path) -> dict[str, str]:
    """Run name -> the breach its README row describes (both tables)."""
    return {name: breach for name, breach in _ROW.findall(readme.read_text())}


def _policy(label: Label, listed: dict[str, str], contradicting: bool) -> tuple[Any, str, str]:
    """(policy label, basis tag, note)."""
    if label.reward == 1:
        if label.name in listed:
            return "fail", "listed breach", f"README: {listed[label.name]}"
        if contradicting:
            return "fail", "expected actions break policy", "README: the task's expected actions"
        return "pass", "reward 1, none listed", ""
    if label.visible:
        return "fail", "visibly wrong", label.why
    return None, "reward 0, not visible", ""


def build(domain: str) -> list[dict[str, Any]]:
    """The labelled runs of one dev set, in the benchmark's order."""
    if domain == "airline":
        truth = airline_labels()
        listed = listed_breaches(AIRLINE / "README.md")
    else:
        truth = retail_labels()
        listed = listed_breaches(RETAIL / "README.md")
    unknown = sorted(set(listed) - {lab.name for lab in truth.values()})
    if unknown:
        raise SystemExit(f"{domain} README lists runs that are not in the dev set: {unknown}")
    out: list[dict[str, Any]] = []
    for run_id, label in truth.items():
        contradicting = domain == "airline" and int(label.task) in CONTRADICTING_TASKS
        policy, basis, note = _policy(label, listed, contradicting)
        tags = {"task": label.task, "basis": basis}
        if domain == "retail":
            tags["agent_policy"] = label.name.split("/", 1)[1].rsplit("-", 1)[0]
        doc: dict[str, Any] = {"run": run_id}
        if label.name != run_id:
            doc["name"] = label.name
        doc["labels"] = {"policy": policy, "task_success": "pass" if label.reward else "fail"}
        doc["tags"] = tags
        if note:
            doc["note"] = note
        out.append(doc)
    return out


def text(domain: str) -> str:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in build(domain))


PATHS = {"airline": AIRLINE / "labels.jsonl", "retail": RETAIL / "labels.jsonl"}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = parser.parse_args()
    stale = []
    for domain, path in PATHS.items():
        want = text(domain)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != want:
                stale.append(str(path))
            continue
        path.write_text(want, encoding="utf-8")
        print(f"wrote {path} ({want.count(chr(10))} runs)")
    if stale:
        print(f"out of date (run make dev-labels): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
