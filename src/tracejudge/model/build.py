"""The run builder: the spans of one trace -> the agent runs the engine judges.

One run per root ``invoke_agent`` span (an agent span with no agent ancestor; sub-agents
belong to the outer run), or one run for the whole trace when there is no agent span.
Steps are the run's model calls and tool executions ordered by start time (ties: end
time, then span id), so the order is the same however the spans arrived.

Traces are messy: spans get duplicated by retrying exporters, parents go missing when a
service drops its spans, clock or id bugs make parent links loop, and crashed processes
leave spans without an end. None of that raises here. Each problem is handled in one
documented way and recorded in ``Run.notes`` as a coded ``Note`` (code, span ids, text)
so rules can say "insufficient evidence" instead of passing silently:

- duplicate span id: the first copy is kept;
- parent id not in the trace (orphan): the span is treated as a root (its subtree is still
  judged; inside a whole-trace run it is one more top-level span);
- parent cycle: the link into the cycle's earliest span (by start time, then id) is cut
  and that span becomes a root;
- no end time: the span is kept and ordered as if it ended when it started;
- spans outside every agent run (when the trace has agent spans): not judged, but listed;
- a remote tool call recorded on both ends (an MCP server span below the caller's tool
  span): one step, the caller's.

Tool executions the model asked for but no span records are inferred: when a model call
requested tool call X, no ``execute_tool`` span has ``gen_ai.tool.call.id`` X, and a later
model call's input carries a ``tool_call_response`` for X, a ``ToolCall(inferred=True)``
is placed just before that later call (``span_id`` = the later call's span).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tracejudge import semconv as sc
from tracejudge.model.files import group_by_trace
from tracejudge.model.messages import (
    ROLE_ASSISTANT,
    last_assistant_text,
    normalize_messages,
    parse_json_text,
    tool_responses,
)
from tracejudge.model.readers import AGENT_OUTPUT_KEYS, server_side_of_a_call
from tracejudge.model.run import ModelCall, Note, NoteCode, Run, Step, ToolCall
from tracejudge.model.spans import SpanRecord
from tracejudge.model.steps import (
    TRACELOOP_AGENT,
    classify,
    inferred_result_error,
    model_call_from_span,
    tool_call_from_span,
)

__all__ = ["build_runs", "group_by_trace"]

_MAX_LISTED = 5
_OP = sc.GenAiOperationNameValues


def _end(span: SpanRecord) -> int:
    return span.end_ns if span.end_ns >= span.start_ns else span.start_ns


def _key(span: SpanRecord) -> tuple[int, int, str]:
    return (span.start_ns, _end(span), span.span_id)


def _step_key(step: Step) -> tuple[int, int, str]:
    end = step.end_ns if step.end_ns >= step.start_ns else step.start_ns
    return (step.start_ns, end, step.span_id)


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_MAX_LISTED])
    return shown + (f" (+{len(ids) - _MAX_LISTED} more)" if len(ids) > _MAX_LISTED else "")


class _Trace:
    """One trace's spans with a repaired parent forest and per-span evidence notes."""

    def __init__(self, spans: Iterable[SpanRecord]) -> None:
        self.by_id: dict[str, SpanRecord] = {}
        self.span_notes: dict[str, list[Note]] = {}
        copies: dict[str, int] = {}
        for span in spans:
            if span.span_id in self.by_id:
                copies[span.span_id] = copies.get(span.span_id, 1) + 1
            else:
                self.by_id[span.span_id] = span
        for sid, count in copies.items():
            self._note(
                "duplicate_span", sid, f"span {sid} appears {count} times; kept the first copy"
            )
        self.parent: dict[str, str | None] = {}
        for sid, span in self.by_id.items():
            pid = span.parent_span_id
            if pid is not None and pid not in self.by_id:
                self._note(
                    "orphan_span",
                    sid,
                    f"span {sid} ({span.name}): parent {pid} is missing from the trace; "
                    "treated as a root",
                )
                pid = None
            self.parent[sid] = pid
            if span.end_ns == 0 or span.end_ns < span.start_ns:
                self._note(
                    "unfinished_span",
                    sid,
                    f"span {sid} ({span.name}) has no valid end time (unfinished?)",
                )
        self._break_cycles()
        self.children: dict[str, list[str]] = {}
        self.roots: list[str] = []
        for sid in sorted(self.by_id, key=lambda s: _key(self.by_id[s])):
            pid = self.parent[sid]
            if pid is None:
                self.roots.append(sid)
            else:
                self.children.setdefault(pid, []).append(sid)

    def _note(self, code: NoteCode, sid: str, text: str, span_ids: tuple[str, ...] = ()) -> None:
        self.span_notes.setdefault(sid, []).append(Note(code, span_ids or (sid,), text))

    def _break_cycles(self) -> None:
        state: dict[str, int] = {}  # 1: on the current walk, 2: resolved
        for start in sorted(self.by_id):
            chain: list[str] = []
            cur: str | None = start
            while cur is not None and cur not in state:
                state[cur] = 1
                chain.append(cur)
                cur = self.parent[cur]
            if cur is not None and state[cur] == 1:
                cycle = chain[chain.index(cur) :]
                cut = min(cycle, key=lambda s: (self.by_id[s].start_ns, s))
                self.parent[cut] = None
                self._note(
                    "parent_cycle",
                    cut,
                    f"parent links loop through spans {_listed(sorted(cycle))}; "
                    f"cut above span {cut}, treated as a root",
                    (cut, *sorted(s for s in cycle if s != cut)),
                )
            for sid in chain:
                state[sid] = 2

    def walk(self, root: str) -> list[str]:
        """The subtree of ``root`` (pre-order, children by start time)."""
        out: list[str] = []
        stack = [root]
        while stack:
            sid = stack.pop()
            out.append(sid)
            stack.extend(reversed(self.children.get(sid, [])))
        return out

    def agent_roots(self) -> tuple[dict[str, list[str]], list[str]]:
        """Spans of each outermost agent span, and the spans outside every agent."""
        runs: dict[str, list[str]] = {}
        outside: list[str] = []
        stack: list[tuple[str, str | None]] = [(r, None) for r in reversed(self.roots)]
        while stack:
            sid, owner = stack.pop()
            if owner is None and classify(self.by_id[sid]) == "agent":
                owner = sid
                runs[sid] = []
            if owner is None:
                outside.append(sid)
            else:
                runs[owner].append(sid)
            stack.extend((c, owner) for c in reversed(self.children.get(sid, [])))
        return runs, outside


