"""Where a value is set in the user's own files.

A stdlib template's field often only reads what its instance was given: `RearDoor`'s
`max_rack_heat = rated`, `PowerShelf`'s `modules = 6 * shelves`, `Transformer`'s
`count = units`. A diagnostic on such a field belongs on the user's argument
(`RearDoor(rated = 40 kW)`), not inside the stdlib, which the user does not edit. `of_expr`
follows an expression of a stdlib module to the first value in it that the user's files set:
a parameter bound to the user's argument (each parameter's origin is kept in the `Env` of the
template's body, `Env.origins`, by semantics/arguments.py), a field of the same instance (or
of an instance the expression names, `gpu.system_power`) whose own value comes from the user's
files, or a field the user overrides (`FieldDef.origin`). None: the stdlib states the value
itself (its literal, a default it gives), and the field keeps its own span.

An expression in a user's module is its own origin. The model keeps each field's origin as its
span (`Instance.span_of`) and, when that is not the field's own expression, the expression that
uses it (`Instance.uses`: semantics/freeze.py), so that a diagnostic can say both."""
from __future__ import annotations

from typing import Optional

from astral_dsl.diagnostics import Span
from astral_dsl.model.rollup import PLURALS
from astral_dsl.semantics.frames import Env, FieldDef, Frame
from astral_dsl.syntax import ast


def of_expr(expr, env: Env, busy: Optional[set] = None) -> Optional[Span]:
    """The span in the user's files that sets the value of `expr` evaluated in `env` (the
    first such, in source order), else None (its module states it). `busy`: the fields
    being followed ((id(frame), name)), which a name does not resolve to (`power = power`
    reads the parameter, as the evaluator's lookup does)."""
    if not env.module.is_stdlib:
        return expr.span
    return _walk(expr, env, set() if busy is None else busy, frozenset())


def of_field(frame: Frame, name: str, busy: Optional[set] = None) -> Optional[Span]:
    """Where the user's files set field `name` of `frame` (None: a stdlib module states it)."""
    d = frame.defs.get(name)
    if d is None:
        return None
    busy = set() if busy is None else busy
    key = (id(frame), name)
    if key in busy:
        return None
    busy.add(key)
    try:
        return _of_def(d, busy)
    finally:
        busy.discard(key)


def _of_def(d: FieldDef, busy: set) -> Optional[Span]:
    if d.value_expr is None:          # an override (its origin), a nested declaration
        if d.origin is not None:
            return d.origin
        return None if d.env.module.is_stdlib else d.name_span
    return of_expr(d.value_expr, d.env, busy)


def _walk(e, env: Env, busy: set, hidden: frozenset) -> Optional[Span]:
    if isinstance(e, ast.Name):
        return None if e.name in hidden else _name(e.name, env, busy)
    if isinstance(e, ast.Attr):
        target = _frame_of(e.obj, env, busy, hidden)
        if isinstance(target, Frame) and e.name.name in target.defs:
            return of_field(target, e.name.name, busy)
        return _walk(e.obj, env, busy, hidden) if target is None else None
    if isinstance(e, ast.Comprehension):
        return _walk(e.iterable, env, busy, hidden) or \
            _walk(e.element, env, busy, hidden | {e.var.name})
    for name in e._fields:
        v = getattr(e, name)
        for child in (v if isinstance(v, tuple) else (v,)):
            if isinstance(child, ast.Arg):
                child = child.value
            if isinstance(child, ast.Node) and not isinstance(child, ast.Ident):
                found = _walk(child, env, busy, hidden)
                if found is not None:
                    return found
    return None


def _resolve(name: str, env: Env, busy: set):
    """What `name` names in `env`, as the evaluator's lookup finds it: ("field", frame),
    ("param", env), or None (a local, a roll-up, the module's own name)."""
    scope = env
    while scope is not None:
        if name in scope.locals:
            return None
        frame = scope.frame
        if frame is not None and name in frame.defs and (id(frame), name) not in busy:
            return ("field", frame)
        if name in scope.params:
            return ("param", scope)
        if frame is not None and frame.spec.physical and (name in PLURALS or name == "power"):
            return None               # a roll-up over the parts
        scope = scope.outer
    return None


def _name(name: str, env: Env, busy: set) -> Optional[Span]:
    found = _resolve(name, env, busy)
    if found is None:
        return None
    if found[0] == "field":
        return of_field(found[1], name, busy)
    return found[1].origins.get(name)


def _frame_of(e, env: Env, busy: set, hidden: frozenset):
    """The instance a name or a path of names stands for (None: not one found)."""
    if isinstance(e, ast.Name) and e.name not in hidden:
        found = _resolve(e.name, env, busy)
        if found is None:
            return None
        if found[0] == "param":
            return found[1].params.get(e.name)
        return found[1].values.get(e.name)
    if isinstance(e, ast.Attr):
        outer = _frame_of(e.obj, env, busy, hidden)
        if isinstance(outer, Frame):
            return outer.values.get(e.name.name)
    return None
