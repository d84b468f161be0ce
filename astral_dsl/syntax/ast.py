"""The abstract syntax tree. Every node carries its span (1-based, end exclusive).

The node classes are plain classes with `__slots__`, not attrs classes: attrs built the 37 of
them at every start of `astral`, compiling a generated `__init__` for each (a warm check of the
reference: 977 -> 943 million instructions without them), for what a node needs of it: its
fields in order, set once and immutable after (attrs' FrozenInstanceError), compared and hashed
by identity (they were `eq=False`), shown as `Ident(name='x', span=...)`. A class lists its
fields as annotations, read by `_Kind` into `__slots__` and `_fields` (with their annotations in
`_types`, which astcache reads); a value assigned to one is its default."""
from __future__ import annotations

import reprlib
from typing import Any, ClassVar, Dict, Optional, Tuple, Union

from attrs.exceptions import FrozenInstanceError

from astral_dsl.diagnostics import Span

_set = object.__setattr__


# A node's __init__ by its number of fields: each value set through its slot's descriptor, in
# the order of the fields (no code compiled at start-up, unlike attrs' generated __init__s)
def _init0():
    def __init__(self):
        pass
    return __init__


def _init1(s0):
    def __init__(self, a):
        s0(self, a)
    return __init__


def _init2(s0, s1):
    def __init__(self, a, b):
        s0(self, a), s1(self, b)
    return __init__


def _init3(s0, s1, s2):
    def __init__(self, a, b, c):
        s0(self, a), s1(self, b), s2(self, c)
    return __init__


def _init4(s0, s1, s2, s3):
    def __init__(self, a, b, c, d):
        s0(self, a), s1(self, b), s2(self, c), s3(self, d)
    return __init__


def _init5(s0, s1, s2, s3, s4):
    def __init__(self, a, b, c, d, e):
        s0(self, a), s1(self, b), s2(self, c), s3(self, d), s4(self, e)
    return __init__


def _init6(s0, s1, s2, s3, s4, s5):
    def __init__(self, a, b, c, d, e, f):
        s0(self, a), s1(self, b), s2(self, c), s3(self, d), s4(self, e), s5(self, f)
    return __init__


def _init7(s0, s1, s2, s3, s4, s5, s6):
    def __init__(self, a, b, c, d, e, f, g):
        s0(self, a), s1(self, b), s2(self, c), s3(self, d), s4(self, e), s5(self, f), \
            s6(self, g)
    return __init__


_INITS = (_init0, _init1, _init2, _init3, _init4, _init5, _init6, _init7)


class _Kind(type):
    """The metaclass of the nodes: `__slots__`, `_fields`, `_types` and `_defaults` from the
    class's annotations (ClassVars aside) and the values assigned to them (the last fields'),
    and the `__init__` that sets the fields from its positional arguments."""

    def __new__(mcls, name, bases, namespace):
        own = {k: v for k, v in namespace.get("__annotations__", {}).items()
               if not v.startswith("ClassVar")}
        defaults = {k: namespace.pop(k) for k in own if k in namespace}
        namespace["__slots__"] = tuple(own)
        cls = super().__new__(mcls, name, bases, namespace)
        cls._fields = getattr(cls, "_fields", ()) + tuple(own)
        cls._types = {**getattr(cls, "_types", {}), **own}
        cls._defaults = {**getattr(cls, "_defaults", {}), **defaults}
        last = cls._fields[len(cls._fields) - len(cls._defaults):]
        if any(f not in cls._defaults for f in last):
            raise TypeError(f"{name}: the fields with defaults come last")
        if len(cls._fields) >= len(_INITS):
            raise TypeError(f"{name}: at most {len(_INITS) - 1} fields (_INITS has no more)")
        init = _INITS[len(cls._fields)](*(getattr(cls, f).__set__ for f in cls._fields))
        init.__defaults__ = tuple(cls._defaults[f] for f in cls._fields
                                  if f in cls._defaults) or None
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init
        return cls


class Node(metaclass=_Kind):
    """A syntax node: its fields, given in order (the last ones may have defaults), set once."""
    _fields: ClassVar[Tuple[str, ...]] = ()
    _types: ClassVar[Dict[str, str]] = {}
    _defaults: ClassVar[Dict[str, Any]] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError()

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in self._fields) + ")"

    def __getstate__(self) -> Dict[str, Any]:
        return {n: getattr(self, n) for n in self._fields}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        for name, value in state.items():
            _set(self, name, value)


class Ident(Node):
    name: str
    span: Span


# ---- expressions --------------------------------------------------------------------------------
class Number(Node):
    value: float
    text: str
    span: Span


class QuantityLit(Node):
    value: float
    unit: str
    text: str
    span: Span
    unit_span: Span


class String(Node):
    value: str
    span: Span


