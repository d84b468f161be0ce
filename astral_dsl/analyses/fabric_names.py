"""Stable names for every switch, tier group, NIC port and link of a fabric, and the wiring rule
that puts a host's NIC port on its first-tier switch.

Names are paths in the language (they can be written as a scenario's `fail` target) that hold
every level needed to make them unique:

    Lab.pods[0].fabric.rail[3].plane[A].tor[1]          one ToR (fabric attached to the pod)
    Astral.fabric.pod[2].rail[3].plane[A].agg[17]       one switch (fabric attached to the site:
                                                        the tier's scope `pod` is an axis)
    Astral.fabric.pod[2].rail[3].plane[A].agg           the tier group (any of its switches)
    Astral.fabric.core[4095]                            a tier that spans the rails and planes
    Lab.pods[0].rows[0].racks[1].hosts[2].nics[3].port[a]     one NIC port (port a, b, ...)
    <end> -- <end>                                      a link, named by its two ends

Wiring (network.py's rules, and the one place that computes them for sizing, the rank map, the
rack view, the cables, the failures and Seer's first-tier reach, `fill`): NIC k is on rail k mod R, port j on plane j mod P
(`wiring`). A host puts `count` ports on each first-tier group (its rail and plane when the tier
is split by them), which need not be the same for every group (3 NICs on 2 rails: 2 on rail 0, 1
on rail 1); the hosts of the tier's scope fill the group's down ports in host order, each host
its ports of the group in order: the port at `index` among them of the host at position i takes
the group's down port number (the ports the hosts before it put there: i x count when they are
alike, `ports_before` when they differ) + index, on switch floor(that / down_ports), port (that
mod down_ports) of it (`place`). A lower switch's uplinks spread over every switch of the group
above (ECMP): which one a flow takes is not known to the twin."""
from __future__ import annotations

import bisect
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple


from astral_dsl import records
from astral_dsl.model.rollup import group_of
from astral_dsl.model.values import Group, fabric_path, port_label

LINK = " -- "


@records.frozen
class TierKey:
    """One group of a tier: its scope instance (kind and index, None when the tier's scope is
    the fabric's owner), rail and plane (None when the tier is not split by them)."""
    fabric: str                  # path of the fabric
    tier: str
    scope: Optional[Tuple[str, int]] = None
    rail: Optional[int] = None
    plane: Optional[int] = None

    @property
    def name(self) -> str:
        return fabric_path(self.fabric, self.scope, self.rail, self.plane, self.tier)

    def switch(self, index: int) -> str:
        return fabric_path(self.fabric, self.scope, self.rail, self.plane, self.tier, index)

    @property
    def at(self) -> Optional[int]:
        """The index of the group's scope instance in the fabric's owner (TierCount.size)."""
        return self.scope[1] if self.scope is not None else None


def port_name(host_path: str, nic_member: str, nic: int, port: int) -> str:
    return f"{host_path}.{nic_member}[{nic}].port[{port_label(port)}]"


def link_name(a: str, b: str) -> str:
    return a + LINK + b


class PortPlace(NamedTuple):
    """One NIC port of a host: its NIC and port, rail and plane, its index among the host's ports
    on the same first-tier group and how many the host has there."""
    nic: int
    port: int
    rail: int
    plane: int
    index: int
    count: int


def wiring(nic_ports: Sequence[int], rails: int, planes: int, per_rail: bool = True,
           per_plane: bool = True) -> Tuple[PortPlace, ...]:
    """Every NIC port of a host whose NICs have `nic_ports` ports each (in the host's order), on
    a first tier split by rail (`per_rail`) and plane (`per_plane`) or not."""
    rails, planes = max(1, rails), max(1, planes)
    seen: dict = {}
    out = []
    for k, n in enumerate(nic_ports):
        for j in range(n):
            rail, plane = k % rails, j % planes
            key = (rail if per_rail else None, plane if per_plane else None)
            out.append((k, j, rail, plane, key, seen.get(key, 0)))
            seen[key] = seen.get(key, 0) + 1
    return tuple(PortPlace(k, j, r, p, i, seen[key]) for k, j, r, p, key, i in out)


def busiest(places: Sequence[PortPlace]) -> int:
    """The most ports the host puts on one first-tier group (rail 0, plane A)."""
    return max((p.count for p in places), default=0)


def group_ports(kinds: Sequence[Tuple[int, Sequence[int]]], rails: int, planes: int,
                per_rail: bool, per_plane: bool) -> dict:
    """(rail, plane) -> the NIC ports one scope instance puts on that first-tier group (None
    for an axis the tier is not split by; a group no port reaches is absent). `kinds`: (hosts,
    their NICs' ports in order) per host model."""
    ports: dict = {}
    for hosts, layout in kinds:
        for p in wiring(layout, rails, planes, per_rail, per_plane):
            key = (p.rail if per_rail else None, p.plane if per_plane else None)
            ports[key] = ports.get(key, 0) + hosts
    return ports


