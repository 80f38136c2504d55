"""The ``case`` check: judge a run against its case's entry in the cases file.

Rules say what every run must do; a case says what *this* task needed: which writes, with
which arguments, what must not happen, what the user must be told. So the check finds
what no policy rule can: a permitted but wrong write, the write the customer needed and
never got, the number the agent never gave.

Matching. Only successful calls count as actions by default (``attempts: successful``): a
rejected call changed nothing, so it cannot satisfy an expectation. Expected actions are
paired with calls of the same tool whose arguments match (a maximum matching, so one call
never serves two expectations and the order of the list does not decide the pairing);
with ``ordered: true`` they must also occur in the listed order (other calls may come in
between). Then, per unpaired expectation: a paired-off call of the same tool with other
arguments is *wrong arguments* (it cites the call and names each differing argument);
none at all is a *missing action* (root, ``absent``). A successful call of a ``mutate``
tool that no expectation claimed is an *unexpected write*; reads and notifications never
are. Tool kinds come from the rules' ``tools:`` or the span's effect; a call of unknown
kind that no expectation claimed is missing evidence, never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tracejudge.engine.cases import EXACT, ActionSpec, ArgMatch, Case, Info
from tracejudge.engine.checks.base import Check, CheckSpec, check_params, short
from tracejudge.engine.checks.outcome import State
from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok
from tracejudge.model.conversation import turns_of
from tracejudge.model.run import ToolCall

CASE_RULE_ID = "tracejudge.case"
"""The id of the rule the engine adds when it is given cases and the rules have no
``case`` rule (layer outcome, severity fail)."""

_MISSING = object()
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d)")
Calls = list[tuple[int, ToolCall]]


class CaseCheck:
    """Judges a run against ``ctx.cases``' entry for ``run.case_id``."""

    def __init__(self, attempts: str = "successful", failed_writes: str = "ignore") -> None:
        self.all_attempts = attempts == "all"
        self.failed_writes = failed_writes

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Forbidden actions, expected actions and writes, state, then information."""
        run = ctx.run
        if not run.case_id:
            report.not_applicable = True  # outside every case (most production traffic)
            return
        if ctx.cases is None:
            # no cases file at all: the caller did not ask for case judging (as a baseline
            # rule without a store); a file that lacks the run's case is different, below
            report.not_applicable = True
            return
        case = ctx.cases.get(run.case_id)
        if case is None:
            report.insufficient(
                "F-EVIDENCE-NO_CASE",
                ctx.root,
                f"case {run.case_id!r} has no entry in the cases file {ctx.cases.source}",
            )
            return
        calls = [(i, c) for i, c in ctx.tool_index if self.all_attempts or ok(c)]
        claimed: set[int] = set()  # steps a finding or an expectation already accounts for
        if case.forbidden:
            _forbidden(ctx, report, case, calls, claimed)
        if case.expected is not None:
            self._actions(ctx, report, case, case.expected, calls, claimed)
        if case.state:
            State(list(case.state), "F-CASE-STATE_MISMATCH").evaluate(ctx, report)
        if case.communicate:
            _communicate(ctx, report, case)

    def _actions(
        self,
        ctx: RunContext,
        report: Report,
        case: Case,
        expected: tuple[ActionSpec, ...],
        calls: Calls,
        claimed: set[int],
    ) -> None:
        if case.ordered:
            pairs = _ordered(ctx, report, expected, calls)
        else:
            pairs = _unordered(expected, calls)
        for pos in pairs.values():
            claimed.add(calls[pos][0])
        for e, spec in enumerate(expected):
            if e not in pairs:
                _unpaired(ctx, report, spec, calls, claimed)
        unknown: Calls = []
        for i, call in calls:
            if i in claimed:
                continue
            kind = ctx.kinds[i]
            if kind == "mutate":
                report.fail(
                    "F-CASE-UNEXPECTED_WRITE",
                    (call.span_id,),
                    f"{call.name}({short(call.arguments, 80)}) changed state but matches no "
                    f"expected action of case {case.id!r}",
                    i,
                )
            elif kind is None:
                unknown.append((i, call))
        if unknown:
            tools = sorted({c.name for _, c in unknown})
            report.insufficient(
                "F-EVIDENCE-UNKNOWN_TOOL_KIND",
                tuple(c.span_id for _, c in unknown[:10]),
                f"{len(unknown)} call(s) of tools of unknown kind ({', '.join(tools[:5])}) match "
                "no expected action; declare their kind under tools: to judge unexpected writes",
                unknown[0][0],
            )
        if self.failed_writes != "ignore":
            for i, call in ctx.tool_index:
                if not ok(call) and ctx.kinds[i] == "mutate":
                    report.fail(
                        "F-CASE-FAILED_WRITE",
                        (call.span_id,),
                        f"{call.name} failed ({call.error_type or 'error'}) in case {case.id!r}",
                        i,
                        soft=self.failed_writes == "warn",
                    )


def _comparable(spec: ActionSpec, call: ToolCall) -> bool:
    """Whether the call's arguments can be compared with the spec's (captured, JSON)."""
    return spec.arguments is None or (call.arguments_is_json and call.arguments is not None)


def matches(spec: ActionSpec, call: ToolCall) -> bool:
    """The call is this action: same tool, and its arguments match the spec's."""
    if call.name != spec.tool:
        return False
    if spec.arguments is None:
        return True
    return _comparable(spec, call) and not differences(spec, call.arguments, first=True)


