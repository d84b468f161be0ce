"""The transfer over each boundary between neighbouring pipeline stages, priced by its own pairs.

A pipeline's boundary b (stage b -> b + 1; and b = p - 1, from the last stage back to the first,
which an interleaved schedule's chunks cross: Megatron-Core's interleaved 1F1B,
pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving) is crossed by one
pair of ranks per DP (and CP, TP) replica: (r, r + d) for the ranks r of stage b (d: the PP
stride), (r, r + (p - 1) d) for those of stage 0 across the wrap-around. Training is
synchronous: each transfer over boundary b waits for its slowest pair, which is on NVLink when
every pair of the boundary is inside one NVLink domain, and otherwise over the network, climbing
to the highest tier any of its pairs climbs to (a tier higher adds the oversubscription and the
failures of every tier it crosses: comm._climb_to). Under failed fabric parts, a boundary is
slowed only by those on the hosts its pairs use or on their paths (`Damaged`). The schedule
(schedule._run, walk._Program) sends over each boundary at its own time (`boundaries`,
lower_comm.p2p_hops).

Ranks fill hosts in order (seer/ranks.py): rank r is GPU r mod g of host r // g (g GPUs per
host, an NVLink domain being one host), and hosts fill the switches of tier i in runs of its
reach (comm.Tier.reach_hosts), as comm._climb counts them. A pair (r, r + dist) crosses a run of
u ranks iff some multiple of u lies in (r, r + dist]; over a stage's block of d consecutive
ranks starting at s, iff one lies in (s, s + d - 1 + dist]."""
from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec


