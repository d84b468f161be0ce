"""The switch fabric derived from the declared hosts, rails, planes and tiers.

Wiring rules (rail-optimised wiring: NVIDIA DGX SuperPOD reference architectures; same-rail tiers
and two planes: Meng et al., "Astral", ACM SIGCOMM 2025; fat trees: Al-Fares et al., SIGCOMM 2008):
- Rail-optimised: NIC k of a host is on rail k mod R; port j of a NIC is on plane j mod P. Rails
  or planes that no NIC port reaches hold no switches (W610).
- Tier 1 serves the NIC ports of the hosts in each group: one group per scope instance (pod,
  row, ...) and, for `per = [rail, plane]`, per rail and plane. Every higher tier serves the
  uplinks of the tier below within its own groups; its groups hold whole groups of the tier
  below (E607) and lie within the fabric's owner (E606).
- Switches per group = ceil(links to serve / downlinks per switch), then rounded up so that
  every lower switch's uplinks divide evenly across the upper switches it reaches
  (formulas.even_upper_switches; the reason is kept for the size report). Scope instances of
  different sizes (`pods = [1 x Big, 3 x Small]`) give their groups each its own count
  (network_groups.py: TierCount.sizes), and within one each rail and plane its own
  (TierCount.by_group: 6 NICs on 4 rails load rails 0 and 1 twice as much as 2 and 3).
- Full reach: when a tier merges m lower groups into one of its groups, each of its switches must
  reach every lower group (m <= its downlinks); when it serves one lower group (m = 1), every
  lower switch must reach every upper switch (lower switches per group <= its downlinks).
  Planes (formulas.even_upper_switches) need a lower group's switches joined below them (a
  fat tree's aggregation switches are, by its edges); a first tier's are not: E604.
- Power: a switch draws its declared `power` whatever the job (no utilisation scaling), plus its
  optics (network_links.py); undeclared power is W606/W607, never a silent zero.
The records it returns (TierCount, FabricCount, Hosts) are network_records.py's.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses import formulas, network_groups, network_paths
from astral_dsl.analyses.network_checks import fabric_checks, tier_checks
from astral_dsl.analyses.network_links import link_layers
from astral_dsl.analyses.network_records import FabricCount, Hosts, TierCount
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.tier_groups import kinds_of
from astral_dsl.model.values import Bundle, ListValue, Symbol
from astral_dsl.units import Quantity

_LEVEL = network_paths.LEVEL


def _fabrics(inst: Instance):
    for m in inst.members:
        if isinstance(m.value, Instance) and m.value.kind == "fabric":
            yield m.value


def _tiers(fabric: Instance) -> List[Instance]:
    return [m.value for m in fabric.members if isinstance(m.value, Instance)
            and m.value.kind == "tier"]


def first_tier(fabric: Optional[Instance]) -> Optional[str]:
    """The name of a fabric's first tier (its switches take the hosts' NIC ports), None for a
    fabric without tiers (or none found)."""
    tiers = _tiers(fabric) if fabric is not None else []
    return tiers[0].template if tiers else None


def _int(q, default: int) -> int:
    return int(q.si) if isinstance(q, Quantity) else default


def fabric_counts(design: Design, cache: Optional[Dict] = None,
                  tier_failures=()) -> List[FabricCount]:
    """Every fabric attached to a site or grouping instance, with its switch counts.
    `tier_failures`: (fabric path, tier, fraction) from scenarios (`fail 25 % of X.fabric.core`):
    the tier below loses that fraction of its uplinks."""
    cache = {} if cache is None else cache
    by_path = {i.path: i for i in design.instances}
    owners: Dict[Tuple[int, int], list] = {}
    for root in design.roots:
        stack = [(root, 1)]
        while stack:
            inst, mult = stack.pop()
            for fabric in _fabrics(inst):
                # one entry per (owner, fabric): the pair of ids, not their XOR, which two
                # different pairs can share (a fabric's counts then went to another owner)
                slot = owners.setdefault((id(fabric), id(inst)), [inst, fabric, 0])
                slot[2] += mult
            if inst.kind in ("site", "hall", "pod", "row", "block"):
                for count, child in inst.containment():
                    if child.kind in ("hall", "pod", "row", "block", "rack"):
                        stack.append((child, mult * count))
    return [_count(inst, fabric, mult, cache, by_path,
                   {t: f for p, t, f in tier_failures if p == fabric.path})
            for inst, fabric, mult in sorted(owners.values(), key=lambda o: o[0].path)]


def _hosts(owner: Instance, cache) -> Hosts:
    kinds, nics, layouts = [], [], []
    ports_total, speed, gpus = 0, None, 0
    for count, host in group_of(owner, ("host",), cache).flat():
        layouts.append(tuple(_int(nic.field("ports"), 1) for nic in
                             group_of(host, ("nic",), cache).items(1 << 12) or ()))
        n_nics = ports = most = 0
        for n, nic in group_of(host, ("nic",), cache).flat():
            p = _int(nic.field("ports"), 1)
            n_nics += n
            ports += n * p
            most = max(most, p)
            speed = speed or nic.field("port_speed")
            if nic not in nics:
                nics.append(nic)
        kinds.append((count, n_nics, ports, most or 1))
        ports_total += count * ports
        gpus = max(gpus, count_of(host, ("gpu",), cache))
    hosts = sum(k[0] for k in kinds)
    # the most ports of any NIC (the planes some port reaches: NICs of one and of two ports
    # reach both planes, whichever host is listed first) and the fewest (dual-homing, E605)
    per_nic = max((_int(n.field("ports"), 1) for n in nics), default=1)
    fewest = min((_int(n.field("ports"), 1) for n in nics), default=1)
    return Hosts(hosts, ports_total, speed, per_nic, gpus, tuple(kinds), tuple(nics), fewest,
                 tuple(layouts))


def _count(owner: Instance, fabric: Instance, mult: int, cache, by_path,
           failed_tiers: Dict[str, float]) -> FabricCount:
    diags: List[Diagnostic] = []
    rails = _int(fabric.field("rails"), 1)
    planes = _int(fabric.field("planes"), 1)
    limit = fabric.field("max_oversubscription")
    hosts = _hosts(owner, cache)
    # rails and planes that some NIC port reaches (W610 names the others)
    nics_per_host = max((k[1] for k in hosts.kinds if k[0]), default=0)
    rails_used = min(rails, nics_per_host) if nics_per_host else rails
    planes_used = min(planes, hosts.ports_per_nic) if hosts.kinds else planes
    tiers: List[TierCount] = []
    tier_insts = _tiers(fabric)
    switches: List[Optional[Instance]] = []
    prev: Optional[TierCount] = None
    prev_groups = prev_split = 0
    prev_exact: Optional[Dict] = None       # the tier below's switches per scope instance
    joined = True           # the switches of one group of `prev` have a path between them below
    for index, tier in enumerate(tier_insts):
        scope = tier.field("scope")
        scope_name = scope.name if isinstance(scope, Symbol) else owner.kind
        per = tier.field("per")
        per_names = tuple(s.name for s in per.items) if isinstance(per, ListValue) else ()
        split = ((rails_used if "rail" in per_names else 1)
                 * (planes_used if "plane" in per_names else 1))
        if _LEVEL.get(scope_name, 9) > _LEVEL.get(owner.kind, 9):
            scope_name = owner.kind          # E606 (network_checks) says so
        found = None if scope_name == owner.kind else count_of(
            owner, kinds_of(scope_name), cache)
        scopes = found or 1                  # none found: E606
        groups = scopes * split
        demand = hosts.ports if prev is None else prev.up_links // mult
        down, up = tier.field("down"), tier.field("up")
        down_n = down.count if isinstance(down, Bundle) else 0
        up_n = up.count if isinstance(up, Bundle) else 0
        down_speed = down.item if isinstance(down, Bundle) else None
        up_speed = up.item if isinstance(up, Bundle) else None
        per_group_demand = demand / groups if groups else 0
        nested = prev is not None and groups and prev_groups % groups == 0
        # the largest group: every group is built as it is, so that each can be wired
        largest, where = network_groups.largest(owner, scope_name, cache, hosts, _hosts, rails,
                                                planes, per_names, prev, prev_split,
                                                split if nested else 0)
        merged = largest if prev is not None else 0     # lower groups in the largest group
        busiest = largest if prev is None else merged * prev.per_group * prev.up_ports
        busiest = max(busiest, per_group_demand)
        needed = math.ceil(busiest / down_n - 1e-9) if down_n else 0
        sized_for = None
        # a first tier's groups each sized for its own hosts (what the largest's size costs)
        own = network_groups.own(owner, scope_name, cache, hosts, _hosts, rails, planes,
                                 per_names, down_n) \
            if prev is None and down_n and (found or scope_name == owner.kind) else needed * groups
        if down_n and (needed > math.ceil(per_group_demand / down_n - 1e-9)
                       or own < needed * groups):
            sized_for = (f"its groups differ: each is sized for the largest, {where} "
                         f"({_n(busiest)} links to serve, {_n(per_group_demand)} on average)")
            if own < needed * groups:
                sized_for += (f"; each group sized for its own hosts would make "
                              f"{own * mult:,} switches, not {needed * groups * mult:,}")
        per_group, rounding, plane = needed, None, None
        if nested:
            per_group, plane = formulas.even_upper_switches(
                needed, prev.per_group, prev.up_ports, merged, down_n)
            if per_group > needed:
                rounding = network_groups.rounding_reason(tier.template, prev, needed, per_group,
                                                          plane, merged, down_n)
        mesh = plane is None or plane == per_group
        count = per_group * groups
        switch_ref = tier.field("switch")
        switch = by_path.get(switch_ref.path) if isinstance(switch_ref, Ref) else None
        switch_power = switch.field("power") if switch is not None else None
        switch_w = switch_power.si if isinstance(switch_power, Quantity) else None
        over = declared = None
        above = tier_insts[index + 1].template if index + 1 < len(tier_insts) else None
        alive = 1.0 - failed_tiers.get(above, 0.0)      # uplinks into a partly failed tier
        if down_speed is not None and up_speed is not None and up_n:
            declared = (down_n * down_speed.si) / (up_n * up_speed.si)
            over = declared / alive if alive > 0 else float("inf")
        tc = TierCount(tier.template, switch.path if switch else "?", scope_name, per_names,
                       groups * mult, per_group, count * mult,
                       per_group_demand / per_group if per_group else 0.0, down_n, up_n,
                       down_speed, up_speed, int(demand) * mult, count * up_n * mult, over,
                       0.0, tier.span, needed, rounding, switch_w, reach=plane or per_group,
                       mesh=mesh, failed=failed_tiers.get(tier.template, 0.0) * count * mult,
                       sized_for=sized_for)
        tc, prev_exact = network_groups.exact_tier(
            tc, owner, scope_name, found, cache, hosts, _hosts, (rails, planes), prev, prev_exact,
            prev_split, split, bool(nested), demand, mult)
        # the checks judge the tier as declared: E602 for a failed share of the tier above
        # names that failure (failed_fabric.py)
        diags.extend(tier_checks(owner, tier, attrs.evolve(tc, oversubscription=declared)
                                 if alive < 1 else tc, switch, prev, _speeds(hosts), limit, index,
                                 len(tier_insts), prev_groups, groups, found,
                                 merged if nested else None, joined))
        tiers.append(tc)
        switches.append(switch)
        # a group's switches share a lower switch (mesh) or their planes' lower switches are
        # joined below; a first tier's, only when it is one switch
        joined = tc.per_group <= 1 if prev is None else (tc.mesh or joined)
        prev, prev_groups, prev_split = tc, groups, split
    layers, optics, link_diags = link_layers(fabric, tier_insts, tiers, switches, hosts, mult,
                                             by_path)
    diags.extend(link_diags)
    # a failed switch is off: it and the modules in its cages leave the network's power
    tiers = [attrs.evolve(t, power_w=(t.switches - t.failed) * (t.switch_w or 0.0)
                          + w * (1 - t.failed / t.switches if t.switches else 1), optics_w=w)
             for t, w in zip(tiers, optics)]
    diags.extend(fabric_checks(fabric, tiers, tier_insts, switches, rails, planes, hosts,
                               rails_used, planes_used))
    hops = network_paths.hops(tiers)
    capacity = network_paths.capacity(tiers, rails_used, planes_used, hosts.gpus_per_host,
                                      hosts.ports, hosts.count)
    return FabricCount(owner.path, fabric.path, mult, rails, planes, hosts.ports * mult,
                       hosts.speed, tuple(tiers), hops, capacity, tuple(diags), tuple(layers),
                       limit.si if isinstance(limit, Quantity) else None,
                       rails_used=rails_used, planes_used=planes_used)


def _n(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.4g}"


def _speeds(hosts: Hosts) -> Tuple[Tuple[str, Quantity], ...]:
    """(NIC model, port speed) per distinct speed of the hosts' NICs, in order."""
    out: Dict[float, Tuple[str, Quantity]] = {}
    for nic in hosts.nics:
        speed = nic.field("port_speed")
        if isinstance(speed, Quantity):
            out.setdefault(speed.si, (nic.template or nic.path, speed))
    return tuple(out.values())
