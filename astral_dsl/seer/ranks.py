"""Which GPU ranks form each communication group: the rank order of the parallel dimensions
(the numbering itself is analyses/rank_order.py's, which the rank map of `astral diagnose` and
`astral synth` reads too).

Megatron-Core numbers ranks in a mixed radix over the parallel dimensions, fastest first, in
the job's `order` (default "tp-cp-ep-dp-pp", parallel_state.RankGenerator): with the default,
rank = tp_i + tp (cp_i + cp (dp_i + dp pp_i)). Dense groups (TP, CP, DP, the DP x CP gradient
group, PP) come from that numbering with EP left out; expert groups from a second numbering of
the same order whose tensor-, context- and data-parallel ranks are split into ETP x EP x (TP x
DP x CP / (ETP x EP)) (Megatron-Core's expert rank generator; with expert tensor parallelism 1,
as the published MoE recipes run, each rank's experts process its sequence-parallel share of
the tokens whole). Ranks fill hosts in order: ranks
g k .. g k + g - 1 are the GPUs of host k (g GPUs per host).

A group whose stride or size does not divide the host's GPUs straddles hosts unevenly (DP 5 on
hosts of 4: 4 + 1), and the groups of a kind start at different GPU indices of their hosts, so
they need not sit alike (DP 3 on hosts of 4: ranks 0-2 share host 0, ranks 3-5 straddle hosts 0
and 1). `spread` counts, over rank 0's group or every group of a kind, the most hosts one spans,
the fewest members one of its hosts holds and the GPU indices (rails) at which every host of a
group holds a member.

    order = RankOrder(parallel)
    order.rank(tp=1, dp=3, pp=2)      -> global rank
    order.coords(rank)                -> {"tp": .., "cp": .., "dp": .., "pp": ..}
    order.group("dp", rank)           -> the ranks of rank's DP group
    order.shape(("dp", "cp"), g)      -> GroupShape(n, per_host, span_hosts, stride, hosts, rails)
    order.shape(("dp", "cp"), g, every=True)    -> the same for the worst group of the kind"""
from __future__ import annotations

import bisect
import functools
import itertools
import math
from typing import Dict, Iterable, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.analyses.rank_order import Numbering
from astral_dsl.seer.spec import ParallelSpec


@records.frozen(slots=False)
class GroupShape:
    n: int              # ranks in the group
    per_host: int       # the fewest of them on one of its hosts (n: inside one host)
    span_hosts: int     # consecutive hosts from its first to its last member
    stride: int         # rank distance between neighbours along its fastest dimension
    hosts: int = 1      # hosts it spans
    rails: int = 1      # GPU indices at which every one of its hosts holds a member (0: none)
    crowd: int = 1      # the most of its ranks on one of its hosts


def numbering(par: ParallelSpec) -> tuple:
    """All that the rank numbering of a job (RankOrder, dense or expert) reads of its parallel
    spec: jobs alike in these are numbered alike."""
    return (par.tp, par.cp, par.ep, par.dp, par.pp, par.order, par.etp)


class RankOrder(Numbering):
    """Megatron-Core's numbering of a job's ranks (analyses/rank_order.py, the rank map's too):
    dense, or with `experts` the expert numbering."""

    def __init__(self, par: ParallelSpec, experts: bool = False):
        tp, cp, ep, dp, pp, order, etp = numbering(par)
        super().__init__(tp, cp, ep, dp, pp, order, experts, etp)

    def shape(self, dims: Iterable[str], gpus_per_host: int, every: bool = False,
              stage: Optional[int] = None) -> GroupShape:
        """Size and placement of rank 0's group along `dims` (every: of the worst group of the
        kind, `spread`; with `stage`, of the worst of those of pipeline stage `stage`, whose
        ranks are stage x the PP stride + the other dimensions' offsets)."""
        dims = tuple(d for d in dims if self.sizes.get(d, 1) > 1)
        n = 1
        for d in dims:
            n *= self.sizes[d]
        if n <= 1:
            return GroupShape(1, 1, 1, 1)
        g = max(1, gpus_per_host)
        others = tuple((self.stride[d], self.sizes[d]) for d in self.order
                       if every and d not in dims and self.sizes[d] > 1
                       and not (stage is not None and d == "pp"))
        base = stage * self.stride["pp"] % g if stage else 0
        per_host, hosts, span, rails, crowd = spread(
            tuple(sorted((self.stride[d], self.sizes[d]) for d in dims)), others, g, base)
        return GroupShape(n, per_host, span, min(self.stride[d] for d in dims), hosts, rails,
                          crowd)


