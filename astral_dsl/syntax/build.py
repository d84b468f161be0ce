"""Lark parse tree -> AST nodes with spans (the literals' values: syntax/literals.py)."""
from __future__ import annotations

from lark import Token, Transformer, v_args

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, span_at
from astral_dsl.syntax import ast
from astral_dsl.syntax.literals import (QUANTITY, invalid_number, number_value, trailing_point,
                                        unescape)


# ---- tree -> AST ----------------------------------------------------------------------------------
def _span(file: str, meta_or_tok) -> Span:
    m = meta_or_tok
    return span_at(file, m.line, m.column, m.end_line, m.end_column)


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
            trailing_point(items[0], name)
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
        m = QUANTITY.match(text)
        span = _span(self.f, tok)
        try:
            value = number_value(m.group("num"))
        except (ValueError, AttributeError) as exc:
            raise invalid_number(text, exc, span) from None
        unit = m.group("unit")
        ustart = tok.column + m.start("unit")
        unit_span = Span.at(self.f, tok.line, ustart, tok.line, ustart + len(unit))
        return ast.QuantityLit(value, unit, text, span, unit_span)

    def number(self, items):
        tok = items[0]
        try:
            value = number_value(str(tok))
        except ValueError as exc:
            raise invalid_number(str(tok), exc, _span(self.f, tok)) from None
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
