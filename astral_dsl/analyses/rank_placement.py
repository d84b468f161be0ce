"""The placement's hosts for the rank map (rankmap.py) and the cabling (cabling.py): the hosts a
job's placement covers, in the design's order, with their positions in every scope instance of the
fabric's owner; their GPU and NIC members; and where each NIC port lands on the fabric (its
first-tier switch and the tier groups its traffic can climb to; names: fabric_names.py)."""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.fabric_names import PortPlace, TierKey, place, port_name, \
    ports_before, wiring
from astral_dsl.analyses.job_racks import Quota, hosts_per_rack
from astral_dsl.analyses.network import fabric_counts
from astral_dsl.analyses.network_records import FabricCount
from astral_dsl.analyses.nvlink_share import rack_domain, rack_is_domain
from astral_dsl.analyses.walk import replicas
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.tier_groups import kinds_of
from astral_dsl.model.values import Group
from astral_dsl.units import Quantity

@records.frozen
class HostSlot:
    path: str                    # replica path, e.g. Lab.pods[0].rows[0].racks[1].hosts[2]
    instance: Instance
    index: int                   # position among the job's hosts
    # (kind, index in the fabric owner, hosts before this one inside that instance, the
    # instance)
    scopes: Tuple[Tuple[Optional[str], int, int, Instance], ...]


@records.frozen
class Port:
    name: str
    nic: int
    port: int
    rail: int
    plane: int
    switch: str                  # first-tier switch
    tiers: Tuple[TierKey, ...]   # the group of every tier the port's traffic can climb to

    @property
    def tier(self) -> TierKey:
        return self.tiers[0]


def _fabric_of(design: Design, job: Instance, cache) -> Tuple[Optional[FabricCount],
                                                               Optional[Instance]]:
    target = job.field("placement")
    paths = [target.path] if isinstance(target, Ref) else \
        [r.path for _, r in target.flat() if isinstance(r, Ref)] if isinstance(target, Group) \
        else [design.roots[0].path] if design.roots else []
    best = None
    for f in fabric_counts(design, cache):
        for p in paths:
            if p == f.owner or p.startswith(f.owner + ".") or f.owner.startswith(p + ".") \
                    or f.owner.startswith(p + "["):
                if best is None or len(f.owner) > len(best.owner):
                    best = f
    if best is None:
        return None, None
    return best, design.instance(best.owner)


def _hosts(design: Design, job: Instance, fc, owner, needed: int, cache) -> Iterator[HostSlot]:
    """The placement's hosts in order, with their replica paths and their positions in every
    scope instance of the fabric's owner."""
    target = job.field("placement")
    route = job.route("placement")     # the replicas as written: `pods[3]`, not the shared pod
    written = _route_paths(route, design) if route is not None and not route.from_template else None
    if written is not None:
        wanted = written
    elif isinstance(target, Ref):
        wanted = [target.path]
    elif isinstance(target, Group):
        wanted = [r.path for _, r in target.flat() if isinstance(r, Ref)]
    else:
        wanted = [design.roots[0].path] if design.roots else []
    root = owner if owner is not None else None
    scope_kinds = sorted({k for t in (fc.tiers if fc else ()) for k in
                          kinds_of(t.scope)})
    found = 0
    n = hosts_per_rack(job)             # the one rule of a job's share of a rack: job_racks.py
    quota = Quota(n)
    for want in wanted:
        start = root
        if start is None or not (want == start.path or want.startswith(start.path + ".")):
            start = design.instance(want)
            if start is None:
                continue
        counters: Dict[str, int] = {}
        chain = [(None, 0, [0], root)] if start is root else []  # the owner: no axis in names
        for slot in _walk(start, start.path, want, scope_kinds, counters, chain, cache,
                          skip=start is root):
            if not quota.room(rack_of(design, slot.path, cache) if n else None, 1):
                continue
            yield attrs.evolve(slot, index=found)
            found += 1
            if found >= needed:
                return


