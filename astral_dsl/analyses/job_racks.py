"""A job's share of each rack of its placement (`hosts_per_rack = N`, docs/language.md, `job`):
the job takes the first N of the placement's hosts in each rack, in the design's order, and
leaves the rest (a GB200 NVL72 job on 16 of each rack's 18 trays, 64 GPUs of each 72-GPU NVLink
domain, keeping 2 trays spare: NVIDIA's GB200 recipes set HybridEP's
NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = 64, Megatron-Bridge 0.6.2
perf_recipes/deepseek/gb200). Hosts in no rack are then not the job's.

The one rule every consumer applies (`Quota`): the rank map's walk of the placement's hosts
(rank_placement._hosts), the job's host positions in the fabric's owner (seer/cluster.py
hosts_of_job: failures, PXN, pipeline pairs, tier reach), Seer's NVLink domain and the GPUs the
placement gives the job (`usable`, seer/domain_size.py)."""
from __future__ import annotations

from bisect import bisect_right
from typing import Dict, Hashable, Iterable, Iterator, List, Optional, Sequence, Tuple

from astral_dsl.analyses.host_positions import first, merge
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group
from astral_dsl.units import Quantity

Interval = Tuple[int, int]


def hosts_per_rack(job) -> Optional[int]:
    """The job's `hosts_per_rack`, None when it does not state one (every host of its placement,
    in order)."""
    v = job.field("hosts_per_rack") if job is not None else None
    return int(v.si) if isinstance(v, Quantity) and v.si >= 1 else None


class Quota:
    """The first `n` hosts of each rack (None: every host, racks or not)."""

    def __init__(self, n: Optional[int]):
        self.n = n
        self.taken: Dict[Hashable, int] = {}

    def room(self, rack: Optional[Hashable], hosts: int) -> int:
        """How many of the next `hosts` hosts of the placement, in rack `rack` (None: in no
        rack), the job takes: the first of them, up to `n` a rack."""
        if self.n is None:
            return hosts
        if rack is None:
            return 0
        got = self.taken.get(rack, 0)
        take = max(0, min(hosts, self.n - got))
        self.taken[rack] = got + take
        return take


def take(pieces: Iterable[Tuple[Optional[Hashable], int, int]], n: Optional[int],
         needed: Optional[int]) -> List[Interval]:
    """The job's hosts among `pieces` (rack, a, b): the placement's host positions [a, b) in
    order, each piece inside one rack (None: in no rack; any key when `n` is None); the first
    `n` of each rack, until `needed` hosts (None: all)."""
    out: List[Interval] = []
    quota, left = Quota(n), needed
    for rack, a, b in pieces:
        if left is not None and left <= 0:
            break
        got = quota.room(rack, b - a)
        if left is not None:
            got = min(got, left)
            left -= got
        if got > 0:
            out.append((a, a + got))
    return out


def counter(intervals: Iterable[Interval]):
    """`count(lo, hi)`: how many positions of `intervals` lie in [lo, hi) (bisection over
    their merged ends: a tier's reach looks up thousands of scopes)."""
    runs = merge(intervals)
    starts = [a for a, _ in runs]
    before = [0]
    for a, b in runs:
        before.append(before[-1] + b - a)

    def at_most(x: int) -> int:            # positions of the runs below x
        i = bisect_right(starts, x)
        if i == 0:
            return 0
        a, b = runs[i - 1]
        return before[i - 1] + min(b, x) - a

    def count(lo: int, hi: int) -> int:
        return at_most(hi) - at_most(lo) if hi > lo else 0
    return count


def cut_at_racks(intervals: Iterable[Interval], positions) -> Iterator[Tuple[Optional[Interval],
                                                                             int, int]]:
    """`intervals` of host positions (host_positions.Positions) cut at their racks: (the rack's
    hosts, or None for a host in no rack, a, b)."""
    for a, b in intervals:
        x = a
        while x < b:
            found = positions.scope_at(("rack",), x)
            if found is None:
                yield None, x, x + 1
                x += 1
                continue
            lo, hi = found[1]
            stop = min(b, max(hi, x + 1))
            yield (lo, hi), x, stop
            x = stop


def racks_in_order(pairs, cache) -> Iterator[Tuple[object, int]]:
    """(rack instance, its hosts) for each rack of the placement's (count, instance) pairs, in
    placement order."""
    for c, inst in pairs:
        racks = group_of(inst, ("rack",), cache)
        for _ in range(c if racks.runs else 0):
            yield from _racks(racks, cache)


def _racks(group, cache):
    for run in group.runs:
        for _ in range(run.count):
            if isinstance(run.item, Group):
                yield from _racks(run.item, cache)
            else:
                yield run.item, count_of(run.item, ("host",), cache)


def usable(pairs, n: int, cache) -> Tuple[int, int, int, Optional[Tuple[str, int]]]:
    """(the GPUs, the hosts, the racks holding GPUs, the first rack holding GPUs with fewer than
    `n` hosts: (its template, its hosts) or None) of the placement's racks when the job takes
    `n` hosts of each."""
    gpus, taken, racks, short = 0, 0, 0, None
    for rack, hosts in racks_in_order(pairs, cache):
        in_rack = count_of(rack, ("gpu",), cache)
        if not in_rack or not hosts:
            continue
        racks += 1
        if hosts < n and short is None:
            short = (rack.template, hosts)
        gpus += in_rack * min(n, hosts) // hosts
        taken += min(n, hosts)
    return gpus, taken, racks, short


def positions_of(intervals: Sequence[Interval], positions, n: Optional[int],
                 wanted: int) -> List[Interval]:
    """The job's first `wanted` hosts among `intervals` of host positions in the placement's
    order (host_positions.Positions): with `hosts_per_rack = n` the first n of each rack."""
    if n is None:
        return first(intervals, wanted)
    return take(cut_at_racks(intervals, positions), n, wanted)


def described(name: str, n: Optional[int]) -> str:
    """The placement as the forecast and the checks name it: `Hall.sus[0]`, or with
    `hosts_per_rack` `Hall.sus[0]` (the first 16 hosts of each rack)."""
    if n is None:
        return name
    return f"{name} (the first {n:,} host{'s' if n != 1 else ''} of each rack)"


__all__ = ["Quota", "counter", "cut_at_racks", "described", "hosts_per_rack", "positions_of", "racks_in_order",
           "take",
           "usable"]
