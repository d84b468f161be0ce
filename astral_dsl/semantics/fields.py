"""Fields of a frame: lazy evaluation with cycle detection, type checking against the kind's
schema, and equipment counts left to sizing (completing whole frames: complete.py). Functions of
the instantiator `it` (semantics/instantiate.py), which owns the frames."""
from __future__ import annotations

from astral_dsl.diagnostics import DiagnosticError, Span, did_you_mean, moved_to
from astral_dsl.model.kinds import KINDS, EnumType, ListType, StrType
from astral_dsl.model.values import (POISON, Group, ListValue, Symbol, UnknownValue, show,
                                      type_name)
from astral_dsl.semantics.brought_in import asked
from astral_dsl.semantics.coerce import coerce
from astral_dsl.semantics.collections import each_option, inclusive_range, unknown_options
from astral_dsl.semantics.errors import Poisoned, fail, in_instance, unknown_key
from astral_dsl.semantics.frames import Env, FieldDef, Frame
from astral_dsl.semantics.scope import Namespace, Template
from astral_dsl.semantics.errors import check as _poison_check
from astral_dsl.semantics.isolate import route_of
from astral_dsl.semantics.words import as_words
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity
from astral_dsl.units.table import is_unit


# Equipment counts the sizing step can choose (`cdus = ?`): they stay unknown in the model.
SIZABLE = {("feeder", "count"), ("loop", "cdus"), ("rectifier", "modules"),
           ("battery", "strings")}


class FrameView:
    """How roll-ups (model/rollup.py) see frames under construction: their owned members and
    declared fields, evaluated on first use by the instantiator `it`."""

    def __init__(self, it):
        self.it = it

    def members(self, frame: Frame):
        out = []
        for name, d in frame.defs.items():
            if d.is_let or not constructs(self.it, d):
                continue
            # a member that failed to evaluate (already reported) raises Poisoned: the
            # roll-up over it fails too, rather than counting it as holding nothing (one
            # mistaken replication count would give `gpus == 32` "left side: 0")
            value = self.it.field(frame, name)
            if frame.owned.get(name) and isinstance(value, (Group, Frame)):
                out.append(value)
        return tuple(out)

    def declared(self, frame: Frame, name: str):
        if name in frame.defs and not frame.defs[name].is_let:
            return self.it.field(frame, name)
        return None


# -- fields ------------------------------------------------------------------------------------------


def field(it, frame: Frame, name: str, span: Span | None = None):
    if name in frame.values:
        return _poison_check(frame.values[name])
    if frame.busy.get(name):
        fail("E404", f"`{name}` of {frame.kind} `{frame.display}` depends on itself",
             span or frame.defs[name].name_span,
             "break the cycle: one of the values must not refer back")
    frame.busy[name] = True
    try:
        value = it.guarded(lambda: in_instance(frame, lambda: _field(it, frame, name)))
        if frame.pending is not None and value is not POISON:
            value = it.guarded(lambda: it.isolator.field(frame, name, value))
    finally:
        frame.busy[name] = False
    frame.values[name] = value
    if name in WRITTEN.get(frame.kind, ()) and value is not POISON:
        frame.routes[name] = _written(it, frame.defs[name])
    return _poison_check(value)


# fields whose replicas matter as written: a job placed on `Astral.pods[3]` runs on pod 3, not on
# the instance the pods share (whose canonical path is `Astral.pods[0]`)
WRITTEN = {"job": ("placement",)}


def _written(it, d: FieldDef):
    """The route of a field's expression (None when it is not a plain path)."""
    if d.value_expr is None:
        return None
    try:
        return route_of(it, d.value_expr, d.env)
    except (DiagnosticError, Poisoned):   # a path through a part declared elsewhere: none
        return None


