"""Average load over the year: `utilization` (average over peak) declared on a rack, row, block,
pod, hall or site applies to every part inside it that does not declare its own, so a rack at
50 % in a site at 75 % draws half its peak and the rest three quarters. Switches (a `switch` part
or the fabric's, analyses/network.py) draw near their rating whatever the job runs: they count at
full power. A part with no utilization stated anywhere above it counts at its peak, and how much
peak power that is goes into W627 (analyses/power.py).

Replication stays symbolic: for every distinct instance, the utilizations in force where its
replicas sit, with how many replicas sit under each (parents are visited before children)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from astral_dsl.analyses.loops import liquid_heat
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import power_of
from astral_dsl.units import Quantity


def own_utilization(inst: Instance) -> Optional[float]:
    u = inst.field("utilization")
    return u.si if isinstance(u, Quantity) else None


class Averages:
    """`per_replica(inst)`: the average draw of one replica of `inst`; `air_per_replica(inst)`
    its average heat to air (the draw less what its cold plates take); `unstated_w`: the peak
    power of the parts with no utilization stated at any level (counted at their peak)."""

    def __init__(self, design: Design, mult, cache: Dict):
        self.cache = cache
        self._memo: Dict[Tuple[int, Optional[float]], Tuple[float, float, float]] = {}
        self.inherited: Dict[int, Dict[Optional[float], float]] = {}
        self.replicas: Dict[int, int] = {}
        for root in design.roots:
            self.inherited.setdefault(id(root), {})[None] = 1.0
        for m, inst in mult.values():          # parents before children
            self.replicas[id(inst)] = m
            own = own_utilization(inst)
            for u_in, n in list(self.inherited.get(id(inst), {}).items()):
                u = own if own is not None else u_in
                for c, child in inst.containment():
                    slot = self.inherited.setdefault(id(child), {})
                    slot[u] = slot.get(u, 0.0) + n * c
        # per site: (site, its average draw, its peak with no utilization stated)
        self.sites = tuple((r, self._walk(r, None)[0], self._walk(r, None)[2])
                           for r in design.roots)
        self.unstated_w = sum(z for _, _, z in self.sites)
        self.site_average_w = sum(a for _, a, _ in self.sites)

    def _walk(self, inst: Instance, u_in: Optional[float]) -> Tuple[float, float, float]:
        """(average draw, average cold-plate heat, peak draw with no utilization stated) of one
        replica of `inst` under the utilization `u_in` of its parent."""
        own = own_utilization(inst)
        u = own if own is not None else u_in
        key = (id(inst), u)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        declared = inst.declared("power")
        share = inst.field("liquid_share")
        if isinstance(declared, Quantity) and declared.dims == _WATTS or not inst.containment():
            peak = power_of(inst, self.cache).si
            scale = 1.0 if inst.kind == "switch" or u is None else u
            unstated = peak if u is None and inst.kind != "switch" else 0.0
            avg = peak * scale
            liquid = liquid_heat(inst, self.cache) * scale
        else:
            avg = liquid = unstated = 0.0
            for c, child in inst.containment():
                a, q, z = self._walk(child, u)
                avg, liquid, unstated = avg + c * a, liquid + c * q, unstated + c * z
        if isinstance(share, Quantity):      # the declared share of its own average
            liquid = avg * share.si
        out = (avg, liquid, unstated)
        self._memo[key] = out
        return out

    def _total(self, inst: Instance, index: int) -> float:
        return sum(n * self._walk(inst, u)[index]
                   for u, n in self.inherited.get(id(inst), {None: 1.0}).items())

    def per_replica(self, inst: Instance) -> float:
        return self._total(inst, 0) / max(self.replicas.get(id(inst), 1), 1)

    def served_per_replica(self, owner: Optional[Instance], served) -> float:
        """The average draw of `served` ([(count, part)] for one replica of `owner`: what a
        feeder declared there serves) where the owner's replicas sit. A part of the owner's own
        whose template sits under several utilizations (a rack in a row at 90 % and in one at
        50 %) takes the owner's: each row's feeder carries its own row's average, not the mean
        of every place the rack sits (per_replica). Any other part, per_replica."""
        contexts = self.inherited.get(id(owner), {}) if owner is not None else {}
        children = {id(child) for _, child in owner.containment()} if contexts else set()
        mixed = {id(p) for _, p in served if id(p) in children and
                 len(self.inherited.get(id(p), {})) > 1}
        if not mixed:
            return sum(c * self.per_replica(p) for c, p in served)
        own = own_utilization(owner)
        total = sum(contexts.values())
        return sum(c * self.per_replica(p) for c, p in served if id(p) not in mixed) + \
            sum(n * sum(c * self._walk(p, own if own is not None else u)[0]
                        for c, p in served if id(p) in mixed)
                for u, n in contexts.items()) / total

    def liquid_per_replica(self, inst: Instance) -> float:
        """The average heat one replica of `inst` sends to cold plates."""
        return self._total(inst, 1) / max(self.replicas.get(id(inst), 1), 1)

    def air_per_replica(self, inst: Instance) -> float:
        return (self._total(inst, 0) - self._total(inst, 1)) / max(self.replicas.get(id(inst), 1),
                                                                   1)

    def ratio(self, parts) -> float:
        """Average over peak of [(count, part)]: 1 when they draw nothing."""
        peak = sum(c * power_of(p, self.cache).si for c, p in parts)
        return sum(c * self.per_replica(p) for c, p in parts) / peak if peak else 1.0


_WATTS = Quantity.of(1, "W").dims
