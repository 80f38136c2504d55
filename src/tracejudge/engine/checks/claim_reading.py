"""What a completion claim is about, read from its sentence (for ``checks.claims``).

Two readings the detectors' patterns cannot make alone:

- **Not a claim of this run's action.** A present-tense passive with a condition or a time
  frame after it describes a procedure ("The refund is issued after the returned item is
  received", "Refunds are processed within 5-7 days"); a past-tense passive dated to
  another time states a fact about something that already existed ("the booking was made
  on May 4, outside the 24-hour window"). Neither is the agent saying it did something.
  Imperatives ("Ensure the refund is processed ...") are caught by the negations list.
- **The object a generic verb names.** "Three bags have been added" is backed by the tool
  whose name names bags (``update_reservation_baggages``), not by any write the detector
  is mapped to; when the sentence names none of them, which one backs it is undecided.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

GENERIC = frozenset({"added", "removed", "created"})
"""Detectors whose verb says nothing of its object: the sentence must name the tool."""

_PRESENT = re.compile(r"(?i)\b(?:is|are)\s+(?!now\b)")
_PAST = re.compile(r"(?i)\b(?:was|were)\s+")
_PERFECT = re.compile(r"(?i)\b(?:has|have)\s+been\b|\bnow\b|\bsuccessfully\b")
_CONDITION = re.compile(
    r"(?i)\b(?:after|once|when|whenever|until|upon|within|if|unless|as soon as|before"
    r"|typically|usually|normally|generally|always|only)\b"
)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*"
_DATED = re.compile(
    rf"(?i)\b(?:on|since|in|back in)\s+(?:the\s+)?(?:{_MONTH}|{_DAY}"
    rf"|\d{{1,4}}(?:[-/.]\d{{1,2}}){{0,2}}(?:st|nd|rd|th)?\b)"
    r"|\b(?:ago|yesterday|last (?:week|month|year|time)|previously|originally|earlier"
    r"|at the time)\b"
)


def not_this_run(sentence: str, start: int, end: int) -> bool:
    """Whether the claim matched at ``sentence[start:end]`` describes a procedure or a
    dated fact rather than something the agent just did (see the module docstring)."""
    matched = sentence[start:end]
    if _PERFECT.search(matched):
        return False
    if _PRESENT.search(matched):
        return _CONDITION.search(sentence, end) is not None
    if _PAST.search(matched):
        return _DATED.search(sentence, end) is not None
    return False


_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_VERBS = frozenset(
    {
        "add", "update", "get", "set", "remove", "delete", "create", "make", "do", "send",
        "book", "modify", "change", "put", "post", "patch", "new", "list", "find", "api",
    }
)  # fmt: skip
"""Tool-name words that say what a tool does, not what it acts on."""
_WORD = re.compile(r"[a-z]{3,}")
_PLAIN = frozenset(
    {
        "the", "and", "for", "you", "your", "has", "have", "been", "was", "were", "are", "with",
        "now", "all", "our", "its", "this", "that", "them", "they", "also", "just", "from",
    }
)  # fmt: skip
"""Sentence words that name no object."""


def _stem(word: str) -> str:
    for tail in ("ies", "es", "s"):
        if word.endswith(tail) and len(word) - len(tail) >= 3:
            return word[: -len(tail)] + ("y" if tail == "ies" else "")
    return word


def objects(tools: Iterable[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Per tool, the stems of the words of its name that tell it from the others mapped
    with it: not verbs, not a word every one of them has (``reservation``)."""
    words = {
        name: frozenset(
            _stem(w.lower())
            for w in _TOKEN.findall(name)
            if len(w) >= 3 and w.lower() not in _VERBS
        )
        for name in tools
    }
    shared = frozenset.intersection(*words.values()) if len(words) > 1 else frozenset()
    return tuple((name, ws - shared) for name, ws in sorted(words.items()))


def named_tools(sentence: str, table: tuple[tuple[str, frozenset[str]], ...]) -> frozenset[str]:
    """The tools whose object words the sentence names ("bags" names ``baggages``)."""
    stems = {_stem(w) for w in _WORD.findall(sentence.casefold()) if w not in _PLAIN}
    out: set[str] = set()
    for name, words in table:
        for w in words:
            if any(s.startswith(w) or w.startswith(s) for s in stems):
                out.add(name)
                break
    return frozenset(out)