def _route_paths(route, design: Design) -> Optional[List[str]]:
    """The replicas a placement's route names, as paths in the design's order: `pods[3]` one,
    `pods[0..1]` (a range: `(a, b)`, b excluded) each of its pods, so that a job placed on two
    pods takes the hosts of both (the group's shared instance has the first pod's path only).
    A step after a group applies to each of its members, as the language reads it
    (`pods[0..1].sus[0]` is the first block of each of the two pods, `pods[*].sus[0]` of every
    pod: docs/language.md section 10.6). None when a path names no instance."""
    paths = [route.root]
    for k, step in enumerate(route.steps):
        whole = step.index in (None, "*")
        if whole and k == len(route.steps) - 1:
            paths = [f"{p}.{step.name}" for p in paths]      # the group itself: every member
            continue
        out = []
        for p in paths:
            if whole:
                owner = design.instance(p)
                group = owner.member(step.name) if owner is not None else None
                if group is None:
                    return None
                indices = range(group.count) if isinstance(group, Group) else (None,)
            else:
                indices = (step.index,) if isinstance(step.index, int) else \
                    range(step.index[0], step.index[1])
            out += [f"{p}.{step.name}" if i is None else f"{p}.{step.name}[{i}]"
                    for i in indices]
        paths = out
    return paths


def _walk(inst: Instance, path: str, want: str, scope_kinds, counters, chain, cache,
          skip: bool = False):
    """Hosts under `inst` in order that lie inside `want`; subtrees outside it are counted (for
    the scope positions) without being expanded."""
    inside = path == want or path.startswith(want + ".") or path.startswith(want + "[")
    if inst.kind == "host":
        if inside:
            scopes = tuple((k, i, b[0], s) for k, i, b, s in chain)
            yield HostSlot(path, inst, 0, scopes)
        for entry in chain:
            entry[2][0] += 1
        return
    if inst.kind in scope_kinds and not skip:
        idx = counters.get(inst.kind, 0)
        counters[inst.kind] = idx + 1
        chain = chain + [(inst.kind, idx, [0], inst)]
    for cpath, _, child in replicas(inst, path):
        if child.level is not None:
            yield from _enter(child, cpath, want, scope_kinds, counters, chain, cache)


def _enter(child, cpath, want, scope_kinds, counters, chain, cache):
    related = (want == cpath or want.startswith(cpath + ".") or want.startswith(cpath + "[")
               or cpath.startswith(want + ".") or cpath.startswith(want + "["))
    if related:
        yield from _walk(child, cpath, want, scope_kinds, counters, chain, cache)
        return
    hosts = count_of(child, ("host",), cache)
    for entry in chain:
        entry[2][0] += hosts
    for kind in scope_kinds:
        if child.kind == kind:
            counters[kind] = counters.get(kind, 0) + 1
        else:
            counters[kind] = counters.get(kind, 0) + count_of(child, (kind,), cache)


def nvlink_domain(design: Design, slot: HostSlot, cache) -> str:
    """The NVLink domain of a placement's host: the host itself, or its rack when every host of
    the rack declares `nvlink_domain = rack` (an NVL72: its GPUs reach each other over the
    rack's NVLink switches, not their NICs; the rule of Seer's cluster and of the failures'
    PXN, nvlink_share.py)."""
    if not rack_domain(slot.instance):
        return slot.path
    rack = rack_of(design, slot.path, cache)
    if rack is None:
        return slot.path
    key = ("nvlink domain", rack)
    if key not in cache:
        cache[key] = rack_is_domain(design.instance(rack), cache)
    return rack if cache[key] else slot.path


def rack_of(design: Design, path: str, cache) -> Optional[str]:
    """The replica path of the rack that holds the host at `path`, None when none does."""
    prefix = path
    while "." in prefix:
        prefix = prefix.rsplit(".", 1)[0]
        key = ("rack of", prefix)
        if key not in cache:
            inst = design.instance(prefix)
            cache[key] = None if inst is None else inst.kind == "rack"
        if cache[key]:
            return prefix
    return None


def _members(host: Instance, cache) -> Tuple[str, str, List[Instance]]:
    key = (id(host), "rank map members")      # replicated hosts share one instance: once
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = (host, _find_members(host, cache))   # host kept: its id unique
    return hit[1]


def _find_members(host: Instance, cache) -> Tuple[str, str, List[Instance]]:
    gpu_member, nic_member = "gpus", "nics"
    for m in host.members:
        kinds = {i.kind for _, i in m.value.flat()} if isinstance(m.value, Group) else \
            {m.value.kind} if isinstance(m.value, Instance) else set()
        if "gpu" in kinds:
            gpu_member = m.name
        if "nic" in kinds:
            nic_member = m.name
    nics = group_of(host, ("nic",), cache).items(1 << 12) or []
    return gpu_member, nic_member, nics