def _field(it, frame: Frame, name: str):
    d = frame.defs[name]
    stmt = d.stmt
    spec = frame.spec
    if isinstance(stmt, _Given):
        frame.owned[name] = False
        return _typed(it, frame, name, stmt.value, d.name_span)
    if isinstance(stmt, ast.Decl):
        frame.owned[name] = True
        return it.nested(frame, stmt, d.env)
    if isinstance(stmt, ast.Record):
        frame.owned[name] = True
        if name not in spec.records:
            fail("E203", f"a {spec.name} has no block `{name}`", stmt.name.span,
                 did_you_mean(name, list(spec.records) + list(spec.fields)) or
                 (f"a {name} declared here needs a name: `{name} NAME {{ ... }}`"
                  if name in spec.nested else None))
        rkind = KINDS[spec.records[name]]
        rec = Frame(rkind.name, rkind, name, stmt.span, None, frame.depth + 1)
        asked(it, rec, d.env, stmt.span)
        it.frames.append(rec)
        it.lay_body(rec, stmt.body, Env(d.env.module, rec, {}, {}, d.env))
        return rec
    env = d.env
    field_spec = spec.fields.get(name) if not d.is_let else None
    if isinstance(stmt, ast.Field) and stmt.body is not None:     # `x = Base(...) { ... }`
        frame.owned[name] = field_spec is None
        return _typed(it, frame, name, it.derived_value(frame, stmt, env), d.value_expr.span)
    if (spec.name, name) in SIZABLE and isinstance(d.value_expr, ast.Unknown):
        return _sizable(it, frame, name, d)
    if field_spec is not None and _wants_symbols(field_spec.type):
        env = env.as_symbols()
        if isinstance(d.value_expr, ast.QuantityLit):   # a keyword that reads as a quantity
            value = Symbol(d.value_expr.text.replace(" ", ""))
            return _typed(it, frame, name, value, d.value_expr.span)
        # `scope = rack`: the word, whatever else the file names `rack` (semantics/words.py)
        expr = as_words(d.value_expr, field_spec.type, env, f"`{name}`", it.diagnostics)
        value = it.eval(expr, env)
        frame.owned[name] = False
        _options_fit(it, expr, env, field_spec.type, name)
        return _typed(it, frame, name, value, d.value_expr.span)
    elif field_spec is not None and isinstance(field_spec.type, StrType):
        words = _dashed_words(d.value_expr) if isinstance(d.value_expr, ast.Binary) else ""
        if not words and isinstance(d.value_expr, ast.QuantityLit) and not is_unit(
                d.value_expr.unit):                      # `order = 1f1b`: not a quantity
            words = d.value_expr.text.replace(" ", "")
        if words:                                        # `order = tp-cp-dp-pp` unquoted
            doc = f" ({field_spec.doc})" if field_spec.doc else ""
            fail("E303", f"`{name}` is a string: write it in double quotes",
                 d.value_expr.span, f'`{name} = "{words}"`{doc}')
    value = it.eval(d.value_expr, env)
    # schema fields hold values and references; members are the other named instances
    frame.owned[name] = field_spec is None and constructs(it, d)
    if d.is_let:
        return value
    if field_spec is not None:
        _options_fit(it, d.value_expr, env, field_spec.type, name)
    try:
        return _typed(it, frame, name, value, d.value_expr.span)
    except DiagnosticError as exc:
        raise DiagnosticError(_at_origin(frame, name, d, env, exc.diagnostic)) from None


def _at_origin(frame: Frame, name: str, d: FieldDef, env: Env, diag):
    """A value refused where a stdlib template's field reads it (`Rectifier`'s `module =
    module`, given -5 kW): the diagnostic stands on the user's argument that sets it
    (semantics/origins.py), as the analyses' do, the template's line that reads it its related
    span; where the stdlib states the value itself, it stays in the stdlib."""
    span = d.value_expr.span
    if not env.module.is_stdlib or diag.span != span:
        return diag
    from astral_dsl.semantics.origins import of_expr

    try:
        origin = of_expr(d.value_expr, env)
    except (DiagnosticError, Poisoned):
        return diag
    if origin is None or origin.file == span.file:
        return diag
    owner = frame.template.name if frame.template is not None else frame.name
    return moved_to(diag, origin, f"`{owner}` reads it as `{name}`")


def _options_fit(it, e, env, type_, name: str) -> None:
    """Every option of a field's `? in ...` fits the field's type and domain (collections.py
    each_option)."""
    each_option(it.expr, e, env, lambda option, span: coerce(option, type_, span,
                                                              f"an option of `{name}`"))


def _sizable(it, frame: Frame, name: str, d: FieldDef):
    """An equipment count left to sizing: kept as an UnknownValue (or the chosen value)."""
    e = d.value_expr
    key = unknown_key(e.span)
    frame.owned[name] = False
    if key in it.assignments:
        return _typed(it, frame, name, it.assignments[key], e.span)
    low, high = 0, 10**6
    if e.domain is not None:
        options = unknown_options(it.expr, e, d.env)
        values = [o.si for o in options if isinstance(o, Quantity) and o.is_whole()]
        if len(values) != len(options):
            fail("E303", f"`{name}` is a count: its options must be whole numbers",
                 e.domain.span, "e.g. `? in 1..16` or `? in [2, 4, 8]`")
        low, high = int(min(values)), int(max(values))
        field_spec = frame.spec.fields.get(name)
        if field_spec is not None:     # `count = ? in 0..4`: a count of 0 feeders is E309
            for value in sorted({low, high}):
                coerce(Quantity(float(value)), field_spec.type, e.domain.span,
                       f"an option of `{name}`")
    it.record_unknown(key, e.span, "count", (), low=low, high=high, frame=frame,
                      field=name, inclusive_end=inclusive_range(e))
    return UnknownValue(None, e.span, key)


