"""The cables of a design's compute fabrics, as an inventory lists them, fabric by fabric and
replica by replica of a fabric's owner:

- host_links: each host port and the first-tier switch port it lands on. The hosts are walked
  and their ports placed as the rank map places them (rankmap.py: a host's position in its
  tier's scope decides its switch), for every host of the owner rather than a job's placement.
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

from typing import Dict, Iterator, List, Optional

import attrs

from astral_dsl import records
from astral_dsl.analyses.network import _SCOPE_KINDS, fabric_counts
from astral_dsl.analyses.rankmap import HostSlot, _int, _members, _ports, _scope, _walk
from astral_dsl.model.design import Design

@records.frozen
class HostLink:
    """One host port's link to its first-tier switch (an inventory's cable)."""
    host: str                    # replica path of the host
    nic: int
    port: int
    switch: str                  # the switch's name (fabric_names), for the owner's replica
    switch_port: int             # its downlink port, from 0


@records.frozen
class TierLink:
    """One uplink of a tier's switch to a switch of the tier above."""
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
               groups: Optional[Dict[str, Dict]] = None) -> Iterator[HostLink]:
    """Every host port's link to its first-tier switch, fabric by fabric and, for a fabric whose
    owner is replicated, replica by replica (`owner_paths`: canonical owner path -> the paths of
    its replicas, from the expanded design: inventory.py). `groups`: filled per fabric with the
    tier groups its host ports climb to, for tier_links."""
    cache: Dict = {}
    for fc in fabric_counts(design, cache):
        owner = design.instance(fc.owner)
        if owner is None or not fc.tiers:
            continue
        t0 = fc.tiers[0]
        memo: Dict = {}                        # _ports' groups and switches, per fabric
        if groups is not None:
            groups[fc.fabric] = memo
        for replica in owner_paths.get(fc.owner, [fc.owner]):
            for slot in _slots(owner, replica, fc, cache):
                yield from _links_of(slot, fc, t0, owner.kind, replica, cache, memo)


def _slots(owner, replica: str, fc, cache) -> Iterator[HostSlot]:
    """The hosts of a fabric's owner replica, numbered in the walk's order."""
    scope_kinds = sorted({k for t in fc.tiers for k in _SCOPE_KINDS.get(t.scope, (t.scope,))})
    counters: Dict[str, int] = {}
    chain = [(None, 0, [0])]
    for index, slot in enumerate(_walk(owner, replica, replica, scope_kinds, counters, chain,
                                       cache, skip=True)):
        yield attrs.evolve(slot, index=index)


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
                _, nic_member, nics = _members(slot.instance, cache)
                ports_of = _ports(slot, nic_member, nics, fc, owner.kind, memo)
                for k in range(len(nics)):
                    ports_of(k)
        climbs: List[Dict] = [{} for _ in fc.tiers[1:]]     # lower group -> upper group
        for keys, _ in memo.values():
            for i, up in enumerate(climbs):
                up.setdefault(keys[i], keys[i + 1])
        for n, replica in enumerate(owner_paths.get(fc.owner, [fc.owner])):
            for i, (lo, hi) in enumerate(zip(fc.tiers, fc.tiers[1:])):
                for link in _uplinks(lo, hi, climbs[i], fc.fabric, short if n == 0 else None):
                    yield link if replica == fc.owner else attrs.evolve(
                        link, lower=link.lower.replace(fc.owner, replica, 1),
                        upper=link.upper.replace(fc.owner, replica, 1))


def _uplinks(lo, hi, climbs: Dict, fabric: str, short) -> Iterator[TierLink]:
    """The uplinks of tier `lo` to tier `hi` (TierCounts), `climbs` mapping each group of `lo`
    to the group of `hi` it climbs to."""
    n, up = hi.per_group, lo.up_ports
    if n <= 0 or up <= 0:
        return
    below: Dict = {}
    for lower, upper in climbs.items():
        below.setdefault(upper, []).append(lower)
    missing = 0
    for upper, lowers in below.items():
        used = [0] * n
        uppers = [upper.switch(s) for s in range(n)]       # each name made once
        for lower in lowers:
            for i in range(lo.per_group):
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


def _links_of(slot: HostSlot, fc, t0, owner_kind, replica: str, cache, memo
              ) -> Iterator[HostLink]:
    _, nic_member, nics = _members(slot.instance, cache)
    ports_of = _ports(slot, nic_member, nics, fc, owner_kind, memo)
    ports_total = sum(_int(n.field("ports"), 1) for n in nics)
    split = (fc.rails if "rail" in t0.per else 1) * (fc.planes if "plane" in t0.per else 1)
    per_group = ports_total / split if split else ports_total
    scope = _scope(slot, t0.scope, owner_kind)
    position = scope[2] if scope else slot.index
    first = int(position * per_group)
    seen: Dict[str, int] = {}
    for k in range(len(nics)):
        for p in ports_of(k):
            switch = p.switch.replace(fc.owner, replica, 1) if replica != fc.owner else p.switch
            extra = seen.get(switch, 0)          # this host's other ports on the same switch
            seen[switch] = extra + 1
            yield HostLink(slot.path, p.nic, p.port, switch,
                           (first + extra) % t0.down_ports if t0.down_ports else extra)
