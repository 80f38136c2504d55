"""The run view's conversation: findings anchored where they happened, cited sentences
highlighted, trace text escaped, content shown only where it was captured; the pass rate
by case in natural order; durations in the unit that fits."""

from __future__ import annotations

import dataclasses
import html
from html.parser import HTMLParser

from tests.report.report_builders import T0, make_record
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.model.run import ModelCall, RequestedToolCall, Run, ToolCall, Turn
from tracejudge.report.conversation import TurnView, build_conversation_view, quotes_in
from tracejudge.report.html import render_html
from tracejudge.report.records import VerdictRecord
from tracejudge.report.summary import natural_key, summarize
from tracejudge.report.timeline import build_rows, duration_text

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'
MS = 1_000_000
M1, TOOL, M2, ROOT = "a" * 16, "b" * 16, "c" * 16, f"{1:016x}"


def _run(*, user_text: str | None = "Please refund order 7, yes go ahead.") -> Run:
    """A refund conversation: the user asks, the model calls ``issue_refund``, answers."""
    turns = [
        Turn(0, "user", user_text, step_index=0, span_id=M1),
        Turn(
            1,
            "assistant",
            None,
            tool_calls=(RequestedToolCall("call_1", "issue_refund", {"order": 7}),),
            step_index=0,
            span_id=M1,
        ),
        Turn(2, "tool", None, call_id="call_1", result={"ok": True}, step_index=2, span_id=M2),
        Turn(3, "assistant", "Your refund of $12.00 is on its way.", step_index=2, span_id=M2),
    ]
    return Run(
        trace_id=f"{1:032x}",
        root_span_id=ROOT,
        steps=[
            ModelCall(M1, "chat", status="ok", start_ns=T0 + 10 * MS, end_ns=T0 + 300 * MS),
            ToolCall(
                TOOL,
                "issue_refund",
                call_id="call_1",
                arguments={"order": 7},
                result={"ok": True},
                status="error",
                start_ns=T0 + 310 * MS,
                end_ns=T0 + 311 * MS,
                request_turn=1,
            ),
            ModelCall(M2, "chat", status="ok", start_ns=T0 + 320 * MS, end_ns=T0 + 900 * MS),
        ],
        start_ns=T0,
        end_ns=T0 + 1000 * MS,
        turns=turns,
        conversation_built=True,
    )


def _record(*findings: Finding, verdict: str = "fail") -> VerdictRecord:
    v = Verdict(
        f"{1:032x}",
        ROOT,
        verdict,  # type: ignore[arg-type]
        {"policy": "fail"},
        case_id="c1",
        primary=findings[0] if findings else None,
        findings=list(findings),
    )
    return VerdictRecord.from_verdict(v)


def _page(run: Run, record: VerdictRecord) -> str:
    rows, missing = build_rows([record], [run])
    assert missing == []
    return render_html(summarize([record]), rows)


def _element(page: str, ident: str) -> int:
    at = page.find(f'id="{ident}"')
    assert at >= 0, ident
    return at


def test_findings_are_anchored_at_the_call_the_turn_or_the_cited_turn() -> None:
    """On the tool span: under that call's card; on a model call: under the assistant turn
    it produced; on the root span citing ``(turn N)``: at turn N; otherwise the whole run."""
    on_tool = Finding("F-A", "fail", "policy", "refund-ok", (TOOL,), "issue_refund failed")
    on_model = Finding("F-B", "fail", "policy", "no-claim", (M2,), "claims a refund")
    cites = Finding("F-C", "warn", "policy", "asked", (ROOT,), "the user (turn 0) said 'yes'")
    whole = Finding("F-D", "fail", "outcome", "state", (ROOT,), "the order is not refunded")
    record = _record(on_tool, on_model, cites, whole)
    view = build_conversation_view(_run(), record.findings)
    assert [f.code for f in view.run_findings] == ["F-D"]
    turns = [item for item in view.items if isinstance(item, TurnView)]
    assert len(turns) == len(view.items) == 4  # the call is shown with the turn that asked
    user, asked, result, answer = turns
    assert [f.code for f in user.findings] == ["F-C"]
    assert [c.name for c in asked.calls] == ["issue_refund"]
    assert [f.code for f in asked.calls[0].findings] == ["F-A"]
    assert result.answers is asked.calls[0]
    assert [f.code for f in answer.findings] == ["F-B"]

    page = _page(_run(), record)
    conv = f"conv-{1:032x}-{ROOT}"
    call, turn3 = _element(page, f"{conv}-s1"), _element(page, f"{conv}-t3")
    start = page.index('<details class="conv"')
    at = {code: page.index(f"<code>{code}</code>", start) for code in ("F-A", "F-B", "F-C", "F-D")}
    assert call < at["F-A"] < _element(page, f"{conv}-t2")
    assert turn3 < at["F-B"]
    assert _element(page, f"{conv}-t0") < at["F-C"] < call
    assert page.index("on the whole run") < at["F-D"] < _element(page, f"{conv}-t0")
    assert "rule <code>refund-ok</code>" in page
    # the timeline's tool box links to its card
    assert f'<a href="#{conv}-s1">' in page
    assert f'<a href="#{conv}-t1">' in page  # the first model call: the turn it produced


