"""PXN in the failure analysis: a GPU of an NVLink domain of several hosts (`nvlink_domain =
rack`: the 18 trays of a GB200 NVL72 rack) whose own NIC has no live path sends through the NIC
of another GPU of its domain, over NVLink, and shares that NIC; its domain is cut off only when
no NIC of it is left. The one rule the check (damage_judge.py: a note, not E616/E617) and Seer's
forecast (seer/pxn.py) share.

NCCL's PXN ("PCI x NVLink", NCCL 2.12 release notes; NCCL user guide, Environment Variables,
NCCL_PXN_DISABLE, default 0 since 2.12) moves a GPU's network traffic over NVLink to a GPU whose
NIC it then uses; a NIC whose ports are down is not one NCCL opens (it takes the ports in the
ACTIVE state). ASSUMED, as in the forecast's notes: that the intermediate GPU may sit on another
tray of the rack's domain, and that the rerouted GPUs spread one at a time over the domain's live
NICs, each onto the one that leaves the most bandwidth per GPU (a max-min share; NCCL's choice of
NIC is by topology, not by load). A NIC carrying k GPUs gives each k_own / k of its rate.

Rates are in port speeds per NIC, as network_damage.Segment's (live ports x the share of their
slowest path)."""
from __future__ import annotations

import heapq
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses.host_positions import Interval, Positions
from astral_dsl.analyses.network_damage import Damage, Segment, at
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import group_of

# host position -> (the hosts of its rack, whether they are one NVLink domain); None: no rack
DomainAt = Callable[[int], Optional[Tuple[Interval, bool]]]
Live = Tuple[float, int, Tuple[int, ...]]          # a live NIC: (rate, its own GPUs, causes)


def rack_domain(host: Optional[Instance]) -> bool:
    """The host declares `nvlink_domain = rack`: its NVLink domain is its rack's."""
    field = host.field("nvlink_domain") if host is not None else None
    return getattr(field, "name", field) == "rack"


def rack_is_domain(rack: Instance, cache) -> bool:
    """The rack is one NVLink domain: every host of it declares `nvlink_domain = rack`."""
    return all(rack_domain(h) for _, h in group_of(rack, ("host",), cache).flat())


def domains(owner: Instance, positions: Positions, cache) -> Optional[DomainAt]:
    """The racks of `owner`'s hosts and whether each is one NVLink domain (every host of it
    declares `nvlink_domain = rack`); None when no host declares it."""
    if not any(rack_domain(h) for _, h in group_of(owner, ("host",), cache).flat()):
        return None
    known: Dict[int, bool] = {}

    def domain_at(position: int) -> Optional[Tuple[Interval, bool]]:
        found = positions.instance_at(("rack",), position)
        if found is None:
            return None
        rack, hosts = found
        if id(rack) not in known:
            known[id(rack)] = rack_is_domain(rack, cache)
        return hosts, known[id(rack)]
    return domain_at


def communicator(domain: Interval, job: Optional[Sequence[Interval]] = None) -> List[int]:
    """The hosts of NVLink domain `domain` (a rack's hosts) whose NICs a GPU of it that lost
    its own may send through: NCCL's PXN goes through an intermediate GPU of the same
    communicator, so those of the job (`job`: its hosts, the forecast); `astral check` knows no
    job and takes the whole rack (`job` None): a job that holds its rack, which its note says.
    A job on 2 of a rack's 18 trays cannot borrow the NICs of the 16 idle ones."""
    lo, hi = domain
    if job is None:
        return list(range(lo, hi))
    return [x for a, b in job for x in range(max(a, lo), min(b, hi))]


def share(live: Sequence[Live], extra: int) -> Tuple[float, Tuple[int, ...]]:
    """(the lowest rate per GPU-share, its NIC's causes) once `extra` GPUs are spread over the
    `live` NICs (rate, own GPUs, causes), each onto the NIC that leaves it the most."""
    load = [own for _, own, _ in live]
    heap = [(-rate * own / (own + 1), i) for i, (rate, own, _) in enumerate(live)]
    heapq.heapify(heap)
    for _ in range(extra):
        _, i = heapq.heappop(heap)
        load[i] += 1
        rate, own, _ = live[i]
        heapq.heappush(heap, (-rate * own / (load[i] + 1), i))
    i = min(range(len(live)), key=lambda j: (live[j][0] * live[j][1] / load[j], j))
    return live[i][0] * live[i][1] / load[i], live[i][2]


def domain_nics(damage: Damage, lookup, hosts: Sequence[int], healthy: float,
                partial: Optional[Tuple[int, int]] = None):
    """(the GPUs of `hosts` whose NIC has no live path, the causes, the live NICs) in the
    segments `lookup(k, x)` gives for NIC k of host x (None: healthy). `partial`: the job's last
    host when only some of its GPUs are the job's (network_damage.partial_host): the others
    neither lose a path nor lend their NIC (PXN's intermediate GPU is a rank of the job)."""
    lost, why, live = 0, set(), []
    for x in hosts:
        for k in range(damage.nics):
            gpus = damage.job_gpus_on(k, x, partial)
            if not gpus and partial is not None and x == partial[0]:
                continue        # a NIC of the last host's GPUs past the job's last rank
            seg = lookup(k, x)
            rate = seg.ports if seg is not None else healthy
            if seg is not None and (seg.live == 0 or rate <= 0):
                lost += gpus
                why.update(seg.causes)
            elif gpus:
                live.append((rate, gpus, seg.causes if seg else ()))
    return lost, why, live


