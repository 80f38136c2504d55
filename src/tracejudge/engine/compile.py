"""Compiling the untrusted pieces of a rules file: regexes, CEL expressions and paths.

Rule files come from users and may reach a shared collector, so everything here is
compiled once at load, bounded in size, and safe to run on any input:

- regexes run on RE2 (linear time, no backreferences), so no pattern can backtrack
  catastrophically over a long final answer;
- CEL has no unbounded loops or I/O; we also cap the nesting of comprehension macros so
  that an expression stays at most quadratic in the number of steps;
- paths into tool arguments/results are JMESPath (no loops, no I/O).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jmespath
import jmespath.exceptions
import re2

from tracejudge.engine.jpath import compile_ast

MAX_REGEX_CHARS = 1000
MAX_CEL_CHARS = 2000
CEL_ITERATION_BUDGET = 10_000
"""cel-cpp stops an evaluation after this many comprehension iterations in total (the
binding does not let us change it): the cost budget of every CEL predicate. Past it the
rule is ``F-EVIDENCE-CEL_ERROR`` saying so, never a pass."""
TYPICAL_RUN_STEPS = 20
"""About how many tool calls (or turns) a real agent run has: the dev sets' runs have 10
to 30 (tau-bench airline: about 24 turns)."""
MAX_CEL_MACRO_NESTING = int(math.log(CEL_ITERATION_BUDGET) / math.log(TYPICAL_RUN_STEPS))
"""The nesting limit, set by the cost budget: the deepest nesting whose cost on a run of
typical size (steps^depth) stays within the budget - 3 (20^3 = 8,000). Deeper would stop
at the budget on ordinary runs; shallower refuses predicates that fit."""
MAX_PATH_CHARS = 500

_CEL_MACROS = ("exists", "all", "exists_one", "map", "filter")


def _raw_spans(compiled: Any) -> Callable[[bytes, int], Any] | None:
    """``(raw, pos) -> spans`` on re2's C++ object (byte offsets), or None if unavailable."""
    try:
        regexp = compiled._regexp
        anchor = importlib.import_module("re2._re2").RE2.Anchor.UNANCHORED

        def spans(raw: bytes, pos: int) -> Any:
            return regexp.Match(anchor, raw, pos, len(raw))

        spans(b"", 0)
        return spans
    except Exception:
        return None


def _raw_matcher(compiled: Any) -> Callable[[str], bool] | None:
    """A yes/no matcher on re2's C++ object, skipping the wrapper's offset decoding.

    The public ``search`` builds Match objects and maps byte offsets back to characters
    (~4x the cost of the match itself on short texts). Checks that only need "does it
    match" use this; if the binding's internals ever change, we fall back to ``search``.
    """
    try:
        regexp = compiled._regexp
        anchor = importlib.import_module("re2._re2").RE2.Anchor.UNANCHORED
        null = (-1, -1)

        def test(text: str) -> bool:
            raw = text.encode("utf-8")
            return bool(regexp.Match(anchor, raw, 0, len(raw))[0] != null)

        test("")
        return test
    except Exception:
        return None


def _capture_group(compiled: Any) -> int:
    """The group named ``id``, else group 1, else the whole match (0)."""
    groups: int = compiled.groups
    group: int = compiled.groupindex.get("id", 1 if groups >= 1 else 0)
    return group


@dataclass(slots=True, frozen=True)
class Regex:
    """A compiled RE2 pattern and its source."""

    source: str
    compiled: Any
    raw_test: Callable[[str], bool] | None = None
    raw_spans: Callable[[bytes, int], Any] | None = None
    capture: int | None = None
    """The group ``captures`` returns, found once at compile time (the wrapper builds
    ``groupindex`` anew on every access, ~1.6 us); None: look it up."""

    def test(self, text: str) -> bool:
        """Whether ``text`` contains a match (the cheapest question to ask RE2)."""
        if self.raw_test is not None:
            return self.raw_test(text)
        return self.compiled.search(text) is not None

    def captures(self, text: str) -> list[str]:
        """For each match: the group named ``id``, else group 1, else the whole match.

        Reads RE2's byte spans directly (UTF-8 slices decode exactly), avoiding the
        wrapper's per-match objects.
        """
        spans_of = self.raw_spans
        group = self.capture if self.capture is not None else _capture_group(self.compiled)
        if spans_of is None:
            return [m.group(group) or "" for m in self.compiled.finditer(text)]
        raw = text.encode("utf-8")
        out: list[str] = []
        pos = 0
        while pos <= len(raw):
            spans = spans_of(raw, pos)
            start, end = spans[0]
            if start < 0:
                break
            g0, g1 = spans[group]
            if g0 >= 0:
                out.append(raw[g0:g1].decode("utf-8"))
            pos = end if end > start else end + 1
        return out

    def search(self, text: str) -> Any:
        """The first match in ``text`` or None."""
        return self.compiled.search(text)

    def finditer(self, text: str) -> Any:
        """All matches in ``text``."""
        return self.compiled.finditer(text)


