"""Reading a user's reply to a proposal: yes, no, or both (for ``user_confirmation``).

Answer words count where an answer stands, list items included ("1) Yes — please return
the lamp. 2) Yes — refund to my card." says yes). A reply that holds both an affirmative
and a negative match is read clause by clause (``tracejudge.engine.sentences``: sentences,
then the clauses between commas, semicolons, dashes and "but", list markers cut off the
front). Each clause says yes, no or nothing (``Answers.clause``: a negative before the first
affirmative refuses). The reply's answer:

- every clause that answers agrees: that answer;
- the clauses disagree (``mixed``): the checks first ask which clauses name the call being
  judged ("hold off on the bottle, go ahead with the lamp" confirms the lamp); when none
  does, disagreeing clauses of one sentence keep the first answer ("Not yet, yes later"
  refuses), a later sentence that says yes settles it ("Wait, is that the Visa? ... go
  ahead. YES" confirms), and a later sentence that says no after a yes is undecided (a
  condition or a change of mind: the reading cannot tell).

A user asking the *agent* to confirm ("please confirm the refund goes to my card", "can
you confirm ...?") is not the user's yes: a ``confirm`` that follows a request is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from tracejudge.engine.compile import Regex
from tracejudge.engine.sentences import clause_bounds, sentences

Said: TypeAlias = Literal["yes", "no"]
ReplyAnswer: TypeAlias = Literal["yes", "no", "mixed", "undecided"]

_MARKS = ("at", "mid")
"""Named groups whose start is a match's position (the lead-in before them is context)."""
_LIST_MARK = re.compile(r"\s*(?:\(?\d{1,2}[.)]|\(?[a-z][)]|[-*+\u2022])\s+", re.I)
_ASKED_TO_CONFIRM = re.compile(
    r"(?i)\b(?:please|pls|can you|could you|would you|will you|kindly|just|first|before you"
    r"|need you to|want you to|make sure(?: you)?|you should|you must)\W+(?:\w+\W+){0,2}$"
)
"""Words before a ``confirm``/``verify`` that make it a request to the agent."""
_REQUESTED_WORDS = ("confirm", "verify", "double-check", "double check", "check")


@dataclass(slots=True, frozen=True)
class Clause:
    """One clause of a reply that answers: where it is and what it says."""

    start: int
    end: int
    sentence: int
    said: Said


@dataclass(slots=True, frozen=True)
class Reply:
    """A reply read once (``Answers.read``): its answer and the clauses that answered.

    ``answer`` is ``mixed`` when the clauses disagree and the rules above settle nothing
    without the call (``settled`` is then what they give without naming: ``yes``, ``no``
    or ``undecided``)."""

    answer: ReplyAnswer | None
    clauses: tuple[Clause, ...]
    settled: ReplyAnswer | None


def _marks(rx: Regex) -> tuple[int, ...]:
    """The group numbers of ``_MARKS`` in ``rx`` (looked up once; the wrapper rebuilds
    ``groupindex`` on every access)."""
    index: dict[str, int] = dict(rx.compiled.groupindex)
    return tuple(index[name] for name in _MARKS if name in index)


def _place(m: Any, marks: tuple[int, ...]) -> int:
    for g in marks:
        at: int = m.start(g)
        if at >= 0:
            return at
    start: int = m.start()
    return start


class Answers:
    """The affirmative and negative patterns of one rule, and the replies read with them.

    ``read`` is called for the same user turns by every ``user_confirmation`` rule of a
    run; the checks keep its results per run (``RunContext.memo``), keyed by ``key``.
    """

    __slots__ = ("_no_marks", "_yes_marks", "affirmative", "key", "negative")

    def __init__(self, affirmative: Regex, negative: Regex) -> None:
        self.affirmative = affirmative
        self.negative = negative
        self._yes_marks = _marks(affirmative)
        self._no_marks = _marks(negative)
        self.key = f"answers\x1f{affirmative.source}\x1f{negative.source}"

    def _yes(self, text: str) -> int:
        """Where the first affirmative of ``text`` is that is not a request to confirm."""
        for m in self.affirmative.finditer(text):
            at = _place(m, self._yes_marks)
            word = text[at : m.end()].casefold()
            if word.startswith(_REQUESTED_WORDS) and _ASKED_TO_CONFIRM.search(text, 0, at):
                continue
            return at
        return -1

    def clause(self, text: str) -> Said | None:
        """``"yes"``, ``"no"`` or None for one clause: a negative before the first
        affirmative refuses; one starting at the same place (``no problem``) does not."""
        yes = self._yes(text) if self.affirmative.test(text) else -1
        no = self.negative.search(text)
        if no is not None and (yes < 0 or _place(no, self._no_marks) < yes):
            return "no"
        return "yes" if yes >= 0 else None

    def read(self, text: str) -> Reply:
        """The reply's answer (see the module docstring), without naming the call. A reply
        with matches of one pattern only is read whole: there is nothing to weigh."""
        if not self.negative.test(text):
            # one polarity at most: nothing to weigh, no clause to name the call
            said: Said | None = "yes" if self._yes(text) >= 0 else None
            return Reply(said, (), said)
        if not self.affirmative.test(text):
            return Reply("no", (), "no")
        found: list[Clause] = []
        for k, (a, b) in enumerate(sentences(text)):
            m = _LIST_MARK.match(text, a, b)
            if m is not None:
                a = m.end()
            for lo, hi in clause_bounds(text, a, b):
                answer = self.clause(text[lo:hi])
                if answer is not None:
                    found.append(Clause(lo, hi, k, answer))
        if not found:
            return Reply(None, (), None)
        if all(c.said == found[0].said for c in found):
            return Reply(found[0].said, tuple(found), found[0].said)
        return Reply("mixed", tuple(found), _settle(found))


def _settle(found: list[Clause]) -> ReplyAnswer:
    """Disagreeing clauses read without the call: the first answer within one sentence,
    a later sentence's yes settles, a later sentence's no after a yes cannot be read."""
    last = found[-1]
    first = next(c for c in found if c.sentence == last.sentence)
    said = first.said
    if all(c.sentence == last.sentence for c in found):
        return said
    if said == "yes":
        return "yes"
    return "undecided"


def decide(reply: Reply, named: list[bool]) -> ReplyAnswer | None:
    """A mixed reply's answer for one call: ``named[k]`` says whether clause ``k`` names
    the call. The clauses that name it decide when they agree; else ``reply.settled``."""
    if reply.answer != "mixed":
        return reply.answer
    says = {c.said for c, hit in zip(reply.clauses, named, strict=True) if hit}
    if len(says) == 1:
        return says.pop()
    return reply.settled
