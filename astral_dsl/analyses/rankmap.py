"""The rank map of a job on its placement: rank -> parallel coordinates -> GPU -> host -> NIC
ports -> first-tier switches, and for every collective group the ports, links, switches and tier
groups its traffic can cross (names: fabric_names.py; the placement's hosts and where their NIC
ports land: rank_placement.py).

Rank order (Megatron-Core's RankGenerator, analyses/rank_order.py: the numbering Seer's
groups come from too): `order` lists the parallel dimensions from the fastest-varying,
`tp-cp-ep-dp-pp` by default: rank = tp + TP * (cp + CP * (dp + DP * pp)) for the default (the
dense numbering's `ep` has size 1). A rank's `ep` coordinate and its EP group are the expert
numbering's (TP and CP folded into the expert ranks, its fastest dimension the expert tensor
parallelism `etp`, 1 unless the job states it): with the default order and ETP 1 an EP group is
`ep` consecutive ranks. Ranks fill the placement's GPUs in order:
host by host in the order the design lists them (with the job's `hosts_per_rack`, the first N of
each rack: analyses/job_racks.py), GPU i of a host is local rank i.

Paths: a group inside one host runs on NVLink (its path is the host). Across hosts each member
uses the NIC of its GPU's rail, every port of it (ports of one NIC are on different planes and
carry the same collective's traffic); members' ports meet at their first-tier switches; members
on different first-tier switches climb through every tier up to the lowest tier whose group holds
them all, each member through its own groups (ECMP: any switch of a group, so the path names the
tier group; an uplink is named by its lower end and the group above, or that group's one switch
when it has only one)."""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.fabric_names import TierKey, link_name
from astral_dsl.analyses.rank_order import Numbering
from astral_dsl.analyses.rank_placement import HostSlot, Port, _fabric_of, _hosts, _members, \
    _ports, nvlink_domain
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import count_of

DEFAULT_ORDER = "tp-cp-ep-dp-pp"
_DIGITS = re.compile(r"(\d+)")
KINDS = ("tp", "cp", "ep", "dp", "pp")


class RankMapError(Exception):
    pass


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
    domain: str = ""               # its NVLink domain: its host, or an NVL72's rack


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

    def size_of(self, key: TierKey) -> int:
        """Switches in tier group `key` (groups of one tier may differ in size:
        network_groups)."""
        tier = next((t for t in self._tiers if t.name == key.tier), None)
        return tier.size(key.at, key.rail, key.plane) if tier is not None else 0

    def group(self, kind: str, rank: int) -> CommGroup:
        return self.groups[kind][self.group_of_rank[kind][rank]]

    def path(self, ranks: Sequence[int], keep: bool = True) -> PathSet:
        """The parts the traffic among `ranks` can cross (kept for the next asker, but not
        `keep`: the JSON's group paths, each asked once)."""
        key = tuple(sorted(set(ranks)))
        hit = self._paths.get(key)
        if hit is None:
            hit = _path(self, key)
            if keep:
                self._paths[key] = hit
        return hit

    def to_json(self, paths: bool = True) -> Dict:
        doc = self.head_json()
        doc["ranks"] = [self.rank_json(r) for r in self.ranks]
        doc["groups"] = {kind: [self.group_json(g, paths) for g in groups]
                         for kind, groups in self.groups.items()}
        return doc

    # the document's parts, which `astral forecast --ranks` writes one at a time (the whole
    # document of 524,288 ranks and its text held 4.5 GB beside the map's 1.2 GB)
    def head_json(self) -> Dict:
        """The document's fields before `ranks` and `groups`."""
        return {"job": self.job, "order": "-".join(self.order), "sizes": dict(self.sizes),
                "world_size": self.world, "fabric": self.fabric}

    @staticmethod
    def rank_json(r: RankInfo) -> Dict:
        return {"rank": r.rank, "coords": dict(r.coords), "stage": r.stage, "gpu": r.gpu,
                "host": r.host, "local_rank": r.local,
                "nic_ports": [{"port": p.name, "rail": p.rail, "plane": _plane(p.plane),
                               "switch": p.switch, "link": link_name(p.name, p.switch)}
                              for p in r.ports]}

    def group_json(self, g: CommGroup, paths: bool = True) -> Dict:
        item = {"index": g.index, "ranks": list(g.ranks)}
        if paths:
            item["path"] = self.path(g.ranks, keep=False).to_json()
        return item


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
    """Megatron-Core's decomposition: tp, cp, dp and pp the dense numbering's, ep the expert
    numbering's (rank_order.py)."""
    return _coords_of(rank, *_numberings(sizes, order))


