"""Member access and indexing: `pod.racks`, `racks[16]`, `pods[0..4]`, `racks[*]`, attributes
over groups (kept in order), and fabric selections (`fabric.rail[2].plane[B].tor`).

Plain functions over the expression evaluator `x` (semantics/evaluate.py), which dispatches
`Attr` and `Index` nodes here; member fields come from its host, the instantiator."""
from __future__ import annotations

from typing import Optional

from astral_dsl.diagnostics import Span, did_you_mean
from astral_dsl.model.rollup import PLURALS
from astral_dsl.model.tier_groups import SCOPE_KINDS, scope_kinds
from astral_dsl.model.values import (Bundle, FabricAxis, FabricSelection, Group,
                                     ListValue, NicPort, PortAxis, RangeValue, Run, Symbol,
                                     Values, plane_label, port_label, type_name)
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.scope import Namespace, missing_hint
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity
from astral_dsl.semantics.collections import index_hint, range_hint, shown_index, whole
from astral_dsl.semantics.errors import check, fail


def eval_attr(x, e: ast.Attr, env):
    return _member(x, x.eval(e.obj, env), e)


def _member(x, obj, e: ast.Attr):
    return attribute(x, obj, e.name.name, e.name.span, e.span)


def attribute(x, obj, name: str, name_span: Span, span: Span):
    if isinstance(obj, Frame) and obj.kind == "fabric" and name not in obj.defs and \
            (name in ("rail", "plane") or name in _scope_axes(x, obj)):
        return FabricAxis(FabricSelection(obj), name)
    if isinstance(obj, FabricSelection):
        return _fabric_part(x, obj, name, name_span)
    if isinstance(obj, Frame) and obj.kind == "nic" and name == "port" and name not in obj.defs:
        return PortAxis(obj)                # `nic.port[a]`: one port of the NIC
    if isinstance(obj, Frame) and obj.kind == "fabric" and name in obj.defs and \
            isinstance(obj.defs[name].stmt, ast.Decl) and obj.defs[name].stmt.kind.name == "tier":
        return FabricSelection(obj, None, None, name)     # `fabric.core`: every core switch
    if isinstance(obj, Frame):
        if name in obj.defs and not obj.defs[name].is_let:
            return x.host.field(obj, name, name_span)
        derived = x.derived(obj, name)
        if derived is not None:
            return derived
        known = [n for n, d in obj.defs.items() if not d.is_let]
        if obj.spec.physical:
            known += list(PLURALS) + ["power"]
        hint = did_you_mean(name, known)
        if hint is None and name in obj.spec.fields:
            hint = f"`{obj.display}` does not set `{name}`; declare `{name} = ...` in it"
        fail("E209", f"{obj.kind} `{obj.display}` has no member `{name}`", name_span, hint)
    if isinstance(obj, Group) and name == "port" and len(obj.flat()) == 1 and \
            getattr(obj.flat()[0][1], "kind", None) == "nic":
        # `pods[*]...nics[5].port[b]`: the port of one NIC instance shared by the replicas the
        # path names (a scenario's route says which: semantics/isolate.py)
        return attribute(x, obj.flat()[0][1], name, name_span, span)
    if isinstance(obj, Group):
        return _over_group(x, obj, lambda item: attribute(x, item, name, name_span, span))
    if isinstance(obj, Values):
        return _collect([(c, attribute(x, v, name, name_span, span))
                              for c, v in obj.runs])
    if isinstance(obj, Namespace):
        symbol = obj.scope.own.get(name)
        if symbol is None:
            fail("E208", f"module `{obj.name}` has no declaration `{name}`", name_span,
                 missing_hint(obj.scope, obj.name, name))
        return x.symbol_value(symbol, name_span)
    if isinstance(obj, Bundle):
        if name == "count":
            return Quantity(float(obj.count))
        if name in ("each", "speed"):
            return obj.item
        if name == "total":
            return obj.total
        fail("E209", f"a bundle has `count`, `each` and `total`, not `{name}`", name_span,
             did_you_mean(name, ("count", "each", "total", "speed")) or
             "`count`: how many; `each`: one's value; `total`: all of them together")
    if isinstance(obj, ListValue) and name == "count":
        return Quantity(float(len(obj.items)))
    fail("E209", f"a {type_name(obj)} has no member `{name}`", name_span,
         "members belong to instances (`rack.power`), modules imported as a namespace "
         "(`hw.H800`), bundles (`count`, `each`, `total`) and lists (`count`)")


