"""Declared data the other analyses would otherwise ignore or silently take as zero.

- W690: a part that declares no `power` and holds nothing that does counts as 0 W;
- E630: a field that no analysis uses where it is written (a host's `idle_power`, `units` above
  a rack, AC-only fields on a DC feeder) is an error, not a silent no-op;
- E631: a feeder whose `current` (dc/ac) differs from its standard's;
- E632: a rack whose contents, in rack units, are taller than the rack's declared `units`."""
from __future__ import annotations

from typing import Dict, List, Tuple

from astral_dsl.analyses.field_reading import error, warning
from astral_dsl.diagnostics import Diagnostic, own_part
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity, format_number, readable

_WATTS = Quantity.of(1, "W").dims


def has_power(inst: Instance) -> bool:
    """The part declares its `power` (what it holds is then not counted apart)."""
    p = inst.declared("power") if hasattr(inst, "declared") else inst.field("power")
    return isinstance(p, Quantity) and p.dims == _WATTS


def undeclared_power(design: Design) -> List[Diagnostic]:
    """W690 for every part that declares no power and holds nothing with power, counted by its
    replicas in the sites (through parents that declare no power either)."""
    memo: Dict[int, Dict[int, Tuple[float, Instance]]] = {}

    def zeros(inst: Instance) -> Dict[int, Tuple[float, Instance]]:
        hit = memo.get(id(inst))
        if hit is not None:
            return hit
        out: Dict[int, Tuple[float, Instance]] = {}
        if not has_power(inst):
            children = inst.containment()
            if not children:
                out[id(inst)] = (1, inst)
            for c, child in children:
                for key, (n, leaf) in zeros(child).items():
                    prev = out.get(key, (0, leaf))[0]
                    out[key] = (prev + c * n, leaf)
        memo[id(inst)] = out
        return out

    total: Dict[Tuple[str, str], List] = {}
    for root in design.roots:
        for n, leaf in zeros(root).values():
            slot = total.setdefault((leaf.kind, leaf.template or leaf.path), [0, leaf])
            slot[0] += n
    out = []
    for (kind, name), (n, leaf) in sorted(total.items()):
        out.append(warning("W690", f"{kind} `{name}` declares no `power`: its "
                                   f"{readable.grouped(n)} replica(s) count as 0 W in the IT "
                                   f"load", leaf.span,
                           _power_hint(kind, name, leaf)))
    return out


def _power_hint(kind: str, name: str, leaf: Instance) -> str:
    """Declare the power on the part; but a stdlib part (Instance.used_at: brought in from a
    stdlib template) is not the user's to edit: a part of their own that states it."""
    if leaf.used_at is None:
        return f"declare `power` on `{name}` (its data sheet figure), or on the part that holds it"
    return (f"`{name}` is the stdlib's, not yours to edit: use a {kind} of your own that states "
            f"it (its data sheet figure), `{own_part(kind, name, 'power')}`, or declare "
            f"`power` on the part that holds it")


_AC_ONLY = ("phases", "power_factor", "reactance")
_ABOVE_RACK = ("row", "block", "pod", "hall", "site")


def unused_fields(design: Design, mult) -> List[Diagnostic]:
    """E630, E631 and E632 over every distinct instance the sites hold."""
    out: List[Diagnostic] = []
    by_path = {i.path: i for i in design.instances}
    for _, inst in mult.values():
        if inst.kind == "host" and inst.field("idle_power") is not None:
            out.append(error("E630", f"`idle_power` of `{inst.path}` is not used by any analysis: "
                                     f"the average draw is `utilization` x the peak `power`",
                             inst.span_of("idle_power"),
                             "remove it, and declare `utilization` (average over peak) on the "
                             "site or the part"))
        elif inst.kind in _ABOVE_RACK and inst.field("units") is not None:
            out.append(error("E630", f"`units` of {inst.kind} `{inst.path}` is not used: only a "
                                     f"rack's height (in rack units) is checked",
                             inst.span_of("units"), "declare `units` on the racks instead"))
        elif inst.kind == "feeder":
            out.extend(_feeder_fields(inst, by_path))
        elif inst.kind == "rack":
            out.extend(_rack_space(inst))
    return out


def _feeder_fields(inst: Instance, by_path) -> List[Diagnostic]:
    out = []
    current = inst.field("current")
    kind = current.name if isinstance(current, Symbol) else None
    if kind == "dc":
        for name in _AC_ONLY:
            if inst.field(name) is not None:
                out.append(error("E630", f"`{name}` of DC feeder `{inst.path}` is not used: it "
                                         f"applies to AC feeders only", inst.span_of(name),
                                 "remove it, or make the feeder `current = ac`"))
    std_ref = inst.field("standard")
    std = by_path.get(getattr(std_ref, "path", None)) if std_ref is not None else None
    std_kind = std.field("current") if std is not None else None
    std_kind = std_kind.name if isinstance(std_kind, Symbol) else None
    if kind and std_kind and kind != std_kind:
        out.append(error("E631", f"feeder `{inst.path}` is `{kind}` but its standard "
                                 f"`{std.path}` is `{std_kind}`", inst.span_of("standard"),
                         f"choose a {kind.upper()} standard, or make the feeder "
                         f"`current = {std_kind}`"))
    return out


def _rack_space(rack: Instance) -> List[Diagnostic]:
    height = rack.field("units")
    if not isinstance(height, Quantity):
        return []
    used = 0.0
    for c, child in rack.containment():
        u = child.field("units")
        if isinstance(u, Quantity):
            used += c * u.si
    if used > height.si * (1 + 1e-9):
        ru = Quantity.of(1, "U").si
        return [error("E632", f"rack `{rack.path}` holds {format_number(round(used / ru, 2))} U "
                              f"of equipment but is {format_number(round(height.si / ru, 2))} U "
                              f"tall", rack.span_of("units"),
                      "use fewer or shorter parts, or a taller rack")]
    return []
