"""The literals of the language as the parser reads them: a number's value (E106 for one a
float cannot hold, with a `_` out of place or a digit other than 0-9), a number written with a
point and no digit after it (E106), and a string's escapes (syntax/build.py's Builder makes the
AST nodes of them; docs/language.md, 2.4)."""
from __future__ import annotations

import math
import re
import unicodedata

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, excerpt
from astral_dsl.syntax import ast


QUANTITY = re.compile(r"^(?P<num>(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)[ \t]*"
                       r"(?P<unit>(?:[A-Za-z\u00b0\u00b5%]).*)$")


TOO_SMALL = "is too small to represent: it would be read as 0"
SMALL_HINT = ("the smallest number above zero is about 5e-324: write it in a smaller unit "
              "(`1 pW` rather than `1e-12 W`), or write 0")
TOO_LARGE = "is too large to represent"
LARGE_HINT = "the largest number is about 1.8e308: write it in a larger unit, or smaller"


class Misplaced(ValueError):
    """A number literal with a `_` that is not between two digits (`1__000`, `1_000_`,
    `1_.5`): the grammar's number takes any run of digits and `_`, the language only a single
    `_` between two digits (docs/language.md, 2.4). `fixed`: the number as it should read."""

    def __init__(self, text: str):
        super().__init__("has a `_` that is not between two digits")
        self.text, self.fixed = text, re.sub(r"_(?!\d)", "", re.sub(r"_+", "_", text))


class NotAscii(ValueError):
    """A number literal with a digit other than 0-9: the grammar's `\\d` (and float()) take
    any Unicode decimal digit, so `1٠0 kW`, with an ARABIC-INDIC DIGIT ZERO that looks like a
    point, was 100 kW where a reader sees 1.0 kW (docs/language.md, 2.4: digits are 0-9)."""

    def __init__(self, text: str):
        digit = next(c for c in text if not c.isascii())
        super().__init__(f"has `{digit}` (U+{ord(digit):04X} "
                         f"{unicodedata.name(digit, 'a digit')}), a digit other than 0-9")
        self.hint = (f"write the number with the digits 0-9 (`{digit}` would be read as "
                     f"{unicodedata.digit(digit, '?')})")


def number_value(text: str) -> float:
    """The value of a number literal; ValueError (TOO_LARGE, TOO_SMALL, Misplaced:
    invalid_number's E106) for one a float cannot hold: too large (`1e999`), or too small and
    not zero (`1e-999`, which would silently read as 0); or with a `_` out of place."""
    if not text.isascii():
        raise NotAscii(text)
    if re.search(r"_(?!\d)", text):
        raise Misplaced(text)
    digits = text.replace("_", "")
    value = float(digits)
    if not math.isfinite(value):
        raise ValueError(TOO_LARGE)
    if value == 0 and any(c in "123456789" for c in re.split("[eE]", digits)[0]):
        raise ValueError(TOO_SMALL)      # 1e-400: below the smallest float, silently 0
    return value


def invalid_number(text: str, exc: Exception, span: Span) -> DiagnosticError:
    """E106 for a literal `number_value` refused (or the grammar's number that float() cannot
    read): why, with a hint, when it is out of a float's range or has a `_` out of place."""
    why = str(exc) if str(exc) in (TOO_SMALL, TOO_LARGE) or isinstance(
        exc, (Misplaced, NotAscii)) else None
    hint = {TOO_SMALL: SMALL_HINT, TOO_LARGE: LARGE_HINT}.get(why)
    if isinstance(exc, NotAscii):
        hint = exc.hint
    if isinstance(exc, Misplaced):
        fixed = text.replace(exc.text, exc.fixed, 1)
        hint = f"a `_` goes between two digits (`65_536`): write `{excerpt(fixed)}`"
    message = f"number `{excerpt(text)}` {why}" if why else f"invalid number `{excerpt(text)}`"
    return DiagnosticError(Diagnostic("E106", Severity.ERROR, message, span, hint))


def trailing_point(number: ast.Number, name: ast.Ident) -> None:
    """E106 for a number written with a point and no digit after it: `5.e3` (the number 5 and
    a member `e3`), or `5.` at the end of a line, which took the next line's first word as a
    member (`let b` of the next statement: `b = 2` was then E210 too). `5 .x`, a member of a
    number written apart, is left to the evaluator (E209)."""
    end = number.span.end
    if not re.fullmatch(r"[\d_]+", number.text) or not (
            name.span.start.line > end.line or name.span.start.column == end.column + 1):
        return
    exponent = re.fullmatch(r"[eE]\d+", name.name) and name.span.start.line == end.line
    written = f"{number.text}.{name.name}" if exponent else f"{number.text}."
    fixed = f"`{number.text}{name.name}` or `{number.text}.0{name.name}`" if exponent else \
        f"`{number.text}` or `{number.text}.0`"
    last = (name.span.end.line, name.span.end.column) if exponent else (end.line, end.column + 1)
    raise DiagnosticError(Diagnostic(
        "E106", Severity.ERROR, f"number `{written}` has no digit after its point",
        Span.at(number.span.file, number.span.start.line, number.span.start.column, *last),
        f"write {fixed}"))


_ESCAPES = {"\\": "\\", "\"": "\"", "n": "\n", "t": "\t"}
# a backslash and what follows it, left to right; compiled by `re` on first use (for start-up)
_ESCAPE = r"(?s)\\(.?)"


def unescape(raw: str) -> str:
    """The string literal's text with its escapes replaced; ValueError at the first unknown
    one (a lone backslash at the end included). re's scan in C, not a Python loop a character
    (a 250 kB literal took a quarter of a second)."""
    return re.sub(_ESCAPE, _escaped, raw) if "\\" in raw else raw


def _escaped(m) -> str:
    nxt = m.group(1)
    if nxt not in _ESCAPES:
        raise ValueError(f"unknown escape `\\{nxt}`")
    return _ESCAPES[nxt]
