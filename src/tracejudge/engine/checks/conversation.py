"""Conversation checks: did the user confirm what the agent was about to do?

"Obtain explicit user confirmation (yes) before any action that updates the booking" is
the most common rule in real agent policies. The run's turns (``Run.turns``) make it
checkable: before the assistant turn that requested each call of the listed tools, the
user must have said yes (and not no since) to an assistant message proposing it.
Optionally the agent's messages the user confirmed must name the call's key arguments, so
a "yes" to one reservation does not authorise a change to another.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.engine.checks.answers import Answers, Reply, ReplyAnswer, decide
from tracejudge.engine.checks.base import (
    ATTEMPTS,
    Check,
    CheckSpec,
    check_params,
    names,
    ref,
    short,
    successful_only,
)
from tracejudge.engine.checks.binding import key_of
from tracejudge.engine.checks.call_naming import (
    aliases,
    call_words,
    entity_states,
    leaves,
    mentions,
    names_call,
)
from tracejudge.engine.checks.unchanged import kept_elsewhere, key_path, keyed_leaves
from tracejudge.engine.compile import Compiler, Path, Regex
from tracejudge.engine.context import Report, RunContext, ToolMeta, ok
from tracejudge.engine.sentences import sentences
from tracejudge.model.run import ToolCall
from tracejudge.redaction import REDACTED

_Q = "[\\x{2019}']"  # an apostrophe, straight or curly (RE2 syntax)
_LEAD = (
    r"(?:^|[.!?;:]\s+|\n\s*|,\s*|\s[-\x{2013}\x{2014}]\s+)(?:\(?\d{1,2}[.)]\s*|[-*\x{2022}]\s+)?"
    r"(?:(?:oh|um+|uh+|hmm+|well|actually|sorry|please|and|but|so"
    r"|then|thanks|thank you)[\s,!.]*)*"
)
"""Where an answer word can stand: the start of the message, a sentence, a clause or a list
item ("1) Yes"), after fillers ("Oh, ...", "Actually, ...", "Please ...")."""
DEFAULT_AFFIRMATIVE = (
    rf"(?i){_LEAD}(?P<at>yes|yeah|yep|yup|sure|ok(?:ay)?|alright|all right|absolutely"
    rf"|definitely|of course|correct|confirm(?:ed)?|go ahead|proceed|please do|do it"
    rf"|sounds (?:good|great|fine)|that{_Q}?s (?:right|correct|fine|good|great|perfect)"
    rf"|perfect|great|no problem)\b"
    rf"|\b(?P<mid>(?:go|going) ahead|proceed with|(?:let{_Q}?s|please|you can|you may"
    rf"|I{_Q}?d like to|I would like to|I want to) (?:proceed|go ahead|do (?:it|that)|book"
    rf"|cancel|change|modify|update|upgrade|make)|I confirm|confirm(?:ed)? (?:it|that|this"
    rf"|the)|(?:everything|that|this|it|all) (?:is|sounds|looks|seems) (?:right|correct|good"
    rf"|fine|great|perfect)|looks (?:good|great|fine|right|correct|perfect))\b"
)
"""A user turn with a match confirms (RE2; ``affirmative:`` replaces it). Answer words
count at the start of a sentence or clause ("Sure, ...", not "I'm not sure"); the phrases
after ``mid`` count anywhere ("let's proceed", "please go ahead")."""
DEFAULT_NEGATIVE = (
    rf"(?i){_LEAD}(?P<at>no\s*(?:[,.!;]|$)|no thanks|nope|nah|not (?:yet|now|right now)"
    rf"|don{_Q}?t|do not|wait|hold on|hold off|stop|never ?mind|cancel that)"
    rf"|\b(?P<mid>(?:don{_Q}?t|do not|would not|wouldn{_Q}?t|rather not|not) (?:want|wish"
    rf"|need) (?:to|that|this|it)|(?:don{_Q}?t|do not) (?:proceed|go ahead|do (?:it|that)"
    rf"|book|cancel|change)|changed my mind|rather not|hold off|not (?:yet|now))\b"
)
"""A user turn where this matches before the first affirmative refuses (``negative:``).
"No" counts as an answer only standing alone ("No.", "No, ..."), not as a determiner ("no
extra bags"); "don't" at the start of a sentence, or before want/proceed/cancel..."""
DEFAULT_PROPOSAL = (
    r"(?i)\?|\b(?:confirm\w*|proceed\w*|go ahead|let me know|would you like|do you want"
    r"|shall I|should I|if (?:you(?:'d| would) like|that(?:'s| is) (?:ok|okay|fine|correct)))\b"
    r"|\b(?:reply|respond|answer|say|type|write|enter)\b\W{0,3}(?:with\s+)?\W{0,3}(?:yes|y)\b"
    r"|\byes\b\W{0,3}(?:or|/)\W{0,3}\bno\b"
)
"""An assistant message that asks for an answer: a question, a request to confirm or
proceed ("confirmation", ``confirm_to_proceed`` count too), or one that asks for the answer
in words ("Reply 'yes' to submit the return now, or 'no' to cancel."); ``proposal:``
replaces it. A "yes" after a message that asks nothing ("Noah has been upgraded." /
"Great! Could you also add two bags?") answers no proposal."""
GREETING = re.compile(
    r"(?i)^\W*(?:(?:hi|hello|hey|good (?:morning|afternoon|evening))\b[^.!?]*[.!?]?\s*)?"
    r"(?:how (?:can|may|could) (?:I|we) (?:help|assist)|what can (?:I|we) (?:do|help)"
    r"|(?:is there )?anything else (?:I|we) can (?:help|do|assist)|how are you)\b[^?]*\?\W*$"
)
"""A sentence that offers help and proposes nothing ("How can I help you today?"): it is
no proposal, whatever ``proposal:`` says (a yes after it confirms nothing)."""


_OFFERS_HELP = (
    "how can i", "how can we", "how may i", "how may we", "how could i", "how could we",
    "what can i", "what can we", "anything else", "how are you",
)  # fmt: skip
"""What every ``GREETING`` holds (casefolded): a message without any of them is split into
sentences no further."""


def asks(proposal: Regex, text: str) -> bool:
    """Whether ``text`` proposes something: ``proposal`` matches a sentence that is not a
    greeting."""
    if proposal.search(text) is None:
        return False
    folded = text.casefold()
    if not any(phrase in folded for phrase in _OFFERS_HELP):
        return True
    spans = sentences(text)
    if not any(GREETING.search(text[a:b]) for a, b in spans):
        return True
    return any(
        proposal.search(text[a:b]) is not None and not GREETING.search(text[a:b]) for a, b in spans
    )


def unreadable(text: str | None) -> bool:
    """The text was dropped or redacted (``[REDACTED]``): what it said cannot be read."""
    return text is None or not text.strip() or REDACTED in text


class UserConfirmation:
    """Each call of the listed tools needs a user "yes" to a proposal before it.

    ``reply: last`` (the default) reads the last user turn before the assistant turn that
    requested the call: it must say yes, and the proposal is the last assistant text
    before it. ``reply: latest`` is the lenient reading: when that turn says neither yes
    nor no (it answers a follow-up question: "the card on file, please"), the latest yes
    in the call's **window** counts, unless a turn with a negative came after it. The
    window is the conversation since the previous successful judged call was requested,
    when the user has spoken since; otherwise (writes in a row, no user turn between) the
    previous call's window, so one "yes" to "cancel both" covers both. A failed attempt
    changed nothing, so its retry rests on the same confirmation.

    Replies are read by ``checks.answers``; a reply whose clauses disagree is decided by
    the clauses that name the call, and is ``undecided`` (``F-UNDECIDED-CONFIRMATION``,
    citing the reply) when nothing settles it, as is a reply or proposal whose text was
    dropped or redacted.
    """

    def __init__(
        self,
        tools: frozenset[str],
        kind: str | None,
        affirmative: Regex,
        negative: Regex,
        mention: list[Path],
        successful_only: bool,
        latest: bool = False,
        proposal: Regex | None = None,
        mention_results: list[Path] | None = None,
    ) -> None:
        self.tools = tools
        self.proposal = proposal
        self.kind = kind
        self.answers = Answers(affirmative, negative)
        self.mention = mention
        self.mention_results = mention_results or []
        self.successful_only = successful_only
        self.latest = latest
        self._asks_key = "asks\x1f" + (proposal.source if proposal is not None else "")

    def _judged(self, ctx: RunContext, i: int, call: ToolCall) -> bool:
        if self.successful_only and not ok(call):
            return False
        return call.name in self.tools or (self.kind is not None and ctx.kinds[i] == self.kind)

    def answer(self, text: str) -> ReplyAnswer | None:
        """``"yes"``, ``"no"``, ``"undecided"`` or None: the reply read without naming a
        call (``checks.answers``)."""
        reply = self.answers.read(text)
        return reply.settled if reply.answer == "mixed" else reply.answer

    def _read(self, ctx: RunContext, text: str) -> Reply:
        """``answers.read``, once per run and reply text for every rule with these
        patterns."""
        memo: dict[str, Reply] | None = ctx.memo.get(self.answers.key)
        if memo is None:
            memo = ctx.memo[self.answers.key] = {}
        found = memo.get(text)
        if found is None:
            found = memo[text] = self.answers.read(text)
        return found

    def _asks(self, ctx: RunContext, text: str) -> bool:
        """``asks``, once per run and proposal text for every rule with this pattern."""
        assert self.proposal is not None
        key = self._asks_key
        memo: dict[str, bool] | None = ctx.memo.get(key)
        if memo is None:
            memo = ctx.memo[key] = {}
        found = memo.get(text)
        if found is None:
            found = memo[text] = asks(self.proposal, text)
        return found

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One pass over the judged calls; each is placed in the conversation by index."""
        judged = [(i, c) for i, c in ctx.tool_index if self._judged(ctx, i, c)]
        if not judged:
            return
        conv = ctx.turn_index()
        if conv.users == 0:
            i, call = judged[0]
            what = "no conversation was captured" if not conv.turns else "it has no user turn"
            report.insufficient(
                "F-EVIDENCE-NO_CONVERSATION",
                (call.span_id,),
                f"{call.name} needs user confirmation but {what}; capture the model "
                "calls' messages",
                i,
            )
            return
        start = 0  # the window of the last successful judged call
        last_at = -1  # where that call was requested
        for i, call in judged:
            at = conv.position_of_call(i, call)
            window = start
            if last_at >= 0 and last_at < at and conv.last_user[at] > last_at:
                window = last_at + 1  # the user spoke since: a new answer is needed
            self._one(ctx, report, i, call, at, window)
            if ok(call):
                start, last_at = window, at

    def _said(self, ctx: RunContext, k: int, i: int, call: ToolCall) -> ReplyAnswer | None:
        """What user turn ``k`` answers for call ``i``."""
        text = ctx.turn_index().turns[k].text
        if text is None:
            return None
        reply = self._read(ctx, text)
        if reply.answer != "mixed":
            return reply.answer
        words = call_words(ctx, i, call)
        named = [names_call(text[c.start : c.end], call, words) for c in reply.clauses]
        return decide(reply, named)

    def _reply(
        self, ctx: RunContext, at: int, start: int, i: int, call: ToolCall
    ) -> tuple[int, ReplyAnswer | None]:
        """The user turn that answers for the call requested at ``at``, and its answer.

        The last user turn decides when it says yes, no or cannot be read. When it says
        neither (it answers a follow-up question), ``reply: latest`` looks back through the
        window for a yes, stopping at a turn with a negative: "no" said in passing earlier
        ("I don't have the ids") is not a refusal, but neither can a yes before it count.
        """
        conv = ctx.turn_index()
        u = conv.last_user[at]
        answer = self._said(ctx, u, i, call) if u >= 0 else None
        if answer is not None or not self.latest:
            return u, answer
        k = conv.last_user[u] if u >= 0 else -1
        while k >= start:
            said = self._said(ctx, k, i, call)
            if said in ("yes", "undecided"):
                return k, said
            if said is not None:
                break
            k = conv.last_user[k]
        return u, None

    def _one(
        self, ctx: RunContext, report: Report, i: int, call: ToolCall, at: int, start: int
    ) -> None:
        conv = ctx.turn_index()
        sid = (call.span_id,)
        u, answer = self._reply(ctx, at, start, i, call)
        if u < 0 or (self.latest and u < start):
            since = " since the previous confirmed call" if start > 0 else ""
            report.fail(
                "F-POLICY-NO_CONFIRMATION",
                sid,
                f"{call.name} was requested with no user message{since}",
                i,
            )
            return
        said = conv.turns[u].text or ""
        if answer == "no":
            report.fail(
                "F-POLICY-CONFIRMATION_DENIED",
                sid,
                f"{call.name} ran although the user's answer before it (turn {u}) refused: "
                f"{short(said, 60)}",
                i,
            )
            return
        if answer == "undecided" or (answer is None and unreadable(conv.turns[u].text)):
            why = (
                "says yes and no"
                if answer == "undecided"
                else "cannot be read (dropped or redacted)"
            )
            report.undecided(
                "F-UNDECIDED-CONFIRMATION",
                sid,
                f"{call.name}: the user's answer before it (turn {u}) {why}: {short(said, 120)}",
                i,
            )
            return
        if answer is None and self._instructs(ctx, i, call, said, conv.last_said[u]):
            p = conv.last_said[u]
            if self.mention or self.mention_results:
                proposals, replies = self._agreed_chain(ctx, i, call, p, said, start)
                joined = "\n".join(proposals)
                if self._details(ctx, report, i, call, joined, p, "\n".join(replies)):
                    return  # details never listed: a failure whatever the reply means
            report.undecided(
                "F-UNDECIDED-CONFIRMATION",
                sid,
                f"{call.name}: the user's message before it (turn {u}) tells the agent to do "
                f"it rather than saying yes to a proposal: {short(said, 120)}",
                i,
            )
            return
        if answer is None:
            which = (
                "no user message since the proposal says yes; the last"
                if self.latest
                else ("the user's last message before it")
            )
            report.fail(
                "F-POLICY-NO_CONFIRMATION",
                sid,
                f"{call.name} ran but {which} (turn {u}) does not confirm: {short(said, 60)}",
                i,
            )
            return
        p = conv.last_said[u]
        if p < 0:
            report.fail(
                "F-POLICY-NO_CONFIRMATION",
                sid,
                f"{call.name} ran without a proposal: no assistant message came before the "
                f"user's yes (turn {u})",
                i,
            )
            return
        asked = conv.turns[p].text or ""
        if self.proposal is not None and not self._asks(ctx, asked):
            if REDACTED in asked:
                report.undecided(
                    "F-UNDECIDED-CONFIRMATION",
                    sid,
                    f"{call.name}: the agent's message before the user's yes (turn {p}) was "
                    f"redacted, so whether it proposed the call cannot be read: "
                    f"{short(asked, 120)}",
                    i,
                )
                return
            report.fail(
                "F-POLICY-NO_CONFIRMATION",
                sid,
                f"{call.name} ran but the user's {short(said, 40)} (turn {u}) answers no "
                f"proposal: the agent's message before it (turn {p}) asks nothing: "
                f"{short(asked, 60)}",
                i,
            )
            return
        if self.mention or self.mention_results:
            proposals, replies = self._agreed_chain(ctx, i, call, p, said, start)
            self._details(ctx, report, i, call, "\n".join(proposals), p, "\n".join(replies))

    def _instructs(self, ctx: RunContext, i: int, call: ToolCall, said: str, p: int) -> bool:
        """Whether the user's reply, answering a proposal that asks (turn ``p``), has a
        sentence that instructs this call ("Please switch the payment to my Visa ending
        8902."): not a question ("Could you please adjust the payment?"), and naming the
        call by one of its values or a word of a record that holds one."""
        if p < 0 or (
            self.proposal is not None and not self._asks(ctx, ctx.turn_index().turns[p].text or "")
        ):
            return False
        words: frozenset[str] | None = None
        for lo, hi in sentences(said):
            sentence = said[lo:hi]
            if sentence.rstrip().endswith("?") or not _DIRECTIVE.search(sentence):
                continue
            if words is None:
                words = call_words(ctx, i, call)
            if names_call(sentence, call, words):
                return True
        return False

    def _agreed_chain(
        self, ctx: RunContext, i: int, call: ToolCall, p: int, said: str, start: int
    ) -> tuple[list[str], list[str]]:
        """The proposal at ``p`` and the earlier ones the user also said yes to, back to the
        window's start: "Return the kettle and keyboard from #W5565470?" - "Yes" - "The
        refund goes to PayPal. Proceed?" - "Yes" lists the action's details across two
        proposals, each agreed to. The chain stops at a reply that is not a yes, at an
        assistant message that asks nothing, and at the previous confirmed call's window.
        With their replies (words the user said are words the user confirmed)."""
        conv = ctx.turn_index()
        proposals = [conv.turns[p].text or ""]
        replies = [said]
        k = conv.last_user[p]
        while k >= start:
            if self._said(ctx, k, i, call) != "yes":
                break
            q = conv.last_said[k]
            if q < start:
                break
            asked = conv.turns[q].text or ""
            if self.proposal is not None and not self._asks(ctx, asked):
                break
            proposals.append(asked)
            replies.append(conv.turns[k].text or "")
            k = conv.last_user[q]
        return proposals, replies

    def _details(
        self,
        ctx: RunContext,
        report: Report,
        i: int,
        call: ToolCall,
        proposal: str,
        p: int,
        reply: str,
    ) -> bool:
        """Each changed value of the call must be named by the proposal the user confirmed,
        or by the user's yes itself ("Yes, and cancel 59XX6W too"): words the user said
        are words the user confirmed. Whether it reported a finding."""
        sid = (call.span_id,)
        if call.arguments is None or not call.arguments_is_json:
            report.insufficient(
                "F-EVIDENCE-ARGS_NOT_JSON",
                sid,
                f"{call.name} arguments were not captured as JSON; cannot check the proposal",
                i,
            )
            return True
        text = proposal.casefold()
        answer = reply.casefold()
        states, selectors = entity_states(ctx, i, call)
        for path in self.mention:
            kept = {key_of(v) for state in states for v in leaves(path.search(state))}
            kept -= selectors
            base = key_path(path.source)
            for keys, v in keyed_leaves(path.search(call.arguments), base or ()):
                if key_of(v) in kept:
                    continue  # the entity already has it: not a detail of this change
                if base and key_of(v) not in selectors and kept_elsewhere(keys, v, states):
                    continue  # kept under another path (``address1``: ``address.address1``)
                if not any(
                    mentions(text, said) or mentions(answer, said)
                    for said in (v, *aliases(ctx, i, v))
                ):
                    report.fail(
                        "F-POLICY-UNCONFIRMED_DETAILS",
                        sid,
                        f"{call.name} {path.source}={short(v, 40)} is not in the proposal the "
                        f"user confirmed (turn {p}): {short(proposal, 60)}",
                        i,
                    )
                    return True
        return self._result_details(report, i, call, states, (text, answer), p, proposal)

    def _result_details(
        self,
        report: Report,
        i: int,
        call: ToolCall,
        states: list[Any],
        said: tuple[str, str],
        p: int,
        proposal: str,
    ) -> bool:
        """``mention_results``: what the call did that its arguments do not say - the amount
        it charged or refunded - must have been quoted before the yes ("Adding two bags
        costs $100, proceed?"). Read from the call's result; amounts by their size (a
        refund of -2492 is quoted as "$2,492"). Values the entity already had, as earlier
        lookups of it showed (the booking's original payment), are not what this call did.
        A call without a result did nothing to quote."""
        if not self.mention_results or not isinstance(call.result, (dict, list)):
            return False
        text, answer = said
        for path in self.mention_results:
            had = {key_of(v) for state in states for v in leaves(path.search(state))}
            for v in leaves(path.search(call.result)):
                if key_of(v) in had:
                    continue
                size = abs(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                if not (mentions(text, size) or mentions(answer, size)):
                    report.fail(
                        "F-POLICY-UNCONFIRMED_DETAILS",
                        (call.span_id,),
                        f"{call.name} result {path.source}={short(v, 40)} (what the call did) "
                        f"was not quoted in the proposal the user confirmed (turn {p}): "
                        f"{short(proposal, 60)}",
                        i,
                    )
                    return True
        return False


_DIRECTIVE = re.compile(
    r"(?i)\bplease\s+(?!confirm|verify|check|let|tell|provide|show|explain|give|hold|wait)"
    r"[a-z]+|\bgo ahead and\b"
)
"""A reply that instructs the action ("please switch the payment to my Visa ending
8902") answers an either/or question without a yes. Whether that is the policy's
"explicit user confirmation (yes)" needs reading, so with the call named it is
undecided, never a silent pass nor a confident fail (issue 19)."""


def build_user_confirmation(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``user_confirmation``."""
    yes = c.regex(f"{path}.affirmative", p.get("affirmative", DEFAULT_AFFIRMATIVE))
    no = c.regex(f"{path}.negative", p.get("negative", DEFAULT_NEGATIVE))
    asks = c.regex(f"{path}.proposal", p.get("proposal", DEFAULT_PROPOSAL))
    paths = [
        c.path(f"{path}.mention_arguments[{k}]", a)
        for k, a in enumerate(p.get("mention_arguments") or [])
    ]
    result_paths = [
        c.path(f"{path}.mention_results[{k}]", a)
        for k, a in enumerate(p.get("mention_results") or [])
    ]
    if yes is None or no is None or asks is None or any(x is None for x in paths + result_paths):
        return None
    mention = [x for x in paths if x is not None]
    return UserConfirmation(
        names(p.get("tools")),
        p.get("kind"),
        yes,
        no,
        mention,
        successful_only(p),
        p.get("reply", "last") == "latest",
        asks,
        [x for x in result_paths if x is not None],
    )


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="user_confirmation",
        doc="Each call of the listed tools needs the user's yes to an assistant proposal first.",
        params=check_params(
            {
                "tools": ref("names"),
                "kind": ref("kind"),
                "affirmative": ref("regex"),
                "negative": ref("regex"),
                "proposal": ref("regex"),
                "mention_arguments": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": ref("path"),
                },
                "mention_results": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": ref("path"),
                },
                "attempts": ATTEMPTS,
                "reply": {"enum": ["last", "latest"]},
            },
            anyOf=[{"required": ["tools"]}, {"required": ["kind"]}],
        ),
        factory=build_user_confirmation,
        codes=(
            "F-POLICY-NO_CONFIRMATION",
            "F-POLICY-CONFIRMATION_DENIED",
            "F-POLICY-UNCONFIRMED_DETAILS",
            "F-EVIDENCE-NO_CONVERSATION",
            "F-EVIDENCE-ARGS_NOT_JSON",
            "F-UNDECIDED-CONFIRMATION",
        ),
        tool_fields=("tools[]",),
    ),
)
"""The conversation check types, declared once (see ``tracejudge.engine.checks``)."""
