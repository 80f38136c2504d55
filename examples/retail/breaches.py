"""Reward-1 runs that visibly breach the written retail policy, checked on the raw messages.

Run: ``.venv/bin/python examples/retail/breaches.py`` prints the table README.md lists
(``| `task/policy-run` | breach | policy sentence |``), which ``make bench-accuracy`` reports
apart. Adjudication, not tuning: each breach is read from the conversation itself (the tau2
results files), never from tracejudge's verdict, and is one that needs no judgement:

- *parallel calls*: an assistant message carries two or more tool calls;
- *talking while calling*: an assistant message carries a tool call and text;
- *no reminder*: before an exchange or item modification, no assistant message contains
  any of the words a reminder needs (all, else, other, every, more), so none reminded
  the customer to confirm they gave every item;
- *same item*: an exchange or modification whose new item is one of the items it replaces;
- *wrong status*: the action's order, as the last lookup before it showed it, was not in
  the status the action needs (pending to cancel or modify, delivered to return or
  exchange);
- *no hand-off message*: a transfer with no later message saying "transferred to a human".

Runs whose only findings need reading a sentence (a yes that may not be one, details the
proposal may not name) are not listed here: they count as false alarms unless read and
added by hand.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIMS = HERE / "tau2-retail-dev" / "sims"

SENTENCES = {
    "parallel calls": "You should at most make one tool call at a time",
    "talking while calling": (
        "if you take a tool call, you should not respond to the user at the same time"
    ),
    "no reminder": (
        "remember to remind the customer to confirm they have provided all items to be "
        "exchanged / all the items they want to modify"
    ),
    "same item": (
        "each item can be exchanged [modified] to an available new item of the same product "
        "but of different product option"
    ),
    "wrong status": (
        "An order can only be cancelled / modified [returned / exchanged] if its status is "
        "'pending' ['delivered']"
    ),
    "no hand-off message": (
        "To transfer, first make a tool call to transfer_to_human_agents, and then send the "
        "message 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.'"
    ),
}
_NEEDS = {
    "cancel_pending_order": "pending",
    "modify_pending_order_address": "pending",
    "modify_pending_order_items": "pending",
    "modify_pending_order_payment": "pending",
    "return_delivered_order_items": "delivered",
    "exchange_delivered_order_items": "delivered",
}
_ITEM_CHANGES = ("exchange_delivered_order_items", "modify_pending_order_items")
_REMINDER_WORDS = re.compile(r"(?i)\b(all|else|other|every\w*|more)\b")


def _tag(path: Path) -> str:
    m = re.search(r"learned-policy-(.+)_run(\d+)\.json\.gz$", path.name)
    return f"{m.group(1)}-{m.group(2)}" if m else path.stem


def breaches(messages: list[dict[str, Any]]) -> list[str]:
    """The needs-no-judgement breaches of one conversation, each with its message."""
    out: list[str] = []
    said: list[str] = []
    status: dict[str, str] = {}
    calls: dict[str, tuple[str, dict[str, Any], int]] = {}
    transfers: list[int] = []
    for i, m in enumerate(messages):
        text = m.get("content") or ""
        tool_calls = m.get("tool_calls") or []
        if m["role"] == "assistant":
            if len(tool_calls) > 1:
                out.append(f"parallel calls (messages[{i}])")
            if tool_calls and text.strip():
                out.append(f"talking while calling (messages[{i}])")
            if text and transfers and "transferred to a human" in text.lower():
                transfers.clear()
            if text:
                said.append(text)
            for c in tool_calls:
                calls[c["id"]] = (c["name"], c["arguments"], i)
                args = c["arguments"]
                if c["name"] == "transfer_to_human_agents":
                    transfers.append(i)
                if c["name"] in _ITEM_CHANGES:
                    if not any(_REMINDER_WORDS.search(t) for t in said):
                        out.append(f"no reminder ({c['name']}, messages[{i}])")
                    if set(args.get("new_item_ids") or ()) & set(args.get("item_ids") or ()):
                        out.append(f"same item ({c['name']}, messages[{i}])")
                need = _NEEDS.get(c["name"])
                have = status.get(str(args.get("order_id")))
                if need is not None and have is not None and have != need:
                    out.append(f"wrong status ({c['name']} on a {have} order, messages[{i}])")
        elif m["role"] == "tool" and m.get("id") in calls:
            name, _, _ = calls[m["id"]]
            if name == "get_order_details" and not text.startswith("Error"):
                order = json.loads(text)
                status[order["order_id"]] = order["status"]
    out.extend(f"no hand-off message (transfer at messages[{i}])" for i in transfers)
    return out


def listed() -> Iterator[tuple[str, list[str]]]:
    """(run name, breaches) for every reward-1 run with at least one breach."""
    for path in sorted(SIMS.glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for sim in doc["simulations"]:
            if int(sim["reward_info"]["reward"]) != 1:
                continue
            found = breaches(sim["messages"])
            if found:
                yield f"{sim['task_id']}/{_tag(path)}", found


def main() -> int:
    rows = sorted(listed(), key=lambda r: (int(r[0].split("/")[0]), r[0]))
    print("| run | visible breach (message) | policy sentence |")
    print("|---|---|---|")
    for name, found in rows:
        kinds = list(dict.fromkeys(f.split(" (")[0] for f in found))
        print(
            f"| `{name}` | {'; '.join(found)} | "
            + " / ".join(f'"{SENTENCES[k]}"' for k in kinds)
            + " |"
        )
    print(f"\n{len(rows)} reward-1 run(s) listed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
