"""Lark parse tree -> AST nodes with spans."""
from __future__ import annotations

import math
import re
import unicodedata

from lark import Token, Transformer, v_args

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, excerpt, span_at
from astral_dsl.syntax import ast


# ---- tree -> AST ----------------------------------------------------------------------------------
def _span(file: str, meta_or_tok) -> Span:
    m = meta_or_tok
    return span_at(file, m.line, m.column, m.end_line, m.end_column)


_QUANTITY = re.compile(r"^(?P<num>(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)[ \t]*"
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


def _number(text: str) -> float:
    """The value of a number literal; ValueError (TOO_LARGE, TOO_SMALL, Misplaced: _invalid's
    E106) for one a float cannot hold: too large (`1e999`), or too small and not zero
    (`1e-999`, which would silently read as 0); or with a `_` out of place."""
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


def _invalid(text: str, exc: Exception, span: Span) -> DiagnosticError:
    """E106 for a literal `_number` refused (or the grammar's number that float() cannot
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


def _trailing_point(number: ast.Number, name: ast.Ident) -> None:
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


class Builder(Transformer):
    def __init__(self, file: str):
        super().__init__(visit_tokens=False)
        self.f = file

    def _s(self, meta):
        return _span(self.f, meta)

    def _id(self, tok: Token) -> ast.Ident:
        return ast.Ident(str(tok), _span(self.f, tok))

    # -- top level
    @v_args(meta=True)
    def start(self, meta, items):
        if meta.empty:
            span = Span.at(self.f, 1, 1)
        else:
            span = self._s(meta)
        return ast.Module(self.f, tuple(items), span)

    def expr_only(self, items):
        return items[0]

    @v_args(meta=True)
    def import_stmt(self, meta, items):
        path, names, alias = items
        return ast.Import(path, names, alias, self._s(meta))

    def module_path(self, toks):
        return tuple(self._id(t) for t in toks)

    def import_names(self, toks):
        return tuple(self._id(t) for t in toks if t is not None)

    def import_alias(self, toks):
        return self._id(toks[0])

    @v_args(meta=True)
    def param_stmt(self, meta, items):
        name, type_, default, assumed = items
        return ast.Param(self._id(name), type_, default, self._s(meta), assumed)

    def type_ann(self, toks):
        return self._id(toks[0])

    # -- declarations and statements
    @v_args(meta=True)
    def decl(self, meta, items):
        kind, name, *rest = items
        params = base = body = None
        renamed: tuple = ()
        for item in rest:
            if isinstance(item, _Base):
                base = item.expr
            elif isinstance(item, list):
                params = tuple(p for p in item if isinstance(p, ast.ParamDef))
                renamed = tuple(p for p in item if isinstance(p, ast.Renamed))
            elif isinstance(item, tuple):
                body = item
        return ast.Decl(self._id(kind), self._id(name), params, base, body, self._s(meta),
                        renamed)

    def params(self, items):
        return [p for p in items if p is not None]

    @v_args(meta=True)
    def renamed_param(self, meta, items):
        return ast.Renamed(self._id(items[0]), self._id(items[1]), self._s(meta))

    @v_args(meta=True)
    def param(self, meta, items):
        name, type_, default, assumed = items
        return ast.ParamDef(self._id(name), type_, default, self._s(meta), assumed)

    def base(self, items):
        return _Base(items[0])

    def body(self, items):
        return tuple(items)

    @v_args(meta=True)
    def field(self, meta, items):
        return ast.Field(self._id(items[0]), items[1], self._s(meta), items[2], items[3])

    @v_args(meta=True)
    def assumption(self, meta, items):
        reason = items[0]
        return ast.Assumption(self.string_tok(reason) if reason is not None else None,
                              self._s(meta))

    @v_args(meta=True)
    def record(self, meta, items):
        return ast.Record(self._id(items[0]), items[1], self._s(meta))

    @v_args(meta=True)
    def let_stmt(self, meta, items):
        return ast.Let(self._id(items[0]), items[1], self._s(meta))

    @v_args(meta=True)
    def check_stmt(self, meta, items):
        cond, other = items
        severity = message = None
        if other is not None:
            severity, message = other
        return ast.Check(cond, severity, message, self._s(meta))

    def check_else(self, items):
        sev, msg = items
        return (self._id(sev), self.string_tok(msg) if msg is not None else None)

    @v_args(meta=True)
    def fail_stmt(self, meta, items):
        first, second = items
        if second is None:
            return ast.Fail(first, self._s(meta))
        return ast.Fail(second, self._s(meta), first)

    @v_args(meta=True)
    def set_stmt(self, meta, items):
        return ast.SetStmt(items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def allow_stmt(self, meta, items):
        code, reason = items
        return ast.Allow(self._id(code), self.string_tok(reason) if reason is not None else None,
                         self._s(meta))

    @v_args(meta=True)
    def objective(self, meta, items):
        return ast.Objective(str(items[0]), items[-1], self._s(meta))

    # -- expressions
    @v_args(meta=True)
    def if_expr(self, meta, items):
        return ast.If(items[0], items[1], items[2], self._s(meta))

    @v_args(meta=True)
    def or_op(self, meta, items):
        return ast.Logic("or", items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def and_op(self, meta, items):
        return ast.Logic("and", items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def not_op(self, meta, items):
        return ast.Not(items[0], self._s(meta))

    @v_args(meta=True)
    def compare_op(self, meta, items):
        return ast.Compare(str(items[1]), items[0], items[2], self._s(meta))

    @v_args(meta=True)
    def replicate(self, meta, items):
        return ast.Replicate(items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def convert(self, meta, items):
        operand, unit = items
        return ast.Convert(operand, str(unit), _span(self.f, unit), self._s(meta))

    @v_args(meta=True)
    def range_op(self, meta, items):
        return ast.Range(items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def range_open(self, meta, items):
        return ast.Range(items[0], items[1], self._s(meta), False)

    @v_args(meta=True)
    def binary(self, meta, items):
        return ast.Binary(str(items[1]), items[0], items[2], self._s(meta))

    @v_args(meta=True)
    def neg(self, meta, items):
        return ast.Neg(items[0], self._s(meta))

    @v_args(meta=True)
    def pow_op(self, meta, items):
        return ast.Binary("^", items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def attr(self, meta, items):
        name = self._id(items[1])
        if isinstance(items[0], ast.Number):
            _trailing_point(items[0], name)
        return ast.Attr(items[0], name, self._s(meta))

    @v_args(meta=True)
    def index(self, meta, items):
        return ast.Index(items[0], items[1], self._s(meta))

    @v_args(meta=True)
    def wildcard(self, meta, items):
        return ast.Wildcard(self._s(meta))

    @v_args(meta=True)
    def call(self, meta, items):
        func, *args = items
        return ast.Call(func, tuple(a for a in args if a is not None), self._s(meta))

    @v_args(meta=True)
    def pos_arg(self, meta, items):
        return ast.Arg(None, items[0], self._s(meta))

    @v_args(meta=True)
    def kw_arg(self, meta, items):
        return ast.Arg(self._id(items[0]), items[1], self._s(meta))

    def quantity(self, items):
        tok = items[0]
        text = str(tok)
        m = _QUANTITY.match(text)
        span = _span(self.f, tok)
        try:
            value = _number(m.group("num"))
        except (ValueError, AttributeError) as exc:
            raise _invalid(text, exc, span) from None
        unit = m.group("unit")
        ustart = tok.column + m.start("unit")
        unit_span = Span.at(self.f, tok.line, ustart, tok.line, ustart + len(unit))
        return ast.QuantityLit(value, unit, text, span, unit_span)

    def number(self, items):
        tok = items[0]
        try:
            value = _number(str(tok))
        except ValueError as exc:
            raise _invalid(str(tok), exc, _span(self.f, tok)) from None
        return ast.Number(value, str(tok), _span(self.f, tok))

    def string_tok(self, tok) -> ast.String:
        raw = str(tok)[1:-1]
        try:
            value = unescape(raw)
        except ValueError as exc:
            raise DiagnosticError(Diagnostic("E107", Severity.ERROR, f"invalid string: {exc}",
                                             _span(self.f, tok),
                                             "valid escapes: \\\\ \\\" \\n \\t")) from None
        return ast.String(value, _span(self.f, tok))

    def string(self, items):
        return self.string_tok(items[0])

    @v_args(meta=True)
    def true(self, meta, items):
        return ast.Bool(True, self._s(meta))

    @v_args(meta=True)
    def false(self, meta, items):
        return ast.Bool(False, self._s(meta))

    def paren(self, items):
        return items[0]             # `(e)` is `e` (a node of the tree only to count its depth)

    def name(self, items):
        tok = items[0]
        return ast.Name(str(tok), _span(self.f, tok))

    @v_args(meta=True)
    def unknown(self, meta, items):
        return ast.Unknown(items[0], self._s(meta))

    @v_args(meta=True)
    def list(self, meta, items):
        return ast.ListExpr(tuple(i for i in items if i is not None), self._s(meta))

    @v_args(meta=True)
    def comprehension(self, meta, items):
        return ast.Comprehension(items[0], self._id(items[1]), items[2], self._s(meta))


class _Base:
    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


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