def own_switches(kinds: Sequence[Tuple[int, Sequence[int]]], rails: int, planes: int,
                 per_rail: bool, per_plane: bool, down_ports: int) -> int:
    """First-tier switches of one scope instance with each of its groups sized for its own
    ports: the sum over its (rail, plane) groups of ceil(ports / down_ports). (6 NICs on 4
    rails, 16 hosts, 32 down: rails 0 and 1 take 32 ports, 1 switch each; rails 2 and 3 take
    16, 1 each: 4.)"""
    ports = group_ports(kinds, rails, planes, per_rail, per_plane)
    return sum(-(-n // down_ports) for n in ports.values()) if down_ports > 0 else 0


def place(position: int, port: PortPlace, down_ports: int,
          before: Optional[int] = None) -> Tuple[int, int]:
    """(switch index in its group, its down port) of `port` of the host at `position` in the
    first tier's scope; `before`: the ports the hosts before it put on the port's group, when
    they differ from this host's (ports_before), else position x count."""
    slot = (position * port.count if before is None else before) + port.index
    if down_ports <= 0:
        return 0, slot
    return divmod(slot, down_ports)


Wire = Tuple[int, int, bool, bool]     # rails, planes, first tier split per rail, per plane


def group_key(port: PortPlace, wire: Wire) -> Tuple[Optional[int], Optional[int]]:
    return (port.rail if wire[2] else None, port.plane if wire[3] else None)


def ports_before(scope, wire: Wire, cache) -> Optional[Callable[[int, PortPlace], int]]:
    """`before(position, port)`: the ports the first `position` hosts of `scope` (the first
    tier's scope instance, hosts in the design's order) put on `port`'s group; None when every
    host of the scope puts the same count on each group (position x count, as `place` takes
    it)."""
    runs = host_runs(scope, wire, cache)
    if runs is None:
        return None

    def before(position: int, port: PortPlace) -> int:
        return runs.before(position, group_key(port, wire))
    return before


@records.frozen
class Runs:
    """The hosts of a scope in runs of alike hosts: where each run starts, its hosts, the ports
    per group before it and of one of its hosts, and where its hosts' ports land (wiring)."""
    starts: Tuple[int, ...]
    sizes: Tuple[int, ...]
    sums: Tuple[dict, ...]
    counts: Tuple[dict, ...]
    places: Tuple[Tuple[PortPlace, ...], ...]

    def at(self, position: int) -> int:
        """The run holding the host at `position`."""
        return max(0, bisect.bisect_right(self.starts, position) - 1)

    def before(self, position: int, key) -> int:
        i = self.at(position)
        return self.sums[i].get(key, 0) + (position - self.starts[i]) * self.counts[i].get(key, 0)


def host_runs(scope, wire: Wire, cache) -> Optional[Runs]:
    """The runs of `scope`'s hosts when they differ in their ports per group; None when they do
    not (or when they come in more than 65,536 runs: position x count is then taken)."""
    key = (id(scope), wire, "port runs")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]

    def layout(host) -> Tuple[Tuple, Tuple[PortPlace, ...]]:
        ck = (id(host), wire, "port layout")
        got = cache.get(ck)
        if got is None:
            places = wiring([int(n.field("ports").si) if hasattr(n.field("ports"), "si") else 1
                             for n in group_of(host, ("nic",), cache).items(1 << 12) or ()],
                            wire[0], wire[1], wire[2], wire[3])
            per = {group_key(p, wire): p.count for p in places}
            got = cache[ck] = (host, (tuple(sorted(per.items(), key=str)), places))
        return got[1]

    hosts = group_of(scope, ("host",), cache)
    table = None
    if len({layout(h)[0] for _, h in hosts.flat()}) > 1:
        runs: list = []

        def expand(group) -> None:
            for run in group.runs:
                if len(runs) > 1 << 16:
                    return
                if isinstance(run.item, Group):
                    for _ in range(run.count):
                        expand(run.item)
                else:
                    runs.append((run.count,) + layout(run.item))
        expand(hosts)
        if len(runs) <= 1 << 16:
            starts, sums, at, total = [], [], 0, {}
            for n, per, _ in runs:
                starts.append(at)
                sums.append(dict(total))
                at += n
                for k, c in per:
                    total[k] = total.get(k, 0) + n * c
            table = Runs(tuple(starts), tuple(r[0] for r in runs), tuple(sums),
                         tuple(dict(r[1]) for r in runs), tuple(r[2] for r in runs))
    cache[key] = (scope, table)          # the scope kept: its id stays unique
    return table


def hosts_on(switch: int, port: PortPlace, down_ports: int,
             offset: Optional[int] = None) -> Tuple[int, int]:
    """The positions [a, b) of the hosts whose `port` lands on first-tier switch `switch` (the
    inverse of `place`: s x down <= i x count + offset < (s + 1) x down; `offset`: the port's
    index, less what a run of hosts differs by from position x count, `Runs`)."""
    if down_ports <= 0 or port.count <= 0:
        return 0, 0
    offset = port.index if offset is None else offset

    def first(limit: int) -> int:
        return max(0, -(-(limit - offset) // port.count))
    return first(switch * down_ports), first((switch + 1) * down_ports)


def fill(hosts: int, port: PortPlace, down_ports: int, runs: Optional[Runs] = None,
         wire: Optional[Wire] = None, counted: Optional[Callable[[int, int], int]] = None,
         limit: int = 1 << 16) -> int:
    """The most hosts one first-tier switch holds whole (every port of theirs on `port`'s
    group on it, as `place` puts them: the rank map's wiring) among the `hosts` hosts of one
    scope instance (positions from 0), each of them taking its ports, those a job leaves
    included; `counted(a, b)`: how many of positions [a, b) count (default: all); `runs`
    (host_runs, with its `wire`): the scope's hosts when they differ, then host by host (the
    first `limit`), each with its own ports on the group."""
    if down_ports <= 0 or port.count <= 0 or hosts <= 0:
        return 0
    if runs is None and counted is None:     # switch 0 holds as many whole as any
        return min(hosts, down_ports // port.count)
    count = counted or (lambda a, b: b - a)
    if runs is None:                     # alike hosts: each switch's whole hosts at once
        first, last = port._replace(index=0), port._replace(index=port.count - 1)
        most = 0
        for s in range(-(-hosts * port.count // down_ports)):
            a = hosts_on(s, first, down_ports)[0]
            b = min(hosts, hosts_on(s, last, down_ports)[1])
            most = max(most, count(a, b) if b > a else 0)
        return most
    key, on = group_key(port, wire), {}
    for i in range(min(hosts, limit)):
        c = runs.counts[runs.at(i)].get(key, 0)
        at = runs.before(i, key)
        if c and at // down_ports == (at + c - 1) // down_ports and count(i, i + 1):
            on[at // down_ports] = on.get(at // down_ports, 0) + 1
    return max(on.values(), default=0)


def ports_on(area: Tuple[int, int], switch: int, down: int, rails, planes,
             places: Sequence[PortPlace], runs: Optional[Runs],
             wire: Wire) -> List[Tuple[Tuple[int, int], int, int]]:
    """(hosts [a, b), NIC, port) of the ports on `rails` and `planes` (None: any) that land on
    first-tier switch `switch` of the group whose scope instance holds hosts `area` (positions
    in the fabric's owner): `places` for alike hosts, else per run of `runs` (its hosts' port
    h of the run lands at the group's port h x count + offset, positions from the area's)."""
    if runs is None:
        return _on_switch(area, switch, down, rails, planes, places, area, None, wire)
    out = []
    i = runs.at(area[0])
    while i < len(runs.starts) and runs.starts[i] < area[1]:
        start = runs.starts[i]
        span = (max(area[0], start), min(area[1], start + runs.sizes[i]))
        offsets = {}
        for p in runs.places[i]:
            key = group_key(p, wire)
            if key not in offsets:       # the ports before the run in the area, less (h - a) x c
                offsets[key] = runs.sums[i].get(key, 0) - runs.before(area[0], key) \
                    - (start - area[0]) * p.count
        out += _on_switch(area, switch, down, rails, planes, runs.places[i], span, offsets,
                          wire)
        i += 1
    return out


def _on_switch(area, switch: int, down: int, rails, planes, places, span, offsets,
               wire: Wire) -> List[Tuple[Tuple[int, int], int, int]]:
    """ports_on for the hosts in `span` of one layout (`places`)."""
    out = []
    for p in places:
        if (None in rails or p.rail in rails) and (None in planes or p.plane in planes):
            off = None if offsets is None else offsets[group_key(p, wire)] + p.index
            a, b = hosts_on(switch, p, down, off) if down else (0, area[1] - area[0])
            iv = (max(span[0], min(area[0] + a, span[1])), min(area[0] + b, span[1]))
            if iv[1] > iv[0]:
                out.append((iv, p.nic, p.port))
    return out


__all__ = ["LINK", "PortPlace", "Runs", "TierKey", "Wire", "busiest", "fill", "group_key",
           "group_ports",
           "host_runs",
           "hosts_on", "link_name", "own_switches", "place", "port_label", "port_name",
           "ports_before", "ports_on", "wiring"]