def _over_group(x, group: Group, fn):
    """An attribute of every member: a Group again (order kept) when the results are
    instances or groups, else the values as runs."""
    results = {}
    for _, item in group.flat():
        results[id(item)] = fn(item)
    if all(isinstance(v, (Frame, Group)) for v in results.values()):
        return _regroup(group, results)
    return _collect([(c, results[id(item)]) for c, item in group.flat()])


def _collect(pairs):
    merged = []
    for c, v in pairs:
        if isinstance(v, Values):
            merged.extend((c * c2, v2) for c2, v2 in v.runs)
        elif isinstance(v, Group):
            merged.extend((c * c2, v2) for c2, v2 in v.flat())
        else:
            merged.append((c, v))
    return Values(tuple(merged))


def _scope_kinds(scope) -> tuple:
    """The kinds of instance a selection may name a tier's groups by, for its declared `scope`
    (model/tier_groups.py: a `row` tier's groups are rows or blocks): none without a scope,
    nor for a `site` tier, whose one group is the site, the design's root."""
    return (scope_kinds(scope, "site") or ()) if scope in SCOPE_KINDS else ()


def _tiers(fabric: Frame):
    return [n for n, d in fabric.defs.items()
            if isinstance(d.stmt, ast.Decl) and d.stmt.kind.name == "tier"]


def _scope_axes(x, fabric: Frame):
    """The scope kinds of the fabric's tiers: `fabric.pod[2]` names the tiers' groups in pod 2."""
    out = set()
    for name in _tiers(fabric):
        scope = _declared(x, x.host.field(fabric, name), "scope")
        out.update(_scope_kinds(getattr(scope, "name", None)))
    return out


def _declared(x, frame, name: str):
    return x.host.field(frame, name) if isinstance(frame, Frame) and name in frame.defs \
        else None


def _fabric_part(x, sel: FabricSelection, name: str, span: Span):
    if sel.tier is not None and name not in ("rail", "plane"):
        tier = x.host.field(sel.fabric, sel.tier, span)       # `fabric.core.down`
        return attribute(x, tier, name, span, span)
    fabric = sel.fabric
    if name in ("rail", "plane") or (sel.tier is None and name in _scope_axes(x, fabric)):
        taken = sel.scope is not None if name not in ("rail", "plane") else \
            getattr(sel, name) is not None
        if taken or sel.tier is not None:
            fail("E209", f"`{name}` is already selected in `{sel.display}`" if taken else
                 f"select `{name}` before the tier: `{sel.fabric.display}.{name}[...]...."
                 f"{sel.tier}`", span)
        return FabricAxis(sel, name)
    tier = fabric.defs.get(name)
    if tier is None or not isinstance(tier.stmt, ast.Decl) or tier.stmt.kind.name != "tier" \
            or sel.tier is not None:
        fail("E209", f"`{sel.display}` has no tier `{name}`", span,
             did_you_mean(name, _tiers(fabric) + ["rail", "plane"]) or
             "select with `.rail[i]`, `.plane[A]` and a tier name")
    _split_by(x, sel, name, span)
    return FabricSelection(fabric, sel.rail, sel.plane, name, sel.scope)


def _split_by(x, sel: FabricSelection, name: str, span: Span) -> None:
    """E209: a tier selected by rail, plane or scope must be split by it."""
    tier = x.host.field(sel.fabric, name, span)
    per = _declared(x, tier, "per")
    per_names = {getattr(p, "name", None) for p in per.items} if isinstance(per, ListValue) \
        else set()
    scope = getattr(_declared(x, tier, "scope"), "name", None)
    for axis, chosen in (("rail", sel.rail), ("plane", sel.plane)):
        if chosen is not None and axis not in per_names:
            fail("E209", f"tier `{name}` is not split by {axis}: its switches serve every "
                         f"{axis}", span, f"name them all: `{sel.fabric.display}.{name}`")
    if sel.scope is not None and sel.scope[0] not in _scope_kinds(scope):
        fail("E209", f"tier `{name}` has `scope = {scope or 'its owner'}`: its groups are not "
                     f"one per {sel.scope[0]}", span,
             f"write `{sel.fabric.display}.{name}` or select its groups by their {scope}")


