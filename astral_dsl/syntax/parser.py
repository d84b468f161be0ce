"""Parse .astral text into the AST (Lark LALR, contextual lexer)."""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import List, Optional, Tuple

import lark
from lark import Token, Transformer, v_args
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken, VisitError)

from astral_dsl import resources
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.syntax import ast
from astral_dsl.syntax.source import Source

# Human names for grammar terminals, for "expected ..." messages.
_TERMINALS = {
    "NAME": "a name", "NUMBER": "a number", "QUANTITY": "a quantity such as `45 kW`",
    "STRING": "a string", "UNIT_SPEC": "a unit", "COMP_OP": "a comparison", "ADD_OP": "`+` or `-`",
    "MUL_OP": "`*` or `/`", "OBJECTIVE": "`minimize` or `maximize`", "LBRACE": "`{`",
    "RBRACE": "`}`", "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`",
    "EQUAL": "`=`", "COLON": "`:`", "DOT": "`.`", "SEMICOLON": "`;`", "$END": "the end of the file",
    "QMARK": "`?`", "CIRCUMFLEX": "`^`", "MINUS": "`-`", "STAR": "`*`",
}


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = resources.grammar_text()
    return lark.Lark(grammar, parser="lalr", lexer="contextual", start=["start", "expr_only"],
                     propagate_positions=True, maybe_placeholders=True, cache=_cache_path())


def _cache_path():
    import hashlib
    import os
    import tempfile

    digest = hashlib.sha256(resources.grammar_text().encode() + lark.__version__.encode()).hexdigest()
    path = os.path.join(tempfile.gettempdir(), f"astral_dsl_grammar_{digest[:16]}.lark_cache")
    return path


def parse(source: Source) -> ast.Module:
    """Parse a whole file. Raises DiagnosticError on a syntax error."""
    return _build(source.name, _run(source, "start"))


_TOP_LEVEL = re.compile(r"^(?:(?:import|param|let|check)\b|[A-Za-z_]\w*[ \t]+[A-Za-z_]\w*[ \t]*[({=])")
MAX_SYNTAX_ERRORS = 20


def parse_all(source: Source) -> Tuple[Optional[ast.Module], List[Diagnostic]]:
    """Parse a file and report every independent syntax error: after an error, parsing starts
    again at the next top-level statement (a line that starts at column 1 with a declaration,
    `import`, `param`, `let` or `check`); earlier lines are blanked so positions stay true."""
    try:
        return parse(source), []
    except DiagnosticError as exc:
        first = exc.diagnostic
    diagnostics = [first]
    lines = source.text.split("\n")
    last = _line_of(first)
    while len(diagnostics) < MAX_SYNTAX_ERRORS:
        restart = next((i for i in range(last, len(lines)) if _TOP_LEVEL.match(lines[i])), None)
        if restart is None:
            break
        rest = Source(source.name, "\n" * restart + "\n".join(lines[restart:]))
        try:
            parse(rest)
            break
        except DiagnosticError as again:
            line = _line_of(again.diagnostic)
            if line <= last:
                break
            diagnostics.append(again.diagnostic)
            last = line
    return None, diagnostics


def _line_of(d: Diagnostic) -> int:
    return d.span.start.line if d.span is not None else 1 << 30


def parse_expression(source: Source) -> ast.Expr:
    return _build(source.name, _run(source, "expr_only"))


def _build(name: str, tree):
    try:
        return _Builder(name).transform(tree)
    except VisitError as exc:          # a diagnostic raised while building a node
        if isinstance(exc.orig_exc, DiagnosticError):
            raise exc.orig_exc from None
        raise


def _run(source: Source, start: str):
    try:
        return _parser().parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(_syntax_diagnostic(source, exc)) from None


def _expected(names) -> str:
    readable = sorted({_TERMINALS.get(n, f"`{n.lower()}`" if n.isupper() else f"`{n}`")
                       for n in names if not n.startswith("_") and n != "$END"} |
                      ({_TERMINALS["$END"]} if "$END" in names else set()))
    if not readable:
        return ""
    if len(readable) > 6:
        return "expected " + ", ".join(readable[:6]) + " or another token"
    return "expected " + (", ".join(readable[:-1]) + " or " + readable[-1]
                          if len(readable) > 1 else readable[0])


def _syntax_diagnostic(source: Source, exc: UnexpectedInput) -> Diagnostic:
    name = source.name
    if isinstance(exc, (UnexpectedCharacters, UnexpectedToken)) and getattr(exc, "line", None) \
            and source.line(exc.line)[exc.column - 1:exc.column + 1] == "/*":
        return Diagnostic("E104", Severity.ERROR, "this `/*` comment is never closed",
                          Span.at(name, exc.line, exc.column, exc.line, exc.column + 2),
                          "end it with `*/`")
    if isinstance(exc, UnexpectedCharacters):
        ch = source.text[exc.pos_in_stream] if exc.pos_in_stream < len(source.text) else ""
        span = Span.at(name, exc.line, exc.column)
        hint = None
        if ch == "'":
            hint = "strings use double quotes: \"...\""
        elif ch == "#":
            hint = "comments start with `//`"
        elif ch == "\"":
            hint = "a string must end on the line it starts"
        code = "E107" if ch == "\"" else "E104"
        shown = repr(ch)[1:-1] if ch.isprintable() else f"U+{ord(ch):04X}" if ch else "end of file"
        return Diagnostic(code, Severity.ERROR, f"unexpected character `{shown}`", span, hint)
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        tok = exc.token
        end_col = (tok.end_column if tok.end_line == tok.line and tok.end_column else tok.column + 1)
        span = Span.at(name, tok.line, tok.column, tok.line, max(end_col, tok.column + 1))
        names = set(exc.expected)
        if _depth(source.text[:tok.start_pos or 0]) > 0:     # inside a body: no top-level forms
            names -= {"IMPORT", "PARAM"}
        expected = _expected(names)
        hint = _unit_pitfall(source, tok) or _hint_for(tok, exc.expected, source)
        msg = f"unexpected {_describe(tok)}" + (f"; {expected}" if expected else "")
        return Diagnostic("E103", Severity.ERROR, msg, span, hint)
    # end of file
    lines = source.text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    expected = _expected(getattr(exc, "expected", []) or [])
    return Diagnostic("E105", Severity.ERROR,
                      "unexpected end of file" + (f"; {expected}" if expected else ""),
                      Span.at(name, line, col), "a `{`, `(` or `[` may be missing its closing pair")


