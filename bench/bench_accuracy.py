"""Judging accuracy on real runs nobody here wrote: tau-bench airline and tau2-bench retail.

Run: ``make bench-accuracy`` (or ``.venv/bin/python bench/bench_accuracy.py``). Two dev sets:

- **tau-bench airline**: the 100 GPT-4o conversations in examples/airline/tau-bench-dev/;
- **tau2-bench retail**: the 480 GPT-4o conversations (40 tasks x 12 runs) in
  examples/retail/tau2-retail-dev/sims/, read as ``tracejudge eval`` reads them.

Each is judged with

(a) ``rules.yaml``: rules written from the domain's policy text alone;
(b) ``cases.jsonl``: each task's expected actions, translated mechanically
    (``cases from-tau-bench`` / ``cases from-tau2``), with the rules file's ``tools:`` (so
    the engine knows which tools write) but none of its rules; and both together.

The labels come from the benchmarks themselves, never from the engine:

- ``reward`` 1 or 0: whether the final database equals the one the expected actions give
  (tau2 retail: and the answer communicated what it had to);
- *visibly wrong*: a reward-0 run whose trace shows the wrong write: a successful write that
  no expected action matches (name and arguments, compared as the cases file compares
  them), or a write the API rejected. A reward-0 run that only *misses* a write is not
  visible without the case.

Printed per domain: (a) the share of visibly wrong runs judged ``fail`` (target >= 90%) and
the share of reward-1 runs judged ``fail`` (target <= 5% apart from the runs listed as
visible policy breaches in the example's README); (b) the agreement of ``fail`` with reward 0
(target >= 97%); undecided findings per run; then every miss and false alarm with its
primary finding, for reading by cause; then the ``tracejudge validate`` tables of the same
verdicts against the committed labels files (examples/*/labels.jsonl, ``make dev-labels``):
false-pass and false-fail rates and agreement with Wilson intervals, per axis (policy,
task_success), for the rules alone and the cases alone. ``--eval-timing`` also times
``tracejudge eval`` on the airline set (100 runs) as a user runs it: wall and CPU of the
process.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tracejudge.engine import Engine, load_rules, load_rules_text
from tracejudge.engine.tau2 import action_matches, argument_match
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.report.loading import load_runs
from tracejudge.validate import WholeVerdict, from_verdicts, load_labels, measure, pair
from tracejudge.validate.report import figures_table

ROOT = Path(__file__).resolve().parents[1]
TIMINGS: list[tuple[str, float]] = []
"""Per judge() call: what judged, and the wall time per run (conversation built included)."""
AIRLINE = ROOT / "examples" / "airline"
AIRLINE_DATA = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"
RETAIL = ROOT / "examples" / "retail"
RETAIL_SIMS = RETAIL / "tau2-retail-dev" / "sims"
AIRLINE_WRITES = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "send_certificate",
    }
)
RETAIL_WRITES = frozenset(
    {
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    }
)

CONTRADICTING_TASKS = frozenset({26, 34, 46})
"""Airline tasks whose *expected* actions break the written policy (examples/airline/README.md
says how): a rule that follows the policy fails their reward-1 runs. Reported apart, never
dropped from the figures."""


@dataclass(slots=True, frozen=True)
class Label:
    """What the benchmark says of one run; ``name`` is how people find it."""

    run_id: str
    name: str
    task: str
    reward: int
    visible: bool
    why: str


@dataclass(slots=True, frozen=True)
class Domain:
    """One dev set: where its runs, rules and cases are, and how to label its runs."""

    title: str
    data: list[Path]
    rules: Path
    cases: Path
    labels: Callable[[], dict[str, Label]]
    apart: Callable[[dict[str, Label]], set[str]]
    """Run ids whose reward-1 failures are adjudicated (listed breaches), reported apart."""
    apart_why: str
    labels_file: Path
    """The validation labels (bench/dev_labels.py writes them)."""
    runs_arg: str
    """How the validate command line names the runs."""


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def airline_labels() -> dict[str, Label]:
    """Ground truth per run id (``<task>-<trial>``), from the tau-bench records alone."""
    out: dict[str, Label] = {}
    for record in json.loads(AIRLINE_DATA.read_text()):
        expected = [
            (a["name"], _key(a["kwargs"]))
            for a in record["info"]["task"]["actions"]
            if a["name"] in AIRLINE_WRITES
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
                if name not in AIRLINE_WRITES:
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
        task = str(record["task_id"])
        out[run_id] = Label(run_id, run_id, task, reward, reward == 0 and bool(why), why)
    return out


def retail_files() -> list[Path]:
    """The 12 tau2-bench results files of the retail dev set, in name order."""
    return sorted(RETAIL_SIMS.glob("*.json.gz"))


def _tag(path: Path) -> str:
    """``...learned-policy-chloe-gpt4o_run1.json.gz`` -> ``chloe-gpt4o-1``."""
    m = re.search(r"learned-policy-(.+)_run(\d+)\.json\.gz$", path.name)
    return f"{m.group(1)}-{m.group(2)}" if m else path.stem


def retail_labels() -> dict[str, Label]:
    """Ground truth per run id (the simulation id), from the tau2 results files alone;
    runs are named ``<task>/<policy>-<run>`` (``5/chloe-gpt4o-1``)."""
    out: dict[str, Label] = {}
    for path in retail_files():
        doc = json.loads(gzip.decompress(path.read_bytes()))
        expected: dict[str, list[tuple[str, dict[str, Any], dict[str, str]]]] = {}
        for task in doc["tasks"]:
            expected[str(task["id"])] = [
                (a["name"], a["arguments"], argument_match(a["name"], a["arguments"]))
                for a in task["evaluation_criteria"]["actions"] or ()
                if a["name"] in RETAIL_WRITES
            ]
        for sim in doc["simulations"]:
            task = str(sim["task_id"])
            pending: dict[str, tuple[str, Any]] = {}
            unexpected: list[str] = []
            rejected: list[str] = []
            for message in sim["messages"]:
                for call in message.get("tool_calls") or ():
                    pending[call["id"]] = (call["name"], call["arguments"])
                if message["role"] != "tool":
                    continue
                name, args = pending.pop(message["id"])
                if name not in RETAIL_WRITES:
                    continue
                if str(message["content"]).startswith("Error"):
                    rejected.append(name)
                elif not any(
                    n == name and action_matches(args, want, match)
                    for n, want, match in expected.get(task, ())
                ):
                    unexpected.append(name)
            reward = int(sim["reward_info"]["reward"])
            why = ", ".join(
                [f"unexpected {n}" for n in unexpected] + [f"rejected {n}" for n in rejected]
            )
            name = f"{task}/{_tag(path)}"
            out[sim["id"]] = Label(sim["id"], name, task, reward, reward == 0 and bool(why), why)
    return out


_LISTED = re.compile(r"^\|\s*`(\d+/[\w.-]+)`\s*\|", re.MULTILINE)


def retail_listed_breaches(truth: dict[str, Label]) -> set[str]:
    """Run ids of the reward-1 runs examples/retail/README.md lists as visible breaches of
    the written policy (a table row per run: ``| `5/chloe-gpt4o-1` | breach | sentence |``)."""
    names = set(_LISTED.findall((RETAIL / "README.md").read_text()))
    return {k for k, lab in truth.items() if lab.name in names}


def airline_apart(truth: dict[str, Label]) -> set[str]:
    """Run ids of the airline tasks whose expected actions break the policy, and of the
    reward-1 runs examples/airline/README.md lists as visible breaches
    (``| `12-1` | breach | sentence |``)."""
    names = set(_AIRLINE_LISTED.findall((AIRLINE / "README.md").read_text()))
    return {
        k for k, lab in truth.items() if int(lab.task) in CONTRADICTING_TASKS or lab.name in names
    }


_AIRLINE_LISTED = re.compile(r"^\|\s*`(\d+-\d+)`\s*\|", re.MULTILINE)


DOMAINS: dict[str, Domain] = {
    "airline": Domain(
        "tau-bench airline dev",
        [AIRLINE_DATA],
        AIRLINE / "rules.yaml",
        AIRLINE / "cases.jsonl",
        airline_labels,
        airline_apart,
        "on tasks whose expected actions break the policy (26, 34, 46) or listed in "
        "examples/airline/README.md as visible breaches of the written policy",
        AIRLINE / "labels.jsonl",
        "examples/airline/tau-bench-dev/gpt-4o-airline.dev.json",
    ),
    "retail": Domain(
        "tau2-bench retail dev",
        retail_files(),
        RETAIL / "rules.yaml",
        RETAIL / "cases.jsonl",
        retail_labels,
        retail_listed_breaches,
        "listed in examples/retail/README.md as visible breaches of the written policy",
        RETAIL / "labels.jsonl",
        "examples/retail/tau2-retail-dev/sims/*.json.gz",
    ),
}


def judge(
    domain: Domain, rules: Path, cases: Path | None, *, tools_only: bool = False
) -> dict[str, Verdict]:
    """The verdict of every dev run, by run id. ``tools_only``: keep the rules file's
    ``tools:`` (what is a write) but none of its rules, so only the cases judge."""
    if tools_only:
        doc = yaml.safe_load(rules.read_text())
        doc["rules"] = []
        ruleset = load_rules_text(yaml.safe_dump(doc), str(rules))
    else:
        ruleset = load_rules(rules)
    engine = _engine(ruleset, cases)
    loaded = load_runs(domain.data)
    if loaded.errors:
        raise SystemExit("\n".join(loaded.errors))
    start = time.perf_counter()
    out = {run.run_id or run.trace_id: engine.judge(run) for run in loaded.runs}
    took = (time.perf_counter() - start) / max(1, len(loaded.runs))
    what = f"{domain.title}: {rules.name}{' (tools: only)' if tools_only else ''}"
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


def undecided(finding: Finding) -> bool:
    """Whether a finding says a heuristic could not decide (read by name, so the figure
    follows however the engine spells it: a severity, a flag or a code)."""
    return (
        getattr(finding, "undecided", False) is True
        or str(getattr(finding, "severity", "")) == "undecided"
        or "UNDECIDED" in finding.code
    )


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} = {n / d:.1%}" if d else f"{n}/0"


def report(
    domain: Domain,
    truth: dict[str, Label],
    policy: dict[str, Verdict],
    cased: dict[str, Verdict] | None,
    both: dict[str, Verdict] | None = None,
) -> dict[str, Any]:
    """One domain's figures, printed and returned."""
    visible = [k for k, lab in truth.items() if lab.visible]
    good = [k for k, lab in truth.items() if lab.reward == 1]
    caught = [k for k in visible if policy[k].verdict == "fail"]
    alarms = [k for k in good if policy[k].verdict == "fail"]
    apart_ids = domain.apart(truth)
    apart = [k for k in alarms if k in apart_ids]
    rest = [k for k in good if k not in apart_ids]
    n_undecided = sum(undecided(f) for v in policy.values() for f in v.findings)
    figures: dict[str, Any] = {
        "runs": len(truth),
        "reward_0": sum(1 for lab in truth.values() if lab.reward == 0),
        "reward_1": len(good),
        "visibly_wrong": len(visible),
        "policy_detection": len(caught) / len(visible) if visible else 0.0,
        "policy_false_alarms": len(alarms) / len(good) if good else 0.0,
        "false_alarms_apart": len(apart),
        "false_alarms_outside_apart": (len(alarms) - len(apart)) / len(rest) if rest else 0.0,
        "undecided_per_run": n_undecided / len(truth) if truth else 0.0,
    }
    print(f"== {domain.title}")
    print(
        f"{figures['runs']} runs, {figures['reward_0']} reward 0 ({len(visible)} visibly wrong), "
        f"{len(good)} reward 1"
    )
    print(
        f"(a) policy rules: visibly wrong runs judged fail {_pct(len(caught), len(visible))} "
        f"(target >= 90%); reward-1 runs judged fail {_pct(len(alarms), len(good))}"
    )
    print(
        f"    of those {len(alarms)}, {len(apart)} are {domain.apart_why}; the other reward-1 "
        f"runs fail {_pct(len(alarms) - len(apart), len(rest))} (target <= 5%)"
    )
    print(
        f"    undecided findings: {n_undecided} in {len(truth)} runs = "
        f"{figures['undecided_per_run']:.2f} per run (target < 1)"
    )
    # runs of one task are correlated (same task, same model): per task as well as per run
    vis_tasks = {truth[k].task for k in visible}
    missed_tasks = {truth[k].task for k in set(visible) - set(caught)}
    rest_tasks = {truth[k].task for k in rest}
    alarm_tasks = {truth[k].task for k in alarms if k not in apart_ids}
    figures["tasks_with_a_missed_run"] = len(missed_tasks)
    figures["tasks_with_an_unlisted_false_alarm"] = len(alarm_tasks)
    print(
        f"    per task: {len(missed_tasks)} of the {len(vis_tasks)} tasks with visibly wrong "
        f"runs have a missed one; {len(alarm_tasks)} of the {len(rest_tasks)} tasks with "
        "unlisted reward-1 runs have a false alarm"
    )
    if cased is not None:
        agree = [k for k, lab in truth.items() if (cased[k].verdict == "fail") == (lab.reward == 0)]
        figures["cases_agreement"] = len(agree) / len(truth)
        print(
            "(b) cases file (with the rules' tools:, none of its rules): fail agrees with "
            f"reward 0 on {_pct(len(agree), len(truth))} (target >= 97%)"
        )
    if both is not None:
        same = [k for k, lab in truth.items() if (both[k].verdict == "fail") == (lab.reward == 0)]
        figures["rules_and_cases_agreement"] = len(same) / len(truth)
        print(
            f"    policy rules and cases together: {_pct(len(same), len(truth))} (policy "
            "failures on reward-1 runs count against it: the reward does not read the "
            "conversation)"
        )
    print("missed (visibly wrong, not failed):")
    for k in sorted(set(visible) - set(caught), key=lambda k: _order(truth[k])):
        print(f"  {truth[k].name:24} {truth[k].why:50} -> {_primary(policy[k])}")
    print("false alarms (reward 1, failed):")
    for k in sorted(alarms, key=lambda k: _order(truth[k])):
        mark = " [listed]" if k in apart_ids else ""
        print(f"  {truth[k].name:24} -> {_primary(policy[k])}{mark}")
    causes = Counter(p.rule_id for k in alarms if (p := policy[k].primary) is not None)
    print("false alarms by primary rule:", dict(causes.most_common()))
    codes = Counter(f.code for k in visible for f in policy[k].findings if f.severity == "fail")
    print("hard finding codes on visibly wrong runs:", dict(codes.most_common()))
    if cased is not None:
        print("(b) disagreements:")
        for k in sorted(truth, key=lambda k: _order(truth[k])):
            lab = truth[k]
            if (cased[k].verdict == "fail") != (lab.reward == 0):
                print(
                    f"  {lab.name:24} reward {lab.reward} -> {cased[k].verdict} "
                    f"{_primary(cased[k])}"
                )
    print()
    return figures


