"""Fields of a frame: lazy evaluation with cycle detection, type checking against the kind's
schema, equipment counts left to sizing, and completing whole frames (required fields,
containment, scenario actions). Functions of the instantiator `it` (semantics/instantiate.py),
which owns the frames."""
from __future__ import annotations


from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.kinds import KINDS, EnumType, ListType, StrType
from astral_dsl.model.values import (POISON, FabricLink, FabricSelection, Group, NicPort, Symbol,
                                     UnknownValue)
from astral_dsl.semantics.coerce import coerce
from astral_dsl.semantics.collections import inclusive_range, unknown_options
from astral_dsl.semantics.errors import Poisoned, fail, in_instance, unknown_key
from astral_dsl.semantics.frames import Env, FieldDef, Frame
from astral_dsl.semantics.scope import Namespace, Template
from astral_dsl.semantics.errors import check as _poison_check
from astral_dsl.semantics.isolate import route_of
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number
from astral_dsl.units.table import is_unit


# Objectives the sizing step computes itself (others are expressions of the site).
OBJECTIVES = ("cost", "footprint")

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
                 did_you_mean(name, list(spec.records) + list(spec.fields)))
        rkind = KINDS[spec.records[name]]
        rec = Frame(rkind.name, rkind, name, stmt.span, None, frame.depth + 1)
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
    return _typed(it, frame, name, value, d.value_expr.span)


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

# -- whole frames ------------------------------------------------------------------------------------


def complete_all(it) -> None:
    """Evaluate and type-check every field of every frame (frames created on the way too)."""
    i = 0
    while i < len(it.frames):
        complete(it, it.frames[i])
        i += 1


def complete(it, frame: Frame) -> None:
    if frame.completed:
        return
    frame.completed = True
    for name, d in list(frame.defs.items()):
        value = it.guarded(lambda: it.field(frame, name))
        if value is POISON or d.is_let:
            continue
        if it.guarded(lambda: _containment_ok(it, frame, name, value, d),
                        default=False) is False:
            frame.owned[name] = False      # reported: it must not be rolled up
    for fname, fspec in frame.spec.fields.items():
        if fspec.required and fname not in frame.defs:
            it.diagnostics.append(Diagnostic(
                "E204", Severity.ERROR,
                f"{frame.kind} `{frame.display}` is missing the required field `{fname}`",
                _head(frame), f"add `{fname} = ...` ({fspec.type.describe()})"))
    for action, env in frame.actions:
        it.guarded(lambda: _action(it, frame, action, env))


def _containment_ok(it, frame: Frame, name: str, value, d: FieldDef):
    if not frame.owned.get(name):
        return
    items = [i for _, i in value.flat()] if isinstance(value, Group) else \
        [value] if isinstance(value, Frame) else []
    for child in items:
        if child.level is None:
            continue
        if frame.level is None or child.level >= frame.level:
            where = f"a {frame.kind}"
            fail("E403", f"{where} cannot contain a {child.kind} (`{name}`)", d.name_span,
                 "containment goes down the hierarchy: site > hall > pod > row > rack > "
                 "host > gpu/nic")
    return True


def _action(it, frame: Frame, action, env: Env):
    if isinstance(action, ast.Fail):
        target = _fail_target(it, action.target, env)
        fraction = None
        if action.fraction is not None:
            fraction = it.eval(action.fraction, env)
            if not (isinstance(fraction, Quantity) and fraction.dimensionless
                    and 0 < fraction.si <= 1):
                fail("E309", "`fail F of PART` takes a fraction between 0 and 100 %",
                     action.fraction.span)
            if not (isinstance(target, FabricSelection) and target.tier is not None
                    and target.rail is None and target.plane is None
                    and target.scope is None and target.switch is None):
                fail("E303", "a fraction can only fail of a whole switch tier, e.g. "
                             "`fail 25 % of Site.fabric.core`", action.target.span,
                     "name the tier (no index), or fail the one switch without a fraction")
        if not isinstance(target, (FabricSelection, NicPort, FabricLink)):
            _failable(target, action.target.span)
        route = route_of(it, _route_end(action.target), env)
        if fraction is not None:
            first = next((a for a in frame.done_actions if a[0] == "fail" and a[3] is not None
                          and route is not None and a[5] == route
                          and a[1].tier == target.tier and a[3].si != fraction.si), None)
            if first is not None:       # the last would silently win; their sum is unsaid
                fail("E202", f"`{route.display}.{target.tier}` already has a share failed in "
                             f"this scenario "
                             f"({format_number(round(first[3].si * 100, 6))} % at "
                             f"{first[4].start.line}:{first[4].start.column})",
                     action.fraction.span, "fail one share of a tier, all of what fails "
                                           "(two shares leave unsaid whether they overlap)")
        frame.done_actions.append(("fail", target, None, fraction, action.span, route))
    elif isinstance(action, ast.SetStmt):
        if not isinstance(action.target, ast.Attr):
            fail("E303", "`set` needs a field of a part, e.g. `set Site.cooling.supply = ...`",
                 action.target.span, "name the part, then the field, joined by a `.`")
        owner = it.eval(action.target.obj, env)
        targets = [i for _, i in owner.flat()] if isinstance(owner, Group) else [owner]
        fspecs = []
        for t in targets:
            if not isinstance(t, Frame):
                fail("E303", "`set` needs a field of a part of the design", action.target.span,
                     "e.g. `set Site.cooling.supply = 30 degC`")
            fspec = t.spec.fields.get(action.target.name.name)
            if fspec is None:
                fail("E209", f"a {t.kind} has no field `{action.target.name.name}`",
                     action.target.name.span,
                     did_you_mean(action.target.name.name, t.spec.fields))
            fspecs.append(fspec)
        # an enumeration's value bare, as in the part's own body (`set J.attention = unfused`)
        if fspecs and all(_wants_symbols(f.type) for f in fspecs):
            value = Symbol(action.value.text.replace(" ", "")) \
                if isinstance(action.value, ast.QuantityLit) else \
                it.eval(action.value, env.as_symbols())
        else:
            value = it.eval(action.value, env)
        for fspec in fspecs:
            value = coerce(value, fspec.type, action.value.span,
                           f"`{action.target.name.name}`")
        route = route_of(it, action.target.obj, env)
        field = action.target.name.name
        first = next((a[4] for a in frame.done_actions if a[0] == "set" and a[2] == field
                      and route is not None and a[5] == route), None)
        if first is not None:             # the last would silently win, as in a block (E202)
            fail("E202", f"`{route}.{field}` is already set in this scenario (at "
                         f"{first.start.line}:{first.start.column})", action.target.span,
                 "remove one of them: a scenario sets each field of a part once")
        frame.done_actions.append(("set", owner, field, value, action.span, route))
    elif isinstance(action, ast.Objective):
        expr = action.expr
        if isinstance(expr, ast.Name) and expr.name in OBJECTIVES and \
                expr.name not in frame.defs:
            value = Symbol(expr.name)      # computed by the sizing step
        else:
            value = it.eval(expr, env)
        frame.done_actions.append((action.sense, value, None, None, action.span, None))