def build_runs(spans: Sequence[SpanRecord]) -> list[Run]:
    """Build the runs of one trace's spans (see the module docstring for the rules).

    Spans of several traces are accepted too: each trace is built on its own and the runs
    are returned trace by trace (first-seen order). Never raises on bad evidence.
    """
    if not spans:
        return []
    traces = group_by_trace(spans)
    if len(traces) > 1:
        return [run for group in traces.values() for run in _build_trace(group)]
    return _build_trace(spans)


def _build_trace(spans: Sequence[SpanRecord]) -> list[Run]:
    trace = _Trace(spans)
    runs_spans, outside = trace.agent_roots()
    if not runs_spans:
        root = trace.roots[0]
        everything = [sid for r in trace.roots for sid in trace.walk(r)]
        run = _build_run(trace, root, everything, agent=False)
        if len(trace.roots) > 1:
            run.notes.append(
                Note(
                    "several_roots",
                    tuple(trace.roots),
                    f"trace has {len(trace.roots)} root spans and no agent span; judged as one "
                    f"run rooted at the earliest ({root})",
                )
            )
        return [run]
    runs = [_build_run(trace, root, ids, agent=True) for root, ids in runs_spans.items()]
    runs.sort(key=lambda r: _key(trace.by_id[r.root_span_id]))
    # Containers above the agents (a workflow span, a request handler) are expected;
    # only spans beside the agents are worth a note.
    above: set[str] = set()
    for root in runs_spans:
        pid = trace.parent[root]
        while pid is not None and pid not in above:
            above.add(pid)
            pid = trace.parent[pid]
    outside = [s for s in outside if s not in above]
    if outside:
        outside_sorted = sorted(outside, key=lambda s: _key(trace.by_id[s]))
        stepish = [s for s in outside_sorted if classify(trace.by_id[s]) in ("model", "tool")]
        text = (
            f"{len(outside)} span(s) of this trace are outside every agent run and were not "
            f"judged: {_listed(outside_sorted)}"
        )
        # only unjudged model/tool spans are a gap; containers beside the agents are not
        note = (
            Note(
                "unjudged_steps",
                tuple(stepish),
                f"{text}; model/tool spans among them: {_listed(stepish)}",
            )
            if stepish
            else Note("outside_runs", tuple(outside_sorted), text)
        )
        for run in runs:
            run.notes.append(note)
    # Defects of spans outside every run (a duplicated or looping container) still matter.
    in_runs = {sid for ids in runs_spans.values() for sid in ids}
    stray = [
        note for sid, notes in trace.span_notes.items() if sid not in in_runs for note in notes
    ]
    for run in runs:
        run.notes.extend(stray)
    return runs