def _depth(text: str) -> int:
    """Brace depth at the end of `text`, ignoring comments and strings (roughly)."""
    text = re.sub(r'"([^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', "", text, flags=re.S)
    return text.count("{") - text.count("}")


def _describe(tok: Token) -> str:
    if tok.type == "NAME":
        return f"name `{tok}`"
    if tok.type in ("NUMBER", "QUANTITY"):
        return f"{'number' if tok.type == 'NUMBER' else 'quantity'} `{tok}`"
    return f"`{tok}`"


def _hint_for(tok: Token, expected, source: Source | None = None) -> str | None:
    if str(tok) != "=":
        return None
    before = source.line(tok.line)[:tok.column - 1] if source is not None else ""
    if "COMP_OP" in expected or re.search(r"\b(check|if|and|or|not)\b", before):
        return "`=` sets a field; compare with `==`"
    return None


_TRAILING_QUANTITY = re.compile(r"(\d[\d_.]*(?:[eE][+-]?\d+)?)[ \t]+([A-Za-z_]\w*)[ \t]*$")


def _unit_pitfall(source: Source, tok: Token) -> str | None:
    """`a = 4 b = 3` reads `4 b` as four bits: say so when an `=` follows such a quantity."""
    if str(tok) != "=":
        return None
    before = source.line(tok.line)[:tok.column - 1]
    m = _TRAILING_QUANTITY.search(before)
    if not m:
        return None
    head, unit = before[:m.start(2)].rstrip(), m.group(2)
    return (f"`{m.group(1)} {unit}` was read as a quantity with the unit `{unit}`; "
            f"separate statements on one line with `,` (as in `{head}, {unit} = ...`)")


# ---- tree -> AST ----------------------------------------------------------------------------------
def _span(file: str, meta_or_tok) -> Span:
    m = meta_or_tok
    return Span.at(file, m.line, m.column, m.end_line, m.end_column)


_QUANTITY = re.compile(r"^(?P<num>(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)[ \t]*"
                       r"(?P<unit>(?:[A-Za-z\u00b0\u00b5%]).*)$")


def _number(text: str) -> float:
    value = float(text.replace("_", ""))
    if not math.isfinite(value):
        raise ValueError(text)
    return value


class _Builder(Transformer):
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
        name, type_, default = items
        return ast.Param(self._id(name), type_, default, self._s(meta))

    def type_ann(self, toks):
        return self._id(toks[0])

    # -- declarations and statements
    @v_args(meta=True)
    def decl(self, meta, items):
        kind, name, *rest = items
        params = base = body = None
        for item in rest:
            if isinstance(item, _Base):
                base = item.expr
            elif isinstance(item, list):
                params = tuple(item)
            elif isinstance(item, tuple):
                body = item
        return ast.Decl(self._id(kind), self._id(name), params, base, body, self._s(meta))

    def params(self, items):
        return [p for p in items if p is not None]

    @v_args(meta=True)
    def param(self, meta, items):
        name, type_, default = items
        return ast.ParamDef(self._id(name), type_, default, self._s(meta))

    def base(self, items):
        return _Base(items[0])

    def body(self, items):
        return tuple(items)

    @v_args(meta=True)
    def field(self, meta, items):
        return ast.Field(self._id(items[0]), items[1], self._s(meta))

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
        return ast.Attr(items[0], self._id(items[1]), self._s(meta))

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
        except (ValueError, AttributeError):
            raise DiagnosticError(Diagnostic("E106", Severity.ERROR, f"invalid number `{text}`",
                                             span)) from None
        unit = m.group("unit")
        ustart = tok.column + m.start("unit")
        unit_span = Span.at(self.f, tok.line, ustart, tok.line, ustart + len(unit))
        return ast.QuantityLit(value, unit, text, span, unit_span)

    def number(self, items):
        tok = items[0]
        try:
            value = _number(str(tok))
        except ValueError:
            raise DiagnosticError(Diagnostic("E106", Severity.ERROR, f"invalid number `{tok}`",
                                             _span(self.f, tok))) from None
        return ast.Number(value, str(tok), _span(self.f, tok))

    def string_tok(self, tok) -> ast.String:
        raw = str(tok)[1:-1]
        try:
            value = _unescape(raw)
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


def _unescape(raw: str) -> str:
    out = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            nxt = raw[i + 1] if i + 1 < len(raw) else ""
            if nxt not in _ESCAPES:
                raise ValueError(f"unknown escape `\\{nxt}`")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