def differences(spec: ActionSpec, actual: Any, first: bool = False) -> list[str]:
    """How ``actual`` differs from the spec's arguments, one text per argument."""
    want = spec.arguments or {}
    if not isinstance(actual, dict):
        return [f"arguments {short(actual, 40)}, expected an object"]
    out: list[str] = []
    for name, value in want.items():
        rule = spec.per_argument.get(name, EXACT)
        if rule.mode == "ignore":
            continue
        got = actual.get(name, _MISSING)
        if got is _MISSING:
            out.append(f"{name} missing, expected {short(value, 40)}")
        elif not value_matches(got, value, rule):
            how = "" if rule.mode == "exact" else f" ({_rule_label(rule)})"
            out.append(f"{name}={short(got, 40)}, expected {short(value, 40)}{how}")
        if first and out:
            return out
    if spec.exact:
        for name, got in actual.items():
            if name not in want and spec.per_argument.get(name, EXACT).mode != "ignore":
                out.append(f"{name}={short(got, 40)} is not an expected argument")
                if first:
                    return out
    return out


def _rule_label(rule: ArgMatch) -> str:
    if rule.mode == "tolerance":
        return f"tolerance {rule.amount:g}"
    if rule.mode == "delta":
        return f"delta {rule.amount:g}"
    return rule.mode