def _lookup(root: SpanRecord, ordered: list[SpanRecord], *keys: str) -> Any:
    """An identity attribute: the root span, then its resource, then any span of the run."""
    for source in (root.attributes, root.resource):
        for key in keys:
            value = source.get(key)
            if value is not None and value != "":
                return value
    for span in ordered:
        for key in keys:
            value = span.attributes.get(key)
            if value is not None and value != "":
                return value
    return None


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def _build_run(trace: _Trace, root_id: str, ids: list[str], *, agent: bool) -> Run:
    root = trace.by_id[root_id]
    ordered = sorted((trace.by_id[s] for s in ids), key=_key)
    notes: list[Note] = []
    for span in ordered:
        notes.extend(trace.span_notes.get(span.span_id, []))
    steps: list[Step] = []
    for span in ordered:
        role = classify(span)
        if role == "model":
            steps.append(model_call_from_span(span, notes))
        elif role == "tool":
            if server_side_of_a_call(span) and _below_a_tool(trace, span.span_id):
                continue  # the caller's tool span is this execution's step
            steps.append(tool_call_from_span(span, notes))
    steps.sort(key=_step_key)
    steps = _infer_tool_calls(steps, notes)
    tl_agent_name = (
        sc.FOREIGN_TRACELOOP_ENTITY_NAME
        if root.attributes.get(sc.FOREIGN_TRACELOOP_SPAN_KIND) == TRACELOOP_AGENT
        else sc.GEN_AI_AGENT_NAME
    )
    request_id, shadow = _shadow_identity(root, notes)
    _source_problems(root, notes)
    answer, answer_span_id, answer_step_index = _final_answer(
        steps, root_id, root if agent else None, notes
    )
    return Run(
        trace_id=root.trace_id,
        root_span_id=root_id,
        agent_name=_s(
            _lookup(root, ordered, sc.GEN_AI_AGENT_NAME, sc.FOREIGN_AGENT_NAME, tl_agent_name)
        ),
        agent_id=_s(_lookup(root, ordered, sc.GEN_AI_AGENT_ID)),
        agent_version=_s(_lookup(root, ordered, sc.GEN_AI_AGENT_VERSION)),
        run_id=_s(_lookup(root, ordered, sc.TRACEJUDGE_RUN_ID)),
        case_id=_s(_lookup(root, ordered, sc.TRACEJUDGE_CASE_ID)),
        experiment_id=_s(_lookup(root, ordered, sc.TRACEJUDGE_EXPERIMENT_ID)),
        variant_id=_s(_lookup(root, ordered, sc.TRACEJUDGE_VARIANT_ID)),
        user_id=_s(_lookup(root, ordered, sc.USER_ID)),
        tenant_id=_s(_lookup(root, ordered, sc.TRACEJUDGE_TENANT_ID)),
        steps=steps,
        final_answer=answer,
        final_answer_span_id=answer_span_id,
        final_answer_step_index=answer_step_index,
        start_ns=min(s.start_ns for s in ordered) if not agent else root.start_ns,
        end_ns=max(_end(s) for s in ordered),
        root_attributes=root.attributes,
        spans=ordered,
        notes=notes,
        conversation_id=_s(_lookup(root, ordered, sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID)),
        request_id=request_id,
        shadow=shadow,
    )


