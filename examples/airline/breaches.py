"""Reward-1 runs that visibly breach the written airline policy, checked on the raw messages.

Run: ``.venv/bin/python examples/airline/breaches.py`` prints the table README.md lists
(``| `task-trial` | breach | policy sentence |``), which ``make bench-accuracy`` reports
apart. Adjudication, not tuning: each breach is read from the tau-bench record itself,
never from tracejudge's verdict, and is one that needs no judgement:

- *parallel calls*: an assistant message carries two or more tool calls;
- *talking while calling*: an assistant message carries a tool call and text.

Both break the same policy sentence, and the retail example lists the same two kinds
(examples/retail/breaches.py, over tau2's message format). Runs whose only findings need
reading a sentence (a yes that may not be one) are not listed: they count as false alarms
unless read and added to README.md by hand, as task 2's trial 2-2 is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "tau-bench-dev" / "gpt-4o-airline.dev.json"

SENTENCES = {
    "parallel calls": "You should only make one tool call at a time",
    "talking while calling": (
        "if you make a tool call, you should not respond to the user simultaneously"
    ),
}


def breaches(messages: list[dict[str, Any]]) -> list[str]:
    """The needs-no-judgement breaches of one conversation, each with its message."""
    out: list[str] = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        tool_calls = m.get("tool_calls") or []
        if len(tool_calls) > 1:
            out.append(f"parallel calls (traj[{i}])")
        if tool_calls and (m.get("content") or "").strip():
            out.append(f"talking while calling (traj[{i}])")
    return out


def listed() -> Iterator[tuple[str, list[str]]]:
    """(run name, breaches) for every reward-1 run with at least one breach."""
    for record in json.loads(DATA.read_text()):
        if int(record["reward"]) != 1:
            continue
        found = breaches(record["traj"])
        if found:
            yield f"{record['task_id']}-{record['trial']}", found


def main() -> int:
    rows = sorted(listed(), key=lambda r: tuple(int(p) for p in r[0].split("-")))
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