def _ports(slot: HostSlot, nic_member: str, nics: List[Instance], fc: Optional[FabricCount],
           owner_kind: Optional[str], cache: Dict, memo: Optional[Dict] = None):
    """`ports_of(local)`: the NIC ports of GPU `local` of the host in `slot`, with the tier
    groups they can climb to and their first-tier switch. `memo`: a dict kept for one fabric
    across its hosts (hosts of the same scope share their groups, those of a rack their
    switches)."""
    wire = _port_groups(slot, fc, owner_kind, cache, memo) if fc and fc.tiers else None
    of_nic: Dict[int, List[PortPlace]] = {}
    for p in (host_wiring(nics, fc) if wire is not None else ()):
        of_nic.setdefault(p.nic, []).append(p)

    def ports_of(local: int) -> List[Port]:
        if not nics or wire is None:
            return []
        k = local % len(nics)
        out = []
        for p in of_nic.get(k, ()):
            keys, switch, _ = wire(p)
            out.append(Port(port_name(slot.path, nic_member, k, p.port), k, p.port, p.rail,
                            p.plane, switch, keys))
        return out
    return ports_of


def host_wiring(nics: Sequence[Instance], fc: FabricCount) -> Tuple[PortPlace, ...]:
    """Where a host's NIC ports land on the fabric's first tier (fabric_names.wiring)."""
    t0 = fc.tiers[0]
    return wiring([_int(n.field("ports"), 1) for n in nics], fc.rails, fc.planes,
                  "rail" in t0.per, "plane" in t0.per)


def _port_groups(slot: HostSlot, fc: FabricCount, owner_kind: Optional[str], cache: Dict,
                 memo: Optional[Dict] = None):
    """`wire(port)`: (the tier groups a host's port (fabric_names.PortPlace) climbs to, its
    first-tier switch, the switch's down port it takes) for a fabric with tiers. `memo`: as
    _ports'."""
    t0 = fc.tiers[0]
    scopes = [_scope(slot, t.scope, owner_kind) for t in fc.tiers]
    axes = [sc[:2] if sc and sc[0] else None for sc in scopes]
    position = scopes[0][2] if scopes[0] else slot.index
    scope = scopes[0][3] if scopes[0] else None
    groups = {} if memo is None else memo
    axes_key = tuple(axes)
    down = t0.down_ports
    params = (fc.rails, fc.planes, "rail" in t0.per, "plane" in t0.per)
    # hosts of the scope that put different counts on a group: the ports of those before
    before = ports_before(scope, params, cache) if scope is not None else None

    def wire(port: PortPlace) -> Tuple[Tuple[TierKey, ...], str, int]:
        number, at = place(position, port, down,
                           before(position, port) if before is not None else None)
        key = (axes_key, number, port.rail, port.plane)
        hit = groups.get(key)
        if hit is None:
            keys = tuple(_key(fc.fabric, t.name, axis, port.rail if "rail" in t.per else None,
                              port.plane if "plane" in t.per else None)
                         for t, axis in zip(fc.tiers, axes))
            hit = groups[key] = (keys, keys[0].switch(number))
        return hit[0], hit[1], at
    return wire


_KEYS: Dict[Tuple, TierKey] = {}


def _key(*args) -> TierKey:
    hit = _KEYS.get(args)
    if hit is None:
        if len(_KEYS) > 1 << 16:
            _KEYS.clear()
        hit = _KEYS[args] = TierKey(*args)
    return hit


def _scope(slot: HostSlot, scope: str,
           owner_kind) -> Optional[Tuple[Optional[str], int, int, Instance]]:
    """(kind, or None when the scope is the fabric's owner; index; hosts before; the instance)
    of the host's instance of a tier's scope."""
    kinds = kinds_of(scope)
    for kind, idx, before, inst in reversed(slot.scopes):
        if kind in kinds or (kind is None and owner_kind in kinds):
            return kind, idx, before, inst
    return None


def _int(q, default: int) -> int:
    return int(q.si) if isinstance(q, Quantity) else default
