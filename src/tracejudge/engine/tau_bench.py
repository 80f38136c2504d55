"""tau-bench task records as cases: the benchmark's expected outcomes, translated mechanically.

A tau-bench task (``info.task`` of a result record) lists ``actions`` (``{name, kwargs}``)
and ``outputs`` (strings). Its reward is 1 exactly when the database the agent left equals
the one that replaying ``actions`` produces, and (when there are outputs) every output
appears in some assistant reply (case-insensitive, commas ignored). The translation keeps
that meaning:

- **Writes** (tools that change the database) become ``expected_actions`` with their exact
  arguments, unordered (the final database does not record order). ``expected_actions`` is
  always present, even empty: a task with no writes expects the database unchanged, so any
  successful write is unexpected.
- **Reads** (``get_*``, ``search_*``, ``list_*``, ``find_*``, ``calculate``, ``think``) are
  dropped. They change nothing, so the reward cannot see them, and an agent that found
  the reservation another way did nothing wrong.
- **Notifications** (``transfer_to_human_agents``) become expected actions of severity
  ``warn``, tool name only: the task expects the hand-off, but the database (and so the
  reward) ignores it, and its ``summary`` argument is free text. Missing it warns.
- ``outputs`` become ``must_communicate`` text items checked in every assistant message
  (``communicate_in: assistant_messages``); text items compare case-folded with digit-group
  commas dropped, as tau-bench does.

Tool kinds default to the airline domain's (``AIRLINE_TOOL_KINDS``); names not listed are
read by prefix as above, and anything else is a write (a task's unknown action is more
likely a change than a look-up, and requiring it fails loudly rather than passing).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

TauKind: TypeAlias = Literal["read", "write", "notify"]

AIRLINE_TOOL_KINDS: dict[str, TauKind] = {
    "book_reservation": "write",
    "cancel_reservation": "write",
    "update_reservation_baggages": "write",
    "update_reservation_flights": "write",
    "update_reservation_passengers": "write",
    "send_certificate": "write",
    "transfer_to_human_agents": "notify",
    "get_user_details": "read",
    "get_reservation_details": "read",
    "search_direct_flight": "read",
    "search_onestop_flight": "read",
    "list_all_airports": "read",
    "calculate": "read",
    "think": "read",
}
"""The 14 tools of tau-bench's airline domain and what they do to its database."""

_READ_PREFIXES = ("get_", "search_", "list_", "find_")
_READ_NAMES = frozenset({"calculate", "think"})
_NOTIFY_NAMES = frozenset({"transfer_to_human_agents"})
_RULE_KIND = {"read": "lookup", "write": "mutate", "notify": "notify"}
MAX_DESCRIPTION = 20_000


def tau_kind(name: str, kinds: Mapping[str, TauKind] = AIRLINE_TOOL_KINDS) -> TauKind:
    """What a tool does to the database: the table's answer, else by name."""
    if name in kinds:
        return kinds[name]
    if name in _NOTIFY_NAMES:
        return "notify"
    if name in _READ_NAMES or name.startswith(_READ_PREFIXES):
        return "read"
    return "write"


def tools_section(kinds: Mapping[str, TauKind] = AIRLINE_TOOL_KINDS) -> dict[str, dict[str, str]]:
    """The rules file's ``tools:`` for these tools (lookup / mutate / notify), so the
    ``case`` check knows which unexpected calls are writes."""
    return {name: {"kind": _RULE_KIND[kind]} for name, kind in sorted(kinds.items())}


def case_from_task(
    task_id: Any,
    task: Mapping[str, Any],
    prefix: str = "tau-airline-",
    kinds: Mapping[str, TauKind] = AIRLINE_TOOL_KINDS,
) -> dict[str, Any]:
    """One tau-bench task as one case (a dict in the cases-file format)."""
    expected: list[dict[str, Any]] = []
    for k, action in enumerate(task.get("actions") or []):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise ValueError(f"task {task_id}: actions[{k}] has no name")
        name = action["name"]
        kind = tau_kind(name, kinds)
        if kind == "write":
            kwargs = action.get("kwargs") or {}
            if not isinstance(kwargs, Mapping):
                raise ValueError(f"task {task_id}: actions[{k}].kwargs is not an object")
            expected.append({"tool": name, "arguments": dict(kwargs)})
        elif kind == "notify":
            expected.append({"tool": name, "severity": "warn"})
    case: dict[str, Any] = {"id": f"{prefix}{task_id}", "expected_actions": expected}
    instruction = task.get("instruction")
    if isinstance(instruction, str) and instruction:
        case["description"] = instruction[:MAX_DESCRIPTION]
    outputs = [str(o) for o in task.get("outputs") or [] if str(o)]
    if outputs:
        case["must_communicate"] = [{"text": o} for o in outputs]
        case["communicate_in"] = "assistant_messages"
    return case


def cases_from_tau_bench(
    records: Iterable[Mapping[str, Any]],
    prefix: str = "tau-airline-",
    kinds: Mapping[str, TauKind] = AIRLINE_TOOL_KINDS,
) -> list[dict[str, Any]]:
    """One case per task in tau-bench result records (several trials of a task are one
    case), ordered by task id. Records read ``info.task`` (result files) or ``task``.

    ``ValueError`` names the record when one has no task or two trials of a task disagree.
    """
    by_task: dict[Any, tuple[int, str, dict[str, Any]]] = {}
    for n, record in enumerate(records):
        info = record.get("info")
        task = info.get("task") if isinstance(info, Mapping) else None
        task = task if isinstance(task, Mapping) else record.get("task")
        task_id = record.get("task_id")
        if not isinstance(task, Mapping) or task_id is None:
            raise ValueError(f"record {n}: no task_id and info.task")
        case = case_from_task(task_id, task, prefix, kinds)
        key = json.dumps(case, sort_keys=True)
        seen = by_task.get(task_id)
        if seen is not None and seen[1] != key:
            raise ValueError(f"record {n}: task {task_id} differs from record {seen[0]}")
        by_task.setdefault(task_id, (n, key, case))
    ordered = sorted(by_task.items(), key=lambda kv: (str(type(kv[0])), kv[0]))
    return [case for _, (_, _, case) in ordered]


def dump_jsonl(cases: Iterable[Mapping[str, Any]]) -> str:
    """Cases as a JSON-lines cases file (one case per line)."""
    return "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in cases)
