"""The HTML of a run's conversation, and the page's filter by verdict and code.

Every piece of trace text (turns, arguments, results, explanations) is untrusted: it goes
through ``esc`` after it has been cut into pieces, never before, so a highlight can never
split an escape and nothing from a trace becomes markup.

The filter needs no script: a radio button per verdict and per code sits before the run
views, and a generated rule per button (``#fc-3:checked ~ .runs .run:not(.rc-3)``) hides
the runs that do not match; two groups of buttons, so the two filters combine. A page
with no script opens the same in a mail client, a CI artifact viewer that blocks scripts,
or a browser with scripts off, and the codes (trace text) never reach a stylesheet: the
rules name codes by their position in the list.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.redaction import REDACTED
from tracejudge.report.conversation import (
    CallView,
    Citation,
    ConversationView,
    TurnView,
    quotes_in,
)
from tracejudge.report.records import VERDICT_VALUES, FindingRecord
from tracejudge.report.timeline import duration_text

STATUS_FILL = {"ok": "#43a047", "unset": "#8fb98b", "error": "#e53935"}
STATUS_LABEL = {"ok": "ok", "unset": "unset (no error recorded)", "error": "error"}
SEVERITY_FILL = {"fail": "#b71c1c", "warn": "#f9a825"}
MAX_CONTENT = 4000
"""Characters of one argument or result shown; the rest is counted, not shown."""
COMPACT_JSON = 100
"""JSON up to this many characters is shown on one line; longer, indented."""
MIN_CITED = 12
"""Quotes at least this long are highlighted in an explanation (a sentence, not a value)."""
MIN_SHARED = 200
"""A system prompt this long or longer, used by two runs or more on the page, is shown once
(``SharedPrompts``)."""

CSS = """
.filters{margin:6px 0 12px;line-height:2} .filters b{margin-right:6px}
.filters label{border:1px solid #bdbdbd;border-radius:12px;padding:1px 8px;margin-right:4px;
cursor:pointer;white-space:nowrap;font-size:12px}
input.fi{position:absolute;opacity:0;width:1px;height:1px}
.conv{margin:6px 0 0 0;max-width:980px} .conv summary{cursor:pointer;color:#424242}
.turn{margin:6px 0;padding:6px 10px;border-radius:6px;border:1px solid #e0e0e0}
.turn .who{font-size:12px;color:#616161;margin-bottom:2px}
.turn.user{background:#e3f2fd;margin-right:120px}
.turn.assistant{background:#f1f8e9;margin-left:60px}
.turn.system{background:#fafafa} .turn.tool{background:#fff8e1;margin-left:60px;font-size:13px}
.txt{white-space:pre-wrap;word-break:break-word}
.call{margin:6px 0 6px 20px;padding:4px 8px;border-left:4px solid #8fb98b;background:#fff}
.call pre{margin:2px 0;padding:4px;background:#f5f5f5;white-space:pre-wrap;word-break:break-all;
font-size:12px;max-height:260px;overflow:auto}
.st{display:inline-block;padding:0 5px;border-radius:3px;color:#fff;font-size:11px}
.finding{margin:6px 0 6px 20px;padding:4px 8px;border:1px solid #e57373;border-left:6px solid
#b71c1c;background:#ffebee} .finding.sev-warn{border-color:#ffd54f;border-left-color:#f9a825;
background:#fffde7} .finding .rule{color:#616161;font-size:12px}
mark{background:#ffe082;padding:0 1px} mark.cite{background:#ffcc80}
.redacted{background:#424242;color:#fff;font-size:11px;padding:0 3px;border-radius:2px}
.na{color:#9e9e9e;font-style:italic}
"""


def esc(value: object) -> str:
    """Escape for both element text and quoted attribute values."""
    return html.escape(str(value), quote=True)


def finding_html(
    f: FindingRecord, code_class: str, anchor: str = "", cited: int | None = None
) -> str:
    """One finding: code, rule id, explanation with its cited sentences highlighted, and a
    link to the turn it cites (``anchor``, turn ``cited``)."""
    sev = "warn" if f.severity == "warn" else "fail"
    tags = " <i>(undecided)</i>" if f.undecided else ""
    rule = f' <span class="rule">rule <code>{esc(f.rule)}</code></span>' if f.rule else ""
    where = f' <a href="#{anchor}">cites turn {cited}</a>' if anchor else ""
    return (
        f'<div class="finding sev-{sev} {code_class}">'
        f'<span class="v v-{sev}">{sev}</span> <code>{esc(f.code)}</code>{tags}{rule}{where}'
        f"<div>{_explanation(f.explanation)}</div></div>"
    )


def _explanation(text: str) -> str:
    """The explanation, each quoted sentence (a quote with a space, long enough) marked."""
    marks: list[tuple[int, int]] = []
    for quote in quotes_in(text):
        if len(quote) < MIN_CITED or " " not in quote:
            continue
        at = text.find(quote)
        if at >= 0:
            marks.append((at, at + len(quote)))
    return _marked(text, marks, "cite")


def _marked(text: str, spans: Iterable[tuple[int, int]], cls: str) -> str:
    """``text`` escaped, the ``spans`` (offsets in ``text``) wrapped in ``<mark>``;
    overlapping spans merge. ``[REDACTED]`` is shown as a redaction, still not the value."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    pos = 0
    for start, end in merged:
        out.append(_text(text[pos:start]))
        out.append(f'<mark class="{cls}">{_text(text[start:end])}</mark>')
        pos = end
    out.append(_text(text[pos:]))
    return "".join(out)


def _text(piece: str) -> str:
    return esc(piece).replace(esc(REDACTED), f'<span class="redacted">{esc(REDACTED)}</span>')


@dataclass(slots=True)
class SharedPrompts:
    """System prompts shown once on the page, under their own heading, instead of in every
    run: a long prompt repeated in each of hundreds of runs was most of a report's size.
    Only uncited text is shared (a finding that quotes a system turn is shown in place)."""

    ids: dict[str, str] = field(default_factory=dict)
    """Shared text -> its element id (``prompt-N``, in first-seen order)."""
    uses: Counter[str] = field(default_factory=Counter)
    """Shared text -> how many turns on the page show it."""

    @classmethod
    def of(cls, views: Iterable[ConversationView]) -> SharedPrompts:
        """The prompts of ``views`` worth sharing: at least ``MIN_SHARED`` characters, in the
        system turns of two runs or more."""
        runs: Counter[str] = Counter()
        for view in views:
            runs.update({i.turn.text for i in _system_turns(view) if i.turn.text})
        shared = cls()
        for text, n in runs.items():
            if n >= 2 and len(text) >= MIN_SHARED:
                shared.ids[text] = f"prompt-{len(shared.ids) + 1}"
        return shared

    def link(self, text: str | None) -> str | None:
        """The body of a system turn showing ``text`` by reference, or None to show it."""
        if text is None or text not in self.ids:
            return None
        self.uses[text] += 1
        ident = self.ids[text]
        return (
            f'<div class="na">system prompt <a href="#{ident}">{ident[len("prompt-") :]}</a> '
            f"({len(text):,} characters, shown once under System prompts)</div>"
        )

    def html(self) -> str:
        """The section with each shared prompt that a turn linked to; empty if none."""
        shown = [(text, ident) for text, ident in self.ids.items() if self.uses[text]]
        if not shown:
            return ""
        parts = ["<h2>System prompts</h2>"]
        for text, ident in shown:
            parts.append(
                f'<details class="prompt" id="{ident}"><summary>system prompt '
                f"{ident[len('prompt-') :]}: {self.uses[text]} turn(s), {len(text):,} "
                f'characters</summary><div class="turn system"><div class="txt">'
                f"{_marked(text, (), 'cite')}</div></div></details>"
            )
        return "".join(parts)


def _system_turns(view: ConversationView) -> list[TurnView]:
    return [
        i
        for i in view.items
        if isinstance(i, TurnView)
        and i.turn.role == "system"
        and not view.citations.get(i.turn.index)
    ]


def conversation_html(
    view: ConversationView,
    prefix: str,
    code_class: dict[str, str],
    prompts: SharedPrompts | None = None,
) -> str:
    """The conversation, turns in order; ``prefix`` makes the element ids unique on the page
    (``{prefix}-t{turn}``, ``{prefix}-s{step}``); ``code_class`` maps a code to its filter
    class; ``prompts`` shows the page's shared system prompts by reference."""
    prefix = esc(prefix)  # ids are validated hex, but the record may come from any file
    parts: list[str] = []
    if view.run_findings:
        parts.append('<div class="muted">on the whole run:</div>')
        parts.extend(_finding(f, view, prefix, code_class) for f in view.run_findings)
    for item in view.items:
        if isinstance(item, CallView):
            parts.append(_call(item, view, prefix, code_class))
        else:
            parts.append(_turn(item, view, prefix, code_class, prompts))
    return "".join(parts)


def step_targets(view: ConversationView, prefix: str) -> dict[int, str]:
    """Step index -> the id of what shows it in the conversation: a tool call's card, a
    model call's first assistant turn (the timeline's boxes link there)."""
    out: dict[int, str] = {}
    for item in view.items:
        calls = [item] if isinstance(item, CallView) else list(item.calls)
        if isinstance(item, TurnView) and item.turn.role == "assistant":
            out.setdefault(item.turn.step_index, f"{prefix}-t{item.turn.index}")
        for c in calls:
            if c.step is not None:
                out.setdefault(c.step, f"{prefix}-s{c.step}")
    return out


def _finding(f: FindingRecord, view: ConversationView, prefix: str, cc: dict[str, str]) -> str:
    cited = next(
        (c.turn for cs in view.citations.values() for c in cs if c.finding is f),
        None,
    )
    anchor = f"{prefix}-t{cited}" if cited is not None else ""
    return finding_html(f, f"fc-{cc[f.code]}" if f.code in cc else "", anchor, cited)


def _turn(
    item: TurnView,
    view: ConversationView,
    prefix: str,
    cc: dict[str, str],
    prompts: SharedPrompts | None = None,
) -> str:
    t = item.turn
    who = f"turn {t.index} &middot; {esc(t.role)}"
    if item.status is not None:
        fill = STATUS_FILL.get(item.status, STATUS_FILL["unset"])
        status = f'<span class="st" style="background:{fill}">{esc(item.status)}</span>'
        who += f" &middot; model call {status}"
    cited = view.citations.get(t.index, ())
    shared = prompts.link(t.text) if prompts and t.role == "system" and not cited else None
    body = shared if shared is not None else _turn_text(t.text, cited)
    if t.role == "tool":
        name = t.tool_name or (item.answers.name if item.answers else None)
        who += f" &middot; result of <code>{esc(name or '?')}</code>"
        if item.answers is not None and item.answers.step is not None:
            body = f'<a href="#{prefix}-s{item.answers.step}">shown with its call above</a>'
        elif t.result is not None or t.text is None:
            body = _content(t.result, "result")
    elif not t.text and t.tool_calls:
        body = ""
    parts = [f'<div class="turn {esc(t.role)}" id="{prefix}-t{t.index}">']
    if t.role == "system":
        parts.append(f'<details><summary class="who">{who}</summary>{body}</details>')
    else:
        parts.append(f'<div class="who">{who}</div>{body}')
    parts.append("</div>")
    parts.extend(_call(c, view, prefix, cc) for c in item.calls)
    parts.extend(_finding(f, view, prefix, cc) for f in item.findings)
    return "".join(parts)


def _turn_text(text: str | None, citations: Sequence[Citation]) -> str:
    if text is None:
        return '<div class="na">text not captured</div>'
    spans = [(c.start, c.end) for c in citations]
    return f'<div class="txt">{_marked(text, spans, "cite")}</div>'


def _call(c: CallView, view: ConversationView, prefix: str, cc: dict[str, str]) -> str:
    fill = STATUS_FILL.get(c.status, STATUS_FILL["unset"])
    ident = f' id="{prefix}-s{c.step}"' if c.step is not None else ""
    head = [f"tool call <b><code>{esc(c.name)}</code></b>"]
    if c.step is None:
        head.append('<span class="na">no execution seen</span>')
    else:
        label = STATUS_LABEL.get(c.status, c.status)
        head.append(f'<span class="st" style="background:{fill}">{esc(label)}</span>')
        if c.duration_ns is not None:
            head.append(esc(duration_text(c.duration_ns)))
        if c.inferred:
            head.append('<span class="muted">inferred from a later model input</span>')
        head.append(f'<span class="muted">step {c.step}</span>')
    out = [
        f'<div class="call"{ident} style="border-left-color:{fill}">',
        " &middot; ".join(head),
        f"<div>arguments: {_content(c.arguments, 'arguments')}</div>",
    ]
    if c.step is not None:
        out.append(f"<div>result: {_content(c.result, 'result')}</div>")
    out.append("</div>")
    out.extend(_finding(f, view, prefix, cc) for f in c.findings)
    return "".join(out)


def _content(value: Any, what: str) -> str:
    """Arguments or a result as captured: JSON shown indented, text as it is."""
    if value is None:
        return f'<span class="na">{what} not captured</span>'
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > COMPACT_JSON:
            text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    more = len(text) - MAX_CONTENT
    if more > 0:
        text = text[:MAX_CONTENT]
    tail = f'<span class="muted"> &hellip; {more} more characters</span>' if more > 0 else ""
    return f"<pre>{_text(text)}{tail}</pre>"


def filter_controls(
    verdict_counts: dict[str, int], code_counts: Sequence[tuple[str, int]]
) -> tuple[str, str, dict[str, str]]:
    """The filter's radio buttons and labels (HTML placed before ``<div class="runs">``),
    its generated CSS, and each code's class (``rc-N`` on runs, ``fc-N`` on findings)."""
    classes = {code: str(i) for i, (code, _) in enumerate(code_counts)}
    inputs = ['<input class="fi" type="radio" name="fv" id="fv-all" checked>']
    inputs.extend(f'<input class="fi" type="radio" name="fv" id="fv-{v}">' for v in VERDICT_VALUES)
    inputs.append('<input class="fi" type="radio" name="fc" id="fc-all" checked>')
    inputs.extend(
        f'<input class="fi" type="radio" name="fc" id="fc-{i}">' for i in classes.values()
    )
    total = sum(verdict_counts.values())
    labels = ['<div class="filters"><b>verdict</b>', f'<label for="fv-all">all ({total})</label>']
    labels.extend(
        f'<label for="fv-{v}">{v} ({verdict_counts[v]})</label>'
        for v in VERDICT_VALUES
        if verdict_counts.get(v)
    )
    labels.append('<br><b>code</b><label for="fc-all">any</label>')
    labels.extend(
        f'<label for="fc-{classes[code]}"><code>{esc(code)}</code> ({n})</label>'
        for code, n in code_counts
    )
    labels.append("</div>")
    rules = [
        "#fv-all:checked~.filters label[for=fv-all],#fc-all:checked~.filters label[for=fc-all]"
        "{background:#424242;color:#fff}"
    ]
    for v in VERDICT_VALUES:
        rules.append(
            f"#fv-{v}:checked~.runs .run:not(.rv-{v}){{display:none}}"
            f"#fv-{v}:checked~.filters label[for=fv-{v}]{{background:#424242;color:#fff}}"
        )
    for i in classes.values():
        rules.append(
            f"#fc-{i}:checked~.runs .run:not(.rc-{i}){{display:none}}"
            f"#fc-{i}:checked~.runs .finding:not(.fc-{i}){{opacity:.35}}"
            f"#fc-{i}:checked~.filters label[for=fc-{i}]{{background:#424242;color:#fff}}"
        )
    return "".join(inputs) + " ".join(labels), "\n".join(rules), classes