@dataclass(slots=True, frozen=True)
class Path:
    """A compiled JMESPath expression into JSON values.

    ``fast`` is the same expression compiled to closures (``jpath``) when every node
    of it is supported; the jmespath interpreter runs otherwise.
    """

    source: str
    compiled: Any
    fast: Callable[[Any], Any] | None = None

    def search(self, value: Any) -> Any:
        """The value(s) at this path, None when absent."""
        if self.fast is not None:
            return self.fast(value)
        try:
            return self.compiled.search(value)
        except (jmespath.exceptions.JMESPathError, TypeError, ValueError):
            return None  # untrusted data of the wrong shape: the path finds nothing


_SCALARS = (str, int, float, bool, type(None))
MAX_CACHED_VALUES = 256


@dataclass(slots=True, frozen=True)
class CelExpr:
    """A compiled CEL program over the variables declared by the environment."""

    source: str
    program: Any
    _by_value: dict[tuple[type, Any], tuple[Any, str | None]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def evaluate_value(self, value: Any) -> tuple[Any, str | None]:
        """``evaluate`` with ``run`` null and ``value`` bound (state and value predicates).

        With ``run`` null the result depends on ``value`` alone (CEL has no clock or I/O),
        so answers for scalar values are remembered: the same status string on every run
        costs one dict lookup instead of an activation and an evaluation. The cache is
        bounded (cleared when full); ``(type, value)`` keys keep ``1``, ``1.0`` and
        ``true`` apart.
        """
        if not isinstance(value, _SCALARS):
            return self.evaluate(cel_activation(None, value))
        key = (type(value), value)
        hit = self._by_value.get(key)
        if hit is None:
            hit = self.evaluate(cel_activation(None, value))
            if len(self._by_value) >= MAX_CACHED_VALUES:
                self._by_value.clear()
            self._by_value[key] = hit
        return hit

    def evaluate(self, activation: Any) -> tuple[Any, str | None]:
        """``(value, None)`` or ``(None, error)``; CEL errors are values, never raised."""
        try:
            out = self.program.eval(activation)
        except Exception as exc:  # the binding raises on conversion problems and budgets
            return None, explain_cel_error(f"{type(exc).__name__}: {exc}")
        value = out.value()
        if value is True or value is False:
            return value, None  # the common case, decided without asking for the type
        if "ERROR" in str(out.type()):
            return None, explain_cel_error(str(value))
        return value, None


def explain_cel_error(error: str) -> str:
    """cel-cpp's error text, with its iteration budget said in the rule author's terms."""
    if "Iteration budget exceeded" in error:
        return (
            f"evaluation stopped at CEL's budget of {CEL_ITERATION_BUDGET:,} comprehension "
            "iterations (nested macros over this run's lists cost their sizes multiplied); "
            "filter the lists first or avoid nesting"
        )
    return error


class Compiler:
    """Compiles rule-file pieces, collecting every error with its path instead of raising."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, path: str, message: str) -> None:
        """Record one problem at ``path``."""
        self.errors.append(f"{path}: {message}")

    def regex(self, path: str, pattern: str, limit: int = MAX_REGEX_CHARS) -> Regex | None:
        """Compile ``pattern`` with RE2 (linear time); None and an error when invalid."""
        if len(pattern) > limit:
            self.error(path, f"regex longer than {limit} characters")
            return None
        try:
            compiled = _re2_compile(pattern)
            return Regex(
                pattern,
                compiled,
                _raw_matcher(_re2_compile(pattern, never_capture=True)),
                _raw_spans(compiled),
                _capture_group(compiled),
            )
        except Exception as exc:
            msg = exc.args[0] if exc.args else exc
            if isinstance(msg, bytes):
                msg = msg.decode("utf-8", "replace")
            self.error(path, f"bad regex {pattern!r}: {msg}")
            return None

    def path(self, path: str, expression: str) -> Path | None:
        """Compile a JMESPath expression; None and an error when invalid."""
        if len(expression) > MAX_PATH_CHARS:
            self.error(path, f"path longer than {MAX_PATH_CHARS} characters")
            return None
        try:
            compiled = jmespath.compile(expression)
            return Path(expression, compiled, compile_ast(dict(compiled.parsed)))
        except jmespath.exceptions.JMESPathError as exc:
            self.error(path, f"bad path {expression!r}: {str(exc).splitlines()[0]}")
            return None

    def cel(self, path: str, expression: str) -> CelExpr | None:
        """Compile a CEL expression over ``run`` and ``value`` (both dynamically typed)."""
        if len(expression) > MAX_CEL_CHARS:
            self.error(path, f"CEL expression longer than {MAX_CEL_CHARS} characters")
            return None
        depth = cel_macro_nesting(expression)
        if depth > MAX_CEL_MACRO_NESTING:
            self.error(
                path,
                f"CEL comprehensions nested {depth} deep (at most {MAX_CEL_MACRO_NESTING}): "
                f"cost grows with steps^depth, and {TYPICAL_RUN_STEPS}^{depth} passes the "
                f"budget of {CEL_ITERATION_BUDGET:,} iterations on a run of ordinary size; "
                "filter the lists first, or pair them by index with indices()",
            )
            return None
        env = _cel_env()
        if env is None:
            self.error(
                path,
                "CEL needs the cel-expr-python package, a dependency of tracejudge that is "
                "missing here: pip install 'cel-expr-python>=0.1.3'",
            )
            return None
        try:
            return CelExpr(expression, env.compile(expression))
        except Exception as exc:
            first = str(exc).split(" | ")[0].strip().replace("\n", " ")
            self.error(path, f"bad CEL {expression!r}: {first}")
            return None


_STRING_PREFIXES = frozenset(("r", "b", "rb", "br"))


def _skip_string(expression: str, i: int, raw: bool) -> int:
    """The index just past the CEL string literal whose opening quote is at ``i``.

    Triple-quoted literals may span lines; single-quoted ones end at a newline (CEL does
    not allow one there, so the expression fails to compile anyway, and the scan goes on
    reading code rather than hiding it). Outside raw literals a backslash escapes the
    next character.
    """
    n = len(expression)
    quote = expression[i]
    delim = quote * 3 if expression.startswith(quote * 3, i) else quote
    j = i + len(delim)
    while j < n:
        ch = expression[j]
        if ch == "\\" and not raw:
            j += 2
            continue
        if expression.startswith(delim, j):
            return j + len(delim)
        if ch in "\r\n" and len(delim) == 1:
            return j
        j += 1
    return n


def cel_tokens(expression: str) -> list[str]:
    """The significant tokens of a CEL expression: identifiers and punctuation.

    Whitespace and ``//`` comments are dropped; string and bytes literals (``'..'``,
    ``"..."``, triple-quoted, ``r``/``b`` prefixes) become ``"<str>"`` and numbers
    ``"<num>"``, so nothing inside a literal can look like code and no spacing can hide
    code. Not a validator: CEL itself rejects what is not an expression.
    """
    out: list[str] = []
    i, n = 0, len(expression)
    while i < n:
        ch = expression[i]
        if ch.isspace():
            i += 1
        elif expression.startswith("//", i):
            end = expression.find("\n", i)
            i = n if end == -1 else end + 1
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (expression[j].isalnum() or expression[j] == "_"):
                j += 1
            word = expression[i:j]
            if j < n and expression[j] in "'\"" and word.lower() in _STRING_PREFIXES:
                i = _skip_string(expression, j, "r" in word.lower())
                out.append("<str>")
            else:
                out.append(word)
                i = j
        elif ch in "'\"":
            i = _skip_string(expression, i, False)
            out.append("<str>")
        elif ch == "`":  # a quoted identifier (`field-name`)
            end = expression.find("`", i + 1)
            end = n if end == -1 else end
            out.append(expression[i + 1 : end])
            i = end + 1
        elif ch.isdigit():
            while i < n and expression[i].isdigit():
                i += 1
            out.append("<num>")
        else:
            out.append(ch)
            i += 1
    return out


def cel_macro_nesting(expression: str) -> int:
    """How deeply comprehension macros (``exists``, ``all``, ``map``...) nest in ``expression``.

    Counted on tokens (``cel_tokens``), so spacing, line breaks and comments between the
    receiver's ``.``, the macro name and its ``(`` cannot hide a macro, and text inside
    string literals is never mistaken for one. A call that only looks like a macro
    (``x.map(f)``) counts too: over-counting refuses an expression, under-counting would
    let its cost grow with steps^depth.
    """
    tokens = cel_tokens(expression)
    stack: list[bool] = []  # one entry per open paren: is it a macro call?
    depth = best = 0
    for k, tok in enumerate(tokens):
        if tok == "(":
            is_macro = k >= 2 and tokens[k - 1] in _CEL_MACROS and tokens[k - 2] == "."
            stack.append(is_macro)
            if is_macro:
                depth += 1
                best = max(best, depth)
        elif tok == ")" and stack and stack.pop():
            depth -= 1
    return best


def _re2_compile(pattern: str, never_capture: bool = False) -> Any:
    """``never_capture``: the yes/no twin ``Regex.test`` uses. The binding always asks RE2
    for every group's span, which on a match makes RE2 rerun the match for submatches
    (~3.4 -> ~1.3 us on a 170-character answer); without groups the DFA answer is enough."""
    options = re2.Options()
    options.log_errors = False
    options.never_capture = never_capture
    return re2.compile(pattern, options)


CEL_VARIABLES = ("run", "value")
"""``run``: the dict view of the run; ``value``: what a check hands over (an entity, args)."""


@functools.cache
def _cel_env() -> Any:
    try:
        from cel_expr_python import cel  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - a broken install (it is a dependency)
        return None
    from cel_expr_python.ext import ext_bindings  # type: ignore[import-untyped]

    from tracejudge.engine.celfuncs import declarations

    return cel.NewEnv(
        variables=dict.fromkeys(CEL_VARIABLES, cel.Type.DYN),
        functions=declarations(),
        extensions=[ext_bindings.ExtBindings()],  # cel.bind(name, value, expr): no loop
    )


def cel_activation(run: Any, value: Any = None) -> Any:
    """Bind ``run`` (and ``value``) once so several expressions can evaluate against them."""
    return _cel_env().Activation({"run": run, "value": value})
