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
domain with no live NIC left is cut off, as without PXN. The racks, the share and the NICs a
domain keeps are analyses/nvlink_share.py's, as `astral check`'s: the same rule, over the job's
trays of the rack here (nvlink_share.communicator), over the whole rack in the check, which
knows no job.

Rates are in port speeds per NIC, as network_damage.Segment's (live ports x the share of their
slowest path)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.analyses.network_damage import Damage, Segment, at
from astral_dsl.analyses.nvlink_share import DomainAt, by_domain, communicator, domain_nics, share


def worst(damage: Damage, top: int, hosts: Sequence[Interval], domain_at: DomainAt,
          partial: Optional[Tuple[int, int]] = None):
    """(the lowest rate of a GPU of `hosts` for traffic that climbs to tier `top`, None when none
    is below healthy; its causes; the GPUs behind a failed part; the GPUs rerouted through a
    neighbour's NIC; the hosts of domains with no live NIC, whose GPUs are cut off).
    `domain_at(position)`: the hosts of the host's rack and whether they are one NVLink domain
    (nvlink_share.domains, as `astral check` finds them: racks of any sizes); a GPU borrows the
    NICs of the job's hosts of its rack only (nvlink_share.communicator). `partial`: the job's
    last host when only some of its GPUs are the job's (network_damage.partial_host): the
    others' NICs neither slow it nor count."""
    job = merge(hosts)
    segs = [s for k in range(damage.nics) for s in damage.segments(k, top, job)]
    mine = [s for s in segs if damage.job_gpus(s, partial)]
    gpus = sum(damage.job_gpus(s, partial) for s in mine)
    orphans = [s for s in mine if s.live == 0 or s.ports <= 0]
    best: Tuple[Optional[float], Tuple[int, ...]] = (None, ())
    for s in mine:
        if s not in orphans and (best[0] is None or s.ports < best[0]):
            best = (s.ports, s.causes)
    if not orphans:
        return best[0], best[1], gpus, 0, []
    by_nic: Dict[int, List[Segment]] = {}
    for s in segs:
        by_nic.setdefault(s.nic, []).append(s)
    starts = {k: [s.start for s in v] for k, v in by_nic.items()}
    touched: Dict[Interval, None] = {}
    rerouted, dead = 0, []
    for s in orphans:
        for piece, domain in by_domain(s, domain_at):
            if domain is None:          # a run of hosts in no domain of several: cut off
                dead.append((piece.start, piece.stop))
                was = set(best[1]) if best[0] == 0.0 else set()
                best = (0.0, tuple(sorted(was | set(piece.causes))))
            else:
                touched.setdefault(domain)
    healthy = damage.healthy(top)
    for lo, hi in sorted(touched):
        lost, why, live = domain_nics(
            damage, lambda k, x: at(by_nic.get(k, ()), starts.get(k, ()), x),
            communicator((lo, hi), job), healthy, partial)
        if not lost:
            continue
        if not live:
            dead.extend((max(a, lo), min(b, hi)) for a, b in job if a < hi and b > lo)
            best = (0.0, tuple(sorted(why)))
            continue
        rerouted += lost
        low, causes = share(live, lost)
        if best[0] is None or low < best[0]:
            best = (low, tuple(sorted(why | set(causes))))
    return best[0], best[1], gpus, rerouted, merge(dead)
