"""The rank map of a job on its placement: rank -> parallel coordinates -> GPU -> host -> NIC
ports -> first-tier switches, and for every collective group the ports, links, switches and tier
groups its traffic can cross (names: fabric_names.py).

Rank order (Megatron-Core's RankGenerator): `order` lists the parallel dimensions from the
fastest-varying, `tp-cp-ep-dp-pp` by default: rank = tp + TP * (cp + CP * (dp + DP * pp)) for
the default. Expert parallelism splits the data-parallel dimension: an EP group is `ep`
consecutive data-parallel ranks (the dense order's `ep` has size 1). Ranks fill the placement's
GPUs in order: host by host in the order the design lists them, GPU i of a host is local rank i.

Paths: a group inside one host runs on NVLink (its path is the host). Across hosts each member
uses the NIC of its GPU's rail, every port of it (ports of one NIC are on different planes and
carry the same collective's traffic); members' ports meet at their first-tier switches; members
on different first-tier switches climb through every tier up to the lowest tier whose group holds
them all, each member through its own groups (ECMP: any switch of a group, so the path names the
tier group; an uplink is named by its lower end and the group above, or that group's one switch
when it has only one)."""
from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.fabric_names import PortPlace, TierKey, link_name, place, port_name, \
    ports_before, wiring
from astral_dsl.analyses.network import FabricCount, _SCOPE_KINDS, fabric_counts
from astral_dsl.analyses.walk import replicas
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group
from astral_dsl.units import Quantity

DEFAULT_ORDER = "tp-cp-ep-dp-pp"
_DIGITS = re.compile(r"(\d+)")
KINDS = ("tp", "cp", "ep", "dp", "pp")


class RankMapError(Exception):
    pass


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


@records.frozen
class RankInfo:
    rank: int
    coords: Tuple[Tuple[str, int], ...]
    stage: int
    gpu: str
    host: str
    host_index: int
    local: int
    ports: Tuple[Port, ...]


@records.frozen
class PathSet:
    """What a group's traffic can cross."""
    hosts: Tuple[str, ...]
    ports: Tuple[str, ...]
    links: Tuple[str, ...]        # host links (port -- switch) and uplinks (switch -- the tier
    #                               group above, or its one switch when it has one)
    switches: Tuple[str, ...]     # first-tier switches
    tiers: Tuple[str, ...]        # upper tier groups (ECMP: any switch of the group)

    def to_json(self) -> Dict:
        return {"hosts": list(self.hosts), "ports": list(self.ports), "links": list(self.links),
                "switches": list(self.switches), "tiers": list(self.tiers)}


@records.frozen
class CommGroup:
    kind: str
    index: int
    ranks: Tuple[int, ...]


@records.frozen(eq=False)
class RankMap:
    job: str
    order: Tuple[str, ...]
    sizes: Tuple[Tuple[str, int], ...]
    fabric: Optional[str]
    ranks: Tuple[RankInfo, ...]
    groups: Dict[str, Tuple[CommGroup, ...]]
    group_of_rank: Dict[str, Tuple[int, ...]]         # kind -> group index per rank
    _tiers: Tuple = ()                                 # per fabric tier: (name, TierCount)
    _paths: Dict = attrs.field(factory=dict)

    @property
    def world(self) -> int:
        return len(self.ranks)

    @property
    def tier_sizes(self) -> Dict[str, int]:
        """Switches per group of every fabric tier."""
        return {t.name: t.per_group for t in self._tiers}

    def group(self, kind: str, rank: int) -> CommGroup:
        return self.groups[kind][self.group_of_rank[kind][rank]]

    def path(self, ranks: Sequence[int]) -> PathSet:
        """The parts the traffic among `ranks` can cross."""
        key = tuple(sorted(set(ranks)))
        hit = self._paths.get(key)
        if hit is None:
            hit = self._paths[key] = _path(self, key)
        return hit

    def to_json(self, paths: bool = True) -> Dict:
        doc = {"job": self.job, "order": "-".join(self.order), "sizes": dict(self.sizes),
               "world_size": self.world, "fabric": self.fabric,
               "ranks": [{"rank": r.rank, "coords": dict(r.coords), "stage": r.stage,
                          "gpu": r.gpu, "host": r.host, "local_rank": r.local,
                          "nic_ports": [{"port": p.name, "rail": p.rail,
                                         "plane": _plane(p.plane),
                                         "switch": p.switch,
                                         "link": link_name(p.name, p.switch)}
                                        for p in r.ports]}
                         for r in self.ranks],
               "groups": {}}
        for kind, groups in self.groups.items():
            out = []
            for g in groups:
                item = {"index": g.index, "ranks": list(g.ranks)}
                if paths:
                    item["path"] = self.path(g.ranks).to_json()
                out.append(item)
            doc["groups"][kind] = out
        return doc