def _typed(it, frame: Frame, name: str, value, span: Span):
    spec = frame.spec
    field_spec = spec.fields.get(name)
    if field_spec is not None:
        return coerce(value, field_spec.type, span, f"`{name}`")
    if name in spec.records:
        fail("E303", f"`{name}` is a block: write `{name} {{ ... }}`", span,
             f"its fields go inside the braces: `{name} {{ field = value, ... }}`")
    if isinstance(value, (Frame, Group)) and (spec.open_members or not spec.physical):
        return value
    if isinstance(value, UnknownValue):
        return coerce(value, None, span, f"`{name}`")
    if isinstance(value, ListValue) and spec.open_members:
        _not_members(name, value, span)
    known = list(spec.fields) + list(spec.records)
    hint = did_you_mean(name, known)
    # a field of other kinds (a host's `utilization`): say where it may be stated
    elsewhere = [k for k, other in KINDS.items() if name in other.fields and
                 other.physical == spec.physical]
    if hint is None and elsewhere:
        where = elsewhere[0] if len(elsewhere) == 1 else \
            ", ".join(elsewhere[:-1]) + f" or {elsewhere[-1]}"
        hint = f"`{name}` is stated on a {where}"
    if hint is None and spec.open_members:
        hint = f"a {spec.name} accepts its known fields and members (instances) under any name"
    elif hint is None:
        hint = f"a {spec.name} has: " + ", ".join(sorted(known))
    fail("E203", f"a {spec.name} has no field `{name}`",
         frame.defs[name].name_span, hint)


def _not_members(name: str, value: ListValue, span: Span) -> None:
    """A list under a member's name that is not a group: empty, or instances mixed with
    values (was E203 "has no field `hosts`", for a name that is a member's)."""
    if not value.items:
        fail("E303", f"`{name}` is an empty list, not a member", span,
             f"a member holds at least one instance: leave `{name}` out")
    if any(isinstance(i, (Frame, Group)) for i in value.items):
        odd = next(i for i in value.items if not isinstance(i, (Frame, Group)))
        fail("E303", f"`{name}` mixes instances with `{show(odd)}`, a {type_name(odd)}", span,
             "a list of members holds instances and groups only: state the value in a field "
             "or a `let`")


def constructs(it, d: FieldDef) -> bool:
    """Does this field build its value (owned members) rather than refer to one elsewhere?"""
    if isinstance(d.stmt, (ast.Decl, ast.Record)):
        return True
    if d.is_let or d.value_expr is None:
        return False
    return _constructs(it, d.value_expr, d.env, d.stmt.name.name)


def _constructs(it, e, env: Env, own: str | None = None) -> bool:
    """`own`: the field being defined, which its own expression does not see (a field
    naming itself means the outer name)."""
    if isinstance(e, ast.Replicate):
        return True
    if isinstance(e, (ast.ListExpr,)):
        return bool(e.items) and all(_constructs(it, i, env, own) for i in e.items)
    if isinstance(e, ast.Comprehension):
        return _constructs(it, e.element, env.child(**{e.var.name: None}))
    if isinstance(e, ast.If):
        return _constructs(it, e.then, env, own) or _constructs(it, e.other, env, own)
    if isinstance(e, ast.Call):
        e = e.func
        if isinstance(e, ast.Attr):
            return True
    if isinstance(e, ast.Attr) and isinstance(e.obj, ast.Name):   # `hw.H800`
        ns = env.module.lookup(e.obj.name)
        return isinstance(ns, Namespace) and isinstance(ns.scope.own.get(e.name.name),
                                                        Template)
    if isinstance(e, ast.Name):
        scope = env
        while scope is not None:
            in_frame = scope.frame is not None and e.name in scope.frame.defs and not (
                scope is env and e.name == own)
            if e.name in scope.locals or e.name in scope.params or in_frame:
                return False
            scope = scope.outer
        return isinstance(env.module.lookup(e.name), Template)
    return False


class _Given:
    """A field value given as an argument at instantiation (already evaluated)."""

    def __init__(self, value):
        self.value = value


def _dashed_words(e) -> str:
    """`a-b-c` written without quotes (names joined by minus signs), else ''."""
    if isinstance(e, ast.Binary) and e.op == "-":
        left, right = _dashed_words(e.left), _dashed_words(e.right)
        return f"{left}-{right}" if left and right else ""
    return e.name if isinstance(e, ast.Name) else ""


def _wants_symbols(t) -> bool:
    return isinstance(t, EnumType) or (isinstance(t, ListType) and isinstance(t.item, EnumType))


