"""The abstract syntax tree. Every node carries its span (1-based, end exclusive)."""
from __future__ import annotations

from typing import Optional, Tuple, Union

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Span

# no weak references or match arguments, which nothing uses: the ~40 node classes are built at
# every start of `astral` (records.py: their repr is shared too)
_node = records.frozen(eq=False, weakref_slot=False, match_args=False)


@_node
class Ident:
    name: str
    span: Span


# ---- expressions --------------------------------------------------------------------------------
@_node
class Number:
    value: float
    text: str
    span: Span


@_node
class QuantityLit:
    value: float
    unit: str
    text: str
    span: Span
    unit_span: Span


@_node
class String:
    value: str
    span: Span


@_node
class Bool:
    value: bool
    span: Span


@_node
class Name:
    name: str
    span: Span


@_node
class Attr:
    obj: "Expr"
    name: Ident
    span: Span


@_node
class Index:
    obj: "Expr"
    selector: "Expr"
    span: Span


@_node
class Wildcard:
    span: Span


@_node
class Arg:
    name: Optional[Ident]
    value: "Expr"
    span: Span


@_node
class Call:
    func: "Expr"
    args: Tuple[Arg, ...]
    span: Span


@_node
class Binary:
    op: str          # + - * / ^
    left: "Expr"
    right: "Expr"
    span: Span


@_node
class Compare:
    op: str          # == != < <= > >=
    left: "Expr"
    right: "Expr"
    span: Span


@_node
class Logic:
    op: str          # and / or
    left: "Expr"
    right: "Expr"
    span: Span


@_node
class Not:
    operand: "Expr"
    span: Span


@_node
class Neg:
    operand: "Expr"
    span: Span


@_node
class If:
    cond: "Expr"
    then: "Expr"
    other: "Expr"
    span: Span


@_node
class Replicate:
    count: "Expr"
    item: "Expr"
    span: Span


@_node
class Range:
    start: "Expr"
    stop: "Expr"
    span: Span
    inclusive: bool = True      # `a..b` holds b; `a..<b` stops before it


@_node
class ListExpr:
    items: Tuple["Expr", ...]
    span: Span


@_node
class Comprehension:
    element: "Expr"
    var: Ident
    iterable: "Expr"
    span: Span


@_node
class Unknown:
    domain: Optional["Expr"]
    span: Span


@_node
class Convert:
    operand: "Expr"
    unit: str
    unit_span: Span
    span: Span


Expr = Union[Number, QuantityLit, String, Bool, Name, Attr, Index, Wildcard, Call, Binary, Compare,
             Logic, Not, Neg, If, Replicate, Range, ListExpr, Comprehension, Unknown, Convert]


# ---- statements ---------------------------------------------------------------------------------
@_node
class ParamDef:
    name: Ident
    type: Optional[Ident]
    default: Optional[Expr]
    span: Span


@_node
class Renamed:
    """`rating -> module` in a template's parameters: `rating` is the old name of `module`,
    still accepted as a keyword argument, with a warning (W211)."""
    old: Ident
    new: Ident
    span: Span


@_node
class Decl:
    kind: Ident
    name: Ident
    params: Optional[Tuple[ParamDef, ...]]
    base: Optional[Expr]
    body: Optional[Tuple["Stmt", ...]]
    span: Span
    renamed: Tuple[Renamed, ...] = ()


@_node
class Field:
    name: Ident
    value: Expr
    span: Span
    body: Optional[Tuple["Stmt", ...]] = None   # `x = Base(...) { ... }`: derived in place


@_node
class Record:
    name: Ident
    body: Tuple["Stmt", ...]
    span: Span


@_node
class Let:
    name: Ident
    value: Expr
    span: Span


@_node
class Check:
    cond: Expr
    severity: Optional[Ident]
    message: Optional[String]
    span: Span


@_node
class Fail:
    target: Expr
    span: Span
    fraction: Optional[Expr] = None     # `fail 25 % of Site.fabric.core`


@_node
class SetStmt:
    target: Expr
    value: Expr
    span: Span


@_node
class Objective:
    sense: str       # minimize / maximize
    expr: Expr
    span: Span


@_node
class Allow:
    """`allow W621 "reason"`: that warning accepted where the statement stands (its file, the
    template or the instance whose body holds it)."""
    code: Ident
    reason: Optional[String]
    span: Span


@_node
class Import:
    path: Tuple[Ident, ...]
    names: Optional[Tuple[Ident, ...]]
    alias: Optional[Ident]
    span: Span

    @property
    def dotted(self) -> str:
        return ".".join(p.name for p in self.path)


@_node
class Param:
    name: Ident
    type: Optional[Ident]
    default: Expr
    span: Span


Stmt = Union[Decl, Field, Record, Let, Check, Fail, SetStmt, Objective, Allow]


@_node
class Module:
    file: str
    items: Tuple[Union[Import, Param, Stmt], ...]
    span: Span


def walk(node):
    """Yield `node` and every node below it (depth first, in source order)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = []
        for field in attrs.fields(type(n)):
            v = getattr(n, field.name)
            if isinstance(v, tuple):
                children.extend(x for x in v if attrs.has(type(x)))
            elif attrs.has(type(v)) and not isinstance(v, Span):
                children.append(v)
        stack.extend(reversed(children))