def test_the_cited_sentence_is_highlighted_in_its_turn_and_in_the_explanation() -> None:
    """A quote cut with ``...`` (as explanations write it) is found in the cited turn."""
    f = Finding(
        "F-POLICY-UNCONFIRMED_DETAILS",
        "fail",
        "policy",
        "details-listed",
        (TOOL,),
        "issue_refund order=7 is not in the proposal the user confirmed (turn 3): "
        '"Your refund of $12.00 is on... and "nothing else was said here", the agent\'s',
    )
    assert quotes_in(f.explanation) == [
        "Your refund of $12.00 is on",
        "nothing else was said here",
    ]
    assert quotes_in("said 'no thanks, I d... (turn 5): the agent's 'ok'") == ["no thanks, I d"]
    page = _page(_run(), _record(f))
    conv = f"conv-{1:032x}-{ROOT}"
    turn3 = page[_element(page, f"{conv}-t3") :]
    assert '<mark class="cite">Your refund of $12.00 is on</mark> its way.' in turn3
    assert f'<a href="#{conv}-t3">cites turn 3</a>' in page
    assert '&quot;<mark class="cite">nothing else was said here</mark>&quot;' in page


def test_trace_text_is_escaped_in_turns_calls_results_and_highlights() -> None:
    """A turn, a tool's name, arguments and result, and a quoted explanation are trace text:
    shown as text, never markup, also where a highlight cuts through them."""
    run = _run(user_text=f"yes {EVIL} go")
    tool = run.steps[1]
    assert isinstance(tool, ToolCall)
    tool.name, tool.arguments, tool.result = EVIL, {EVIL: EVIL}, EVIL
    f = Finding("F-X", "fail", "policy", EVIL, (ROOT,), f"the user (turn 0) said {EVIL!r}")
    page = _page(run, _record(f))
    assert "<script>" not in page
    assert "<img" not in page
    assert "onerror=alert(1)&gt;</mark>" in page  # the cited quote, highlighted and escaped

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: set[str] = set()

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.add(tag)

    tags = Tags()
    tags.feed(page)
    assert not tags.tags & {"script", "img", "iframe"}


def test_content_is_shown_only_where_captured_and_redactions_stay() -> None:
    """No text captured: said so, not an empty bubble; ``[REDACTED]`` is never undone."""
    run = _run(user_text=None)
    tool = run.steps[1]
    assert isinstance(tool, ToolCall)
    tool.arguments, tool.result = None, "card [REDACTED] charged"
    run.turns[1] = dataclasses.replace(
        run.turns[1], tool_calls=(RequestedToolCall("call_1", "issue_refund", None),)
    )
    page = _page(run, _record())
    assert '<div class="na">text not captured</div>' in page
    assert "arguments not captured" in page
    assert 'card <span class="redacted">[REDACTED]</span> charged' in page


def test_a_run_without_messages_has_no_conversation_and_says_so() -> None:
    run = _run()
    run.turns = []
    run.steps = [
        dataclasses.replace(s, input_messages=None, output_messages=None)
        if isinstance(s, ModelCall)
        else s
        for s in run.steps
    ]
    run.conversation_built = False
    (row,), _ = build_rows([_record()], [run])
    assert row.conversation is None
    assert "no conversation captured" in render_html(summarize([_record()]), [row])


def test_filter_classes_name_codes_by_position_never_by_their_text() -> None:
    """Each run carries its verdict and codes as classes the filter's CSS selects on; a
    code (trace text) never reaches the stylesheet."""
    f = Finding(f"F-{EVIL}", "fail", "policy", "r", (TOOL,), "x")
    page = _page(_run(), _record(f))
    style = page[page.index("<style>") : page.index("</style>")]
    assert "F-" not in style
    assert "#fc-0:checked~.runs .run:not(.rc-0){display:none}" in style
    assert "#fv-pass:checked~.runs .run:not(.rv-pass){display:none}" in style
    assert '<div class="run rv-fail rc-0">' in page
    assert 'class="finding sev-fail fc-0"' in page
    assert '<label for="fv-fail">fail (1)</label>' in page


def test_pass_rate_by_case_is_in_natural_order() -> None:
    """case 2 before case 10; the tables of the page and the summary agree."""
    records = [make_record(n, case=c) for n, c in enumerate(["case 10", "case 2", "Case 1"], 1)]
    names = [g.name for g in summarize(records).by_case]
    assert names == ["Case 1", "case 2", "case 10"]
    page = render_html(summarize(records), [])
    table = page[page.index("Pass rate by case") :]
    assert table.index(">case 2<") < table.index(">case 10<")
    assert sorted(["tau-airline-12", "tau-airline-4", "x"], key=natural_key) == [
        "tau-airline-4",
        "tau-airline-12",
        "x",
    ]