def _interval(iv: Any) -> dict[str, float]:
    return {"count": iv.successes, "of": iv.trials, "low": iv.low, "high": iv.high}


def validate_tables(
    domain: Domain, rules: Path, cases: Path | None, judged: dict[str, dict[str, Verdict]]
) -> dict[str, Any]:
    """``tracejudge validate``'s figures table for each judge in ``judged`` (what judged ->
    verdicts by run id), against the domain's labels file; printed and returned."""
    labels = load_labels(domain.labels_file)
    axes = labels.axes
    readings = dict.fromkeys(axes, WholeVerdict())
    out: dict[str, Any] = {}
    labels_arg = domain.labels_file.relative_to(ROOT)
    for what, verdicts in judged.items():
        pairs = pair(labels, from_verdicts(verdicts.values()))
        figures = measure(pairs, readings, axes)
        rules_arg = f"--rules {rules.relative_to(ROOT) if rules.is_relative_to(ROOT) else rules}"
        if what == "cases alone" and cases is not None:
            cases_arg = cases.relative_to(ROOT) if cases.is_relative_to(ROOT) else cases
            rules_arg += f" --tools-only --cases {cases_arg}"
        print(
            f"validate, {what}: tracejudge validate --labels {labels_arg} {rules_arg} "
            f"{domain.runs_arg}"
        )
        for line in figures_table(figures):
            print(f"  {line}")
        out[what] = {
            f.axis: {m: _interval(f.metric(m)) for m in ("false_pass", "false_fail", "agreement")}
            for f in figures
        }
    print()
    return out


