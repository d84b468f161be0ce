"""The cables of a design's compute fabrics, as an inventory lists them, fabric by fabric and
replica by replica of a fabric's owner:

- host_links: each host port and the first-tier switch port it lands on. The hosts are walked
  and their ports placed as the rank map places them (fabric_names.place: a host's position in
  its tier's scope and its ports on each rail and plane decide each port's switch and down
  port), for every host of the owner rather than a job's placement.
- tier_links: each uplink of a tier's switches and the port of the next tier's switch it lands
  on. The groups of the tier above that a lower group climbs to are those its hosts' ports climb
  to (rankmap's tier keys); within each upper group the lower switches, group after group in the
  order of their first host, spread their uplinks round-robin over its switches (lower switch at
  index i, uplink u -> upper switch (i x uplinks + u) mod n): the switch at the same index of
  every lower group lands on the same upper switches, as a Clos fabric is wired, so that every
  lower group reaches every other through each of them. An upper switch's down ports are taken
  in that order; an uplink beyond its last down port is counted (`Short`), not cabled (the
  network analysis reports the shortage)."""
from __future__ import annotations

from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from astral_dsl import records
from astral_dsl.analyses.network import fabric_counts
from astral_dsl.analyses.rank_placement import HostSlot, _members, _port_groups, _walk, \
    host_wiring
from astral_dsl.model.design import Design
from astral_dsl.model.tier_groups import kinds_of

@records.frozen
class HostLinks:
    """A host's ports' links to their first-tier switches (an inventory's cables), one
    (nic, port, switch, switch_port) tuple a port, in the order of its NICs and their ports:
    the switch's name (fabric_names) for the owner's replica, its downlink port from 0. Tuples,
    one record a host: an export of the reference design cables a million ports."""
    host: str                    # replica path of the host
    links: Tuple[Tuple[int, int, str, int], ...]


class TierLink(NamedTuple):
    """One uplink of a tier's switch to a switch of the tier above (a named tuple: a million of
    them for the reference design, cheaper to make than a record)."""
    lower: str                   # the lower switch's name (fabric_names), for the owner's replica
    lower_port: int              # its port, from 0: its uplinks follow its down ports
    upper: str
    upper_port: int              # the upper switch's down port, from 0


@records.frozen
class Short:
    """Uplinks of a tier that found no free down port on the tier above."""
    tier: str
    fabric: str
    uplinks: int


def host_links(design: Design, owner_paths: Dict[str, List[str]],
               groups: Optional[Dict[str, Dict]] = None) -> Iterator[HostLinks]:
    """Every host's ports' links to their first-tier switches, host by host, fabric by fabric
    and, for a fabric whose owner is replicated, replica by replica (`owner_paths`: canonical
    owner path -> the paths of its replicas, from the expanded design: inventory.py).
    `groups`: filled per fabric with the tier groups its host ports climb to, for tier_links."""
    cache: Dict = {}
    for fc in fabric_counts(design, cache):
        owner = design.instance(fc.owner)
        if owner is None or not fc.tiers:
            continue
        memo: Dict = {}                        # _ports' groups and switches, per fabric
        if groups is not None:
            groups[fc.fabric] = memo
        for replica in owner_paths.get(fc.owner, [fc.owner]):
            for slot in _slots(owner, replica, fc, cache):
                yield _links_of(slot, fc, owner.kind, replica, cache, memo)


def _slots(owner, replica: str, fc, cache) -> Iterator[HostSlot]:
    """The hosts of a fabric's owner replica, numbered in the walk's order."""
    scope_kinds = sorted({k for t in fc.tiers for k in kinds_of(t.scope)})
    counters: Dict[str, int] = {}
    chain = [(None, 0, [0], owner)]
    for index, slot in enumerate(_walk(owner, replica, replica, scope_kinds, counters, chain,
                                       cache, skip=True)):
        # made directly: attrs.evolve costs 5 us a host (65,536 of the reference design)
        yield HostSlot(slot.path, slot.instance, index, slot.scopes)