def _plane(p: int) -> str:
    from astral_dsl.model.values import plane_label

    return plane_label(p)


# ---- building ---------------------------------------------------------------------------------
def parse_order(text: Optional[str]) -> Tuple[str, ...]:
    order = tuple(x.strip().lower() for x in (text or DEFAULT_ORDER).split("-") if x.strip())
    if sorted(order) != sorted(KINDS):
        raise RankMapError(f"parallel order `{text}` must list each of tp, cp, ep, dp, pp once")
    return order


def coordinates(rank: int, sizes: Dict[str, int], order: Sequence[str]) -> Dict[str, int]:
    """Megatron-Core's decomposition; `ep` is a sub-dimension of `dp` (dp = ep_i + EP * dp_o)."""
    dims = {"tp": sizes["tp"], "cp": sizes["cp"], "ep": sizes["ep"],
            "dp": sizes["dp"] // max(1, sizes["ep"]), "pp": sizes["pp"]}
    out, rest = {}, rank
    for kind in order:
        out[kind], rest = rest % dims[kind], rest // dims[kind]
    ep_i, dp_o = out["ep"], out["dp"]
    out["dp"] = ep_i + sizes["ep"] * dp_o
    return out


def build(design: Design, job: Instance, sizes: Dict[str, int], order: Optional[str] = None,
          limit: int = 1 << 20) -> RankMap:
    """The rank map of `job` with parallel degrees `sizes` (tp, cp, ep, dp, pp)."""
    order_t = parse_order(order if order is not None else _declared_order(job))
    sizes = {k: max(1, int(sizes.get(k, 1))) for k in KINDS}
    world = sizes["tp"] * sizes["cp"] * sizes["dp"] * sizes["pp"]
    if sizes["dp"] % sizes["ep"]:
        raise RankMapError(f"ep = {sizes['ep']} does not divide dp = {sizes['dp']}")
    if world > limit:
        raise RankMapError(f"{world:,} ranks: more than the rank map's limit of {limit:,}")
    cache: Dict = {}
    fc, owner = _fabric_of(design, job, cache)
    hosts = list(_hosts(design, job, fc, owner, world, cache))
    per_host = [count_of(h.instance, ("gpu",), cache) for h in hosts]
    if sum(per_host) < world:
        raise RankMapError(f"the placement holds {sum(per_host):,} GPUs, the job needs "
                           f"{world:,}")
    ranks: List[RankInfo] = []
    coords_all = [coordinates(r, sizes, order_t) for r in range(world)]
    r = 0
    memo: Dict = {}
    for slot, n in zip(hosts, per_host):
        gpu_member, nic_member, nics = _members(slot.instance, cache)
        ports_of = _ports(slot, nic_member, nics, fc, owner.kind if owner is not None else None,
                          cache, memo)
        for local in range(n):
            if r >= world:
                break
            c = coords_all[r]
            ranks.append(RankInfo(r, tuple((k, c[k]) for k in KINDS), c["pp"],
                                  f"{slot.path}.{gpu_member}[{local}]", slot.path, slot.index,
                                  local, tuple(ports_of(local))))
            r += 1
    groups, of_rank = _groups(coords_all, sizes, world)
    return RankMap(job.template, order_t, tuple(sizes.items()), fc.fabric if fc else None,
                   tuple(ranks), groups, of_rank, tuple(fc.tiers) if fc else ())


def reorder(rm: RankMap, order: str) -> RankMap:
    """The same placement with the ranks in another parallel order (coordinates, stages and
    groups change; which GPU a rank runs on does not)."""
    order_t = parse_order(order)
    sizes = dict(rm.sizes)
    coords_all = [coordinates(r, sizes, order_t) for r in range(rm.world)]
    ranks = tuple(attrs.evolve(info, coords=tuple((k, c[k]) for k in KINDS), stage=c["pp"])
                  for info, c in zip(rm.ranks, coords_all))
    groups, of_rank = _groups(coords_all, sizes, rm.world)
    return RankMap(rm.job, order_t, rm.sizes, rm.fabric, ranks, groups, of_rank, rm._tiers)


def _declared_order(job: Instance) -> Optional[str]:
    par = job.member("parallel")
    v = par.field("order") if par is not None else None
    if v is None:
        return None
    return getattr(v, "name", None) or (v if isinstance(v, str) else str(v))


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
    if route is not None and not route.from_template and \
            all(s.index is None or isinstance(s.index, int) for s in route.steps):
        wanted = [route.display]
    elif isinstance(target, Ref):
        wanted = [target.path]
    elif isinstance(target, Group):
        wanted = [r.path for _, r in target.flat() if isinstance(r, Ref)]
    else:
        wanted = [design.roots[0].path] if design.roots else []
    root = owner if owner is not None else None
    scope_kinds = sorted({k for t in (fc.tiers if fc else ()) for k in
                          _SCOPE_KINDS.get(t.scope, (t.scope,))})
    found = 0
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
            yield attrs.evolve(slot, index=found)
            found += 1
            if found >= needed:
                return


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
    kinds = _SCOPE_KINDS.get(scope, (scope,))
    for kind, idx, before, inst in reversed(slot.scopes):
        if kind in kinds or (kind is None and owner_kind in kinds):
            return kind, idx, before, inst
    return None


def _int(q, default: int) -> int:
    return int(q.si) if isinstance(q, Quantity) else default


def _groups(coords_all, sizes, world):
    """Per kind: the groups (ranks differing only in that coordinate) and each rank's group."""
    import numpy as np

    c = {k: np.fromiter((x[k] for x in coords_all), dtype=np.int64, count=world) for k in KINDS}
    groups: Dict[str, Tuple[CommGroup, ...]] = {}
    of_rank: Dict[str, Tuple[int, ...]] = {}
    dims = {"tp": sizes["tp"], "cp": sizes["cp"], "dp": sizes["dp"], "pp": sizes["pp"]}
    for kind in KINDS:
        key = np.zeros(world, dtype=np.int64)
        if kind == "ep":
            parts = [("tp", dims["tp"]), ("cp", dims["cp"]), ("pp", dims["pp"])]
            key = c["dp"] // sizes["ep"]
            for k, n in parts:
                key = key * n + c[k]
        else:
            for k in ("tp", "cp", "dp", "pp"):
                if k != kind:
                    key = key * dims[k] + c[k]
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")          # groups numbered by their first rank
        renum = np.empty_like(order)
        renum[order] = np.arange(order.size)
        gid = renum[inverse]
        members: List[List[int]] = [[] for _ in range(order.size)]
        for r, g in enumerate(gid.tolist()):
            members[g].append(r)
        groups[kind] = tuple(CommGroup(kind, i, tuple(m)) for i, m in enumerate(members))
        of_rank[kind] = tuple(gid.tolist())
    return groups, of_rank


def _path(rm: RankMap, ranks: Tuple[int, ...]) -> PathSet:
    infos = [rm.ranks[r] for r in ranks if r < len(rm.ranks)]
    hosts = sorted({i.host for i in infos}, key=natural)
    if len(hosts) <= 1:
        return PathSet(tuple(hosts), (), (), (), ())
    ports, links, switches, tiers = set(), set(), set(), set()
    by_port: Dict[int, List[Port]] = {}
    for info in infos:
        for p in info.ports:
            ports.add(p.name)
            links.add(link_name(p.name, p.switch))
            switches.add(p.switch)
            by_port.setdefault(p.port, []).append(p)
    sizes = rm.tier_sizes
    for members in by_port.values():
        for below, above in climb(members, sizes):
            tiers.add(above[1])
            links.add(link_name(below, above[0]))
    return PathSet(tuple(hosts), tuple(sorted(ports, key=natural)),
                   tuple(sorted(links, key=natural)), tuple(sorted(switches, key=natural)),
                   tuple(sorted(tiers, key=natural)))


def natural(name: str) -> Tuple:
    """A path's sort key in the design's order: `racks[2]` before `racks[10]`, as a string sort
    would not put them (indices compared as numbers)."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


def upper_end(key: TierKey, sizes: Dict[str, int]) -> str:
    """The upper end of an uplink into tier group `key`: its one switch when the group has a
    single switch (the wiring decides), else the group (ECMP decides which switch)."""
    return key.switch(0) if sizes.get(key.tier, 0) == 1 else key.name


def climb(members: Sequence[Port], sizes: Dict[str, int]) -> List[Tuple[str, Tuple[str, str]]]:
    """The uplinks the traffic among ports of one plane crosses: (lower end, (upper end, upper
    tier group)) for every tier from the first-tier switches up to the lowest tier whose group
    holds them all (every tier in between included: each member climbs its own groups)."""
    if len({p.switch for p in members}) <= 1:
        return []
    out = []
    levels = len(members[0].tiers)
    for i in range(1, levels):
        keys = {p.tiers[i] for p in members}
        for p in members:
            below = p.switch if i == 1 else upper_end(p.tiers[i - 1], sizes)
            out.append((below, (upper_end(p.tiers[i], sizes), p.tiers[i].name)))
        if len(keys) == 1:
            break
    return sorted(set(out))


__all__ = ["CommGroup", "DEFAULT_ORDER", "HostSlot", "KINDS", "PathSet", "Port", "RankInfo",
           "RankMap", "RankMapError", "build", "climb", "coordinates", "parse_order", "reorder",
           "upper_end"]