def _fabric_index(x, axis: FabricAxis, e: ast.Index, env):
    sel = axis.selection
    value = _label(e, x, env) if axis.axis == "plane" else x.eval(e.selector, env.as_symbols())
    if axis.axis not in ("rail", "plane"):            # a tier's scope instance: `pod[2]`
        i = whole(x, value, e.selector.span, f"a {axis.axis} index")
        if i < 0:
            fail("E214", f"{axis.axis} index {i} is out of range", e.selector.span,
                 f"{axis.axis}s count from 0: a negative index names none")
        return FabricSelection(sel.fabric, sel.rail, sel.plane, sel.tier, (axis.axis, i))
    limit_q = x.host.field(sel.fabric, axis.axis + "s") if axis.axis + "s" in sel.fabric.defs \
        else Quantity(1.0)
    limit = int(limit_q.si) if isinstance(limit_q, Quantity) else 1
    if isinstance(value, Symbol) and axis.axis == "plane" and len(value.name) == 1 \
            and value.name.isupper():
        i = ord(value.name) - ord("A")
    else:
        i = whole(x, value, e.selector.span, f"a {axis.axis} index")
    if not 0 <= i < limit:
        labels = (f"A to {plane_label(limit - 1)}" if axis.axis == "plane" else
                  f"0 to {limit - 1}") if limit > 1 else f"only {plane_label(0)}" \
            if axis.axis == "plane" else "only 0"
        fail("E214", f"{axis.axis} {i if axis.axis == 'rail' else plane_label(i)} is out of "
                     f"range: the fabric has {limit} {axis.axis}{'s' if limit != 1 else ''} "
                     f"({labels})",
             e.selector.span,
             index_hint(i, limit, plane_label(limit - 1) if axis.axis == "plane" else ""))
    return FabricSelection(sel.fabric, i if axis.axis == "rail" else sel.rail,
                           i if axis.axis == "plane" else sel.plane, sel.tier, sel.scope)


def _switch_index(x, sel: FabricSelection, e: ast.Index, env):
    """`...tor[3]`: one switch of the tier group (its count is known to the fabric analysis,
    which checks the index)."""
    if sel.tier is None or sel.switch is not None:
        fail("E303", f"cannot index `{sel.display}`", e.span,
             "index a tier to name one switch: `S.fabric.rail[0].plane[A].tor[3]`")
    i = whole(x, x.eval(e.selector, env), e.selector.span, "a switch index")
    if i < 0:
        fail("E214", f"switch index {i} is out of range", e.selector.span,
             "switches count from 0: a negative index names none")
    return FabricSelection(sel.fabric, sel.rail, sel.plane, sel.tier, sel.scope, i)


def _label(e: ast.Index, x, env):
    """`plane[A]`, `port[b]`: a bare letter is the label itself, whatever else has that name."""
    sel = e.selector
    if isinstance(sel, ast.Name) and len(sel.name) == 1 and sel.name.isalpha():
        return Symbol(sel.name)
    return x.eval(sel, env.as_symbols())


def _port_index(x, axis: PortAxis, e: ast.Index, env):
    value = _label(e, x, env)
    if isinstance(value, Symbol) and len(value.name) == 1 and value.name.islower():
        j = ord(value.name) - ord("a")
    else:
        j = whole(x, value, e.selector.span, "a port index")
    ports_q = _declared(x, axis.nic, "ports")
    ports = int(ports_q.si) if isinstance(ports_q, Quantity) else 1
    if not 0 <= j < ports:
        fail("E214", f"port {port_label(j) if j >= 0 else j} is out of range: "
                     f"`{axis.nic.display}` has {ports} port{'s' if ports != 1 else ''} "
                     f"({'a' if ports == 1 else 'a to ' + port_label(ports - 1)})",
             e.selector.span, index_hint(j, ports, port_label(ports - 1)))
    return NicPort(axis.nic, j)