def tier_links(design: Design, owner_paths: Dict[str, List[str]],
               groups: Optional[Dict[str, Dict]] = None,
               short: Optional[List[Short]] = None) -> Iterator[TierLink]:
    """Every uplink of every switch tier to the tier above (the module docstring's wiring),
    fabric by fabric and replica by replica. `groups`: what host_links filled for the same
    design (else the hosts are walked here); `short`: gets the uplinks left without a port."""
    cache: Dict = {}
    for fc in fabric_counts(design, cache):
        owner = design.instance(fc.owner)
        if owner is None or len(fc.tiers) < 2:
            continue
        memo = (groups or {}).get(fc.fabric)
        if memo is None:
            memo = {}
            for slot in _slots(owner, fc.owner, fc, cache):
                _switches(slot, fc, owner.kind, cache, memo)
        climbs: List[Dict] = [{} for _ in fc.tiers[1:]]     # lower group -> upper group
        for keys, _ in memo.values():
            for i, up in enumerate(climbs):
                up.setdefault(keys[i], keys[i + 1])
        for n, replica in enumerate(owner_paths.get(fc.owner, [fc.owner])):
            for i, (lo, hi) in enumerate(zip(fc.tiers, fc.tiers[1:])):
                links = _uplinks(lo, hi, climbs[i], fc.fabric, short if n == 0 else None)
                if replica == fc.owner:
                    yield from links
                    continue
                for lower, lower_port, upper, upper_port in links:
                    yield TierLink(lower.replace(fc.owner, replica, 1), lower_port,
                                   upper.replace(fc.owner, replica, 1), upper_port)


def _uplinks(lo, hi, climbs: Dict, fabric: str, short) -> Iterator[TierLink]:
    """The uplinks of tier `lo` to tier `hi` (TierCounts), `climbs` mapping each group of `lo`
    to the group of `hi` it climbs to."""
    up = lo.up_ports
    if hi.per_group <= 0 or up <= 0:
        return
    below: Dict = {}
    for lower, upper in climbs.items():
        below.setdefault(upper, []).append(lower)
    missing = 0
    for upper, lowers in below.items():
        n = hi.size(upper.at, upper.rail, upper.plane)    # groups differ: network_groups
        if n <= 0:
            continue
        used = [0] * n
        uppers = [upper.switch(s) for s in range(n)]       # each name made once
        for lower in lowers:
            for i in range(lo.size(lower.at, lower.rail, lower.plane)):
                name = lower.switch(i)
                for u in range(up):
                    s = (i * up + u) % n
                    port = used[s]
                    used[s] += 1
                    if hi.down_ports and port >= hi.down_ports:
                        missing += 1
                        continue
                    yield TierLink(name, lo.down_ports + u, uppers[s], port)
    if missing and short is not None:
        short.append(Short(lo.name, fabric, missing))


def _switches(slot: HostSlot, fc, owner_kind, cache, memo):
    """[(nic, port, first-tier switch, its down port)] of the host's NIC ports in order, as the
    rank map places them (fabric_names.place, through rank_placement._port_groups)."""
    key = (id(slot.instance), fc.fabric, "cabling ports")  # replicated hosts: once
    hit = cache.get(key)
    if hit is None:
        _, _, nics = _members(slot.instance, cache)
        hit = cache[key] = (slot.instance, nics, host_wiring(nics, fc))  # instance kept: id
    _, nics, places = hit
    if not places:
        return []
    wire = _port_groups(slot, fc, owner_kind, cache, memo)
    return [(p.nic, p.port, switch, port) for p in places for _, switch, port in (wire(p),)]


def _links_of(slot: HostSlot, fc, owner_kind, replica: str, cache, memo) -> HostLinks:
    links = _switches(slot, fc, owner_kind, cache, memo)
    if replica != fc.owner:
        links = [(k, j, switch.replace(fc.owner, replica, 1), port)
                 for k, j, switch, port in links]
    return HostLinks(slot.path, tuple(links))
