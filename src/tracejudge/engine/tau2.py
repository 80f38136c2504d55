"""tau2-bench tasks as cases: the benchmark's expected outcomes, translated mechanically.

A tau2-bench task (an entry of a results file's ``tasks``) lists
``evaluation_criteria.actions`` (``{action_id, requestor, name, arguments}``) and
``communicate_info`` (strings). On the retail and airline domains the reward is 1 exactly
when the database the agent left equals the one that replaying the expected actions from
the initial state produces, and every ``communicate_info`` string appears in an agent
message. The translation keeps that meaning, as ``engine.tau_bench`` does for tau-bench:

- **Writes** become ``expected_actions``, unordered, ``expected_actions`` always present
  (no write expected means any write is unexpected). **Reads** are dropped (the database
  cannot see them), ``transfer_to_human_agents`` is a ``warn`` action by name. Only the
  agent's actions (``requestor: assistant``) are the agent's to take.
- **Arguments keep the reward's meaning.** A list of records is compared on the keys the
  expected records give (``argument_match: keys``): the tools read those fields, so a call
  whose flight records carry extra keys leaves the same database. A list the tool stores
  sorted is compared as a multiset (``unordered``): the same item ids in another order
  leave the same database (``UNORDERED_ARGUMENTS``, read from tau2's tools).
- **An expected action that fails in the benchmark's own environment** is not silently
  expected. tau2 replays the expected actions to build the expected database and skips one
  that raises, so such an action changes nothing there. When a simulation in the files
  shows the call, arguments matching, answered ``Error...`` and no simulation shows it
  succeed, the action leaves ``expected_actions`` (so a write like it is unexpected, as it
  is for the reward) and the case's ``notes`` say so, citing the simulation, message and
  error.
- ``communicate_info`` become ``must_communicate`` text items checked in every assistant
  message, compared case-folded with digit-group commas dropped, as tau2 does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.engine.cases import ArgMatch
from tracejudge.engine.checks.case import value_matches
from tracejudge.engine.tau_bench import MAX_DESCRIPTION, TauKind, tau_kind

RETAIL_TOOL_KINDS: dict[str, TauKind] = {
    "cancel_pending_order": "write",
    "exchange_delivered_order_items": "write",
    "modify_pending_order_address": "write",
    "modify_pending_order_items": "write",
    "modify_pending_order_payment": "write",
    "modify_user_address": "write",
    "return_delivered_order_items": "write",
    "transfer_to_human_agents": "notify",
    "calculate": "read",
    "find_user_id_by_email": "read",
    "find_user_id_by_name_zip": "read",
    "get_item_details": "read",
    "get_order_details": "read",
    "get_product_details": "read",
    "get_user_details": "read",
    "list_all_product_types": "read",
}
"""The tools of tau2-bench's retail domain and what they do to its database."""

UNORDERED_ARGUMENTS: frozenset[tuple[str, str]] = frozenset(
    {
        ("return_delivered_order_items", "item_ids"),
        ("exchange_delivered_order_items", "item_ids"),
        ("exchange_delivered_order_items", "new_item_ids"),
    }
)
"""Arguments tau2's retail tools store sorted (``order.return_items = sorted(item_ids)``),
so their order never reaches the database. ``modify_pending_order_items`` is not here: it
applies its pairs in order, and the order can change the prices it stores."""


@dataclass(slots=True, frozen=True)
class Failure:
    """A call, as a simulation shows it, that the environment answered with an error."""

    simulation: str
    position: str
    error: str