def _below_a_tool(trace: _Trace, span_id: str) -> bool:
    """Whether a tool span is an ancestor of the span (the parent forest is acyclic)."""
    pid = trace.parent[span_id]
    while pid is not None:
        if classify(trace.by_id[pid]) == "tool":
            return True
        pid = trace.parent[pid]
    return False


def _shadow_identity(root: SpanRecord, notes: list[Note]) -> tuple[str | None, bool]:
    """``tracejudge.request.id`` and ``tracejudge.run.shadow`` (the run's ``request_id`` and
    ``shadow``). A shadow that names no
    request cannot be paired with its stable run: a note (``F-EVIDENCE-SHADOW_NO_REQUEST``)
    says so rather than the shadow going unreported; it is still a shadow, never traffic."""
    # the agent span (or its resource) only, as the tags are defined: no scan of the run's
    # spans, so the runs that carry no tag (nearly all) pay two dict lookups
    attrs, resource = root.attributes, root.resource
    request = attrs.get(sc.TRACEJUDGE_REQUEST_ID, resource.get(sc.TRACEJUDGE_REQUEST_ID))
    if isinstance(request, int) and not isinstance(request, bool):
        request = str(request)  # an integer id is an id; true/false or a list is not
    request_id = request.strip() if isinstance(request, str) and request.strip() else None
    flag = attrs.get(sc.TRACEJUDGE_RUN_SHADOW, resource.get(sc.TRACEJUDGE_RUN_SHADOW))
    # a bool from our instrumentation; "true" from a header copied by a proxy or a config
    shadow = flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")
    if shadow and request_id is None:
        what = "no" if request is None else f"an unusable ({short_repr(request)})"
        notes.append(
            Note(
                "shadow_without_request",
                (root.span_id,),
                f"shadow run with {what} {sc.TRACEJUDGE_REQUEST_ID}: it cannot be paired "
                "with the stable run of its request",
            )
        )
    return request_id, shadow


def _source_problems(root: SpanRecord, notes: list[Note]) -> None:
    """``tracejudge.source.problems``: what an importer could not establish from the file
    the run came from (``model.tau2``: a simulation whose task is missing). Each item is a
    note, so the verdict warns (``F-EVIDENCE-SOURCE_PROBLEM``) instead of passing."""
    problems = root.attributes.get(sc.TRACEJUDGE_SOURCE_PROBLEMS)
    if isinstance(problems, str):
        problems = [problems]
    if isinstance(problems, list | tuple):
        for problem in problems:
            notes.append(Note("source_problem", (root.span_id,), str(problem)))