class Bool(Node):
    value: bool
    span: Span


class Name(Node):
    name: str
    span: Span


class Attr(Node):
    obj: "Expr"
    name: Ident
    span: Span


class Index(Node):
    obj: "Expr"
    selector: "Expr"
    span: Span


class Wildcard(Node):
    span: Span


class Arg(Node):
    name: Optional[Ident]
    value: "Expr"
    span: Span


class Call(Node):
    func: "Expr"
    args: Tuple[Arg, ...]
    span: Span


class Binary(Node):
    op: str          # + - * / ^
    left: "Expr"
    right: "Expr"
    span: Span


class Compare(Node):
    op: str          # == != < <= > >=
    left: "Expr"
    right: "Expr"
    span: Span


class Logic(Node):
    op: str          # and / or
    left: "Expr"
    right: "Expr"
    span: Span


class Not(Node):
    operand: "Expr"
    span: Span


class Neg(Node):
    operand: "Expr"
    span: Span


class If(Node):
    cond: "Expr"
    then: "Expr"
    other: "Expr"
    span: Span


class Replicate(Node):
    count: "Expr"
    item: "Expr"
    span: Span


class Range(Node):
    start: "Expr"
    stop: "Expr"
    span: Span
    inclusive: bool = True      # `a..b` holds b; `a..<b` stops before it


class ListExpr(Node):
    items: Tuple["Expr", ...]
    span: Span


class Comprehension(Node):
    element: "Expr"
    var: Ident
    iterable: "Expr"
    span: Span


class Unknown(Node):
    domain: Optional["Expr"]
    span: Span


class Convert(Node):
    operand: "Expr"
    unit: str
    unit_span: Span
    span: Span


Expr = Union[Number, QuantityLit, String, Bool, Name, Attr, Index, Wildcard, Call, Binary, Compare,
             Logic, Not, Neg, If, Replicate, Range, ListExpr, Comprehension, Unknown, Convert]


# ---- statements ---------------------------------------------------------------------------------
class Assumption(Node):
    """`assumed "why"` after a value (a field's, a parameter's default): the value is an
    assumption, not a sourced figure; a design that uses it is warned (W216: semantics/
    assumptions.py). `reason` is None when the text says no why (E223)."""
    reason: Optional[String]
    span: Span


class ParamDef(Node):
    name: Ident
    type: Optional[Ident]
    default: Optional[Expr]
    span: Span
    assumed: Optional[Assumption] = None


class Renamed(Node):
    """`rating -> module` in a template's parameters: `rating` is the old name of `module`,
    still accepted as a keyword argument, with a warning (W211)."""
    old: Ident
    new: Ident
    span: Span


class Decl(Node):
    kind: Ident
    name: Ident
    params: Optional[Tuple[ParamDef, ...]]
    base: Optional[Expr]
    body: Optional[Tuple["Stmt", ...]]
    span: Span
    renamed: Tuple[Renamed, ...] = ()


class Field(Node):
    name: Ident
    value: Expr
    span: Span
    body: Optional[Tuple["Stmt", ...]] = None   # `x = Base(...) { ... }`: derived in place
    assumed: Optional[Assumption] = None        # `x = 4 kW assumed "why"`


class Record(Node):
    name: Ident
    body: Tuple["Stmt", ...]
    span: Span


class Let(Node):
    name: Ident
    value: Expr
    span: Span


class Check(Node):
    cond: Expr
    severity: Optional[Ident]
    message: Optional[String]
    span: Span


class Fail(Node):
    target: Expr
    span: Span
    fraction: Optional[Expr] = None     # `fail 25 % of Site.fabric.core`


class SetStmt(Node):
    target: Expr
    value: Expr
    span: Span


class Objective(Node):
    sense: str       # minimize / maximize
    expr: Expr
    span: Span


class Allow(Node):
    """`allow W621 "reason"`: that warning accepted where the statement stands (its file, the
    template or the instance whose body holds it)."""
    code: Ident
    reason: Optional[String]
    span: Span


class Import(Node):
    path: Tuple[Ident, ...]
    names: Optional[Tuple[Ident, ...]]
    alias: Optional[Ident]
    span: Span

    @property
    def dotted(self) -> str:
        return ".".join(p.name for p in self.path)


class Param(Node):
    name: Ident
    type: Optional[Ident]
    default: Expr
    span: Span
    assumed: Optional[Assumption] = None


Stmt = Union[Decl, Field, Record, Let, Check, Fail, SetStmt, Objective, Allow]


class Module(Node):
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
        for name in n._fields:
            v = getattr(n, name)
            if isinstance(v, tuple):
                children.extend(x for x in v if isinstance(x, Node))
            elif isinstance(v, Node):
                children.append(v)
        stack.extend(reversed(children))
