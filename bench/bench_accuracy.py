"""Judging accuracy on real runs nobody here wrote: the tau-bench airline dev split.

Run: ``make bench-accuracy`` (or ``.venv/bin/python bench/bench_accuracy.py``). The 100
GPT-4o conversations in examples/airline/tau-bench-dev/ are read as transcripts (the same
import ``tracejudge eval`` does), judged with

(a) examples/airline/rules.yaml: rules written from the airline policy text alone;
(b) examples/airline/cases.jsonl: each task's expected actions, translated mechanically
    from tau-bench's ``info.task.actions`` (with the rules file's ``tools:``, so the engine
    knows which tools write, but none of its rules); and both together.

The labels come from tau-bench itself, never from the engine:

- ``reward`` 1 or 0: whether the final database equals the one the expected actions give;
- *visibly wrong*: a reward-0 run whose trace shows the wrong write: a successful write
  that no expected action matches exactly (name and arguments), or a write the API
  rejected. A reward-0 run that only *misses* a write is not visible without the case.

Printed: (a) the share of visibly wrong runs judged ``fail`` (target >= 90%) and the share
of reward-1 runs judged ``fail`` (false alarms, target <= 5%); (b) the agreement of
``fail`` with reward 0 (target >= 95%); then every miss and false alarm with its primary
finding, for reading by cause.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tracejudge.engine import Engine, load_rules, load_rules_text
from tracejudge.engine.verdict import Verdict
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[1]
TIMINGS: list[tuple[str, float]] = []
"""Per judge() call: what judged, and the wall time per run (conversation built included)."""
AIRLINE = ROOT / "examples" / "airline"
DATA = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"
WRITES = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "send_certificate",
    }
)


CONTRADICTING_TASKS = frozenset({26, 34, 46})
"""Tasks whose *expected* actions break the written policy (examples/airline/README.md says
how): a rule that follows the policy fails their reward-1 runs. Reported apart, never
dropped from the figures."""


@dataclass(slots=True, frozen=True)
class Label:
    """What tau-bench says of one run."""

    run_id: str
    reward: int
    visible: bool
    why: str


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def labels(records: list[dict[str, Any]]) -> dict[str, Label]:
    """Ground truth per run id (``<task>-<trial>``), from the records alone."""
    out: dict[str, Label] = {}
    for record in records:
        expected = [
            (a["name"], _key(a["kwargs"]))
            for a in record["info"]["task"]["actions"]
            if a["name"] in WRITES
        ]
        pending: list[tuple[str, str, str]] = []
        done: list[tuple[str, str]] = []
        rejected: list[str] = []
        for message in record["traj"]:
            for call in message.get("tool_calls") or ():
                fn = call["function"]
                pending.append((call["id"], fn["name"], fn["arguments"]))
            if message["role"] == "tool":
                k = next(i for i, p in enumerate(pending) if p[0] == message["tool_call_id"])
                _, name, args = pending.pop(k)
                if name not in WRITES:
                    continue
                if str(message["content"]).startswith("Error"):
                    rejected.append(name)
                else:
                    done.append((name, _key(json.loads(args))))
        unexpected = [name for name, args in done if (name, args) not in expected]
        reward = int(record["reward"])
        why = ", ".join(
            [f"unexpected {n}" for n in unexpected] + [f"rejected {n}" for n in rejected]
        )
        run_id = f"{record['task_id']}-{record['trial']}"
        out[run_id] = Label(run_id, reward, reward == 0 and bool(why), why)
    return out


def judge(rules: Path, cases: Path | None, *, tools_only: bool = False) -> dict[str, Verdict]:
    """The verdict of every dev run, by run id. ``tools_only``: keep the rules file's
    ``tools:`` (what is a write) but none of its rules, so only the cases judge."""
    if tools_only:
        doc = yaml.safe_load(rules.read_text())
        doc["rules"] = []
        ruleset = load_rules_text(yaml.safe_dump(doc), str(rules))
    else:
        ruleset = load_rules(rules)
    engine = _engine(ruleset, cases)
    loaded = load_runs([DATA])
    if loaded.errors:
        raise SystemExit("\n".join(loaded.errors))
    start = time.perf_counter()
    out = {run.run_id or run.trace_id: engine.judge(run) for run in loaded.runs}
    took = (time.perf_counter() - start) / max(1, len(loaded.runs))
    what = f"{rules.name}{' (tools: only)' if tools_only else ''}"
    TIMINGS.append((what + (f" + {cases.name}" if cases else ""), took))
    return out


def _engine(ruleset: Any, cases: Path | None) -> Engine:
    if cases is None:
        return Engine(ruleset)
    from tracejudge.engine.cases import load_cases

    return Engine(ruleset, cases=load_cases(cases))


def _primary(v: Verdict) -> str:
    if v.primary is None:
        return v.verdict
    return f"{v.primary.code} ({v.primary.rule_id})"


def report(
    truth: dict[str, Label],
    policy: dict[str, Verdict],
    cased: dict[str, Verdict] | None,
    both: dict[str, Verdict] | None = None,
) -> dict[str, Any]:
    """The figures, printed and returned."""
    visible = [k for k, lab in truth.items() if lab.visible]
    good = [k for k, lab in truth.items() if lab.reward == 1]
    caught = [k for k in visible if policy[k].verdict == "fail"]
    alarms = [k for k in good if policy[k].verdict == "fail"]
    figures: dict[str, Any] = {
        "runs": len(truth),
        "reward_0": sum(1 for lab in truth.values() if lab.reward == 0),
        "visibly_wrong": len(visible),
        "policy_detection": len(caught) / len(visible) if visible else 0.0,
        "policy_false_alarms": len(alarms) / len(good) if good else 0.0,
    }
    print(
        f"tau-bench airline dev: {figures['runs']} runs, {figures['reward_0']} reward 0, "
        f"{len(visible)} visibly wrong, {len(good)} reward 1"
    )
    print(
        f"(a) policy rules: visibly wrong runs judged fail {len(caught)}/{len(visible)} = "
        f"{figures['policy_detection']:.0%} (target >= 90%); reward-1 runs judged fail "
        f"{len(alarms)}/{len(good)} = {figures['policy_false_alarms']:.0%} (target <= 5%)"
    )
    apart = [k for k in alarms if int(k.split("-")[0]) in CONTRADICTING_TASKS]
    rest = [k for k in good if int(k.split("-")[0]) not in CONTRADICTING_TASKS]
    figures["false_alarms_outside_contradicting_tasks"] = (
        (len(alarms) - len(apart)) / len(rest) if rest else 0.0
    )
    print(
        f"    of the {len(alarms)} false alarms, {len(apart)} are on tasks whose expected actions "
        f"break the policy ({', '.join(map(str, sorted(CONTRADICTING_TASKS)))}); on the other "
        f"tasks {len(alarms) - len(apart)}/{len(rest)} = "
        f"{figures['false_alarms_outside_contradicting_tasks']:.0%} of reward-1 runs fail"
    )
    if cased is not None:
        agree = [k for k, lab in truth.items() if (cased[k].verdict == "fail") == (lab.reward == 0)]
        figures["cases_agreement"] = len(agree) / len(truth)
        print(
            f"(b) cases file (with the rules' tools:, none of its rules): fail agrees with "
            f"reward 0 on {len(agree)}/{len(truth)} = {figures['cases_agreement']:.0%} "
            "(target >= 95%)"
        )
    if both is not None:
        same = [k for k, lab in truth.items() if (both[k].verdict == "fail") == (lab.reward == 0)]
        figures["rules_and_cases_agreement"] = len(same) / len(truth)
        print(
            f"    policy rules and cases together: {len(same)}/{len(truth)} = "
            f"{figures['rules_and_cases_agreement']:.0%} (policy failures on reward-1 runs "
            "count against it: tau-bench's reward does not read the conversation)"
        )
    print("\nmissed (visibly wrong, not failed):")
    for k in sorted(set(visible) - set(caught), key=_order):
        print(f"  {k:6} {truth[k].why:60} -> {_primary(policy[k])}")
    print("false alarms (reward 1, failed):")
    for k in sorted(alarms, key=_order):
        print(f"  {k:6} -> {_primary(policy[k])}")
    codes = Counter(f.code for k in visible for f in policy[k].findings if f.severity == "fail")
    print("hard finding codes on visibly wrong runs:", dict(codes.most_common()))
    if cased is not None:
        print("(b) disagreements:")
        for k in sorted(truth, key=_order):
            lab = truth[k]
            if (cased[k].verdict == "fail") != (lab.reward == 0):
                print(f"  {k:6} reward {lab.reward} -> {cased[k].verdict} {_primary(cased[k])}")
    return figures


def _order(run_id: str) -> tuple[int, int]:
    task, trial = run_id.split("-")
    return int(task), int(trial)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=Path, default=AIRLINE / "rules.yaml")
    parser.add_argument("--cases", type=Path, default=AIRLINE / "cases.jsonl")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    records = json.loads(DATA.read_text())
    truth = labels(records)
    policy = judge(args.rules, None)
    cased = both = None
    if args.cases.exists():
        cased = judge(args.rules, args.cases, tools_only=True)
        both = judge(args.rules, args.cases)
    figures = report(truth, policy, cased, both)
    for what, took in TIMINGS:
        print(f"judging with {what}: {took * 1e3:.2f} ms per run (wall, this machine)")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
