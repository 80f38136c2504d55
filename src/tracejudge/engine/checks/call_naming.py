"""What names a call: its values said in a text, and the words of the records it acts on.

``user_confirmation`` asks whether a proposal or a reply names a call: a value of its
arguments written as people write it (``mentions``: case, numbers in their written forms,
word boundaries), or a word of a record that an earlier lookup returned holding one of
those values (``call_words``: item ``8384507844`` is the "Desk Lamp"). And what earlier
lookups said of the entity a call changes (``entity_states``), so a value the call keeps is
not a detail of the change.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.engine.checks.binding import flatten, key_of
from tracejudge.engine.context import RunContext, ok
from tracejudge.model.run import ToolCall


def _number_forms(value: int | float) -> list[str]:
    """How a number is commonly written: ``84``, ``84.00``, ``1,234.50``..."""
    if isinstance(value, float) and not value.is_integer():
        return [repr(value), f"{value:.2f}", f"{value:,.2f}", f"{value:,}"]
    n = int(value)
    return [str(n), f"{n:,}", f"{n}.00", f"{n:,}.00", f"{n}.0"]


def _bounded(text: str, start: int, end: int) -> bool:
    """The match is a whole token: no letter or digit glued to either side (a number
    inside ``184`` or ``84.5`` does not count as ``84``)."""
    if start > 0:
        before = text[start - 1]
        if before.isalnum() or (before in ".," and start > 1 and text[start - 2].isdigit()):
            return False
    if end < len(text):
        after = text[end]
        if after.isalnum() or (after in ".," and end + 1 < len(text) and text[end + 1].isdigit()):
            return False
    return True


_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_COUNTS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
"""Counts said in words, 2 to 10 ("one" and "no" are too common in other senses)."""


def _ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def _string_forms(value: str) -> list[str]:
    """How an identifier-like string is said: ``basic_economy`` as "basic economy",
    ``round_trip`` as "round-trip", ``2024-05-04`` as "May 4", "May 4th", "4 May" or
    "05/04/2024" (a date without its year is still that date in a conversation about one
    booking)."""
    text = value.casefold()
    forms = [text]
    if "_" in text:
        forms += [text.replace("_", " "), text.replace("_", "-")]
    m = _ISO_DATE.fullmatch(text)
    if m:
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if 1 <= month <= 12 and 1 <= day <= 31:
            name = _MONTHS[month - 1]
            forms += [
                f"{name} {day}",
                f"{name} {_ordinal(day)}",
                f"{day} {name}",
                f"{_ordinal(day)} of {name}",
                f"{name[:3]} {day}",
                f"{month:02d}/{day:02d}/{year}",
                f"{month}/{day}/{year}",
            ]
    return forms


def mentions(text: str, value: Any) -> bool:
    """Whether ``text`` (already casefolded) names ``value``.

    Strings compare case-insensitively as whole tokens, in the forms people write them
    (``_string_forms``: underscores as spaces, ISO dates in words); numbers in their usual
    written forms (``84`` matches ``$84``, ``84.00`` and ``84.0``; ``1234.5`` matches
    ``1,234.50``; 2 to 10 also in words). ``None`` and booleans are not words a proposal
    says: they count as mentioned.
    """
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        forms = _number_forms(value)
        if isinstance(value, int) and 2 <= value <= 10:
            forms.append(_COUNTS[value - 2])
    else:
        forms = _string_forms(str(value))
    for form in forms:
        if not form:
            continue
        pos = text.find(form)
        while pos != -1:
            if _bounded(text, pos, pos + len(form)):
                return True
            pos = text.find(form, pos + 1)
    return False


def leaves(value: Any) -> list[Any]:
    """Scalars of a value: lists flattened, maps by their values."""
    out: list[Any] = []
    for v in flatten(value):
        if isinstance(v, dict):
            for inner in v.values():
                out.extend(leaves(inner))
        else:
            out.append(v)
    return out


def entity_states(ctx: RunContext, i: int, call: ToolCall) -> tuple[list[Any], set[str]]:
    """What earlier lookups said of the entity this call changes: the results of successful
    lookup calls before step ``i`` whose arguments all appear, equal, among this call's
    (``get_reservation(id=X)`` describes what ``update_reservation(id=X, ...)`` changes),
    and the values of the arguments that selected them.

    "List the action details" asks for what the action changes: a segment that an update
    keeps, as the lookup returned it, is not a new detail. The identifying arguments
    themselves are never exempt: they are not read from the state, they select it.
    """
    args = call.arguments
    if not isinstance(args, dict):
        return [], set()
    out: list[Any] = []
    selectors: set[str] = set()
    for j, prior in ctx.tool_index:
        if j >= i:
            break
        if ctx.kinds[j] != "lookup" or not ok(prior) or prior.result is None:
            continue
        keys = prior.arguments
        if not isinstance(keys, dict) or not keys:
            continue
        if all(k in args and key_of(args[k]) == key_of(v) for k, v in keys.items()):
            out.append(prior.result)
            selectors.update(key_of(v) for v in keys.values())
    return out, selectors


_WORD = re.compile(r"[a-z]{3,}")
_PLAIN = frozenset(
    {
        "the", "and", "for", "with", "your", "you", "this", "that", "these", "those", "please",
        "item", "items", "order", "orders", "one", "two", "new", "old", "all", "any", "not",
        "but", "are", "was", "were", "has", "have", "its", "our",
    }
)  # fmt: skip
"""Words too common to tell one object of a reply from another."""


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _PLAIN}


def _records(value: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _records(v, out)
    elif isinstance(value, list):
        for v in value:
            _records(v, out)


def call_words(ctx: RunContext, i: int, call: ToolCall) -> frozenset[str]:
    """Words that name what call ``i`` acts on: the words of every record, in an earlier
    successful result, that holds one of the call's argument values (item ``8384507844``
    is the record whose ``name`` is "Desk Lamp"). Read only for replies whose clauses
    disagree; kept per run."""
    key = f"confirm.words.{i}"
    found: frozenset[str] | None = ctx.memo.get(key)
    if found is not None:
        return found
    wanted = {key_of(v) for v in leaves(call.arguments) if isinstance(v, (str, int)) and v != ""}
    words: set[str] = set()
    for scalars in _holding(ctx, i, wanted):
        for v in scalars:
            if isinstance(v, str) and key_of(v) not in wanted:
                words |= _words(v)
    found = ctx.memo[key] = frozenset(words)
    return found


def _holding(ctx: RunContext, i: int, wanted: set[str]) -> list[list[str | int]]:
    """The scalar fields of each record, in the results of successful calls before step
    ``i``, that holds one of the ``wanted`` values (compared by ``key_of``)."""
    out: list[list[str | int]] = []
    for j, prior in ctx.tool_index:
        if j >= i:
            break
        if not ok(prior) or prior.result is None:
            continue
        records: list[dict[str, Any]] = []
        _records(prior.result, records)
        for record in records:
            scalars = [v for v in record.values() if isinstance(v, (str, int))]
            if any(key_of(v) in wanted for v in scalars):
                out.append(scalars)
    return out


def aliases(ctx: RunContext, i: int, value: Any) -> frozenset[str]:
    """Other names of an identifier the call uses, read from the records of earlier
    successful results that hold it: a payment method ``credit_card_4421486`` is "the Visa
    ending 7447" because the profile's record holding that id has ``last_four: "7447"``.
    Only strings with a digit and at least 4 characters count (card endings, tracking and
    confirmation numbers): a brand or a product name alone does not tell one record from
    another."""
    if not isinstance(value, str) or len(value) < 4:
        return frozenset()
    key = f"confirm.aliases.{i}.{value}"
    found: frozenset[str] | None = ctx.memo.get(key)
    if found is not None:
        return found
    wanted = key_of(value)
    out = {
        v
        for scalars in _holding(ctx, i, {wanted})
        for v in scalars
        if isinstance(v, str)
        and len(v) >= 4
        and key_of(v) != wanted
        and any(c.isdigit() for c in v)
    }
    found = ctx.memo[key] = frozenset(out)
    return found


def names_call(clause: str, call: ToolCall, words: frozenset[str]) -> bool:
    """Whether a clause of the user's reply names the call: one of its argument values,
    or a word of a record that holds one (``call_words``)."""
    if words & _words(clause):
        return True
    text = clause.casefold()
    return any(
        mentions(text, v)
        for v in leaves(call.arguments)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and len(str(v)) >= 3
    )
