"""Which GPU ranks form each communication group: the rank order of the parallel dimensions.

Megatron-Core numbers ranks in a mixed radix over the parallel dimensions, fastest first, in
the job's `order` (default "tp-cp-ep-dp-pp", parallel_state.RankGenerator): with the default,
rank = tp_i + tp (cp_i + cp (dp_i + dp pp_i)). Dense groups (TP, CP, DP, the DP x CP gradient
group, PP) come from that numbering with EP left out; expert groups from a second numbering of
the same order whose tensor-, context- and data-parallel ranks are split into EP x (TP x DP x
CP / EP) (Megatron-Core's expert rank generator with expert tensor parallelism 1, as the
published MoE recipes run: each rank's experts process its sequence-parallel share of the
tokens whole). Ranks fill hosts in order: ranks
g k .. g k + g - 1 are the GPUs of host k (g GPUs per host).

    order = RankOrder(parallel)
    order.rank(tp=1, dp=3, pp=2)      -> global rank
    order.coords(rank)                -> {"tp": .., "cp": .., "dp": .., "pp": ..}
    order.group("dp", rank)           -> the ranks of rank's DP group
    order.shape(("dp", "cp"), g)      -> GroupShape(n, per_host, span_hosts, stride)"""
from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from astral_dsl import records
from astral_dsl.seer.spec import ParallelSpec


@records.frozen(slots=False)
class GroupShape:
    n: int              # ranks in the group
    per_host: int       # of them in one host
    span_hosts: int     # consecutive hosts from its first to its last member
    stride: int         # rank distance between neighbours along its fastest dimension

    @property
    def hosts(self) -> int:
        return max(1, -(-self.n // max(1, self.per_host)))


class RankOrder:
    def __init__(self, par: ParallelSpec, experts: bool = False):
        known = ("tp", "cp", "ep", "dp", "pp")
        named = tuple(d for d in par.order if d in known)
        self.order = named + tuple(d for d in known if d not in named)   # size-1 ones, last
        if experts:      # expert numbering: TP and CP folded into the expert ranks
            ep = max(1, par.ep)
            sizes = {"tp": 1, "cp": 1, "ep": ep, "dp": par.expert_dp,
                     "pp": par.pp}
        else:
            sizes = {"tp": par.tp, "cp": par.cp, "ep": 1, "dp": par.dp, "pp": par.pp}
        self.sizes: Dict[str, int] = sizes
        self.stride: Dict[str, int] = {}
        acc = 1
        for d in self.order:
            self.stride[d] = acc
            acc *= sizes[d]
        self.world = acc

    def rank(self, **coords: int) -> int:
        return sum(coords.get(d, 0) * self.stride[d] for d in self.order)

    def coords(self, rank: int) -> Dict[str, int]:
        return {d: (rank // self.stride[d]) % self.sizes[d] for d in self.order}

    def group(self, dims, rank: int = 0) -> List[int]:
        """The ranks that differ from `rank` only along `dims` (a name or several)."""
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        base = self.coords(rank)
        for d in dims:
            base[d] = 0
        start = self.rank(**base)
        out = [start]
        for d in dims:
            out = [r + i * self.stride[d] for r in out for i in range(self.sizes[d])]
        return sorted(out)

    def shape(self, dims: Iterable[str], gpus_per_host: int) -> GroupShape:
        """Size and placement of the group of rank 0 along `dims`, without listing it: members
        in the first host are counted by walking only offsets below one host."""
        dims = tuple(d for d in dims if self.sizes.get(d, 1) > 1)
        n = 1
        for d in dims:
            n *= self.sizes[d]
        if n <= 1:
            return GroupShape(1, 1, 1, 1)
        g = max(1, gpus_per_host)
        last = sum((self.sizes[d] - 1) * self.stride[d] for d in dims)
        return GroupShape(n, _below(sorted(((self.stride[d], self.sizes[d]) for d in dims),
                                           reverse=True), g),
                          last // g + 1, min(self.stride[d] for d in dims))


def _below(radix: List[Tuple[int, int]], limit: int, base: int = 0) -> int:
    """How many sums base + sum(i_k stride_k), 0 <= i_k < size_k, are below `limit`."""
    if not radix:
        return 1 if base < limit else 0
    (stride, size), rest = radix[0], radix[1:]
    total = 0
    for i in range(size):
        if base + i * stride >= limit:
            break
        total += _below(rest, limit, base + i * stride)
    return total
