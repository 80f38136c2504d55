"""Chat transcripts people already keep, as the GenAI spans a live agent would have emitted.

Many teams have conversations but no traces: OpenAI chat-message logs, evaluation datasets
such as tau-bench. Rather than a second judging path, a transcript becomes the spans an
instrumented agent would have produced (an ``invoke_agent`` root, one ``chat`` span per
assistant message whose input is the history before it, one ``execute_tool`` span per tool
result), and those take the same run builder and engine as live traces. So a rule means the
same thing on a transcript and on production traffic.

Shapes read (JSON, or JSON lines with one conversation per line):

- a list of OpenAI chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``);
- ``{"messages": [...], "case_id"?, "run_id"?, "agent"?, "variant"?, "user_id"?,
  "conversation_id"?}``, or a list of those;
- tau-bench records ``{task_id, trial, reward, info: {task: {...}}, traj: [...]}``, or a list
  of them (``traj`` is OpenAI chat messages; ``traj[0]`` the system policy).

Transcripts have no clock: message *i* is placed ``step_ns`` after message *i - 1* from
``start_ns``. tau-bench's environment states its clock in the policy ("The current time is
2024-05-15 15:00:00 EST."); when it does, the run starts then, so time rules ("within 24 h
of booking") judge against the time the agent was told.

Tool results pair with calls by id, and by position where ids repeat (real transcripts
reuse ids inside one conversation): a result answers the earliest pending call with its id.
A result that answers no call is kept as a tool execution of the name the message gives (or
``unknown``) with no request, which the run builder reports as missing evidence.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from tracejudge import semconv as sc
from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.messages import (
    ARGUMENTS,
    FUNCTION,
    ID,
    NAME,
    ROLE,
    TOOL_CALL_ID,
    TOOL_CALLS,
    normalize_messages,
)
from tracejudge.model.spans import (
    SPAN_KIND_CLIENT,
    SPAN_KIND_INTERNAL,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    SpanRecord,
)

__all__ = [
    "TranscriptMeta",
    "is_transcript",
    "spans_from_chat",
    "spans_from_tau_bench",
    "spans_from_transcript_doc",
]

DEFAULT_START_NS = 1_700_000_000_000_000_000
"""2023-11-14T22:13:20Z: an arbitrary, fixed clock for transcripts that state none."""
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_OP = sc.GenAiOperationNameValues
_TAU_CLOCK = re.compile(
    r"current time is (\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)\s*([A-Z]{2,4})?"
)
_TAU_DOMAIN = re.compile(r"^#\s*(\w+)")
_ZONES = {"UTC": 0, "GMT": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "PST": -8, "PDT": -7}


@dataclass(slots=True, frozen=True)
class TranscriptMeta:
    """Identity and clock of one transcript's run (what a live agent puts on its spans)."""

    agent_name: str = "agent"
    case_id: str | None = None
    run_id: str | None = None
    variant_id: str | None = None
    user_id: str | None = None
    conversation_id: str | None = None
    model: str | None = None
    provider: str = "openai"
    start_ns: int = DEFAULT_START_NS
    step_ns: int = 1_000_000_000
    tool_error_prefixes: tuple[str, ...] = ()
    """A tool result whose text starts with one of these is a failed execution (tau-bench's
    tools answer ``"Error: ..."`` instead of raising)."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """More attributes for the root span."""


def _hex(seed: str, size: int) -> str:
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:size]


def _dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _check_messages(messages: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(messages, list):
        raise OtlpDecodeError(
            where, f"expected a list of chat messages, got {type(messages).__name__}"
        )
    for i, message in enumerate(messages):
        at = f"{where}[{i}]" if where else f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise OtlpDecodeError(
                at, f"a chat message must be an object, got {type(message).__name__}"
            )
        role = message.get(ROLE)
        if role not in _ROLES:
            raise OtlpDecodeError(f"{at}.role", f"unknown role {role!r}")
        calls = message.get(TOOL_CALLS)
        if calls is not None and not isinstance(calls, list):
            raise OtlpDecodeError(f"{at}.tool_calls", "must be a list")
    return list(messages)


def _calls_of(message: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    out: list[tuple[str | None, str, Any]] = []
    for call in message.get(TOOL_CALLS) or ():
        if not isinstance(call, Mapping):
            continue
        fn = call.get(FUNCTION)
        source = fn if isinstance(fn, Mapping) else call
        name = source.get(NAME)
        if isinstance(name, str):
            cid = call.get(ID)
            out.append((None if cid is None else str(cid), name, source.get(ARGUMENTS)))
    return out


def spans_from_chat(
    messages: Sequence[Any], meta: TranscriptMeta, where: str = ""
) -> list[SpanRecord]:
    """The spans of one chat transcript (see the module docstring)."""
    raw = _check_messages(list(messages), where)
    canonical = [(normalize_messages([m]) or [{}])[0] for m in raw]
    seed = f"{meta.case_id}/{meta.run_id}/{meta.conversation_id}/{_dumps(raw)[:4096]}/{len(raw)}"
    trace_id = _hex(seed, 32)
    counter = 0

    def span_id() -> str:
        nonlocal counter
        counter += 1
        return _hex(f"{trace_id}/{counter}", 16)

    def at(i: int) -> int:
        return meta.start_ns + (i + 1) * meta.step_ns

    root_id = span_id()
    half = meta.step_ns // 2
    spans: list[SpanRecord] = []
    pending: list[tuple[str | None, str, Any]] = []
    model = meta.model or "unknown"
    for i, message in enumerate(raw):
        role = message.get(ROLE)
        if role == "assistant":
            out = dict(canonical[i])
            out.setdefault("finish_reason", "tool_call" if _calls_of(message) else "stop")
            attrs: dict[str, Any] = {
                sc.GEN_AI_OPERATION_NAME: _OP.CHAT,
                sc.GEN_AI_PROVIDER_NAME: meta.provider,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.GEN_AI_INPUT_MESSAGES: _dumps(canonical[:i]),
                sc.GEN_AI_OUTPUT_MESSAGES: _dumps([out]),
            }
            spans.append(
                SpanRecord(
                    trace_id,
                    span_id(),
                    root_id,
                    f"{_OP.CHAT} {model}",
                    SPAN_KIND_CLIENT,
                    at(i) - half,
                    at(i),
                    STATUS_UNSET,
                    "",
                    attrs,
                )
            )
            pending.extend(_calls_of(message))
        elif role in ("tool", "function"):
            cid = message.get(TOOL_CALL_ID)
            cid = None if cid is None else str(cid)
            match = next(
                (k for k, p in enumerate(pending) if cid is not None and p[0] == cid), None
            )
            if match is None and cid is None:
                name_given = message.get(NAME)
                match = next((k for k, p in enumerate(pending) if p[1] == name_given), None)
            if match is not None:
                call_id, name, arguments = pending.pop(match)
            else:
                given = message.get(NAME)
                call_id, name, arguments = cid, given if isinstance(given, str) else "unknown", None
            content = message.get("content")
            result = content if isinstance(content, str) else _dumps(content)
            tattrs: dict[str, Any] = {
                sc.GEN_AI_OPERATION_NAME: _OP.EXECUTE_TOOL,
                sc.GEN_AI_TOOL_NAME: name,
                sc.GEN_AI_TOOL_CALL_RESULT: result,
            }
            if call_id is not None:
                tattrs[sc.GEN_AI_TOOL_CALL_ID] = call_id
            if arguments is not None:
                tattrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = (
                    arguments if isinstance(arguments, str) else _dumps(arguments)
                )
            failed = any(result.startswith(p) for p in meta.tool_error_prefixes)
            status = STATUS_OK
            message_text = ""
            if failed:
                status = STATUS_ERROR
                message_text = result[:200]
                tattrs[sc.ERROR_TYPE] = "tool_error"
            spans.append(
                SpanRecord(
                    trace_id,
                    span_id(),
                    root_id,
                    f"{_OP.EXECUTE_TOOL} {name}",
                    SPAN_KIND_INTERNAL,
                    at(i) - half + 1,
                    at(i),
                    status,
                    message_text,
                    tattrs,
                )
            )
    root_attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: _OP.INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: meta.agent_name,
        sc.GEN_AI_PROVIDER_NAME: meta.provider,
    }
    for key, value in (
        (sc.TRACEJUDGE_CASE_ID, meta.case_id),
        (sc.TRACEJUDGE_RUN_ID, meta.run_id),
        (sc.TRACEJUDGE_VARIANT_ID, meta.variant_id),
        (sc.USER_ID, meta.user_id),
        (sc.GEN_AI_CONVERSATION_ID, meta.conversation_id),
    ):
        if value is not None:
            root_attrs[key] = value
    root_attrs.update(meta.attributes)
    root = SpanRecord(
        trace_id,
        root_id,
        None,
        f"{_OP.INVOKE_AGENT} {meta.agent_name}",
        SPAN_KIND_INTERNAL,
        meta.start_ns,
        at(len(raw)),
        STATUS_UNSET,
        "",
        root_attrs,
    )
    return [root, *spans]


def tau_clock(policy: str) -> int | None:
    """The environment's clock stated in a tau-bench policy, as Unix nanoseconds."""
    m = _TAU_CLOCK.search(policy)
    if m is None:
        return None
    date, time, zone = m.group(1), m.group(2), m.group(3) or "UTC"
    offset = _ZONES.get(zone)
    if offset is None:
        return None
    fmt = "%Y-%m-%d %H:%M:%S" if time.count(":") == 2 else "%Y-%m-%d %H:%M"
    local = datetime.strptime(f"{date} {time}", fmt)
    moment = local.replace(tzinfo=timezone(timedelta(hours=offset)))
    return int(moment.timestamp()) * 1_000_000_000


