"""Claims in every assistant message, each backed by a successful call made before it.

In multi-turn runs the agent says "your reservation has been cancelled" in the middle of
the conversation. Such a claim needs a successful call of the right tool *before that
message* (calls with a lower step index than the model call that produced it), optionally
on the entity the claim names. Each message is split into sentences
(``tracejudge.engine.sentences``); a sentence is not a claim when it is a question or when
a negation ("could not", "I will", "if") comes before the claim in its clause.

Two check types use this: ``claim_evidence`` with ``messages:`` (a regex of the user's)
and ``completion_claims`` (built-in detectors mapped to tools). ``claim_evidence`` without
``messages`` keeps its first meaning (``ClaimEvidence``: the whole final answer, any
successful call in the run), so older rules files judge as they did.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params, names, ref, short
from tracejudge.engine.checks.binding import flatten, key_of
from tracejudge.engine.checks.claim_reading import GENERIC, named_tools, not_this_run, objects
from tracejudge.engine.compile import Compiler, Path, Regex
from tracejudge.engine.context import Report, RunContext, ToolMeta, ok
from tracejudge.engine.sentences import clause_start, sentences
from tracejudge.model.conversation import turns_of
from tracejudge.model.messages import readable_text
from tracejudge.model.run import ToolCall

_Q = "[\\x{2019}']"  # an apostrophe, straight or curly (RE2 syntax)
NEGATIONS: tuple[str, ...] = (
    r"\bnot\b",
    rf"n{_Q}t\b",
    r"\bnever\b",
    r"\bno longer\b",
    r"\bunable\b",
    r"\bcannot\b",
    r"\bfail(?:ed|s|ing)? to\b",
    r"\b(?:will|would|shall|should)\b",
    rf"{_Q}(?:ll|d)\b",
    r"\b(?:I|we|you)\s+(?:can|could|may|might)\b",
    r"\b(?:going|about|want|wish|like)\s+to\b",
    r"\blet me\b",
    r"\b(?:ensure|make sure|be sure|remember|must|needs? to|ha(?:ve|s) to)\b",
    r"\bdo you\b",
    r"\bplease confirm\b",
    r"\bto be\b",
    r"\b(?:if|whether|once|unless|before|when|since|because)\b",
)
"""What makes a sentence not a claim when it comes before the claim in its clause
(case-insensitive; ``negations:`` replaces the list)."""

_ADV = r"(?:(?:now|just|also|successfully|fully)\s+)*"
_DONE = (
    r"(?:complete|completed|successful|confirmed|processed|done|submitted|issued|initiated"
    r"|finali[sz]ed|approved|applied|made|covered)"
)

_LINK = (
    r":?(?:\s+(?:of|for|to|on|in|at|the|your|my|order|reservation|booking|request|number|id"
    r"|\S*\d\S*)){0,3}?"
)
"""Words between an action noun and its verb ("refund of $84.00 has been issued"): ids,
amounts and a few linking words, not other action nouns ("reservation cancellation")."""


def _detector(verbs: str, nouns: str = "", *extra: str) -> str:
    """An assertion that the action is done: ``has been V``, ``I('ve) V``, ``is now V``,
    ``successfully V``, ``<noun> (is|was|has been) completed (or V)``..."""
    parts = [
        rf"\b(?:has|have)\s+{_ADV}been\s+{_ADV}(?:{verbs})\b",
        rf"\b(?:is|are)\s+now\s+{_ADV}(?:{verbs})\b",
        rf"\b(?:I|we)(?:{_Q}ve|\s+have)?\s+{_ADV}(?:gone\s+ahead\s+and\s+)?(?:{verbs})\b",
        rf"\bsuccessfully\s+(?:{verbs})\b",
    ]
    if nouns:
        parts.append(
            rf"\b(?:{nouns}){_LINK}\s+(?:is|are|was|were|has\s+been|have\s+been)\s+{_ADV}"
            rf"(?:{_DONE}|{verbs})\b"
        )
    parts.extend(extra)
    return "(?i)(?:" + "|".join(parts) + ")"


DETECTORS: dict[str, str] = {
    "cancelled": _detector(r"cancell?ed", r"cancell?ation"),
    "booked": _detector(
        r"booked|reserved",
        r"booking",
        # "your (new) reservation (id X) is confirmed", not "cancellation of reservation X
        # has been completed": the reservation must be the sentence's own subject
        rf"\b(?:your|the)\s+(?:new\s+)?reservation(?:\s+(?:id|number|\S*\d\S*))*\s+"
        rf"(?:is|has\s+been)\s+{_ADV}(?:confirmed|complete|completed|made)\b",
    ),
    "refunded": _detector(
        r"refunded",
        r"refund",
        rf"\b(?:I|we)(?:{_Q}ve|\s+have)?\s+{_ADV}(?:issued|processed|initiated|sent)\s+"
        r"(?:a|the|your)\s+(?:\S+\s+){0,2}?refund\b",
    ),
    "updated": _detector(
        r"updated|changed|modified|rescheduled|switched|moved|downgraded",
        r"update|change|modification|downgrade",
    ),
    "sent": _detector(
        r"sent|e-?mailed|texted", r"certificate|voucher|e-?mail|message|confirmation"
    ),
    "transferred": _detector(
        r"transferred|escalated",
        r"transfer|escalation",
        rf"\b(?:you\s+are|you{_Q}re)\s+(?:now\s+)?being\s+transferred\b",
    ),
    "upgraded": _detector(r"upgraded", r"upgrade"),
    "added": _detector(r"added"),
    "removed": _detector(r"removed|deleted"),
    "charged": _detector(
        r"charged|billed", r"payment|charges?|cost|amount|fee|price difference|difference"
    ),
    "created": _detector(r"created|opened|set\s+up"),
}
"""Built-in completion-claim detectors (RE2), by the name ``completion_claims`` maps."""


@dataclass(slots=True, frozen=True)
class Entity:
    """The claim's named group must equal a value at ``path`` of a backing call."""

    group: str
    path: Path
    in_result: bool


@dataclass(slots=True, frozen=True)
class Claim:
    """One kind of claim and the calls that can back it."""

    label: str
    regex: Regex
    tools: frozenset[str]
    kind: str | None = None
    entity: Entity | None = None
    table: tuple[tuple[str, frozenset[str]], ...] | None = None
    """For a generic verb (``claim_reading.GENERIC``): per mapped tool, the words that name
    its object; the sentence must name the tool that backs it."""

    def backs(self, ctx: RunContext, i: int, call: ToolCall) -> bool:
        """Whether a call of this tool (success aside) is what the claim is about."""
        return call.name in self.tools or (self.kind is not None and ctx.kinds[i] == self.kind)

    def what(self) -> str:
        """The backing tool(s), for explanations."""
        if self.tools:
            return "/".join(sorted(self.tools))
        return f"{self.kind} tool"


class Message:
    """One assistant message: its text, the step that produced it, its sentences."""

    __slots__ = ("_spans", "span_id", "step", "text")

    def __init__(self, text: str, step: int, span_id: str) -> None:
        self.text = text
        self.step = step
        """Calls with a lower step index ran before the message."""
        self.span_id = span_id
        self._spans: list[tuple[int, int]] | None = None

    def sentences(self) -> list[tuple[int, int]]:
        """Sentence spans, split once per message however many rules read them."""
        if self._spans is None:
            self._spans = sentences(self.text)
        return self._spans


def messages(ctx: RunContext, final_only: bool) -> list[Message]:
    """The assistant messages with text, in order (shared by the rules of a run).

    ``final_only``: the final answer alone. Otherwise every assistant turn with text, and
    the final answer too when no turn carries it (a run without captured messages).
    """
    key = "claims.final" if final_only else "claims.all"
    found: list[Message] | None = ctx.memo.get(key)
    if found is not None:
        return found
    run = ctx.run
    out: list[Message] = []
    if not final_only:
        for t in turns_of(run):
            if t.role == "assistant" and t.text:
                out.append(Message(t.text, t.step_index, t.span_id or run.root_span_id))
    answer = run.final_answer
    if answer is not None:
        answer = readable_text(answer)
    if answer is not None and not any(m.text.strip() == answer.strip() for m in out):
        step = run.final_answer_step_index
        out.append(Message(answer, ctx.final_index if step is None else step, ctx.final_span()[0]))
    ctx.memo[key] = out
    return out


def _steps(ctx: RunContext) -> list[int]:
    found: list[int] | None = ctx.memo.get("claims.steps")
    if found is None:
        found = ctx.memo["claims.steps"] = [i for i, _ in ctx.tool_index]
    return found


class ClaimEvidence:
    """When the final answer makes a claim, a successful call of one of the right tools
    (any of ``tools``; with none, any tool of ``kind``) must exist."""

    def __init__(self, claim: Regex, tools: frozenset[str], kind: str | None) -> None:
        self.claim = claim
        self.tools = tools
        self.kind = kind

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """No answer: insufficient evidence. Claim without a successful call: unsupported."""
        answer = ctx.run.final_answer
        if answer is None:
            report.insufficient(
                "F-EVIDENCE-NO_FINAL_ANSWER",
                ctx.root,
                "no final answer captured; cannot check its claims",
                ctx.final_index,
            )
            return
        if not self.claim.test(answer):
            return
        attempted = False
        for i, call in ctx.tool_index:
            if call.name in self.tools or (not self.tools and ctx.kinds[i] == self.kind):
                if ok(call):
                    return
                attempted = True
        m = self.claim.search(answer)
        what = "/".join(sorted(self.tools)) or f"{self.kind} tool"
        tail = " (it was attempted and failed)" if attempted else ""
        report.fail(
            "F-OUTPUT-UNSUPPORTED_CLAIM",
            ctx.final_span(),
            f"the answer claims {short(m.group(0) if m else '', 50)} but no successful {what} "
            f"call ran{tail}",
            ctx.final_index,
        )


class MessageClaims:
    """Every claim each message makes needs a successful matching call before it."""

    def __init__(self, claims: list[Claim], negations: Regex | None, final_only: bool) -> None:
        self.claims = claims
        self.negations = negations
        self.final_only = final_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One finding at most per message and claim: its first unbacked sentence."""
        said = messages(ctx, self.final_only)
        if not said:
            what = "final answer" if self.final_only else "assistant message or final answer"
            report.insufficient(
                "F-EVIDENCE-NO_FINAL_ANSWER",
                ctx.root,
                f"no {what} captured; cannot check its claims",
                ctx.final_index,
            )
            return
        for msg in said:
            for claim in self.claims:
                if claim.regex.test(msg.text):
                    self._message(ctx, report, msg, claim)

    def asserted(self, text: str, a: int, b: int, claim: Regex) -> list[Any]:
        """The claim's matches in sentence ``text[a:b]`` that are asserted, not negated."""
        sentence = text[a:b]
        if sentence.rstrip(" *_\"')").endswith("?"):
            return []
        out = []
        for m in claim.finditer(sentence):
            lo = clause_start(sentence, 0, m.start())
            if self.negations is not None and self.negations.test(sentence[lo : m.end()]):
                continue
            if not_this_run(sentence, m.start(), m.end()):
                continue  # a procedure, or a dated fact about something else
            out.append(m)
        return out

    def _message(self, ctx: RunContext, report: Report, msg: Message, claim: Claim) -> None:
        text = msg.text
        for a, b in msg.sentences():
            for m in self.asserted(text, a, b, claim.regex):
                problem = self._backing(ctx, msg, claim, m, text[a:b])
                if problem is None:
                    continue
                code, why = problem
                where = f"the message at step {msg.step}"
                expl = f"{where} claims {short(m.group(0), 50)} but {why}"
                if code.startswith("F-EVIDENCE"):
                    report.insufficient(code, (msg.span_id,), expl, msg.step)
                elif code == "F-UNDECIDED-CLAIM":
                    report.undecided(code, (msg.span_id,), expl, msg.step)
                else:
                    report.fail(code, (msg.span_id,), expl, msg.step)
                return

    def _backing(
        self, ctx: RunContext, msg: Message, claim: Claim, m: Any, sentence: str
    ) -> tuple[str, str] | None:
        """None when a successful matching call before the message backs the claim."""
        before = ctx.tool_index[: bisect.bisect_left(_steps(ctx), msg.step)]
        matching = [(i, c) for i, c in before if claim.backs(ctx, i, c)]
        good = [(i, c) for i, c in matching if ok(c)]
        if good and claim.table is not None:
            named = named_tools(sentence, claim.table)
            if not named:
                ran = "/".join(sorted({c.name for _, c in good}))
                return (
                    "F-UNDECIDED-CLAIM",
                    f"the sentence names none of the objects of {claim.what()}, so whether "
                    f"the {ran} call before it backs it cannot be read: {short(sentence, 120)}",
                )
            matching = [(i, c) for i, c in matching if c.name in named]
            good = [(i, c) for i, c in matching if ok(c)]
            claim = Claim(claim.label, claim.regex, named)
        if not good:
            later = next(
                (i for i, c in ctx.tool_index[len(before) :] if claim.backs(ctx, i, c) and ok(c)),
                None,
            )
            why = f"no successful {claim.what()} call ran before it"
            if later is not None:
                why += f" (one ran later, at step {later})"
            elif matching:
                why += " (it was attempted and failed)"
            return "F-OUTPUT-UNSUPPORTED_CLAIM", why
        entity = claim.entity
        value = m.group(entity.group) if entity is not None else None
        if entity is None or not value:
            return None
        want = value.casefold()
        seen: list[Any] = []
        uncaptured = False
        for _, call in good:
            source = call.result if entity.in_result else call.arguments
            if source is None or (not entity.in_result and not call.arguments_is_json):
                uncaptured = True
                continue
            for v in flatten(entity.path.search(source)):
                if key_of(v).casefold() == want:
                    return None
                seen.append(v)
        if uncaptured and not seen:
            code = "F-EVIDENCE-RESULT_MISSING" if entity.in_result else "F-EVIDENCE-ARGS_NOT_JSON"
            return code, f"the {claim.what()} calls' {_where(entity)} were not captured"
        return (
            "F-OUTPUT-CLAIM_ENTITY_MISMATCH",
            f"the successful {claim.what()} calls before it acted on {short(seen[:5], 60)} "
            f"({_where(entity)} {entity.path.source})",
        )


def _where(entity: Entity) -> str:
    return "results" if entity.in_result else "arguments"


def negations(c: Compiler, path: str, p: dict[str, Any]) -> tuple[bool, Regex | None]:
    """``(ok, regex)``: the ``negations`` list (default ``NEGATIONS``) as one regex."""
    items = p.get("negations", NEGATIONS)
    if not items:
        return True, None
    for k, item in enumerate(items):
        if c.regex(f"{path}.negations[{k}]", item) is None:
            return False, None
    source = "(?i)(?:" + "|".join(f"(?:{x})" for x in items) + ")"
    rx = c.regex(f"{path}.negations", source, limit=len(source))
    return rx is not None, rx


def build_claim_evidence(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``claim_evidence``: without ``messages``, the whole final answer as in 0.1 (rules
    files written before per-message claims keep their meaning); with it, per message."""
    rx = c.regex(f"{path}.claim", p["claim"])
    if rx is None:
        return None
    if "messages" in p:
        return build_message_claim(p, path, c, rx)
    for key in ("entity", "negations"):
        if key in p:
            c.error(f"{path}.{key}", "needs `messages: final` or `messages: all`")
            return None
    return ClaimEvidence(rx, names(p.get("tool")), p.get("kind"))


def build_message_claim(p: dict[str, Any], path: str, c: Compiler, claim: Regex) -> Check | None:
    """``claim_evidence`` with ``messages:``: the per-message, negation-aware form."""
    entity = None
    spec = p.get("entity")
    if spec is not None:
        group = spec["group"]
        if group not in claim.compiled.groupindex:
            c.error(f"{path}.entity.group", f"the claim regex has no group named {group!r}")
            return None
        in_result = "result" in spec
        jp = c.path(
            f"{path}.entity.{'result' if in_result else 'argument'}",
            spec.get("result", spec.get("argument", "")),
        )
        if jp is None:
            return None
        entity = Entity(group, jp, in_result)
    good, neg = negations(c, path, p)
    if not good:
        return None
    label = claim.source
    one = Claim(label, claim, names(p.get("tool")), p.get("kind"), entity)
    return MessageClaims([one], neg, p["messages"] == "final")


def build_completion_claims(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``completion_claims``."""
    claims: list[Claim] = []
    for name, mapped in p["map"].items():
        rx = c.regex(f"{path}.map.{name}", DETECTORS[name], limit=len(DETECTORS[name]))
        if rx is not None:
            backing = names(mapped)
            table = objects(backing) if name in GENERIC else None
            claims.append(Claim(name, rx, backing, table=table))
    good, neg = negations(c, path, p)
    if not good or len(claims) != len(p["map"]):
        return None
    return MessageClaims(claims, neg, p.get("messages", "all") == "final")


REGEXES: dict[str, Any] = {"type": "array", "maxItems": 100, "items": ref("regex")}
MESSAGES: dict[str, Any] = {"enum": ["final", "all"]}
ENTITY: dict[str, Any] = {
    "type": "object",
    "required": ["group"],
    "additionalProperties": False,
    "properties": {
        "group": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
        "argument": ref("path"),
        "result": ref("path"),
    },
    "oneOf": [{"required": ["argument"]}, {"required": ["result"]}],
}
"""Parameter schemas ``claim_evidence`` shares (``messages``, ``negations``, ``entity``)."""

SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="claim_evidence",
        doc="A claim in the final answer (messages: every message) needs a successful call "
        "of the named tool (or of any of a list of tools) or kind (before the message).",
        params=check_params(
            {
                "claim": ref("regex"),
                "tool": ref("nameOrNames"),
                "kind": ref("kind"),
                "messages": MESSAGES,
                "negations": REGEXES,
                "entity": ENTITY,
            },
            ("claim",),
            anyOf=[{"required": ["tool"]}, {"required": ["kind"]}],
        ),
        factory=build_claim_evidence,
        codes=(
            "F-OUTPUT-UNSUPPORTED_CLAIM",
            "F-OUTPUT-CLAIM_ENTITY_MISMATCH",
            "F-EVIDENCE-NO_FINAL_ANSWER",
            "F-EVIDENCE-RESULT_MISSING",
            "F-EVIDENCE-ARGS_NOT_JSON",
        ),
        tool_fields=("tool", "tool[]"),
    ),
    CheckSpec(
        name="completion_claims",
        doc="Built-in completion claims (cancelled, booked...) in each message need an "
        "earlier successful call of the mapped tools.",
        params=check_params(
            {
                "map": {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"enum": sorted(DETECTORS)},
                    "additionalProperties": ref("names"),
                },
                "messages": MESSAGES,
                "negations": REGEXES,
            },
            ("map",),
        ),
        factory=build_completion_claims,
        codes=(
            "F-OUTPUT-UNSUPPORTED_CLAIM",
            "F-EVIDENCE-NO_FINAL_ANSWER",
            "F-UNDECIDED-CLAIM",
        ),
        tool_fields=("map{}[]",),
    ),
)
"""The claim check types, declared once (see ``tracejudge.engine.checks``)."""
