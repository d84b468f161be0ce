"""Completing whole frames: every field of every frame evaluated and type-checked, the required
fields present, containment down the hierarchy, and a scenario's actions (`fail`, `set`,
objectives). Functions of the instantiator `it` (semantics/instantiate.py), which owns the
frames; the fields themselves: fields.py."""
from __future__ import annotations

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.values import (POISON, FabricLink, FabricSelection, Group, NicPort, Symbol,
                                     Values)
from astral_dsl.semantics.coerce import coerce
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.fail_hints import fail_hint
from astral_dsl.semantics.fields import _wants_symbols
from astral_dsl.semantics.words import as_words
from astral_dsl.semantics.frames import Env, FieldDef, Frame
from astral_dsl.semantics.isolate import route_of
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number

# Objectives the sizing step computes itself (others are expressions of the site).
OBJECTIVES = ("cost", "footprint")


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
            # one tier of one fabric instance, however the routes reach it (`P.fabric.core` and
            # `S.pods[0].fabric.core` when the pods share P's instance)
            first = next((a for a in frame.done_actions if a[0] == "fail" and a[3] is not None
                          and a[1].fabric is target.fabric and _overlap(a[5], route)
                          and a[1].tier == target.tier and a[3].si != fraction.si), None)
            if first is not None:       # the last would silently win; their sum is unsaid
                also = "" if first[5] == route or first[5] is None else \
                    f" of `{first[5].display}.{target.tier}`"
                fail("E202", f"`{_shown(route, target)}` already has a share failed in "
                             f"this scenario "
                             f"({format_number(round(first[3].si * 100, 6))} %{also} at "
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
                it.eval(as_words(action.value, fspecs[0].type, env,
                                 f"`{action.target.name.name}`", it.diagnostics),
                        env.as_symbols())
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
        frame.done_actions.append((action.sense, value, _dotted(expr), None, action.span, None))


def _dotted(expr) -> str | None:
    """An objective's name as written (`gpus`, `cooling.secondary.cdus`), for the sizing
    report's `objective: maximize gpus = 1,280`; None for any other expression."""
    if isinstance(expr, ast.Name):
        return expr.name
    if isinstance(expr, ast.Attr):
        head = _dotted(expr.obj)
        return None if head is None else f"{head}.{expr.name.name}"
    return None


def _shown(route, target) -> str:
    return f"{route.display}.{target.tier}" if route is not None else target.display


def _overlap(a, b) -> bool:
    """Two routes to one shared instance name some replica in common: a template's route
    (`P.fabric`) names every use, `S.pods[0]` and `S.pods[1]` none in common."""
    if a is None or b is None or a.from_template or b.from_template \
            or len(a.steps) != len(b.steps):
        return True
    return a.root == b.root and all(x.name == y.name and _indices_meet(x.index, y.index)
               for x, y in zip(a.steps, b.steps))


def _indices_meet(x, y) -> bool:
    if x in (None, "*") or y in (None, "*"):
        return True
    lo_x, hi_x = x if isinstance(x, tuple) else (x, x + 1)
    lo_y, hi_y = y if isinstance(y, tuple) else (y, y + 1)
    return lo_x < hi_y and lo_y < hi_x


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
    try:
        target = it.eval(expr, env)
    except DiagnosticError as exc:      # a switch tier or a CDU looked for in the hierarchy
        better = fail_hint(it, expr, env, exc.diagnostic)
        if better is None:
            raise
        raise DiagnosticError(better) from None
    if isinstance(target, Values):      # `S.pods[*].fabric.spine`: a tier of each pod's fabric
        fail("E303", "`fail` needs a part of the design, not values over a group (one for each "
                     "replica a `[*]` or a range selects)", expr.span,
             FAILABLE + "; for a tier of every pod's fabric, name it on the template they "
                        "share (e.g. `P.fabric.spine`) or once per pod (`S.pods[0].fabric.spine`)")
    if not isinstance(target, (Frame, Group, FabricSelection, NicPort)):
        fail("E303", f"`fail` needs a part of the design, not {_a(type_name(target))}",
             expr.span, FAILABLE)
    return target


def _a(name: str) -> str:
    """`a string`, `an unknown value`."""
    return ("an " if name[:1] in "aeiou" else "a ") + name


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


# what `fail` can take besides fabric parts, and what failing it means to the analyses (the
# kinds of instance: FAILABLE below is the hint's text, which must not stand for it: a substring
# of it, "fabric" or "switch", let a whole fabric or a switch instance through, a silent no-op)
FAILABLE_KINDS = {"feeder": "its partner side or the other feeders of its group carry the load",
            "loop": "one of its CDUs fails",
            "nic": "every port of it goes dark (`nic.port[a]` names one)"}


def _failable(target, span: Span) -> None:
    items = [i for _, i in target.flat()] if isinstance(target, Group) else [target]
    for item in items:
        if item.kind not in FAILABLE_KINDS:
            fail("E218", f"failing {_a(item.kind)} is not modelled", span, FAILABLE)


# what a scenario's `fail` takes (E218, E303)
FAILABLE = ("a scenario can fail a feeder, a loop (one CDU), a NIC or one of its ports "
            "(`H.nics[4].port[a]`), a fabric part (`S.fabric.plane[B]`, `S.fabric.rail[2].tor`, "
            "one switch `S.fabric.rail[2].plane[A].tor[0]`), a link (`A -- B`) or a fraction of "
            "a switch tier (`fail 25 % of S.fabric.core`)")


def _head(frame: Frame) -> Span:
    decl = frame.template.decl if frame.template is not None else None
    if decl is not None:
        return decl.name.span
    return frame.span