def spans_from_tau_bench(
    record: Mapping[str, Any],
    *,
    case_prefix: str | None = None,
    agent_name: str = "tau-bench-agent",
    variant_id: str | None = None,
    where: str = "",
) -> list[SpanRecord]:
    """The spans of one tau-bench record: case ``<prefix><task_id>``, run ``<task>-<trial>``
    (the prefix defaults to ``tau-<domain>-``, the domain read from the policy's title, e.g.
    ``tau-airline-``),
    ``user.id`` the task's user (the customer the agent serves), failed tools from
    ``"Error: "`` results, the clock from the policy."""
    traj = record.get("traj")
    if not isinstance(traj, list):
        raise OtlpDecodeError(f"{where}.traj".lstrip("."), "a tau-bench record needs a traj list")
    info = record.get("info")
    task = info.get("task") if isinstance(info, Mapping) else None
    user_id = task.get("user_id") if isinstance(task, Mapping) else None
    task_id = record.get("task_id")
    trial = record.get("trial")
    first = traj[0] if traj and isinstance(traj[0], Mapping) else {}
    policy = first.get("content") if first.get(ROLE) == "system" else None
    start = tau_clock(policy) if isinstance(policy, str) else None
    if case_prefix is None:
        title = _TAU_DOMAIN.match(policy.lstrip()) if isinstance(policy, str) else None
        case_prefix = f"tau-{title.group(1).lower()}-" if title else "tau-"
    meta = TranscriptMeta(
        agent_name=agent_name,
        case_id=None if task_id is None else f"{case_prefix}{task_id}",
        run_id=None if task_id is None else f"{task_id}-{trial if trial is not None else 0}",
        variant_id=variant_id,
        user_id=user_id if isinstance(user_id, str) else None,
        start_ns=start if start is not None else DEFAULT_START_NS,
        tool_error_prefixes=("Error:",),
    )
    return spans_from_chat(traj, meta, f"{where}.traj".lstrip("."))