@functools.lru_cache(maxsize=512)
def spread(radix: Tuple[Tuple[int, int], ...], others: Tuple[Tuple[int, int], ...],
           g: int, base: int = 0) -> Tuple[int, int, int, int, int]:
    """(the fewest members on one host of a group, the most hosts a group spans, the most
    consecutive hosts from a group's first member to its last, the fewest GPU indices every host
    of a group holds a member at, the most members on one host of a group that spans several)
    over the groups of ranks b + sum(i_k stride_k), 0 <= i_k < size_k over `radix`, for the
    bases b = `base` + the offsets the `others` dimensions give (ranks fill hosts of g GPUs in
    order; `base`: a pipeline stage's first rank). A group inside one host counts all its
    members on it (and as many rails). Only a group's first GPU index (b mod g) moves its
    members over hosts, and only across the indices g - (offset mod g): one group is looked at
    per such interval."""
    radix = _merged(sorted(radix))
    starts = {base % g}
    for stride, size in others:
        step = stride % g
        if step:
            turns = min(size, g // math.gcd(step, g))
            starts = {(r + i * step) % g for r in starts for i in range(turns)}
    if len(radix) == 1:         # one progression (dimensions contiguous in the rank order)
        s, k = radix[0]
        mods = {i * s % g for i in range(min(k, g // math.gcd(s, g)))}
        n = k
    else:
        offsets = [0]
        for stride, size in radix:
            offsets = [o + i * stride for o in offsets for i in range(size)]
        offsets.sort()
        mods, n = {o % g for o in offsets}, len(offsets)
    cuts = sorted(g - m for m in mods if m)
    seen: Dict[int, int] = {}
    for r in sorted(starts):
        seen.setdefault(bisect.bisect_right(cuts, r), r)
    fewest, most, span, rails, crowd = n, 1, 1, n, 1
    for r in seen.values():
        if len(radix) == 1:
            hosts, width, runs = _progression(r, s, k, g)
        else:
            runs = _runs((r + o for o in offsets), g)
            hosts, width = len(runs), runs[-1][0] - runs[0][0] + 1
        if hosts > 1:
            fewest = min(fewest, min(len(xs) for _, xs in runs))
            crowd = max(crowd, max(len(xs) for _, xs in runs))
            most, span = max(most, hosts), max(span, width)
            rails = min(rails, len(set.intersection(*(set(xs) for _, xs in runs))))
    return fewest, most, span, rails, (crowd if most > 1 else n)


def _merged(radix: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """(stride, size) dimensions by stride, a dimension that continues the one before it (its
    stride that one's stride x size) folded into it."""
    out: List[Tuple[int, int]] = []
    for stride, size in radix:
        if out and out[-1][0] * out[-1][1] == stride:
            out[-1] = (out[-1][0], out[-1][1] * size)
        else:
            out.append((stride, size))
    return out


def _runs(xs: Iterable[int], g: int) -> List[Tuple[int, List[int]]]:
    """Increasing ranks by host: (host, their GPU indices)."""
    return [(h, [x % g for x in run]) for h, run in itertools.groupby(xs, key=lambda x: x // g)]


def _progression(r: int, s: int, k: int, g: int):
    """(hosts, consecutive hosts first to last, runs covering every host's members) of ranks
    r + i s, i < k. Member i + L (L = g / gcd(s, g)) sits at member i's GPU index s L / g hosts
    further, so the hosts between the first and the last repeat those of the first 3 L members:
    only they and the last 3 L are listed (the window's cut host left out)."""
    w = 3 * (g // math.gcd(s, g))
    width = (r + (k - 1) * s) // g - r // g + 1
    if k <= 2 * w:
        runs = _runs((r + i * s for i in range(k)), g)
        return len(runs), width, runs
    head = _runs((r + i * s for i in range(w)), g)[:-1]
    tail = _runs((r + i * s for i in range(k - w, k)), g)[1:]
    return (width if s <= g else k), width, head + tail
