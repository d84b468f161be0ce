"""What each feeder and cooling unit supplies.

A feeder supplies what its `serves` names and the racks that name it in their `feeds`; a loop
cools what its `serves` names and the racks that name it in their `loop`; without either, a loop
or an air unit cools the instance it is declared in. A rack that names a unit whose `serves`
does not hold the rack is an error (E629 for `feeds`, E648 for `loop`): the two declarations
contradict each other and neither may silently win.

Replication stays symbolic: a rack instance shared by R_r replicas that names a unit shared by
R_u replicas puts R_r / R_u racks on each replica of the unit."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of

Parts = List[Tuple[float, Instance]]

# the rack field that names a unit of each kind, and the code for a contradiction
_NAMING = {"feeder": ("feeds", "E629"), "loop": ("loop", "E648")}


def _count(n: float) -> float:
    return int(n) if float(n).is_integer() else n


class Served:
    """`of(unit)` -> [(count per replica of the unit, part)]; `diagnostics` the contradictions."""

    def __init__(self, design: Design, mult, resolve, cache: Dict):
        self.resolve = resolve
        self.cache = cache
        self.owner: Dict[int, Instance] = {}
        self.replicas: Dict[int, int] = {}
        for m, inst in mult.values():
            self.replicas[id(inst)] = m
            for member in inst.members:
                if isinstance(member.value, Instance):
                    self.owner.setdefault(id(member.value), inst)
        self.naming: Dict[int, List[Tuple[int, Instance]]] = {}   # unit -> (replicas, rack)
        for m, rack in mult.values():
            if rack.kind != "rack":
                continue
            for kind, (field, _) in _NAMING.items():
                for _, unit in resolve.group(rack.field(field)):
                    if unit.kind == kind:
                        self.naming.setdefault(id(unit), []).append((m, rack))
        self.diagnostics: List[Diagnostic] = []
        self._memo: Dict[int, Parts] = {}

    def owner_of(self, unit: Instance) -> Optional[Instance]:
        return self.owner.get(id(unit))

    def of(self, unit: Instance) -> Parts:
        hit = self._memo.get(id(unit))
        if hit is not None:
            return hit
        has_serves = unit.field("serves") is not None       # `serves = []` serves nothing
        declared = self.resolve.group(unit.field("serves"))
        named = self._named(unit)
        field, code = _NAMING.get(unit.kind, (None, None))
        if has_serves and named:
            for _, rack in named:
                if not any(self._holds(part, rack) for _, part in declared):
                    self.diagnostics.append(Diagnostic(
                        code, Severity.ERROR,
                        f"rack `{rack.path}` names {unit.kind} `{unit.path}` in `{field}`, but "
                        f"`{unit.path}` serves {_names(declared)}, which does not hold the rack",
                        rack.span_of(field),
                        f"add the rack to `serves` of `{unit.path}`, or drop `serves` there so "
                        f"that the racks naming it decide"))
            parts = declared
        elif has_serves:
            parts = declared
        elif named:
            parts = named
        elif unit.kind in ("loop", "air"):
            owner = self.owner_of(unit)
            while owner is not None and owner.level is None:     # inside a `cooling` system
                owner = self.owner_of(owner)
            parts = [(1, owner)] if owner is not None else []
        else:
            parts = []
        self._memo[id(unit)] = parts
        return parts

    def _named(self, unit: Instance) -> Parts:
        racks = self.naming.get(id(unit), [])
        per = max(self.replicas.get(id(unit), 1), 1)
        merged: Dict[int, List] = {}
        for m, rack in racks:
            slot = merged.setdefault(id(rack), [0, rack])
            slot[0] += m
        return [(_count(m / per), rack) for m, rack in merged.values()]

    def _holds(self, part: Instance, rack: Instance) -> bool:
        return part is rack or any(r is rack for _, r in group_of(part, ("rack",),
                                                                   self.cache).flat())


def _names(parts: Parts) -> str:
    shown = ", ".join(f"`{p.path}`" for _, p in parts[:3])
    return shown + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")
