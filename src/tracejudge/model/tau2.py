"""tau2-bench results files as the GenAI spans a live agent would have emitted.

tau2-bench (the current version of tau-bench) writes one JSON document per evaluation:
``{info, tasks, simulations}``. Each simulation is one conversation of the agent with a
simulated user: ``id``, ``task_id``, ``trial``, ``start_time``, ``messages``. Its messages
differ from OpenAI chat messages in two ways that matter here:

- an assistant's ``tool_calls`` are ``{id, name, arguments}`` (no ``function`` wrapper,
  arguments an object);
- a tool result carries its call id as ``id`` (not ``tool_call_id``), and a failed
  execution is a result whose text starts with ``Error`` (the environment answers the
  exception's message instead of raising).

Each simulation becomes one run through ``model.transcripts.spans_from_chat``, so a rule
means the same on tau2, tau-bench and live traffic: case ``tau2-<domain>-<task_id>`` (the
domain from ``info.environment_info.domain_name``), run id the simulation's ``id`` (a
task's trials across several files stay apart), the model from ``info.agent_info.llm``.
The clock starts at the simulation's ``start_time`` (tau2 writes local times without a
zone; they are taken as UTC), one second per message. The simulated user's own tool calls
and their results (``requestor: user``, tau2's telecom domain) are not the agent's steps and
are left out; the user's words stay.

Bad input is never skipped silently. A simulation that cannot be read (not an object, no
message list, a message of an unknown role) is a problem naming the simulation and the
message; the others are still read. A simulation whose ``task_id`` has no entry in the
file's ``tasks``, or with a tool result that answers no call, is still judged, and its root
span carries ``tracejudge.source.problems`` so the verdict gets an
``F-EVIDENCE-SOURCE_PROBLEM`` warning naming the simulation and the position: without its
task nothing says what the run had to do. ``Tau2Read`` counts what was read and what was not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard

from tracejudge import semconv as sc
from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.spans import SpanRecord
from tracejudge.model.transcripts import DEFAULT_START_NS, TranscriptMeta, spans_from_chat

__all__ = ["ERROR_PREFIXES", "Tau2Read", "is_tau2_results", "spans_from_tau2"]

ERROR_PREFIXES = ("Error",)
"""A tool result starting with one of these is a failed execution."""
_ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(slots=True)
class Tau2Read:
    """What one results file gave: spans, and counts of what was and was not read."""

    spans: list[SpanRecord] = field(default_factory=list)
    problems: list[OtlpDecodeError] = field(default_factory=list)
    simulations: int = 0
    read: int = 0
    without_task: int = 0
    tasks: int = 0

    def summary(self) -> str:
        """One line for people: what was read and what was not."""
        skipped = self.simulations - self.read
        text = (
            f"tau2-bench results: {self.read} of {self.simulations} simulation(s) read, "
            f"{skipped} skipped; {self.tasks} task(s)"
        )
        if self.without_task:
            text += f"; {self.without_task} simulation(s) name a task the file does not have"
        return text


def is_tau2_results(doc: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether a parsed JSON document is a tau2-bench results file."""
    return (
        isinstance(doc, Mapping)
        and isinstance(doc.get("simulations"), list)
        and ("tasks" in doc or "info" in doc)
    )


def _domain(info: Any) -> str | None:
    env = info.get("environment_info") if isinstance(info, Mapping) else None
    name = env.get("domain_name") if isinstance(env, Mapping) else None
    return name if isinstance(name, str) and name else None


def _model(info: Any) -> str | None:
    agent = info.get("agent_info") if isinstance(info, Mapping) else None
    llm = agent.get("llm") if isinstance(agent, Mapping) else None
    return llm if isinstance(llm, str) and llm else None


def _start_ns(value: Any) -> int:
    if not isinstance(value, str):
        return DEFAULT_START_NS
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return DEFAULT_START_NS
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000) * 1_000


