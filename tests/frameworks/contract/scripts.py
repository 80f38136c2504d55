"""The scripted model turns every integration's contract runs are played against.

One scenario is one conversation with tracejudge's scripted model server (Chat
Completions, over loopback; a fake model, since no real one can run in a test). The
tools are the same for every framework: ``lookup_order`` answers, ``refund`` raises.
"""

from __future__ import annotations

from typing import Final

from tracejudge.demo.script import Reply, Script, ToolRequest

PROMPT: Final = "Is B-1 paid? If so, refund it."
LOOKUP: Final = ToolRequest("lookup_order", {"order_id": "B-1"})
REFUND: Final = ToolRequest("refund", {"order_id": "B-1"})
ANSWER: Final = "B-1 is paid."
REFUSED: Final = "B-1 is paid, but the refund was refused."


def lookup_order_result(order_id: str) -> str:
    """What every framework's ``lookup_order`` tool returns."""
    return f"{order_id}: paid"


def refund_error(order_id: str) -> ValueError:
    """What every framework's ``refund`` tool raises."""
    return ValueError(f"refund of {order_id} refused")


def tool_ok(name: str) -> Script:
    """A model call asking for a tool that succeeds, then the answer."""
    return Script(name, [lambda c: Reply(tool_calls=(LOOKUP,)), lambda c: Reply(text=ANSWER)])


def tool_raises(name: str) -> Script:
    """A model call asking for a tool that succeeds and one that raises, then the answer."""
    return Script(
        name, [lambda c: Reply(tool_calls=(LOOKUP, REFUND)), lambda c: Reply(text=REFUSED)]
    )


def handoff(name: str, tool: str) -> Script:
    """The outer agent's model hands over (calls ``tool``); the inner agent looks the
    order up and answers (on the same conversation: a handoff keeps the history)."""
    return Script(
        name,
        [
            lambda c: Reply(tool_calls=(ToolRequest(tool, {}),)),
            lambda c: Reply(tool_calls=(LOOKUP,)),
            lambda c: Reply(text=ANSWER),
        ],
    )


def delegate(name: str, tool: str) -> Script:
    """The outer agent's model asks the inner agent (a tool) and repeats its answer."""
    return Script(
        name,
        [
            lambda c: Reply(tool_calls=(ToolRequest(tool, {"question": PROMPT}),)),
            lambda c: Reply(text=ANSWER),
        ],
    )
