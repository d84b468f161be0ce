"""The cables of a design's compute fabrics, as an inventory lists them: each host port and the
first-tier switch port it lands on, fabric by fabric and replica by replica of a fabric's owner.
The hosts are walked and their ports placed as the rank map places them (rankmap.py: a host's
position in its tier's scope decides its switch), for every host of the owner rather than a
job's placement."""
from __future__ import annotations

from typing import Dict, Iterator, List

import attrs

from astral_dsl.analyses.network import _SCOPE_KINDS, fabric_counts
from astral_dsl.analyses.rankmap import HostSlot, _int, _members, _ports, _scope, _walk
from astral_dsl.model.design import Design

@attrs.frozen
class HostLink:
    """One host port's link to its first-tier switch (an inventory's cable)."""
    host: str                    # replica path of the host
    nic: int
    port: int
    switch: str                  # the switch's name (fabric_names), for the owner's replica
    switch_port: int             # its downlink port, from 0


def host_links(design: Design, owner_paths: Dict[str, List[str]]) -> Iterator[HostLink]:
    """Every host port's link to its first-tier switch, fabric by fabric and, for a fabric whose
    owner is replicated, replica by replica (`owner_paths`: canonical owner path -> the paths of
    its replicas, from the expanded design: inventory.py)."""
    cache: Dict = {}
    for fc in fabric_counts(design, cache):
        owner = design.instance(fc.owner)
        if owner is None or not fc.tiers:
            continue
        t0 = fc.tiers[0]
        scope_kinds = sorted({k for t in fc.tiers for k in _SCOPE_KINDS.get(t.scope, (t.scope,))})
        memo: Dict = {}                        # _ports' groups and switches, per fabric
        for replica in owner_paths.get(fc.owner, [fc.owner]):
            counters: Dict[str, int] = {}
            chain = [(None, 0, [0])]
            index = 0
            for slot in _walk(owner, replica, replica, scope_kinds, counters, chain, cache,
                              skip=True):
                slot = attrs.evolve(slot, index=index)
                index += 1
                yield from _links_of(slot, fc, t0, owner.kind, replica, cache, memo)


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