def value_matches(actual: Any, expected: Any, rule: ArgMatch) -> bool:
    """One argument's value against the expected one under ``rule``."""
    mode = rule.mode
    if mode == "ignore":
        return True
    if mode == "subset":
        return subset(actual, expected)
    if mode == "keys":
        return on_keys(actual, expected)
    if mode == "unordered":
        return unordered(actual, expected)
    if mode in ("tolerance", "delta") and _number(actual) and _number(expected):
        gap = abs(float(actual) - float(expected))
        limit = rule.amount * abs(float(expected)) if mode == "tolerance" else rule.amount
        return gap <= limit
    return same(actual, expected)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def same(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, but ``"1"``, ``1`` and ``true`` are three values."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return canonical(a) == canonical(b)


def subset(actual: Any, expected: Any) -> bool:
    """``expected`` is contained in ``actual``: an object's listed keys match (recursively),
    a list's items each match a distinct item in any order, a scalar is equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) > len(actual):
            return False
        n = len(expected)
        return len(max_matching(n, len(actual), lambda e, a: subset(actual[a], expected[e]))) == n
    return same(actual, expected)


def on_keys(actual: Any, expected: Any) -> bool:
    """``expected`` with records compared on their expected keys: an object matches when
    each key it lists matches (extra keys in ``actual`` are ignored), recursively; a list
    has the same length and matches item by item, in order; a scalar is equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and on_keys(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(on_keys(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return same(actual, expected)


def unordered(actual: Any, expected: Any) -> bool:
    """A list compared as a multiset: the same number of items, each expected item matched
    (``on_keys``) by a different actual item, in any order. Not a list: as ``on_keys``."""
    if not isinstance(expected, list):
        return on_keys(actual, expected)
    if not isinstance(actual, list) or len(actual) != len(expected):
        return False
    n = len(expected)
    return len(max_matching(n, n, lambda e, a: on_keys(actual[a], expected[e]))) == n


def max_matching(n_left: int, n_right: int, edge: Callable[[int, int], bool]) -> dict[int, int]:
    """A maximum bipartite matching, left index -> right index (Kuhn's augmenting paths).

    Deterministic: left items are tried in order, each against right items in order, so
    with several equally good pairings the earliest calls are used. Sizes here are the
    expected actions and the calls of one run (tens), so O(V·E) is nothing.
    """
    adj = [[r for r in range(n_right) if edge(left, r)] for left in range(n_left)]
    owner: dict[int, int] = {}

    def augment(left: int, seen: set[int]) -> bool:
        for r in adj[left]:
            if r in seen:
                continue
            seen.add(r)
            if r not in owner or augment(owner[r], seen):
                owner[r] = left
                return True
        return False

    for left in range(n_left):
        augment(left, set())
    return {left: r for r, left in owner.items()}


def _unordered(expected: tuple[ActionSpec, ...], calls: Calls) -> dict[int, int]:
    return max_matching(len(expected), len(calls), lambda e, c: matches(expected[e], calls[c][1]))


def _ordered(
    ctx: RunContext, report: Report, expected: tuple[ActionSpec, ...], calls: Calls
) -> dict[int, int]:
    """Earliest-first subsequence matching; a match found only before the cursor ran out
    of order (``F-CASE-ORDER``, citing it; it counts as the action, not as a write)."""
    pairs: dict[int, int] = {}
    used: set[int] = set()
    cursor = 0
    previous: ActionSpec | None = None
    for e, spec in enumerate(expected):
        pos = next(
            (p for p in range(cursor, len(calls)) if p not in used and matches(spec, calls[p][1])),
            None,
        )
        if pos is not None:
            pairs[e] = pos
            used.add(pos)
            cursor = pos + 1
            previous = spec
            continue
        early = next(
            (p for p in range(cursor) if p not in used and matches(spec, calls[p][1])), None
        )
        if early is None:
            continue
        pairs[e] = early
        used.add(early)
        i, call = calls[early]
        after = f" after {previous.where} ({previous.tool})" if previous is not None else ""
        report.fail(
            "F-CASE-ORDER",
            (call.span_id,),
            f"{call.name} ran (step {i}) but out of the expected order: {spec.where} comes{after}",
            i,
            soft=spec.soft,
        )
    return pairs


def _unpaired(
    ctx: RunContext, report: Report, spec: ActionSpec, calls: Calls, claimed: set[int]
) -> None:
    """An expectation no call satisfied: wrong arguments, missing evidence, or missing."""
    same_tool = [(i, c) for i, c in calls if c.name == spec.tool and i not in claimed]
    comparable = [(i, c) for i, c in same_tool if _comparable(spec, c)]
    if comparable:
        diffs = [(len(differences(spec, c.arguments)), i, c) for i, c in comparable]
        _, i, call = min(diffs, key=lambda d: (d[0], d[1]))
        claimed.add(i)
        what = differences(spec, call.arguments)
        more = f"; +{len(what) - 3} more" if len(what) > 3 else ""
        report.fail(
            "F-CASE-WRONG_ARGUMENTS",
            (call.span_id,),
            f"{call.name} ran with other arguments than {spec.where}: {'; '.join(what[:3])}{more}",
            i,
            soft=spec.soft,
        )
        return
    if same_tool:
        i, call = same_tool[0]
        claimed.add(i)
        report.insufficient(
            "F-EVIDENCE-ARGS_NOT_JSON",
            (call.span_id,),
            f"{call.name} arguments were not captured as JSON; cannot compare them with "
            f"{spec.where}",
            i,
        )
        return
    failed = [(i, c) for i, c in ctx.by_name.get(spec.tool, []) if not ok(c)]
    tail = ""
    if failed:
        i, call = failed[0]
        tail = f" (attempted at step {i}: {call.error_type or 'error'})"
    args = f"({short(spec.arguments, 60)})" if spec.arguments is not None else ""
    report.fail(
        "F-CASE-MISSING_ACTION",
        (ctx.run.root_span_id,),
        f"expected {spec.tool}{args} ({spec.where}) never succeeded{tail}",
        ctx.final_index,
        soft=spec.soft,
        absent=True,
    )


def _forbidden(
    ctx: RunContext, report: Report, case: Case, calls: Calls, claimed: set[int]
) -> None:
    for i, call in calls:
        for spec in case.forbidden:
            if call.name != spec.tool:
                continue
            if not _comparable(spec, call):
                report.insufficient(
                    "F-EVIDENCE-ARGS_NOT_JSON",
                    (call.span_id,),
                    f"{call.name} arguments were not captured as JSON; cannot check {spec.where}",
                    i,
                )
                claimed.add(i)
                break
            if matches(spec, call):
                what = "" if spec.arguments is None else f" with {short(spec.arguments, 60)}"
                report.fail(
                    "F-CASE-FORBIDDEN_ACTION",
                    (call.span_id,),
                    f"{call.name}{what} is forbidden in case {case.id!r} ({spec.where})",
                    i,
                    soft=spec.soft,
                )
                claimed.add(i)
                break


def normalize(text: str) -> str:
    """What text items compare on: case folded, digit-group commas dropped (``23,553``)."""
    return _DIGIT_COMMA.sub("", text).casefold()


def _communicate(ctx: RunContext, report: Report, case: Case) -> None:
    run = ctx.run
    if case.communicate_in == "assistant_messages":
        texts = [t.text for t in turns_of(run) if t.role == "assistant" and t.text]
        if run.final_answer is not None:
            texts.append(run.final_answer)
        what, missing = "assistant message", "no assistant message mentions"
    else:
        texts = [run.final_answer] if run.final_answer is not None else []
        what, missing = "final answer", "the final answer does not mention"
    if not texts:
        report.insufficient(
            "F-EVIDENCE-NO_FINAL_ANSWER",
            ctx.root,
            f"no {what} captured; cannot check what the agent communicated",
            ctx.final_index,
        )
        return
    joined = "\n".join(texts)
    folded = normalize(joined)
    for info in case.communicate:
        if not _found(info, joined, folded):
            report.fail(
                "F-CASE-MISSING_INFORMATION",
                ctx.final_span(),
                f"{missing} {info.label} (case {case.id!r})",
                ctx.final_index,
            )


def _found(info: Info, text: str, folded: str) -> bool:
    if info.regex is not None:
        return info.regex.test(text)
    return normalize(info.text or "") in folded


def build_case(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``case``."""
    return CaseCheck(str(p.get("attempts", "successful")), str(p.get("failed_writes", "ignore")))


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="case",
        doc="The run does what its case in the cases file expects (actions, state, information).",
        params=check_params(
            {
                "attempts": {"enum": ["successful", "all"]},
                "failed_writes": {"enum": ["ignore", "warn", "fail"]},
            }
        ),
        factory=build_case,
        codes=(
            "F-CASE-MISSING_ACTION",
            "F-CASE-WRONG_ARGUMENTS",
            "F-CASE-ORDER",
            "F-CASE-UNEXPECTED_WRITE",
            "F-CASE-FORBIDDEN_ACTION",
            "F-CASE-STATE_MISMATCH",
            "F-CASE-MISSING_INFORMATION",
            "F-CASE-FAILED_WRITE",
            "F-EVIDENCE-NO_CASE",
            "F-EVIDENCE-UNKNOWN_TOOL_KIND",
            "F-EVIDENCE-ARGS_NOT_JSON",
            "F-EVIDENCE-RESULT_MISSING",
            "F-EVIDENCE-CEL_ERROR",
            "F-EVIDENCE-NO_FINAL_ANSWER",
        ),
    ),
)
"""The ``case`` check type, declared once (see ``tracejudge.engine.checks``). Its tools are
named in the cases file, not in the check's params: ``CaseSet.tool_warnings`` checks them."""
