"""The switch fabric derived from the declared hosts, rails, planes and tiers.

Wiring rules (astral-paper.md, engineering.md):
- Rail-optimised: NIC k of a host is on rail k mod R; port j of a NIC is on plane j mod P.
- Tier 1 serves the NIC ports of the hosts in each group: one group per scope instance (pod,
  row, ...) and, for `per = [rail, plane]`, per rail and plane. Every higher tier serves the
  uplinks of the tier below within its own groups.
- Switches per group = ceil(links to serve / downlinks per switch): rounding is always up, per
  group (DGX SuperPOD rows that list more spines than this are rounding differently).
- Full reach: when a tier merges m lower groups into one of its groups, each of its switches must
  reach every lower group (m <= its downlinks); when it serves one lower group (m = 1), every
  lower switch must reach every upper switch (lower switches per group <= its downlinks).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Bundle, ListValue, Symbol
from astral_dsl.units import Quantity, format_number

_SCOPE_KINDS = {"rack": ("rack",), "row": ("row", "block"), "block": ("row", "block"),
                "pod": ("pod",), "hall": ("hall",), "site": ("site",)}
_LEVEL = {"rack": 2, "row": 3, "block": 3, "pod": 4, "hall": 5, "site": 6}


@attrs.frozen
class TierCount:
    name: str
    switch: str                 # path of the switch model
    scope: str
    per: Tuple[str, ...]
    groups: int                 # groups this tier is replicated over
    per_group: int              # switches per group
    switches: int
    down_used: float            # downlinks used per switch (average)
    down_ports: int             # downlinks per switch (declared)
    up_ports: int
    down_speed: Optional[Quantity]
    up_speed: Optional[Quantity]
    down_links: int             # links served from below (whole tier)
    up_links: int               # uplinks (whole tier)
    oversubscription: Optional[float]
    power_w: float              # switches x (switch power + optics power)
    span: Optional[Span] = None


@attrs.frozen
class FabricCount:
    owner: str                  # path of the instance the fabric is attached to
    fabric: str
    instances: int              # how many such owners the design holds
    rails: int
    planes: int
    host_ports: int             # NIC ports served (whole design)
    nic_speed: Optional[Quantity]
    tiers: Tuple[TierCount, ...]
    hops: Tuple[Tuple[str, int], ...]        # path -> switches traversed
    capacity_gpus: Optional[int]             # GPUs the tiers can reach (radix bound)
    diagnostics: Tuple[Diagnostic, ...] = ()

    @property
    def routes(self) -> Tuple[Tuple[str, str], ...]:
        """The tiers each path crosses: `tor > agg > core > agg > tor`."""
        names = [t.name for t in self.tiers]
        out = []
        for label, switches in self.hops:
            top = (switches - 1) // 2
            up = names[:top + 1]
            out.append((label, " > ".join(up + list(reversed(up[:-1])))))
        return tuple(out)

    @property
    def switches(self) -> int:
        return sum(t.switches for t in self.tiers)

    @property
    def power_w(self) -> float:
        return sum(t.power_w for t in self.tiers)


def _fabrics(inst: Instance):
    for m in inst.members:
        if isinstance(m.value, Instance) and m.value.kind == "fabric":
            yield m.value


def _tiers(fabric: Instance) -> List[Instance]:
    return [m.value for m in fabric.members if isinstance(m.value, Instance)
            and m.value.kind == "tier"]


def _int(q, default: int) -> int:
    return int(q.si) if isinstance(q, Quantity) else default


def fabric_counts(design: Design, cache: Optional[Dict] = None,
                  tier_failures=()) -> List[FabricCount]:
    """Every fabric attached to a site or grouping instance, with its switch counts.
    `tier_failures`: (fabric path, tier, fraction) from scenarios (`fail 25 % of X.fabric.core`):
    the tier below loses that fraction of its uplinks."""
    cache = {} if cache is None else cache
    by_path = {i.path: i for i in design.instances}
    owners: Dict[int, list] = {}
    for root in design.roots:
        stack = [(root, 1)]
        while stack:
            inst, mult = stack.pop()
            for fabric in _fabrics(inst):
                slot = owners.setdefault(id(fabric) ^ id(inst), [inst, fabric, 0])
                slot[2] += mult
            if inst.kind in ("site", "hall", "pod", "row", "block"):
                for count, child in inst.containment():
                    if child.kind in ("hall", "pod", "row", "block", "rack"):
                        stack.append((child, mult * count))
    return [_count(inst, fabric, mult, cache, by_path,
                   {t: f for p, t, f in tier_failures if p == fabric.path})
            for inst, fabric, mult in sorted(owners.values(), key=lambda o: o[0].path)]


def _nic_ports(host: Instance, cache) -> Tuple[int, Optional[Quantity], int]:
    """(ports per host, port speed, ports per NIC)."""
    total, speed, per_nic = 0, None, 1
    for count, nic in group_of(host, ("nic",), cache).flat():
        ports = _int(nic.field("ports"), 1)
        total += count * ports
        per_nic = ports
        speed = nic.field("port_speed") or speed
    return total, speed, per_nic


def _count(owner: Instance, fabric: Instance, mult: int, cache, by_path,
           failed_tiers: Dict[str, float]) -> FabricCount:
    diags: List[Diagnostic] = []
    rails = _int(fabric.field("rails"), 1)
    planes = _int(fabric.field("planes"), 1)
    limit = fabric.field("max_oversubscription")
    hosts = group_of(owner, ("host",), cache)
    host_ports, nic_speed, ports_per_nic = 0, None, 1
    gpus_per_host = 0
    for count, host in hosts.flat():
        ports, speed, per_nic = _nic_ports(host, cache)
        host_ports += count * ports
        nic_speed = nic_speed or speed
        ports_per_nic = per_nic
        gpus_per_host = max(gpus_per_host, count_of(host, ("gpu",), cache))
    tiers: List[TierCount] = []
    tier_insts = _tiers(fabric)
    prev: Optional[TierCount] = None
    prev_groups = 0
    for index, tier in enumerate(tier_insts):
        scope = tier.field("scope")
        scope_name = scope.name if isinstance(scope, Symbol) else owner.kind
        per = tier.field("per")
        per_names = tuple(s.name for s in per.items) if isinstance(per, ListValue) else ()
        split = (rails if "rail" in per_names else 1) * (planes if "plane" in per_names else 1)
        if _LEVEL.get(scope_name, 9) > _LEVEL.get(owner.kind, 9):
            scope_name = owner.kind
        scopes = 1 if scope_name == owner.kind else count_of(
            owner, _SCOPE_KINDS.get(scope_name, (scope_name,)), cache) or 1
        groups = scopes * split
        demand = host_ports if prev is None else prev.up_links // mult
        down, up = tier.field("down"), tier.field("up")
        down_n = down.count if isinstance(down, Bundle) else 0
        up_n = up.count if isinstance(up, Bundle) else 0
        down_speed = down.item if isinstance(down, Bundle) else None
        up_speed = up.item if isinstance(up, Bundle) else None
        per_group_demand = demand / groups if groups else 0
        per_group = math.ceil(per_group_demand / down_n - 1e-9) if down_n else 0
        switches = per_group * groups
        switch_ref = tier.field("switch")
        switch = by_path.get(switch_ref.path) if isinstance(switch_ref, Ref) else None
        sw_power = _q(switch, "power") + (tier.field("optics_power").si
                                          if tier.field("optics_power") else 0.0)
        over = None
        above = tier_insts[index + 1].template if index + 1 < len(tier_insts) else None
        alive = 1.0 - failed_tiers.get(above, 0.0)      # uplinks into a partly failed tier
        if down_speed is not None and up_speed is not None and up_n:
            over = (down_n * down_speed.si) / (up_n * up_speed.si * alive) if alive > 0 \
                else float("inf")
        tc = TierCount(tier.template, switch.path if switch else "?", scope_name, per_names,
                       groups * mult, per_group, switches * mult,
                       per_group_demand / per_group if per_group else 0.0, down_n, up_n,
                       down_speed, up_speed, int(demand) * mult, switches * up_n * mult, over,
                       switches * sw_power * mult, tier.span)
        diags.extend(_tier_checks(tier, tc, switch, prev, nic_speed, limit, index,
                                  len(tier_insts), prev_groups, groups))
        tiers.append(tc)
        prev, prev_groups = tc, groups
    diags.extend(_fabric_checks(fabric, tiers, tier_insts, rails, planes, ports_per_nic))
    hops = _hops(tiers)
    capacity = _capacity(tiers, rails, planes, gpus_per_host, host_ports, hosts.count)
    return FabricCount(owner.path, fabric.path, mult, rails, planes, host_ports * mult, nic_speed,
                       tuple(tiers), hops, capacity, tuple(diags))


def _q(inst: Optional[Instance], name: str) -> float:
    v = inst.field(name) if inst is not None else None
    return v.si if isinstance(v, Quantity) else 0.0


def _err(code: str, message: str, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint)


def _tier_checks(tier: Instance, tc: TierCount, switch: Optional[Instance],
                 prev: Optional[TierCount], nic_speed, limit, index, n_tiers, prev_groups,
                 groups) -> List[Diagnostic]:
    out = []
    down_span = tier.span_of("down")
    if switch is not None:
        max_ports = switch.field("max_ports") or switch.field("ports")
        used = tc.down_ports + tc.up_ports
        if isinstance(max_ports, Quantity) and used > max_ports.si:
            out.append(_err("E600", f"tier `{tc.name}` uses {used} ports per switch but "
                                    f"`{switch.path}` has {format_number(max_ports.si)}",
                            down_span, "reduce `down` or `up`, or choose a larger switch"))
        capacity = switch.field("capacity")
        bw = (tc.down_ports * (tc.down_speed.si if tc.down_speed else 0) +
              tc.up_ports * (tc.up_speed.si if tc.up_speed else 0))
        if isinstance(capacity, Quantity) and bw > capacity.si * (1 + 1e-9):
            out.append(_err("E600", f"tier `{tc.name}` needs {format_number(bw / 1e12)} Tb/s "
                                    f"per switch but `{switch.path}` switches "
                                    f"{format_number(capacity.si / 1e12)} Tb/s", down_span))
    below = nic_speed if prev is None else prev.up_speed
    what = "the hosts' NIC ports" if prev is None else f"tier `{prev.name}`'s uplinks"
    if below is not None and tc.down_speed is not None and below.si != tc.down_speed.si:
        out.append(_err("E601", f"tier `{tc.name}` takes {tc.down_speed} downlinks but "
                                f"{what} run at {below}", down_span,
                        "both ends of a link must run at the same speed"))
    if tc.oversubscription is not None and isinstance(limit, Quantity) \
            and tc.oversubscription > limit.si * (1 + 1e-9):
        out.append(_err("E602", f"tier `{tc.name}` is oversubscribed "
                                f"{format_number(round(tc.oversubscription, 4))}:1, above the "
                                f"declared limit {format_number(limit.si)}:1",
                        tier.span_of("up"), "add uplinks or reduce downlinks"))
    if index < n_tiers - 1 and not tc.up_ports:
        out.append(_err("E603", f"tier `{tc.name}` has no uplinks, so the tiers above it are "
                                f"unreachable", tier.span, "declare `up = N x SPEED`"))
    if prev is not None and tc.down_ports:
        merged = prev_groups // groups if groups else 0
        lower_per_group = prev.per_group
        if merged <= 1 and lower_per_group > tc.down_ports:
            out.append(_err("E604", f"each `{tc.name}` switch must reach all {lower_per_group} "
                                    f"`{prev.name}` switches of its group but has "
                                    f"{tc.down_ports} downlinks: the radix cannot reach this "
                                    f"size", down_span,
                            f"at most {tc.down_ports} `{prev.name}` switches per group: "
                            f"make the groups smaller or use a larger switch"))
        elif merged > tc.down_ports:
            out.append(_err("E604", f"each `{tc.name}` switch must reach {merged} groups of "
                                    f"`{prev.name}` switches but has {tc.down_ports} downlinks: "
                                    f"the radix cannot reach this size", down_span,
                            f"at most {tc.down_ports} groups below each `{tc.name}`"))
    return out


def _fabric_checks(fabric: Instance, tiers: List[TierCount], tier_insts, rails, planes,
                   ports_per_nic) -> List[Diagnostic]:
    out = []
    if rails > 1 and tiers and all("rail" in t.per for t in tiers):
        out.append(_err("E603", f"every tier of `{fabric.template}` is per rail: rails never "
                                f"meet, so a rail has no path to the core for cross-rail "
                                f"traffic", tier_insts[-1].span,
                        "declare a top tier without `rail` in `per`"))
    dual = fabric.field("dual_homing")
    if dual is True:
        first = tiers[0] if tiers else None
        if ports_per_nic < 2 or planes < 2 or (first is not None and "plane" not in first.per):
            why = ("each NIC has one port" if ports_per_nic < 2 else
                   "the fabric has one plane" if planes < 2 else
                   f"tier `{first.name}` is not per plane")
            out.append(_err("E605", f"dual-homing is declared but a NIC's two ports land on one "
                                    f"ToR ({why})", fabric.span_of("dual_homing"),
                            "use dual-port NICs, `planes = 2` and `per = [rail, plane]` on the "
                            "first tier"))
    return out


def _hops(tiers: List[TierCount]) -> Tuple[Tuple[str, int], ...]:
    """Switches on the shortest path between two GPUs: through tiers 0..i is 2i + 1 switches,
    where i is the lowest tier whose groups hold both ends."""
    if not tiers:
        return ()
    out = [("same ToR", 1)]
    if len(tiers) > 1:
        out.append(("same rail, same pod", 3))
    cross_rail = next((i for i, t in enumerate(tiers) if "rail" not in t.per), None)
    if cross_rail is not None:
        out.append(("cross-rail", 2 * cross_rail + 1))
    cross_pod = next((i for i, t in enumerate(tiers) if _LEVEL.get(t.scope, 9) > 4), None)
    if cross_pod is not None and any(t.scope == "pod" for t in tiers):
        out.append(("cross-pod", 2 * cross_pod + 1))
    return tuple(out)


def _split(t: TierCount, rails: int, planes: int) -> int:
    return (rails if "rail" in t.per else 1) * (planes if "plane" in t.per else 1)


def _capacity(tiers: List[TierCount], rails, planes, gpus_per_host, host_ports,
              hosts) -> Optional[int]:
    """GPUs the tiers can reach, from the radix. Hosts reachable per group: one tier-1 switch
    reaches down_ports / (host ports per group) hosts; an upper tier over the same groups
    multiplies that by its downlinks (one link to every lower switch of the group); an upper tier
    that merges groups reaches `down` lower groups, each host counted once although it sits in
    several rail/plane groups."""
    if not tiers or not hosts or not host_ports or not tiers[0].down_ports:
        return None
    first = tiers[0]
    per_group_ports = (host_ports / hosts) / _split(first, rails, planes)
    reach = first.down_ports / per_group_ports
    for lower, upper in zip(tiers, tiers[1:]):
        if not upper.down_ports or not lower.up_ports:
            break
        same = upper.per == lower.per and _LEVEL.get(upper.scope) == _LEVEL.get(lower.scope)
        if same:
            reach *= upper.down_ports
        else:
            reach *= upper.down_ports * _split(upper, rails, planes) / _split(lower, rails, planes)
    return int(reach * gpus_per_host)
