"""Where the parts of one fabric lie in one replica of its owner, on the symbolic design (hosts
are intervals of host numbers, host_positions.py), for failed_fabric.py's builder: the hosts,
NICs and ports the owner holds, where the NIC ports land on the first tier (fabric_names.wiring),
the rails and planes of each tier, the scope instances of a tier's groups, and the fabric
selections a scenario names resolved to a tier, an area and a switch (E214/E219 when they name
nothing of the fabric)."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from astral_dsl.analyses.failed_links import Bad
from astral_dsl.analyses.fabric_names import TierKey, host_runs, ports_on, wiring
from astral_dsl.analyses.host_positions import Interval, Positions, TooMany
from astral_dsl.analyses.network import _LEVEL, _hosts
from astral_dsl.analyses.network_records import FabricCount, TierCount
from astral_dsl.model.design import Instance
from astral_dsl.model.tier_groups import example_group, scope_kinds
from astral_dsl.model.values import FabricSelection, plane_label


class FabricLayout:
    """One fabric on one replica of its owner: where its hosts, ports and switches are."""

    def __init__(self, fc: FabricCount, owner: Instance, cache):
        self.fc, self.owner, self.cache = fc, owner, cache
        self.pos = Positions(owner, cache)
        self.hosts = _hosts(owner, cache)
        self.nics = max((k[1] for k in self.hosts.kinds if k[0]), default=0)
        self.ports_per_nic = max(1, self.hosts.ports_per_nic)
        self.rails_used = min(fc.rails, self.nics) if self.nics else fc.rails
        self.planes_used = min(fc.planes, self.ports_per_nic)
        self.tiers: Tuple[TierCount, ...] = fc.tiers
        # where the NIC ports land (fabric_names.wiring), for the hosts with the most NICs
        # (the owner's hosts in runs of alike hosts when they differ: fabric_names.host_runs)
        layout = max(self.hosts.layouts, key=len, default=())
        t0 = fc.tiers[0] if fc.tiers else None
        self.wire = (fc.rails, fc.planes, t0 is not None and "rail" in t0.per,
                     t0 is not None and "plane" in t0.per)
        self.places = wiring(layout, *self.wire)
        self.runs = host_runs(owner, self.wire, cache)

    # -- tiers and where their switches are -----------------------------------------------------
    def kinds(self, t: TierCount) -> Optional[Tuple[str, ...]]:
        return scope_kinds(t.scope, self.owner.kind)

    def rails_of(self, t: TierCount, rail: Optional[int]) -> List[Optional[int]]:
        if "rail" not in t.per:
            return [None]
        return [rail] if rail is not None else list(range(self.rails_used))

    def planes_of(self, t: TierCount, plane: Optional[int]) -> List[Optional[int]]:
        if "plane" not in t.per:
            return [None]
        return [plane] if plane is not None else list(range(self.planes_used))

    def tor_ports(self, area: Interval, index: int, rails: Sequence[Optional[int]],
                  planes: Sequence[Optional[int]]) -> List[Tuple[Interval, int, int]]:
        """(hosts, NIC, port) of the ports on `rails` and `planes` that land on first-tier
        switch `index` of the group whose scope instance is `area` (fabric_names.ports_on)."""
        return ports_on(area, index, self.tiers[0].down_ports, rails, planes, self.places,
                        self.runs, self.wire)

    def scope_areas(self, t: TierCount, area: Interval) -> List[Interval]:
        """The scope instances of tier t's groups inside `area`."""
        kinds = self.kinds(t)
        if kinds is None:
            return [(0, self.pos.total)]
        out = []
        found = self.pos.scope_at(kinds, area[0]) if area[1] > area[0] else None
        while found is not None and found[1][0] < area[1]:
            index, iv = found
            out.append(iv)
            if len(out) > (1 << 16):
                raise TooMany()
            nxt = self.pos.scope(kinds, index + 1)
            found = (index + 1, nxt) if nxt is not None else None
        return out

    def within(self, t: TierCount, kind: str) -> bool:
        """Tier t's groups lie inside one instance of `kind` (its scope is that or finer)."""
        return self.kinds(t) is not None and _LEVEL.get(t.scope, 9) <= _LEVEL.get(kind, 9)

    def nics_on(self, rails: Sequence[Optional[int]]) -> List[int]:
        if list(rails) == [None]:
            return list(range(self.nics))
        return [k for k in range(self.nics) if k % max(1, self.fc.rails) in rails]

    def ports_on(self, planes: Sequence[Optional[int]]) -> List[int]:
        if list(planes) == [None]:
            return list(range(self.ports_per_nic))
        return [j for j in range(self.ports_per_nic) if j % max(1, self.fc.planes) in planes]

    # -- fabric selections ----------------------------------------------------------------------
    def tier_index(self, sel: FabricSelection) -> int:
        names = [t.name for t in self.tiers]
        if sel.tier not in names:
            raise Bad("E219", f"`{sel.display}`: the fabric has no tier `{sel.tier}`")
        return names.index(sel.tier)

    def area_of(self, sel: FabricSelection) -> Interval:
        for axis, given, used in (("rail", sel.rail, self.rails_used),
                                  ("plane", sel.plane, self.planes_used)):
            if given is not None and given >= used:    # declared, but no NIC port reaches it
                what = f"{used} NIC{'s' if used != 1 else ''}" if axis == "rail" else \
                    f"NICs of {used} port{'s' if used != 1 else ''}"
                shown = given if axis == "rail" else plane_label(given)
                raise Bad("E219", f"`{sel.display}` names no switch: no NIC port reaches "
                                  f"{axis} {shown} (the hosts have {what}: W610)",
                          f"name {self._axis_range(axis, used)}")
        if sel.scope is None:
            return (0, self.pos.total)
        kind, index = sel.scope
        iv = self.pos.scope((kind,), index)
        if iv is None:
            n = self.pos.count((kind,))
            raise Bad("E214", f"`{sel.display}`: {kind} {index} is out of range: "
                              f"`{self.owner.path}` holds {n:,} {kind}s"
                              + (f" (0 to {n - 1:,})" if n else ""))
        return iv

    @staticmethod
    def _axis_range(axis: str, used: int) -> str:
        if axis == "rail":
            return f"a rail from 0 to {used - 1}" if used > 1 else "rail 0"
        return f"a plane from A to {plane_label(used - 1)}" if used > 1 else "plane A"

    def one_switch(self, sel: FabricSelection, i: int) -> None:
        """A switch index needs its group named in full, and must lie in it."""
        t = self.tiers[i]
        missing = [axis for axis, given in (("rail", sel.rail), ("plane", sel.plane))
                   if axis in t.per and given is None]
        if self.kinds(t) is not None and sel.scope is None:
            missing.insert(0, t.scope)
        if missing:
            key = TierKey(self.fc.fabric, t.name, *example_group(
                t.scope, self.owner.kind, t.per, sel.scope, sel.rail, sel.plane))
            raise Bad("E219", f"`{sel.display}` names a switch of every `{t.name}` group: "
                              f"name its {', '.join(missing)} too",
                      f"e.g. `{key.switch(sel.switch)}` (`astral forecast FILE --ranks "
                      f"ranks.json` writes the stable names)")
        kinds = self.kinds(t)
        size = t.per_group if not t.sizes and not t.by_group else t.size(
            sel.scope[1] if sel.scope and kinds and sel.scope[0] in kinds else
            self.scope_index(t, self.area_of(sel)), sel.rail, sel.plane)
        if sel.switch >= size:
            each = "each" if not t.sizes and not t.by_group else "the"
            raise Bad("E214", f"`{sel.display}`: switch {sel.switch:,} is out of range: {each} "
                              f"`{t.name}` group has {size:,} switch{'es' if size != 1 else ''}"
                              + (f" (0 to {size - 1:,})" if size else "")
                              + (f"; the largest has {t.per_group:,}"
                                 if size < t.per_group else ""))

    def scope_index(self, t: TierCount, area: Interval) -> Optional[int]:
        """The index in the owner of tier t's scope instance that holds `area` (None: the
        tier's group is the owner)."""
        kinds = self.kinds(t)
        found = self.pos.scope_at(kinds, area[0]) if kinds is not None else None
        return found[0] if found is not None else None


    def lower_keys(self, i: int, rails, planes):
        """The (rails, planes) of tier i-1's groups under the groups of tier i named."""
        t, lower = self.tiers[i], self.tiers[i - 1]
        lrails = (rails if "rail" in t.per else self.rails_of(lower, None)) \
            if "rail" in lower.per else [None]
        lplanes = (planes if "plane" in t.per else self.planes_of(lower, None)) \
            if "plane" in lower.per else [None]
        return lrails, lplanes



__all__ = ["FabricLayout"]
