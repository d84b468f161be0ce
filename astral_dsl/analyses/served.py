"""What each feeder and cooling unit supplies.

A feeder supplies what its `serves` names and the racks that name it in their `feeds`; a loop
cools what its `serves` names and the racks that name it in their `loop`; without either, a loop
or an air unit cools the instance it is declared in. A rack that names a unit whose `serves`
does not hold the rack is an error (E629 for `feeds`, E648 for `loop`): the two declarations
contradict each other and neither may silently win.

A unit declared with `network = true` (a feeder, a loop or an air unit) also supplies or cools
the switches of the fabrics attached at or below its physical owner (`network(unit)`): a feeder
their whole draw, a loop the share their switches' cold plates take (the switch model's
`liquid_share` of its own power; optics stay on air), an air unit the rest. Fabric power that no
such unit covers is reported by the analyses (`uncovered`: W628 for feeders, W647 for cooling).

Replication stays symbolic: a rack instance shared by R_r replicas that names a unit shared by
R_u replicas puts R_r / R_u racks on each replica of the unit; a fabric attached to an instance
held N times inside a unit's owner counts N times there."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of

Parts = List[Tuple[float, Instance]]

# the rack field that names a unit of each kind, and the code for a contradiction
_NAMING = {"feeder": ("feeds", "E629"), "loop": ("loop", "E648")}


# the kinds a fabric can be attached to, and hold instances that can (network.fabric_counts)
_HOLDERS = frozenset(("site", "hall", "pod", "row", "block"))


def _count(n: float) -> float:
    return int(n) if float(n).is_integer() else n


class Served:
    """`of(unit)` -> [(count per replica of the unit, part)]; `diagnostics` the contradictions."""

    def __init__(self, design: Design, mult, resolve, cache: Dict, fabrics=()):
        self.resolve = resolve
        self.mult = mult           # the analyses given this Served walk the design no more
        self.fabrics = tuple(fabrics)
        # per instance: how many replicas of each fabric's owner one replica holds (id -> n)
        self._owners_held: Dict[int, Dict[int, float]] = {}
        self._owners = {id(o) for o in (self._fabric_owner(f) for f in self.fabrics)
                        if o is not None}
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

    def physical_owner(self, unit: Instance) -> Optional[Instance]:
        """The part a unit is declared in, through `power` and `cooling` systems."""
        owner = self.owner_of(unit)
        while owner is not None and owner.level is None:
            owner = self.owner_of(owner)
        return owner

    # -- the fabrics' switches as a load ----------------------------------------------------------
    def _occurrences(self, node: Instance, target: Instance) -> float:
        """How many replicas of `target` (a fabric's owner) one replica of `node` holds
        (itself: 1)."""
        return self._held(node).get(id(target), 0.0)

    def _held(self, node: Instance) -> Dict[int, float]:
        """The fabrics' owners one replica of `node` holds, counted: one walk of the design for
        every fabric (a walk per fabric was O(fabrics x parts): 10 s of a 1 MB design with a
        fabric in each of its 600 pods)."""
        key = id(node)
        hit = self._owners_held.get(key)
        if hit is None:
            hit = {key: 1.0} if key in self._owners else {}
            if node.kind in _HOLDERS:
                for c, child in node.containment():
                    for k, n in self._held(child).items():
                        hit[k] = hit.get(k, 0.0) + c * n
            self._owners_held[key] = hit
        return hit

    def fabric_split(self, fabric) -> Tuple[float, float]:
        """(whole draw, cold-plate share) of one replica of a fabric (analyses.network's
        FabricCount): the liquid share of each tier's switch model applies to the switches'
        own power, not to their optics."""
        liquid = 0.0
        for t in fabric.tiers:
            switch = self.resolve.by_path.get(t.switch)
            share = switch.field("liquid_share") if switch is not None else None
            if hasattr(share, "si") and t.switch_w:
                liquid += t.switches * t.switch_w * share.si
        n = max(fabric.instances, 1)
        return fabric.power_w / n, liquid / n

    def network(self, unit: Instance) -> Tuple[float, float]:
        """(switch power, their cold-plate heat) that one replica of `unit` (with
        `network = true`) supplies or cools: the fabrics attached at or below its owner."""
        if unit.field("network") is not True:
            return 0.0, 0.0
        owner = self.physical_owner(unit)
        power = liquid = 0.0
        for f in self.fabrics:
            inside = self._fabric_owner(f)
            n = self._occurrences(owner, inside) if owner is not None and inside is not None \
                else 0.0
            if n:
                w, q = self.fabric_split(f)
                power, liquid = power + n * w, liquid + n * q
        return power, liquid

    def _fabric_owner(self, fabric) -> Optional[Instance]:
        return self.resolve.by_path.get(fabric.owner)

    def uncovered(self, units) -> List[Tuple[object, float]]:
        """[(fabric, share of its replicas no unit covers)] for `units`, the
        [(replicas, unit)] with `network = true` of one kind: per side (A/B), the best side
        counts, as for racks and their feeders."""
        out = []
        mine = []                           # the units with `network = true`, read once
        for replicas, unit in units:
            owner = self.physical_owner(unit) if unit.field("network") is True else None
            if owner is not None:
                mine.append((replicas, owner, getattr(unit.field("side"), "name", None)))
        for f in self.fabrics:
            inside = self._fabric_owner(f)
            sides: Dict[Optional[str], float] = {}
            for replicas, owner, side in mine if inside is not None else ():
                sides[side] = sides.get(side, 0.0) + replicas * self._occurrences(owner, inside)
            covered = max(sides.values(), default=0.0)
            n = max(f.instances, 1)
            if covered < n - 1e-9:
                out.append((f, (n - covered) / n))
        return out

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
