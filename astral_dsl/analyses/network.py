"""Deriving the switch fabric from the declared hosts, rails, planes and tiers.

Tier 1 serves the NIC ports of the hosts in each scope (pod, row, ...): with R rails and P planes,
NIC k of a host is on rail k mod R and its port j on plane j mod P. Every higher tier serves the
uplinks of the tier below within its own scope. Switch count per group =
ceil(links to serve / downlinks per switch): rounding is always up, per group."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Bundle, Group, ListValue, Symbol

_SCOPE_KINDS = {"rack": ("rack",), "row": ("row", "block"), "block": ("row", "block"),
                "pod": ("pod",), "hall": ("hall",), "site": ("site",)}


@attrs.frozen
class TierCount:
    name: str
    switch: str
    scope: str
    groups: int            # scope instances x rails x planes this tier is replicated over
    per_group: int         # switches per group
    switches: int
    down_links: int        # links this tier serves from below (all groups)
    up_links: int


@attrs.frozen
class FabricCount:
    owner: str
    fabric: str
    tiers: Tuple[TierCount, ...]

    @property
    def switches(self) -> int:
        return sum(t.switches for t in self.tiers)


def _fabrics(inst: Instance):
    for m in inst.members:
        if isinstance(m.value, Instance) and m.value.kind == "fabric":
            yield m.value


def _tiers(fabric: Instance) -> List[Instance]:
    return [m.value for m in fabric.members if isinstance(m.value, Instance)
            and m.value.kind == "tier"]


def _int(q, default: int) -> int:
    return int(q.si) if q is not None else default


def _nic_ports(host: Instance, cache) -> int:
    total = 0
    for count, nic in group_of(host, ("nic",), cache).flat():
        total += count * _int(nic.field("ports"), 1)
    return total


def fabric_counts(design: Design, cache: Optional[Dict] = None) -> List[FabricCount]:
    """Switch counts for every fabric attached to a site or grouping instance."""
    cache = {} if cache is None else cache
    out: List[FabricCount] = []
    for root in design.roots:
        stack = [(root, 1)]
        seen = set()
        while stack:
            inst, mult = stack.pop()
            for fabric in _fabrics(inst):
                out.append(_count(inst, fabric, mult, cache))
            if id(inst) in seen:
                continue
            seen.add(id(inst))
            if inst.kind in ("site", "hall", "pod", "row", "block"):
                for count, child in inst.containment():
                    if child.kind in ("hall", "pod", "row", "block", "rack"):
                        stack.append((child, mult * count))
    return out


def _count(owner: Instance, fabric: Instance, mult: int, cache) -> FabricCount:
    rails = _int(fabric.field("rails"), 1)
    planes = _int(fabric.field("planes"), 1)
    tiers: List[TierCount] = []
    prev_up_total = None
    hosts = group_of(owner, ("host",), cache)
    host_ports = sum(count * _nic_ports(host, cache) for count, host in hosts.flat())
    for tier in _tiers(fabric):
        scope = tier.field("scope")
        scope_name = scope.name if isinstance(scope, Symbol) else owner.kind
        per = tier.field("per")
        per_names = [s.name for s in per.items] if isinstance(per, ListValue) else []
        split = (rails if "rail" in per_names else 1) * (planes if "plane" in per_names else 1)
        scopes = 1 if scope_name == owner.kind else count_of(
            owner, _SCOPE_KINDS.get(scope_name, (scope_name,)), cache) or 1
        groups = scopes * split
        demand_total = host_ports if prev_up_total is None else prev_up_total
        down = tier.field("down")
        up = tier.field("up")
        down_n = down.count if isinstance(down, Bundle) else 0
        up_n = up.count if isinstance(up, Bundle) else 0
        per_group_demand = demand_total / groups if groups else 0
        per_group = math.ceil(per_group_demand / down_n - 1e-9) if down_n else 0
        switches = per_group * groups
        switch = tier.field("switch")
        tiers.append(TierCount(tier.template, getattr(switch, "path", "?"), scope_name,
                               groups * mult, per_group, switches * mult,
                               int(demand_total) * mult, switches * up_n * mult))
        prev_up_total = switches * up_n
    return FabricCount(owner.path, fabric.path, tuple(tiers))