def short_repr(value: Any) -> str:
    """A value quoted for a note, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _infer_tool_calls(steps: list[Step], notes: list[Note]) -> list[Step]:
    """Add the tool executions that only the model calls' messages show (see module doc)."""
    models = [s for s in steps if isinstance(s, ModelCall)]
    observed = {s.call_id for s in steps if isinstance(s, ToolCall) and s.call_id}
    # Tool spans without a call id (OpenInference, OpenLLMetry decorators) can only be
    # matched to requests by name, in order.
    unmatched = [s for s in steps if isinstance(s, ToolCall) and not s.call_id]
    before: dict[str, list[ToolCall]] = {}  # model span id -> inferred calls to put first
    responses = [tool_responses(m.input_messages) for m in models]
    for i, model in enumerate(models):
        for req in model.requested_tool_calls:
            if req.call_id is None:
                notes.append(
                    Note(
                        "no_call_id",
                        (model.span_id,),
                        f"model call {model.span_id} requested tool {req.name} without a call "
                        "id; its execution cannot be matched",
                    )
                )
                continue
            if req.call_id in observed:
                continue
            by_name = next(
                (t for t in unmatched if t.name == req.name and t.start_ns >= model.start_ns),
                None,
            )
            if by_name is not None:
                unmatched.remove(by_name)
                observed.add(req.call_id)
                notes.append(
                    Note(
                        "matched_by_name",
                        (by_name.span_id, model.span_id),
                        f"tool {req.name} (span {by_name.span_id}) has no call id; matched to "
                        f"the requested call {req.call_id} by name",
                    )
                )
                continue
            later = next(
                (j for j in range(i + 1, len(models)) if req.call_id in responses[j]), None
            )
            if later is None:
                notes.append(
                    Note(
                        "not_executed",
                        (model.span_id,),
                        f"model call {model.span_id} requested tool {req.name} "
                        f"(call {req.call_id}) but no execution or result was seen",
                    )
                )
                continue
            target = models[later]
            args, is_json = (
                parse_json_text(req.arguments)
                if isinstance(req.arguments, str)
                else (req.arguments, True)
            )
            result = responses[later][req.call_id]
            if isinstance(result, str):
                result, _ = parse_json_text(result)
            flag = inferred_result_error(result)
            call = ToolCall(
                span_id=target.span_id,
                name=req.name,
                call_id=req.call_id,
                arguments=args,
                arguments_is_json=is_json,
                result=result,
                status="unset" if flag is None else "error",
                error_type=None if flag is None else "tool_error",
                start_ns=model.end_ns if model.end_ns >= model.start_ns else model.start_ns,
                end_ns=target.start_ns,
                inferred=True,
            )
            notes.append(
                Note(
                    "inferred_call",
                    (model.span_id, target.span_id),
                    f"tool {req.name} (call {req.call_id}) has no execute_tool span; inferred "
                    f"from the result in model call {target.span_id}'s input"
                    + (f" (result reports failure: {flag})" if flag else ""),
                )
            )
            if not is_json:
                notes.append(
                    Note(
                        "args_not_json",
                        (target.span_id,),
                        f"tool {req.name} (call {req.call_id}): arguments are not JSON",
                    )
                )
            observed.add(req.call_id)
            before.setdefault(target.span_id, []).append(call)
    if not before:
        return steps
    out: list[Step] = []
    for step in steps:
        if isinstance(step, ModelCall) and step.span_id in before:
            order = list(tool_responses(step.input_messages))
            inferred = before[step.span_id]
            inferred.sort(key=lambda c: order.index(c.call_id) if c.call_id in order else 0)
            out.extend(inferred)
        out.append(step)
    return out


def _final_answer(
    steps: list[Step], root_span_id: str, agent_root: SpanRecord | None, notes: list[Note]
) -> tuple[str | None, str | None, int | None]:
    """The run's final answer, the span it was read from and the index of the model call
    that produced its text (``Run.final_answer``, ``final_answer_span_id``,
    ``final_answer_step_index``); a note says where it came from."""
    step_index = None
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if (
            isinstance(step, ModelCall)
            and step.operation != _OP.EMBEDDINGS
            and last_assistant_text(step.output_messages) is not None
        ):
            step_index = index
            break
    if agent_root is not None:
        attrs = agent_root.attributes
        text = last_assistant_text(
            normalize_messages(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES), ROLE_ASSISTANT)
        )
        source = f"final answer: {sc.GEN_AI_OUTPUT_MESSAGES} of agent span {agent_root.span_id}"
        if text is None:
            for key in AGENT_OUTPUT_KEYS:
                value = attrs.get(key)
                if isinstance(value, str) and value:
                    text = value
                    source = f"final answer: {key} of agent span {agent_root.span_id}"
                    break
        if text is not None:
            notes.append(Note("final_answer", (agent_root.span_id,), source))
            return text, agent_root.span_id, step_index
    calls = [s for s in steps if isinstance(s, ModelCall) and s.operation != _OP.EMBEDDINGS]
    if not calls:
        notes.append(
            Note(
                "final_answer",
                (root_span_id,),
                "final answer: none (no agent output and no model call)",
            )
        )
        return None, None, step_index
    last = calls[-1]
    text = last_assistant_text(last.output_messages)
    if text is None:
        notes.append(
            Note(
                "final_answer",
                (last.span_id,),
                f"final answer: none (the agent span has no output and the last model call "
                f"{last.span_id} produced no text)",
            )
        )
        return None, None, step_index
    notes.append(
        Note(
            "final_answer",
            (last.span_id,),
            f"final answer: output of the last model call {last.span_id}",
        )
    )
    return text, last.span_id, step_index