def _fail_target(it, expr, env):
    """A part of the design, a fabric part (`S.fabric.rail[2].tor`, one switch, a NIC port) or
    a link `A -- B` between a NIC port and its first-tier switch or between two switches (or a
    switch and the tier group above it)."""
    from astral_dsl.model.values import type_name

    if isinstance(expr, ast.Binary) and expr.op == "--":
        ends = (it.eval(expr.left, env), it.eval(expr.right, env))
        for end, e in zip(ends, (expr.left, expr.right)):
            if isinstance(end, NicPort) or (isinstance(end, FabricSelection)
                                            and end.tier is not None):
                continue
            fail("E303", f"a link's ends are NIC ports and switches, not a {type_name(end)}",
                 e.span, "e.g. `fail H.nics[0].port[a] -- S.fabric.rail[0].plane[A].tor[0]`")
        return FabricLink(ends)
    target = it.eval(expr, env)
    if not isinstance(target, (Frame, Group, FabricSelection, NicPort)):
        fail("E303", f"`fail` needs a part of the design, not a {type_name(target)}", expr.span,
             "name a part, a port or a link: `fail Site.fabric.core[0]`, "
             "`fail H.nics[0].port[a] -- S.fabric.rail[0].plane[A].tor[0]`")
    return target


def _route_end(expr):
    """The part of a `fail` target that names instances (isolated under the scenario): a link's
    NIC-port end, else its first end."""
    if isinstance(expr, ast.Binary) and expr.op == "--":
        for e in (expr.left, expr.right):
            if isinstance(e, ast.Index) and isinstance(e.obj, ast.Attr) and \
                    e.obj.name.name == "port":
                return e
        return expr.left
    return expr


# what `fail` can take besides fabric parts, and what failing it means to the analyses
FAILABLE = {"feeder": "its partner side or the other feeders of its group carry the load",
            "loop": "one of its CDUs fails",
            "nic": "every port of it goes dark (`nic.port[a]` names one)"}


def _failable(target, span: Span) -> None:
    items = [i for _, i in target.flat()] if isinstance(target, Group) else [target]
    for item in items:
        if item.kind not in FAILABLE:
            fail("E218", f"failing a {item.kind} is not modelled", span,
                 "a scenario can fail a feeder, a loop (one CDU), a NIC or one of its ports "
                 "(`H.nics[4].port[a]`), a fabric part (`S.fabric.plane[B]`, "
                 "`S.fabric.rail[2].tor`, one switch `S.fabric.rail[2].plane[A].tor[0]`), a "
                 "link (`A -- B`) or a fraction of a switch tier (`fail 25 % of S.fabric.core`)")


class _Given:
    """A field value given as an argument at instantiation (already evaluated)."""

    def __init__(self, value):
        self.value = value


def _head(frame: Frame) -> Span:
    decl = frame.template.decl if frame.template is not None else None
    if decl is not None:
        return decl.name.span
    return frame.span


def _dashed_words(e) -> str:
    """`a-b-c` written without quotes (names joined by minus signs), else ''."""
    if isinstance(e, ast.Binary) and e.op == "-":
        left, right = _dashed_words(e.left), _dashed_words(e.right)
        return f"{left}-{right}" if left and right else ""
    return e.name if isinstance(e, ast.Name) else ""


def _wants_symbols(t) -> bool:
    return isinstance(t, EnumType) or (isinstance(t, ListType) and isinstance(t.item, EnumType))


