"""PXN under failed fabric parts: a GPU of an NVLink domain whose own NIC has no live path sends
through the NIC of another GPU of its domain, over NVLink, and shares that NIC's bandwidth.

NCCL's PXN ("PCI x NVLink", NCCL 2.12 release notes; NCCL user guide, Environment Variables,
NCCL_PXN_DISABLE: "Disable inter-node communication using a non-local NIC, using NVLink and an
intermediate GPU", default 0, since 2.12) moves a GPU's network traffic over NVLink to a GPU
whose NIC it then uses. A NIC whose port is down is not one NCCL opens (it takes the ports in
the ACTIVE state), so the GPUs that used it go through their neighbours' NICs instead of being
cut off. Seer applies it inside an NVLink domain of several of the design's hosts (`nvlink_domain
= rack`: the 18 trays of a GB200 NVL72 rack, cluster.py), among the hosts of the job (an
intermediate GPU is a rank of the same communicator). ASSUMED, and said in the forecast's notes:
that the intermediate GPU may sit on another tray of the rack's NVLink domain (within a tray it
is PXN's own case), and that the rerouted GPUs spread one at a time over the domain's live NICs,
each onto the one that leaves the most bandwidth per GPU (a max-min share; NCCL's choice of
NIC is by topology, not by load). A NIC carrying k GPUs gives each k_own / k of its rate. A
domain with no live NIC left is cut off, as without PXN. The share and the NICs a domain keeps
are analyses/nvlink_share.py's, which `astral check` applies to the whole rack.

Rates are in port speeds per NIC, as network_damage.Segment's (live ports x the share of their
slowest path)."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.analyses.network_damage import Damage, Segment, at
from astral_dsl.analyses.nvlink_share import domain_nics, share


def _members(hosts: Sequence[Interval], lo: int, hi: int) -> List[int]:
    return [x for a, b in hosts for x in range(max(a, lo), min(b, hi))]


def worst(damage: Damage, top: int, hosts: Sequence[Interval], domain: int,
          rack_of: Optional[Callable[[int], Optional[str]]] = None):
    """(the lowest rate of a GPU of `hosts` for traffic that climbs to tier `top`, None when none
    is below healthy; its causes; the GPUs behind a failed part; the GPUs rerouted through a
    neighbour's NIC; the hosts of domains with no live NIC, whose GPUs are cut off). Domain d is
    hosts [d x domain, (d + 1) x domain) of the fabric's owner; `rack_of(position)`: the rack of
    a host, to check that they are one rack's (a domain that is not gets no PXN)."""
    segs = [s for k in range(damage.nics) for s in damage.segments(k, top, hosts)]
    gpus = sum((s.stop - s.start) * damage.gpus_on(s.nic) for s in segs)
    orphans = [s for s in segs if s.live == 0 or s.ports <= 0]
    kept = segs if not orphans or domain <= 1 else [s for s in segs if s not in orphans]
    best: Tuple[Optional[float], Tuple[int, ...]] = (None, ())
    for s in kept:
        if best[0] is None or s.ports < best[0]:
            best = (s.ports, s.causes)
    if kept is segs:
        return best[0], best[1], gpus, 0, []
    job = merge(hosts)
    by_nic: Dict[int, List[Segment]] = {}
    for s in segs:
        by_nic.setdefault(s.nic, []).append(s)
    starts = {k: [s.start for s in v] for k, v in by_nic.items()}
    touched = sorted({d for s in orphans for d in range(s.start // domain,
                                                       (s.stop - 1) // domain + 1)})
    healthy = damage.healthy(top)
    rerouted, dead = 0, []
    for d in touched:
        lo, hi = d * domain, (d + 1) * domain
        lost, why, live = domain_nics(
            damage, lambda k, x: at(by_nic.get(k, ()), starts.get(k, ()), x),
            _members(job, lo, hi), healthy)
        if not lost:
            continue
        if not live or not _one_rack(rack_of, lo, hi):
            dead.extend((max(a, lo), min(b, hi)) for a, b in job if a < hi and b > lo)
            best = (0.0, tuple(sorted(why)))
            continue
        rerouted += lost
        low, causes = share(live, lost)
        if best[0] is None or low < best[0]:
            best = (low, tuple(sorted(why | set(causes))))
    return best[0], best[1], gpus, rerouted, merge(dead)


def _one_rack(rack_of, lo: int, hi: int) -> bool:
    """Hosts [lo, hi) are the whole of one rack (or no way to tell)."""
    if rack_of is None:
        return True
    rack = rack_of(lo)
    return rack is not None and rack == rack_of(hi - 1) and \
        (lo == 0 or rack_of(lo - 1) != rack) and rack_of(hi) != rack