def _pairs(par, b: int, d: int) -> Tuple[int, int, int, int]:
    """Boundary b's pairs (d: the PP stride): (first block's start, block period, blocks,
    dist): the ranks [s, s + d) of each block of stage b (or stage 0 for the wrap-around
    b = p - 1) pair with those `dist` further."""
    pp = par.pp
    period = pp * d
    first, dist = (b * d, d) if b < pp - 1 else (0, (pp - 1) * d)
    return first, period, max(1, par.gpus // period), dist


def _crosses(first: int, period: int, count: int, reach: int, unit: int) -> bool:
    """Whether a block starting at first + k period (k < count) holds a multiple of `unit` in
    (s, s + reach]: s mod unit > unit - 1 - reach. The residues repeat every unit / gcd."""
    if reach >= unit:
        return True
    for k in range(min(count, unit // math.gcd(period, unit))):
        if (first + k * period) % unit >= unit - reach:
            return True
    return False


def boundary_tops(job: JobSpec, net: comm.Network) -> Tuple[Optional[int], ...]:
    """Per boundary (p of them, the last the wrap-around), the highest tier one of its pairs
    climbs to; None: every pair is inside a host (NVLink). () without a pipeline."""
    par = job.parallel
    if par.pp <= 1:
        return ()
    g, d = max(1, net.gpus_per_host), RankOrder(par).stride["pp"]
    out: List[Optional[int]] = []
    for b in range(par.pp):
        first, period, count, dist = _pairs(par, b, d)
        reach = d - 1 + dist
        if not _crosses(first, period, count, reach, g):
            out.append(None)
            continue
        cross_rail = dist % g != 0
        top = max(0, len(net.tiers) - 1)
        for i, tier in enumerate(net.tiers):
            if not (cross_rail and tier.per_rail) and \
                    not _crosses(first, period, count, reach, max(1, tier.reach_hosts) * g):
                top = i
                break
        out.append(top)
    return tuple(out)


def pair_top(job: JobSpec, net: comm.Network) -> Optional[int]:
    """The highest tier a pair of neighbouring stages climbs to (None: every pair is inside a
    host); the wrap-around only with an interleaved schedule of more than two stages."""
    tops = boundary_tops(job, net)
    climbs = [tops[b] for b in used(job) if tops[b] is not None]
    return max(climbs) if climbs else None


def boundary_hosts(job: JobSpec, g: int, b: int) -> List[Interval]:
    """The hosts (g GPUs each, in the job's order) of the ranks of boundary b's pairs."""
    d = RankOrder(job.parallel).stride["pp"]
    first, period, count, dist = _pairs(job.parallel, b, d)
    out: List[Interval] = []
    for k in range(count):
        s = first + k * period
        for lo in ((s,) if dist <= d else (s, s + dist)):
            hi = s + dist + d if dist <= d else lo + d
            out.append((lo // g, (hi - 1) // g + 1))
    return merge(out)


@records.frozen(eq=False)
class Damaged:
    """The failed fabric parts on the job's hosts, for the pairs of one boundary: `hosts` the
    job's hosts (positions in the fabric owner's replica, in the job's order), `domain` the
    design's hosts per NVLink domain (Seer's host: seer/cluster.py), a GPU's rate `speed` x
    `shared` per port speed of its NIC (cluster._worst's)."""
    damage: object
    hosts: Tuple[Interval, ...]
    domain: int
    speed: float
    domain_at: Optional[Callable] = None    # nvlink_share.domains: racks where they are
    partial: Optional[Tuple[int, int]] = None   # network_damage.partial_host: the last host

    def worst(self, top: int, seer_hosts: Sequence[Interval]) -> Optional[Tuple[float, str]]:
        """(the slowest GPU's bytes/s for traffic that climbs to tier `top` among Seer's hosts
        `seer_hosts`, what slows it); None when no failure slows one."""
        from astral_dsl.seer import pxn       # start-up: only under failed parts

        sub, at = [], 0
        want = [(a * self.domain, b * self.domain) for a, b in seer_hosts]
        for a, b in self.hosts:
            for lo, hi in want:
                x, y = max(lo - at, 0), min(hi - at, b - a)
                if x < y:
                    sub.append((a + x, a + y))
            at += b - a
        dmg = self.damage
        if self.domain_at is not None:
            lowest, causes, gpus = pxn.worst(dmg, top, sub, self.domain_at, self.partial)[:3]
        else:
            lowest, causes, gpus = dmg.worst(top, sub, self.partial)
        if lowest is None or dmg.shares.issuperset(causes):
            return None     # a failed share of a tier alone: the tier's oversubscription
        return lowest * self.speed, (f"{dmg.named(causes)} failed: {gpus:,} GPU"
                                     f"{'s' if gpus != 1 else ''} of these pairs' hosts behind it")


def boundaries(job: JobSpec, net: comm.Network, rep: comm.Layout,
               damaged: Optional[Damaged] = None) -> Tuple[Tuple[comm.Layout, str], ...]:
    """Per boundary, the layout of its slowest pair and what slows it under failures ("": none):
    `rep` (the representative pair, ranks 0 and d: comm_groups.groups) where the boundary
    climbs as high, so that a pipeline whose boundaries are alike is priced as before; with
    `damaged`, each boundary at the rate of the slowest GPU of its own pairs (`net` without its
    job-wide worst)."""
    tops = boundary_tops(job, net)
    rep_top = (rep.hops - 1) // 2 if rep.hosts > 1 else None
    cross = RankOrder(job.parallel).stride["pp"] % max(1, net.gpus_per_host) != 0
    base = attrs.evolve(net, worst=()) if damaged is not None else net
    made = {}
    out = []
    for b, top in enumerate(tops):
        if top is None:
            lay = made.get(top) or comm.layout(net, "pp", 2, 1, 1, False, 2)
        elif top == rep_top and damaged is None:
            lay = rep
        else:
            lay = made.get(top) or comm.layout(base, "pp", 2, 1, 2, cross, 1, top=top)
        made[top] = lay
        why = ""
        hit = damaged.worst(top, boundary_hosts(job, net.gpus_per_host, b)) \
            if damaged is not None and top is not None else None
        if hit is not None and hit[0] < lay.net_bw:
            lay, why = attrs.evolve(lay, net_bw=hit[0]), hit[1]
        out.append((lay, why))
    return tuple(out)


def used(job: JobSpec) -> Tuple[int, ...]:
    """The boundaries the schedule sends over: the wrap-around only with an interleaved
    schedule of more than two stages (with two, it is boundary 0's pairs)."""
    par = job.parallel
    wrap = (par.schedule == "interleaved" or (par.v or 1) > 1) and par.pp > 2
    return tuple(range(par.pp - 1)) + ((par.pp - 1,) if wrap else ())


def _listed(bs: List[int], job: JobSpec) -> str:
    """Boundaries named: "stages 1 -> 2, 3 -> 4", a few and how many more, or every one."""
    if len(bs) == len(used(job)) > 4:
        return f"all {len(bs)} boundaries between stages"
    names = [f"{b} -> {(b + 1) % job.parallel.pp}" for b in bs]
    return "stages " + (", ".join(names) if len(names) <= 4 else
                        ", ".join(names[:3]) + f" and {len(names) - 3} more boundaries")


def under_failures(job: JobSpec, net: comm.Network, healthy: comm.Network,
                   damaged: Optional[Damaged], why
                   ) -> Tuple[Tuple[comm.Layout, ...], List[str], List[Tuple[str, int]]]:
    """(per boundary its layout under the failures and what slows it: Network.pp; a note per
    rate the failures slow some boundaries to; (what is lost, its tier) for boundaries with no
    network left). `why`: tier -> what slows the traffic that climbs there."""
    from astral_dsl.seer.comm_groups import groups

    now = boundaries(job, net, groups(job, attrs.evolve(net, pp=()))["pp"], damaged)
    before = boundaries(job, healthy, groups(job, healthy)["pp"])
    slowed: dict = {}
    dark: dict = {}
    for b in used(job):
        (lay, cause), (old, _) = now[b], before[b]
        if lay.hosts <= 1:
            continue
        top = (lay.hops - 1) // 2
        text = cause or why.get(top, "a failed part")
        if lay.net_bw <= 0:
            dark.setdefault((text, top), []).append(b)
        elif lay.net_bw < old.net_bw * (1 - 1e-9):
            slowed.setdefault((lay.net_bw, old.net_bw, text), []).append(b)
    notes = [f"pp: the pairs of {_listed(bs, job)} (a boundary's transfers wait for its "
             f"slowest pair) run at {bw / 1e9:,.2f} GB/s per GPU instead of {old / 1e9:,.2f} GB/s "
             f"({text})" for (bw, old, text), bs in slowed.items()]
    lost = [(f"the pp pairs of {_listed(bs, job)} ({text})", top)
            for (text, top), bs in dark.items()]
    return tuple(lay for lay, _ in now), notes, lost
