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
    """`per_replica(inst)`: the average draw of one replica of `inst`; `served_heat(owner,
    parts)` the average draw and cold-plate heat of what a unit serves (its heat to air is the
    difference); `unstated_w`: the peak
    power of the parts with no utilization stated at any level (counted at their peak)."""

    def __init__(self, design: Design, mult, cache: Dict):
        self.cache = cache
        self._memo: Dict[Tuple[int, Optional[float]], Tuple[float, float, float]] = {}
        self._inside_memo: Dict[Tuple, Dict[int, Dict[Optional[float], float]]] = {}
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
        feeder, loop or air unit declared there serves) where the owner's replicas sit."""
        return self.served_heat(owner, served)[0]

    def served_heat(self, owner: Optional[Instance], served, contexts=None
                    ) -> Tuple[float, float]:
        """(average draw, average cold-plate heat) of `served` for one replica of `owner` (the
        part a feeder, loop or air unit is declared in). A part inside the owner whose template
        sits under several utilizations (a rack in a row at 90 % and in one at 50 %) takes the
        utilization in force where it sits inside the owner: each row's feeder, loop and air
        unit carries its own row's average, not the mean of every place the rack sits
        (per_replica), which pools the rows (totals right, the split between them wrong). Any
        other part, per_replica. `contexts` ({utilization in force at the owner: replicas}):
        of the owner's replicas there only (its own elsewhere, analyses/circuits.py)."""
        mixed = frozenset(id(p) for _, p in served if len(self.inherited.get(id(p), {})) > 1 or
                          contexts is not None)
        if contexts is None:
            contexts = self.inherited.get(id(owner), {}) if owner is not None and mixed else {}
        elif owner is None:
            contexts = {}
        own = own_utilization(owner) if contexts else None
        places = [(n, self._inside(owner, own if own is not None else u, mixed))
                  for u, n in contexts.items()]      # the owner's replicas, where they sit
        total = sum(n for n, _ in places)
        draw = liquid = 0.0
        for c, p in served:
            found = [(n, inside[id(p)]) for n, inside in places if inside.get(id(p))]
            if p is owner and places:        # a unit that cools the part it is declared in
                found = [(n, {u: 1.0}) for u, n in contexts.items()]
            if not found:          # not held by the owner, or under one utilization only
                draw += c * self.per_replica(p)
                liquid += c * self.liquid_per_replica(p)
                continue
            for n, where in found:
                k = sum(where.values())
                for u, m in where.items():
                    one = self._walk(p, u)
                    draw += c * n / total * m / k * one[0]
                    liquid += c * n / total * m / k * one[1]
        return draw, liquid

    def places(self, owner: Optional[Instance]) -> Tuple[Optional[float], ...]:
        """The utilizations in force at `owner` where its replicas sit, when they differ (a row
        template in a hall at 90 % and one at 50 %), none first; () when they do not."""
        own = own_utilization(owner) if owner is not None else None
        us = {own if own is not None else u for u in self.inherited.get(id(owner), {})}
        if own is not None or len(us) < 2:
            return ()
        return tuple(sorted(us, key=lambda u: (u is not None, u or 0.0)))

    def _inside(self, owner: Instance, u: Optional[float], targets: frozenset
                ) -> Dict[int, Dict[Optional[float], float]]:
        """Where the `targets` (ids) sit inside one replica of `owner` under the utilization
        `u` in force there: id -> {the utilization of their parent there: count}."""
        key = (id(owner), u, targets)
        hit = self._inside_memo.get(key)
        if hit is None:
            hit = {}
            for c, child in owner.containment():
                if id(child) in targets:
                    slot = hit.setdefault(id(child), {})
                    slot[u] = slot.get(u, 0.0) + c
                own = own_utilization(child)
                for k, where in self._inside(child, own if own is not None else u,
                                             targets).items():
                    slot = hit.setdefault(k, {})
                    for v, m in where.items():
                        slot[v] = slot.get(v, 0.0) + c * m
            self._inside_memo[key] = hit
        return hit

    def liquid_per_replica(self, inst: Instance) -> float:
        """The average heat one replica of `inst` sends to cold plates."""
        return self._total(inst, 1) / max(self.replicas.get(id(inst), 1), 1)

    def ratio(self, parts) -> float:
        """Average over peak of [(count, part)]: 1 when they draw nothing."""
        peak = sum(c * power_of(p, self.cache).si for c, p in parts)
        return sum(c * self.per_replica(p) for c, p in parts) / peak if peak else 1.0


_WATTS = Quantity.of(1, "W").dims