def test_durations_use_the_unit_that_fits() -> None:
    assert [duration_text(n) for n in (0, 850_000, 1_250_000, 999_700_000, 2.5e9, 33e9)] == [
        "0 s",
        "850 µs",
        "1.25 ms",
        "1 s",
        "2.5 s",
        "33 s",
    ]
    page = _page(_run(), _record())
    assert "issue_refund</code></b> &middot; " in page
    assert "1 ms &middot;" in page  # the tool call's card
    assert ">1 s</text>" in page  # the axis end


def test_calls_nobody_asked_for_and_results_nothing_ran_for_are_still_shown() -> None:
    """An execution no captured message requested is shown where it happened; a requested
    call never seen to run says so, and its tool turn shows the result the model saw."""
    run = _run()
    run.turns[1] = dataclasses.replace(
        run.turns[1], tool_calls=(RequestedToolCall(None, "lookup_order", {"order": 7}),)
    )
    tool = run.steps[1]
    assert isinstance(tool, ToolCall)
    tool.request_turn = None
    view = build_conversation_view(run, ())
    kinds = [
        "call" if not isinstance(item, TurnView) else f"turn {item.turn.index}"
        for item in view.items
    ]
    assert kinds == ["turn 0", "turn 1", "call", "turn 2", "turn 3"]
    asked = view.items[1]
    assert isinstance(asked, TurnView)
    assert [(c.name, c.step) for c in asked.calls] == [("lookup_order", None)]
    page = _page(run, _record())
    assert '<code>lookup_order</code></b> &middot; <span class="na">no execution seen' in page
    turn2 = page[_element(page, f"conv-{1:032x}-{ROOT}-t2") :]
    assert turn2.index("<pre>{&quot;ok&quot;: true}</pre>") < turn2.index("turn 3")


POLICY = "Always confirm before refunding anything. " * 6 + EVIL
"""A system prompt long enough to share (252 characters), with markup that must stay text."""


def _with_system(n: int, prompt: str) -> Run:
    """``_run()`` as run ``n`` with ``prompt`` as its turn 0 (the other turns follow)."""
    base = _run()
    turns = [Turn(0, "system", prompt, step_index=0, span_id=M1)]
    turns += [dataclasses.replace(t, index=t.index + 1) for t in base.turns]
    return dataclasses.replace(base, trace_id=f"{n:032x}", root_span_id=f"{n:016x}", turns=turns)


def _record_of(n: int, *findings: Finding) -> VerdictRecord:
    v = Verdict(
        f"{n:032x}",
        f"{n:016x}",
        "fail" if findings else "pass",
        {"policy": "fail" if findings else "pass"},
        case_id="c1",
        primary=findings[0] if findings else None,
        findings=list(findings),
    )
    return VerdictRecord.from_verdict(v)


def test_a_long_system_prompt_of_several_runs_is_shown_once() -> None:
    """The same long system prompt in every run was most of a report's size (a real airline
    report: 100 copies of a 6,155-character policy). It is shown once, under "System
    prompts", and each run's system turn links to it; a short prompt, a prompt of one run
    only, and a system turn a finding quotes stay in place."""
    cited = Finding(
        "F-POLICY-X", "fail", "policy", "r", (M1,),
        "the system prompt (turn 0) says 'Always confirm before refunding anything.'",
    )  # fmt: skip
    runs = [
        _with_system(1, POLICY),
        _with_system(2, POLICY),
        _with_system(3, POLICY),  # its turn 0 is quoted by a finding: shown in place
        _with_system(4, "Be brief."),
        _with_system(5, "Be brief."),
        _with_system(6, POLICY.replace("Always", "Never")),  # one run only
    ]
    records = [_record_of(n) for n in (1, 2, 4, 5, 6)] + [_record_of(3, cited)]
    rows, missing = build_rows(records, runs)
    assert missing == []
    page = render_html(summarize(records), rows)
    assert page.count(html.escape(POLICY)) == 1  # the shared copy
    quoted = '<mark class="cite">Always confirm before refunding anything.</mark>'
    assert page.count(quoted) == 2  # run 3's turn 0, and the finding's explanation
    assert 'system</summary><div class="txt">' + quoted in page
    assert page.count('system prompt <a href="#prompt-1">1</a>') == 2  # runs 1 and 2
    assert page.count("Be brief.") == 2
    assert page.count(html.escape(POLICY.replace("Always", "Never"))) == 1
    assert '<details class="prompt" id="prompt-1"><summary>system prompt 1: 2 turn(s), ' in page
    assert EVIL not in page
    assert page.count('id="prompt-') == 1
