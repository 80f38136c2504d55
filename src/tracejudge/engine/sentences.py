"""Splitting agent messages into sentences and clauses, for claim checks.

A claim ("your reservation has been cancelled") is judged per sentence, and a negation
("could not", "I will") only cancels the claim in its own clause. The splitter is written
for what agents say, not for prose in general:

- a dot splits only when followed by white space and then something that can start a
  sentence, so ``$84.00``, ``ord_B1.002``, ``example.com`` and ``e.g. the`` stay whole;
- common abbreviations (``Mr.``, ``Dr.``, ``approx.``, ``No. 5``) and initials (``J. Smith``)
  don't end a sentence;
- every line is its own sentence at least, and list bullets (``-``, ``*``, ``1.``,
  ``1)``) and markdown headings or quotes are cut off the front;
- ``!`` and ``?`` followed by white space always end a sentence (a trailing ``?`` marks
  a question, which claims checks skip).

Spans are ``(start, end)`` offsets into the original text, so matches found in a sentence
map back to the message.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e",
        "approx", "est", "inc", "ltd", "co", "corp", "dept", "no", "nos", "ref", "tel", "ext",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
        "mon", "tue", "wed", "thu", "fri", "sat", "sun", "a.m", "p.m", "u.s", "u.k", "fig",
    }
)  # fmt: skip
"""Words (lower case, no final dot) whose dot does not end a sentence."""

_BULLET = re.compile(r"[ \t]*(?:[-*+\u2022\u00b7]|\d{1,3}[.)]|#{1,6}|>)[ \t]+")
_CLOSERS = "\"')]}*_\u201d\u2019"
_CLAUSE = re.compile(
    r"[,;:](?=\s)|\s[-\u2013\u2014]\s|\b(?:but|however|although|though|whereas)\b", re.I
)


def _word_before(text: str, j: int) -> str:
    """The word ending at ``j`` (letters and inner dots: ``e.g``, ``U.S``), lower case."""
    w = j
    while w > 0 and (text[w - 1].isalpha() or (text[w - 1] == "." and w - 1 != j)):
        w -= 1
    return text[w:j].strip(".").lower()


def _ends_sentence(text: str, j: int, nxt: str) -> bool:
    """Whether the ``.`` at ``j``, followed by white space then ``nxt``, ends a sentence."""
    if nxt.islower():
        return False
    word = _word_before(text, j)
    if word == "no":
        return not nxt.isdigit()
    if word in ABBREVIATIONS:
        return False
    return not (len(word) == 1 and text[j - 1].isupper() and nxt.isupper())


def _trimmed(text: str, a: int, b: int, out: list[tuple[int, int]]) -> None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if any(ch.isalnum() for ch in text[a:b]):
        out.append((a, b))


def _split_line(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    m = _BULLET.match(text, start, end)
    if m is not None:
        start = m.end()
    j = start
    while j < end:
        ch = text[j]
        if ch not in ".!?":
            j += 1
            continue
        k = j
        while k + 1 < end and text[k + 1] in ".!?":
            k += 1
        while k + 1 < end and text[k + 1] in _CLOSERS:
            k += 1
        q = k + 1
        if q >= end:
            break
        if not text[q].isspace():
            j = q
            continue
        while q < end and text[q].isspace():
            q += 1
        if q >= end:
            break
        single_dot = ch == "." and text[j + 1] not in ".!?"
        if single_dot and not _ends_sentence(text, j, text[q]):
            j = q
            continue
        _trimmed(text, start, k + 1, out)
        start = j = q
    _trimmed(text, start, end, out)


def sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ``(start, end)`` offsets, in order, trimmed."""
    out: list[tuple[int, int]] = []
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl
        _split_line(text, pos, end, out)
        if nl == -1:
            break
        pos = nl + 1
    return out


def clause_start(text: str, lo: int, pos: int) -> int:
    """Where the clause holding ``pos`` starts (after the last ``,``/``;``/``:``, dash or
    ``but`` between ``lo`` and ``pos``); ``lo`` when there is none."""
    start = lo
    for m in _CLAUSE.finditer(text, lo, pos):
        start = m.end()
    return start


def clause_bounds(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The clauses of sentence ``text[lo:hi]`` as ``(start, end)`` offsets: split after each
    ``,``/``;``/``:``, around dashes and before ``but``/``however``..., trimmed, empty ones
    left out."""
    out: list[tuple[int, int]] = []
    start = lo
    for m in _CLAUSE.finditer(text, lo, hi):
        _trimmed(text, start, m.start(), out)
        start = m.start() if m.group(0)[0].isalpha() else m.end()
    _trimmed(text, start, hi, out)
    return out