def _order(label: Label) -> tuple[int, str]:
    task = label.task
    return (int(task) if task.isdigit() else 0, label.name)


def eval_timing() -> dict[str, float]:
    """``tracejudge eval`` on the airline dev set (100 runs) in a child process, as a user
    runs it: wall time and the child's CPU time (user + system), start-up included."""
    cmd = [
        sys.executable,
        "-m",
        "tracejudge",
        "eval",
        "--rules",
        str(AIRLINE / "rules.yaml"),
        str(AIRLINE_DATA),
        "-q",
    ]
    # As a user runs it: pip writes bytecode at install, so the child may write and read
    # .pyc files even where this shell sets PYTHONDONTWRITEBYTECODE (without them, compiling
    # the sources added ~1.8 s to every run); one run first to write them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(cmd, check=False, capture_output=True, env=env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=False, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"tracejudge eval, 100 airline runs: {wall:.2f} s wall, {cpu:.2f} s CPU (this machine)")
    probe = (
        "import time; t = time.process_time(); import tracejudge.cli; "
        "print(time.process_time() - t)"
    )
    imports = float(
        subprocess.run(
            [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env
        ).stdout
    )
    t0 = time.process_time()
    engine = Engine(load_rules(AIRLINE / "rules.yaml"))
    t1 = time.process_time()
    runs = load_runs([AIRLINE_DATA]).runs
    t2 = time.process_time()
    for run in runs:
        engine.judge(run)
    t3 = time.process_time()
    print(
        f"  CPU by stage: importing the CLI {imports:.2f} s, loading the rules {t1 - t0:.2f} s, "
        f"reading {len(runs)} runs {t2 - t1:.2f} s, judging them {t3 - t2:.2f} s"
    )
    return {
        "eval_100_runs_wall_s": wall,
        "eval_100_runs_cpu_s": cpu,
        "import_cpu_s": imports,
        "rules_cpu_s": t1 - t0,
        "read_cpu_s": t2 - t1,
        "judge_cpu_s": t3 - t2,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--domain", choices=[*DOMAINS, "all"], default="all")
    parser.add_argument("--rules", type=Path, default=None, help="replace the domain's rules")
    parser.add_argument("--cases", type=Path, default=None, help="replace the domain's cases")
    parser.add_argument("--eval-timing", action="store_true", help="also time tracejudge eval")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    names = list(DOMAINS) if args.domain == "all" else [args.domain]
    figures: dict[str, Any] = {}
    for name in names:
        domain = DOMAINS[name]
        rules = args.rules or domain.rules
        cases = args.cases or domain.cases
        truth = domain.labels()
        policy = judge(domain, rules, None)
        cased = both = None
        if cases.exists():
            cased = judge(domain, rules, cases, tools_only=True)
            both = judge(domain, rules, cases)
        figures[name] = report(domain, truth, policy, cased, both)
        judged = {"rules alone": policy} | ({"cases alone": cased} if cased is not None else {})
        figures[name]["validate"] = validate_tables(domain, rules, cases, judged)
    for what, took in TIMINGS:
        print(f"judging {what}: {took * 1e3:.2f} ms per run (wall, this machine)")
    if args.eval_timing:
        figures["timing"] = eval_timing()
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
