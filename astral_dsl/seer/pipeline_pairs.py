"""The pairs of neighbouring pipeline stages, and the slowest of them under failed fabric parts.

A pipeline runs in lockstep: every send/recv of a step waits for the slowest pair of
neighbouring stages. Seer prices the `pp` group by one representative pair (ranks 0 and
0 + the PP stride: comm_groups.groups), which is what a healthy forecast keeps; but the pairs of
a job are not alike: with stages of a host each and ToRs of two hosts, the pairs (1, 2), (3, 4),
... cross a ToR boundary and climb to the tier above while the representative pair does not.
Under a scenario whose failures slow a pair's path below its healthy rate, the pipeline is priced
by its slowest pair instead (`slowest_pair`): the highest tier any pair climbs to, whose rate is
the lowest (a tier higher adds the oversubscription and the failures of every tier it crosses:
comm._climb_to and Network.worst).

Ranks fill hosts in order (seer/ranks.py): rank r is GPU r mod g of host r // g (g GPUs per
host, an NVLink domain being one host), and hosts fill the switches of tier i in runs of its
reach (comm.Tier.reach_hosts), as comm._climb counts them. The pairs are (r, r + d) for the
ranks r of every stage but the last (d: the PP stride), and with virtual stages (an interleaved
schedule) also (r, r + (pp - 1) d) for the ranks of the first stage: the last stage sends its
chunk's output back to the first (Megatron-Core's interleaved 1F1B,
pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec


def _crossing(n: int, unit: int, dist: int, valid) -> bool:
    """Whether a pair (r, r + dist), r + dist < n and valid(r), straddles a boundary of runs of
    `unit` ranks (r // unit != (r + dist) // unit)."""
    for b in range(unit, n, unit):             # the pair (r, r + dist) crosses b: b - dist <= r < b
        lo, hi = max(0, b - dist), min(b - 1, n - 1 - dist)
        if lo <= hi and valid(lo, hi):
            return True
    return False


def pair_top(job: JobSpec, net: comm.Network) -> Optional[int]:
    """The highest tier a pair of neighbouring stages climbs to (None: every pair is inside a
    host)."""
    par = job.parallel
    if par.pp <= 1:
        return None
    g = max(1, net.gpus_per_host)
    d, pp, n = RankOrder(par).stride["pp"], par.pp, par.gpus

    def valid(wanted):
        """Whether some rank in [lo, hi] is of a stage `wanted` accepts."""
        return lambda lo, hi: any(wanted(c % pp) for c in range(lo // d,
                                                                min(hi // d, lo // d + pp) + 1))

    kinds = [(d, valid(lambda s: s < pp - 1))]
    if (par.schedule == "interleaved" or (par.v or 1) > 1) and pp > 2:   # v: None till chosen
        kinds.append(((pp - 1) * d, valid(lambda s: s == 0)))
    top = None
    for dist, ok in kinds:
        if not _crossing(n, g, dist, ok):
            continue                       # every such pair is inside a host (NVLink)
        cross_rail = dist % g != 0
        reached = max(0, len(net.tiers) - 1)
        for i, tier in enumerate(net.tiers):
            if not (cross_rail and tier.per_rail) and \
                    not _crossing(n, max(1, tier.reach_hosts) * g, dist, ok):
                reached = i
                break
        top = reached if top is None else max(top, reached)
    return top


def slowest_pair(job: JobSpec, net: comm.Network, healthy: comm.Network,
                 rep: comm.Layout) -> Optional[Tuple[comm.Layout, comm.Layout]]:
    """(the slowest pair's layout under the failures, the same pair's healthy layout) when a
    pair above the representative one `rep` climbs to a tier whose rate the failures lowered;
    None otherwise (the representative pair sees every failure that slows the pipeline)."""
    top = pair_top(job, net)
    here = (rep.hops - 1) // 2 if rep.hosts > 1 else -1
    if top is None or top <= here:
        return None
    cross = RankOrder(job.parallel).stride["pp"] % max(1, net.gpus_per_host) != 0
    now = comm.layout(net, "pp", 2, 1, 2, cross, 1, top=top)
    before = comm.layout(healthy, "pp", 2, 1, 2, cross, 1, top=top)
    if now.net_bw >= before.net_bw * (1 - 1e-9):
        return None
    return now, before