def reroute(damage: Damage, top: int, lost: List[Tuple[int, Segment]], domain_at: DomainAt):
    """The GPUs that lose their own NIC's every path (`lost`: (tier t, segment) for the traffic
    into tier t, t = 0: every port, E616) split into (those still lost: their domain has no NIC
    with a path into t, [(t, segment)]; those that send through a neighbour's NIC, [(t, share
    of the healthy rate the slowest rerouted GPU of its domain gets, segment)]). A domain that
    keeps paths only up to tier r < top loses every path into r + 1 for its rerouted GPUs too."""
    everything = [(0, damage.total_hosts)]
    cache: Dict[Tuple[int, int], Tuple[List[Segment], List[int]]] = {}

    def lookup(t: int):
        def seg(k: int, x: int) -> Optional[Segment]:
            if (t, k) not in cache:
                segs = damage.segments(k, t, everything)
                cache[t, k] = (segs, [s.start for s in segs])
            return at(*cache[t, k], x)
        return seg

    reach: Dict[Interval, Tuple[int, Dict[int, float], Tuple[int, ...]]] = {}
    still: List[Tuple[int, Segment]] = []
    moved: List[Tuple[int, float, Segment]] = []
    for t, s in lost:
        for piece, domain in by_domain(s, domain_at):
            if domain is None:
                still.append((t, piece))
                continue
            if domain not in reach:
                reach[domain] = _reach(damage, top, domain, lookup)
            r, shares, above = reach[domain]
            if t > r:
                still.append((t, piece))
                continue
            moved.append((t, shares[t], piece))
            if r < top:         # cut off with the NICs it sends through: by their failures
                still.append((r + 1, attrs.evolve(piece, causes=above)))
    return _joined(still), moved


def _joined(lost: List[Tuple[int, Segment]]) -> List[Tuple[int, Segment]]:
    """Pieces of one segment cut at racks joined again where they stay alike and adjacent."""
    out: List[Tuple[int, Segment]] = []
    for t, s in lost:
        if out and out[-1][0] == t and out[-1][1].stop == s.start and \
                attrs.evolve(out[-1][1], start=s.start, stop=s.stop) == s:
            out[-1] = (t, attrs.evolve(out[-1][1], stop=s.stop))
        else:
            out.append((t, s))
    return out


def _reach(damage: Damage, top: int, domain: Interval,
           lookup) -> Tuple[int, Dict[int, float], Tuple[int, ...]]:
    """(the highest tier some NIC of the domain has a path into, -1: none; per tier up to it,
    the share of its healthy rate the slowest GPU gets once the GPUs with no path of their own
    spread over the live NICs; the failures that take the paths into the tier above it from
    the NICs that reach it: what cuts the rerouted GPUs off there)."""
    r, shares = -1, {}
    for t in range(top + 1):
        healthy = damage.healthy(t)
        lost, _, live = domain_nics(damage, lookup(t), communicator(domain), healthy)
        if not live:
            break
        r = t
        shares[t] = share(live, lost)[0] / healthy if lost else 1.0
    return r, shares, _cut_above(damage, r, domain, lookup) if 0 <= r < top else ()


def _cut_above(damage: Damage, r: int, domain: Interval, lookup) -> Tuple[int, ...]:
    """The causes that cut, from tier r + 1, the NICs of the domain that have a path into r."""
    below, above, causes = lookup(r), lookup(r + 1), set()
    for x in communicator(domain):
        for k in range(damage.nics):
            seg = below(k, x)
            if damage.gpus_on(k) and (seg is None or (seg.live and seg.ports > 0)):
                up = above(k, x)
                causes.update(up.causes if up is not None else ())
    return tuple(sorted(causes))


def by_domain(s: Segment, domain_at: DomainAt):
    """Segment `s` cut at its racks that are one NVLink domain of several hosts: (piece, the
    rack's hosts), or (piece, None) for a run of hosts in no such domain."""
    x, plain = s.start, s.start          # plain: where the run of hosts in no domain began
    while x < s.stop:
        found = domain_at(x)
        (lo, hi), one = found if found is not None else ((x, s.stop), False)
        stop = min(s.stop, hi)
        if one and hi - lo > 1:
            if plain < x:
                yield attrs.evolve(s, start=plain, stop=x), None
            yield attrs.evolve(s, start=x, stop=stop), (lo, hi)
            plain = stop
        x = stop
    if plain < s.stop:
        yield attrs.evolve(s, start=plain), None


__all__ = ["DomainAt", "by_domain", "communicator", "domain_nics", "domains", "rack_domain",
           "reroute", "share"]