def chat_messages(messages: Sequence[Any], where: str) -> list[dict[str, Any]]:
    """tau2 messages as OpenAI-style chat messages (``tool_call_id`` from a result's
    ``id``); ``OtlpDecodeError`` names the first message that is not a message."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        at = f"{where}.messages[{i}]"
        if not isinstance(message, Mapping):
            raise OtlpDecodeError(at, f"a message must be an object, got {type(message).__name__}")
        role = message.get("role")
        if role not in _ROLES:
            raise OtlpDecodeError(f"{at}.role", f"unknown role {role!r}")
        content = message.get("content")
        chat: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls is not None and not isinstance(calls, list):
                raise OtlpDecodeError(f"{at}.tool_calls", "must be a list")
            if calls:
                chat["tool_calls"] = [
                    _call(c, f"{at}.tool_calls[{k}]") for k, c in enumerate(calls)
                ]
        elif role == "tool":
            if message.get("requestor") == "user":
                continue  # the simulated user's own tool (tau2 telecom): not the agent's step
            cid = message.get("id")
            if cid is not None:
                chat["tool_call_id"] = str(cid)
            if not isinstance(content, str):
                chat["content"] = "" if content is None else content
        out.append(chat)
    return out


def orphan_results(chat: Sequence[Mapping[str, Any]], label: str) -> list[str]:
    """Each tool result that answers no pending tool call, named with its position."""
    pending: list[str | None] = []
    out: list[str] = []
    for i, message in enumerate(chat):
        for call in message.get("tool_calls") or ():
            pending.append(call.get("id"))
        if message.get("role") == "tool":
            cid = message.get("tool_call_id")
            if cid in pending:
                pending.remove(cid)
            else:
                out.append(
                    f"{label} messages[{i}]: tool result (call id {cid!r}) answers no tool call"
                )
    return out


def _call(call: Any, at: str) -> dict[str, Any]:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise OtlpDecodeError(at, "a tool call needs a name")
    cid = call.get("id")
    return {
        "id": None if cid is None else str(cid),
        "type": "function",
        "function": {"name": call["name"], "arguments": call.get("arguments") or {}},
    }


def spans_from_tau2(doc: Mapping[str, Any], where: str = "") -> Tau2Read:
    """Every readable simulation of one tau2-bench results document (module docstring)."""
    out = Tau2Read()
    info = doc.get("info")
    domain = _domain(info)
    model = _model(info)
    prefix = f"tau2-{domain}-" if domain else "tau2-"
    tasks = doc.get("tasks")
    task_ids: set[str] = set()
    if isinstance(tasks, list):
        task_ids = {
            str(t["id"]) for t in tasks if isinstance(t, Mapping) and t.get("id") is not None
        }
        out.tasks = len(task_ids)
    elif tasks is not None:
        out.problems.append(OtlpDecodeError(f"{where}tasks", "must be a list of tasks"))
    sims = doc["simulations"]
    out.simulations = len(sims)
    for n, sim in enumerate(sims):
        at = f"{where}simulations[{n}]"
        if not isinstance(sim, Mapping):
            out.problems.append(
                OtlpDecodeError(at, f"a simulation must be an object, got {type(sim).__name__}")
            )
            continue
        sim_id = sim.get("id")
        label = f"{at} (id {sim_id})" if sim_id is not None else at
        messages = sim.get("messages")
        if not isinstance(messages, list):
            out.problems.append(OtlpDecodeError(label, "a simulation needs a messages list"))
            continue
        task_id = sim.get("task_id")
        attributes: dict[str, Any] = {}
        if task_id is None or str(task_id) not in task_ids:
            out.without_task += 1
            attributes[sc.TRACEJUDGE_SOURCE_PROBLEMS] = [
                f"simulation {sim_id} ({at}) names task {task_id!r}, which the results "
                "file's tasks do not have: nothing says what the run had to do"
            ]
        trial = sim.get("trial")
        meta = TranscriptMeta(
            agent_name=f"tau2-{domain}-agent" if domain else "tau2-agent",
            case_id=None if task_id is None else f"{prefix}{task_id}",
            run_id=str(sim_id) if sim_id is not None else f"{task_id}-{trial}-{n}",
            conversation_id=None if sim_id is None else str(sim_id),
            model=model,
            start_ns=_start_ns(sim.get("start_time")),
            tool_error_prefixes=ERROR_PREFIXES,
            attributes=attributes,
        )
        try:
            chat = chat_messages(messages, label)
            attributes.setdefault(sc.TRACEJUDGE_SOURCE_PROBLEMS, []).extend(
                orphan_results(chat, f"simulation {sim_id} ({at})")
            )
            if not attributes[sc.TRACEJUDGE_SOURCE_PROBLEMS]:
                del attributes[sc.TRACEJUDGE_SOURCE_PROBLEMS]
            out.spans.extend(spans_from_chat(chat, meta, f"{label}.messages"))
        except OtlpDecodeError as exc:
            out.problems.append(exc)
            continue
        out.read += 1
    return out