def _meta_of(doc: Mapping[str, Any]) -> TranscriptMeta:
    def s(key: str) -> str | None:
        value = doc.get(key)
        return None if value is None else str(value)

    return TranscriptMeta(
        agent_name=s("agent") or "agent",
        case_id=s("case_id"),
        run_id=s("run_id"),
        variant_id=s("variant"),
        user_id=s("user_id"),
        conversation_id=s("conversation_id"),
        model=s("model"),
    )


def is_transcript(doc: Any) -> bool:
    """Whether a parsed JSON document is one of the transcript shapes (not OTLP/JSON)."""
    if isinstance(doc, Mapping):
        return isinstance(doc.get("traj"), list) or isinstance(doc.get("messages"), list)
    if isinstance(doc, list) and doc and isinstance(doc[0], Mapping):
        head = doc[0]
        return (
            isinstance(head.get("traj"), list)
            or isinstance(head.get("messages"), list)
            or (head.get(ROLE) in _ROLES and "resourceSpans" not in head)
        )
    return False


def spans_from_transcript_doc(doc: Any, where: str = "") -> list[SpanRecord]:
    """Every conversation in one transcript document (see the module docstring)."""
    if isinstance(doc, Mapping):
        if isinstance(doc.get("traj"), list):
            return spans_from_tau_bench(doc, where=where)
        return spans_from_chat(doc["messages"], _meta_of(doc), f"{where}.messages".lstrip("."))
    assert isinstance(doc, list)
    if doc and isinstance(doc[0], Mapping) and doc[0].get(ROLE) in _ROLES:
        return spans_from_chat(doc, TranscriptMeta(), where)
    out: list[SpanRecord] = []
    for i, item in enumerate(doc):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or not is_transcript(item):
            raise OtlpDecodeError(at, "expected a transcript (messages or a tau-bench record)")
        out.extend(spans_from_transcript_doc(item, at))
    return out