@dataclass(slots=True)
class Tau2Cases:
    """The translation of one or more results files, with counts for people."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    simulations: int = 0
    marked: list[str] = field(default_factory=list)
    """``case id tool``: expected actions taken out because the environment rejects them."""
    without_task: list[str] = field(default_factory=list)
    """Simulations whose task id has no task, named with their position."""


def argument_match(tool: str, arguments: Mapping[str, Any]) -> dict[str, str]:
    """How each argument is compared so that a match means the same database."""
    out: dict[str, str] = {}
    for name, value in arguments.items():
        if (tool, name) in UNORDERED_ARGUMENTS:
            out[name] = "unordered"
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            out[name] = "keys"
    return out


def action_matches(call_args: Any, expected: Mapping[str, Any], match: Mapping[str, str]) -> bool:
    """Whether a call's arguments are the expected action's, each compared by its
    ``argument_match`` mode (``exact`` when unlisted), with no argument missing or extra."""
    if not isinstance(call_args, Mapping) or set(call_args) != set(expected):
        return False
    return all(
        value_matches(call_args[k], v, ArgMatch(match.get(k, "exact")))  # type: ignore[arg-type]
        for k, v in expected.items()
    )


def _calls(doc: Mapping[str, Any]) -> Iterable[tuple[str, str, str, Any, str, bool]]:
    """(task id, simulation label, position, name, arguments, result, ok) per tool call."""
    for n, sim in enumerate(doc.get("simulations") or ()):
        if not isinstance(sim, Mapping) or not isinstance(sim.get("messages"), list):
            continue
        label = f"simulation {sim.get('id')} (simulations[{n}])"
        pending: dict[str, tuple[str, Any]] = {}
        for i, message in enumerate(sim["messages"]):
            if not isinstance(message, Mapping):
                continue
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                    pending[str(call.get("id"))] = (call["name"], call.get("arguments"))
            if message.get("role") == "tool" and str(message.get("id")) in pending:
                name, args = pending.pop(str(message.get("id")))
                text = str(message.get("content") or "")
                ok = not text.startswith("Error")
                yield str(sim.get("task_id")), label, f"messages[{i}]", (name, args), text, ok


def _failures(
    docs: Sequence[Mapping[str, Any]], expected: Mapping[str, list[tuple[str, dict[str, Any]]]]
) -> dict[tuple[str, int], Failure]:
    """(task id, action index) -> a failed call of that action, when none succeeded."""
    failed: dict[tuple[str, int], Failure] = {}
    succeeded: set[tuple[str, int]] = set()
    for doc in docs:
        for task_id, label, position, (name, args), text, ok in _calls(doc):
            for k, (tool, action) in enumerate(expected.get(task_id, ())):
                if tool != name or not action_matches(
                    args, action["arguments"], action.get("argument_match", {})
                ):
                    continue
                if ok:
                    succeeded.add((task_id, k))
                else:
                    failed.setdefault((task_id, k), Failure(label, position, text[:200]))
    return {key: f for key, f in failed.items() if key not in succeeded}


def _task_case(
    task: Mapping[str, Any], prefix: str, kinds: Mapping[str, TauKind]
) -> dict[str, Any]:
    task_id = task["id"]
    criteria = task.get("evaluation_criteria")
    if not isinstance(criteria, Mapping):
        raise ValueError(f"task {task_id}: no evaluation_criteria")
    expected: list[dict[str, Any]] = []
    for k, action in enumerate(criteria.get("actions") or []):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise ValueError(f"task {task_id}: evaluation_criteria.actions[{k}] has no name")
        if action.get("requestor", "assistant") != "assistant":
            continue  # the simulated user's own tool calls are not the agent's to take
        name = action["name"]
        kind = tau_kind(name, kinds)
        if kind == "write":
            arguments = action.get("arguments") or {}
            if not isinstance(arguments, Mapping):
                raise ValueError(
                    f"task {task_id}: evaluation_criteria.actions[{k}].arguments is not an object"
                )
            entry: dict[str, Any] = {"tool": name, "arguments": dict(arguments)}
            match = argument_match(name, arguments)
            if match:
                entry["argument_match"] = match
            expected.append(entry)
        elif kind == "notify":
            expected.append({"tool": name, "severity": "warn"})
    case: dict[str, Any] = {"id": f"{prefix}{task_id}", "expected_actions": expected}
    scenario = task.get("user_scenario")
    instructions = scenario.get("instructions") if isinstance(scenario, Mapping) else None
    if isinstance(instructions, Mapping):
        text = " ".join(
            str(instructions[k])
            for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions")
            if isinstance(instructions.get(k), str) and instructions[k].strip(" .")
        )
        if text:
            case["description"] = text[:MAX_DESCRIPTION]
    elif isinstance(instructions, str) and instructions:
        case["description"] = instructions[:MAX_DESCRIPTION]
    infos = [str(i) for i in criteria.get("communicate_info") or [] if str(i)]
    if infos:
        case["must_communicate"] = [{"text": i} for i in infos]
        case["communicate_in"] = "assistant_messages"
    return case


def _domain(doc: Mapping[str, Any]) -> str | None:
    info = doc.get("info")
    env = info.get("environment_info") if isinstance(info, Mapping) else None
    name = env.get("domain_name") if isinstance(env, Mapping) else None
    return name if isinstance(name, str) and name else None


def cases_from_tau2(
    docs: Sequence[Mapping[str, Any]],
    prefix: str | None = None,
    kinds: Mapping[str, TauKind] = RETAIL_TOOL_KINDS,
) -> Tau2Cases:
    """One case per task in tau2-bench results documents (a task in several files is one
    case), ordered by task id; the prefix defaults to ``tau2-<domain>-`` as the importer
    names case ids (``model.tau2``). ``ValueError`` names the file and task when a task
    is malformed or two files disagree on its expectations (the first file's description
    is kept when only the user scenario's wording differs)."""
    out = Tau2Cases(files=len(docs))
    by_task: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for f, doc in enumerate(docs):
        domain = _domain(doc)
        pre = prefix if prefix is not None else (f"tau2-{domain}-" if domain else "tau2-")
        tasks = doc.get("tasks")
        if not isinstance(tasks, list):
            raise ValueError(f"file {f + 1}: no tasks list")
        ids: set[str] = set()
        for k, task in enumerate(tasks):
            if not isinstance(task, Mapping) or task.get("id") is None:
                raise ValueError(f"file {f + 1}: tasks[{k}] has no id")
            try:
                case = _task_case(task, pre, kinds)
            except ValueError as exc:
                raise ValueError(f"file {f + 1}: tasks[{k}]: {exc}") from None
            task_id = str(task["id"])
            ids.add(task_id)
            # the expectations must agree; a reworded user scenario does not change them
            key = json.dumps({**case, "description": None}, sort_keys=True)
            seen = by_task.get(task_id)
            if seen is not None and seen[1] != key:
                raise ValueError(f"file {f + 1}: task {task_id} differs from {seen[0]}")
            by_task.setdefault(task_id, (f"file {f + 1}", key, case))
        for n, sim in enumerate(doc.get("simulations") or ()):
            out.simulations += 1
            sim_task = sim.get("task_id") if isinstance(sim, Mapping) else None
            if sim_task is None or str(sim_task) not in ids:
                sim_id = sim.get("id") if isinstance(sim, Mapping) else None
                out.without_task.append(
                    f"file {f + 1}: simulation {sim_id} (simulations[{n}]) names task "
                    f"{sim_task!r}, which the file's tasks do not have"
                )
    expected = {
        tid: [(a["tool"], a) for a in case["expected_actions"] if "arguments" in a]
        for tid, (_, _, case) in by_task.items()
    }
    marked: dict[str, list[int]] = {}
    for (tid, k), failure in sorted(_failures(docs, expected).items()):
        tool, action = expected[tid][k]
        case = by_task[tid][2]
        where = case["expected_actions"].index(action)
        marked.setdefault(tid, []).append(where)
        case.setdefault("notes", []).append(
            f"not expected: the task's {tool} {json.dumps(action['arguments'], sort_keys=True)} "
            f"fails in the benchmark's environment ({failure.simulation} {failure.position} "
            f"answered {failure.error!r}, and no simulation shows it succeed); tau2 skips an "
            "expected action that fails when it builds the expected database"
        )
        out.marked.append(f"{case['id']} {tool}")
    for tid, wheres in marked.items():
        case = by_task[tid][2]
        case["expected_actions"] = [
            a for i, a in enumerate(case["expected_actions"]) if i not in wheres
        ]

    def order(task_id: str) -> tuple[int, int | str]:
        return (0, int(task_id)) if task_id.isdigit() else (1, task_id)

    out.cases = [by_task[t][2] for t in sorted(by_task, key=order)]
    return out