def _coords_of(rank: int, dense: Numbering, expert: Numbering) -> Dict[str, int]:
    out = dense.coords(rank)
    out["ep"] = expert.coords(rank)["ep"]
    return out


def _all_coordinates(sizes: Dict[str, int], order: Sequence[str], world: int
                     ) -> List[Dict[str, int]]:
    dense, expert = _numberings(sizes, order)
    return [_coords_of(r, dense, expert) for r in range(world)]


def _numberings(sizes: Dict[str, int], order: Sequence[str]) -> Tuple[Numbering, Numbering]:
    """The dense and the expert numbering of `sizes` (tp, cp, ep, dp, pp; etp, the expert
    tensor parallelism, 1 when absent) in `order`."""
    args = (sizes["tp"], sizes["cp"], sizes["ep"], sizes["dp"], sizes["pp"], order)
    return Numbering(*args), Numbering(*args, experts=True, etp=sizes.get("etp", 1))


def build(design: Design, job: Instance, sizes: Dict[str, int], order: Optional[str] = None,
          limit: int = 1 << 20) -> RankMap:
    """The rank map of `job` with parallel degrees `sizes` (tp, cp, ep, dp, pp; etp, the
    expert tensor parallelism, 1 when absent)."""
    order_t = parse_order(order if order is not None else _declared_order(job))
    etp = max(1, int(sizes.get("etp", 1)))
    sizes = {k: max(1, int(sizes.get(k, 1))) for k in KINDS}
    if etp > 1:            # stated only when not 1: the rank maps of ETP 1 read as before
        sizes["etp"] = etp
    world = sizes["tp"] * sizes["cp"] * sizes["dp"] * sizes["pp"]
    if (sizes["tp"] * sizes["dp"] * sizes["cp"]) % (sizes["ep"] * etp):      # as Seer's E753
        what = f"ep = {sizes['ep']}" if etp == 1 else f"ep x etp = {sizes['ep']} x {etp}"
        raise RankMapError(f"{what} does not divide tp x dp x cp = "
                           f"{sizes['tp'] * sizes['dp'] * sizes['cp']}")
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
    coords_all = _all_coordinates(sizes, order_t, world)
    r = 0
    memo: Dict = {}
    for slot, n in zip(hosts, per_host):
        gpu_member, nic_member, nics = _members(slot.instance, cache)
        ports_of = _ports(slot, nic_member, nics, fc, owner.kind if owner is not None else None,
                          cache, memo)
        domain = nvlink_domain(design, slot, cache)
        for local in range(n):
            if r >= world:
                break
            c = coords_all[r]
            ranks.append(RankInfo(r, tuple((k, c[k]) for k in KINDS), c["pp"],
                                  f"{slot.path}.{gpu_member}[{local}]", slot.path, slot.index,
                                  local, tuple(ports_of(local)), domain))
            r += 1
    groups, of_rank = _groups(sizes, order_t, world)
    return RankMap(job.template, order_t, tuple(sizes.items()), fc.fabric if fc else None,
                   tuple(ranks), groups, of_rank, tuple(fc.tiers) if fc else ())


def reorder(rm: RankMap, order: str) -> RankMap:
    """The same placement with the ranks in another parallel order (coordinates, stages and
    groups change; which GPU a rank runs on does not)."""
    order_t = parse_order(order)
    sizes = dict(rm.sizes)
    coords_all = _all_coordinates(sizes, order_t, rm.world)
    ranks = tuple(attrs.evolve(info, coords=tuple((k, c[k]) for k in KINDS), stage=c["pp"])
                  for info, c in zip(rm.ranks, coords_all))
    groups, of_rank = _groups(sizes, order_t, rm.world)
    return RankMap(rm.job, order_t, rm.sizes, rm.fabric, ranks, groups, of_rank, rm._tiers)


def _declared_order(job: Instance) -> Optional[str]:
    par = job.member("parallel")
    v = par.field("order") if par is not None else None
    if v is None:
        return None
    return getattr(v, "name", None) or (v if isinstance(v, str) else str(v))