def eval_index(x, e: ast.Index, env):
    if isinstance(e.obj, ast.Attr):
        owner = x.eval(e.obj.obj, env)
        parts = {id(item): check(_member(x, item, e.obj)) for _, item in owner.flat()} \
            if isinstance(owner, Group) else {}
        if parts and all(isinstance(p, (Frame, Group)) for p in parts.values()):
            # `g.b[i]`: the i-th b of every member of g, as a scenario's path names them
            # (`fail S.pods[*].rows[0].hvdc` is every pod's row 0), not the i-th of their b's
            # put together (docs/language.md, section 10.6)
            return _over_group(x, owner, lambda item: _select(
                x, parts[id(item)], e, env, f"`{e.obj.name.name}` of {_named(item)}"))
        obj = check(_member(x, owner, e.obj))
    else:
        obj = x.eval(e.obj, env)
    return _select(x, obj, e, env)


def _named(item) -> str:
    return f"{item.kind} `{item.display}`" if isinstance(item, Frame) else f"a {type_name(item)}"


def _select(x, obj, e: ast.Index, env, whose: Optional[str] = None):
    """`obj[selector]`: `whose` names the group in E214 (one member's, under `g.b[i]`)."""
    if isinstance(obj, FabricAxis) and not isinstance(e.selector, ast.Wildcard):
        return _fabric_index(x, obj, e, env)
    if isinstance(obj, FabricSelection) and not isinstance(e.selector, ast.Wildcard):
        return _switch_index(x, obj, e, env)
    if isinstance(obj, PortAxis) and not isinstance(e.selector, ast.Wildcard):
        return _port_index(x, obj, e, env)
    if isinstance(e.selector, ast.Wildcard):
        if isinstance(obj, (Group, ListValue)):
            return obj
        fail("E303", f"`[*]` selects from a group, not from a {type_name(obj)}", e.span,
             "`[*]` follows a group of instances, e.g. `racks[*].power`")
    sel = x.eval(e.selector, env)
    if isinstance(obj, Group):
        size = obj.count
        if isinstance(sel, RangeValue):
            if sel.start < 0 or sel.stop > size or sel.start >= sel.stop:
                fail("E214", f"range {sel} is outside the group of {size} (members "
                             f"0..{size - 1})" if whose is None else
                             f"range {sel} is outside {whose}: it has {size} (members "
                             f"0..{size - 1})", e.selector.span, range_hint(sel, size))
            return obj.slice(sel.start, sel.stop)
        i = whole(x, sel, e.selector.span, "an index")
        if not 0 <= i < size:
            fail("E214", f"index {shown_index(i)} is out of range: {whose or 'the group'} has "
                         f"{size} (indices 0 to {size - 1})", e.selector.span,
                 index_hint(i, size))
        return obj.at(i)
    if isinstance(obj, ListValue):
        i = whole(x, sel, e.selector.span, "an index")
        if not 0 <= i < len(obj.items):
            fail("E214", f"index {shown_index(i)} is out of range: the list has "
                         f"{len(obj.items)} items",
                 e.selector.span, index_hint(i, len(obj.items)))
        return obj.items[i]
    fail("E303", f"cannot index a {type_name(obj)}", e.span,
         "index a group of instances or a list: `racks[3]`, `racks[0..7]`")


def _regroup(group: Group, results) -> Group:
    """Replace each leaf of `group` by its result (an instance or a group), keeping order."""
    runs = []
    for run in group.runs:
        if isinstance(run.item, Group):
            runs.append(Run(run.count, _regroup(run.item, results)))
            continue
        value = results[id(run.item)]
        if isinstance(value, Group):
            runs.extend(value.repeat(run.count).runs)
        else:
            runs.append(Run(run.count, value))
    return Group(tuple(runs))