def _groups(sizes, order, world):
    """Per kind: the groups (ranks differing only in that coordinate: the dense numbering's, the
    expert numbering's for `ep`) and each rank's group; with context parallelism `dpcp`, the
    data- and context-parallel ranks over which Megatron-Core reduces the gradients (its
    DATA_PARALLEL_GROUP_WITH_CP, Seer's `dp` group); with expert parallelism `edp`, the expert
    numbering's data-parallel ranks over which the experts' gradients are reduced (its
    EXPERT_DATA_PARALLEL_GROUP, Seer's `edp`); with expert tensor parallelism (`etp` > 1)
    `etp`, the expert numbering's tensor-parallel ranks that split each routed expert (its
    EXPERT_TENSOR_PARALLEL_GROUP, Seer's `etp`)."""
    import numpy as np

    dense, expert = _numberings(sizes, order)
    ranks = np.arange(world, dtype=np.int64)
    groups: Dict[str, Tuple[CommGroup, ...]] = {}
    of_rank: Dict[str, Tuple[int, ...]] = {}
    keys = {kind: (expert if kind == "ep" else dense).base(kind, ranks) for kind in KINDS}
    if sizes["cp"] > 1:
        keys["dpcp"] = dense.base("dp", dense.base("cp", ranks))
    if sizes["ep"] > 1:
        keys["edp"] = expert.base("dp", ranks)
    if sizes.get("etp", 1) > 1:
        keys["etp"] = expert.base("tp", ranks)
    for kind, key in keys.items():
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order_g = np.argsort(first, kind="stable")          # groups numbered by their first rank
        renum = np.empty_like(order_g)
        renum[order_g] = np.arange(order_g.size)
        gid = renum[inverse]
        members: List[List[int]] = [[] for _ in range(order_g.size)]
        for r, g in enumerate(gid.tolist()):
            members[g].append(r)
        groups[kind] = tuple(CommGroup(kind, i, tuple(m)) for i, m in enumerate(members))
        of_rank[kind] = tuple(gid.tolist())
    return groups, of_rank


def _path(rm: RankMap, ranks: Tuple[int, ...]) -> PathSet:
    infos = [rm.ranks[r] for r in ranks if r < len(rm.ranks)]
    hosts = sorted({i.host for i in infos}, key=natural)
    if len(hosts) <= 1 or one_domain(infos):         # NVLink: no NIC, no switch
        return PathSet(tuple(hosts), (), (), (), ())
    ports, links, switches, tiers = set(), set(), set(), set()
    by_port: Dict[int, List[Port]] = {}
    for info in infos:
        for p in info.ports:
            ports.add(p.name)
            links.add(link_name(p.name, p.switch))
            switches.add(p.switch)
            by_port.setdefault(p.port, []).append(p)
    sizes = rm.size_of
    for members in by_port.values():
        for below, above in climb(members, sizes):
            tiers.add(above[1])
            links.add(link_name(below, above[0]))
    return PathSet(tuple(hosts), tuple(sorted(ports, key=natural)),
                   tuple(sorted(links, key=natural)), tuple(sorted(switches, key=natural)),
                   tuple(sorted(tiers, key=natural)))


def domain_of(info: RankInfo) -> str:
    """The NVLink domain a rank's GPU sits in: its NVL72 rack's (`nvlink_domain = rack`), else
    its host."""
    return info.domain or info.host


def one_domain(infos: Sequence[RankInfo]) -> bool:
    """Whether the ranks all sit in one NVLink domain of several hosts (an NVL72's rack)."""
    return len({domain_of(i) for i in infos}) == 1


def natural(name: str) -> Tuple:
    """A path's sort key in the design's order: `racks[2]` before `racks[10]`, as a string sort
    would not put them (indices compared as numbers)."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


def upper_end(key: TierKey, sizes: Callable[[TierKey], int]) -> str:
    """The upper end of an uplink into tier group `key` (`sizes`: its switches, RankMap.size_of):
    its one switch when the group has a single switch (the wiring decides), else the group (ECMP
    decides which switch)."""
    return key.switch(0) if sizes(key) == 1 else key.name


def climb(members: Sequence[Port],
          sizes: Callable[[TierKey], int]) -> List[Tuple[str, Tuple[str, str]]]:
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
           "RankMap", "RankMapError", "build", "climb", "coordinates", "domain_of", "one_domain",
           "parse_order", "reorder", "upper_end"]

