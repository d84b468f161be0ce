"""The NVLink domain Seer takes as its "host" when the design's hosts share their rack's
(`nvlink_domain = rack`: the trays of a GB200 or GB300 NVL72), on sites whose racks may differ
in size (seer/cluster.py)."""
from __future__ import annotations

from typing import List, Tuple

from astral_dsl.analyses.nvlink_share import rack_domain
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group


def domain_hosts(host, pairs, cache, needed: int, gpus: int) -> Tuple[int, Tuple[str, ...]]:
    """Hosts per NVLink domain (Seer's "host"): 1, or with `nvlink_domain = rack` the hosts of
    the smallest rack among those the job's `needed` hosts fill in placement order (a group of
    its size fits in any of them); a note when those racks differ in size (`gpus` per host), as
    Seer's hosts are all alike: its ranks are placed as if every rack were the smallest, so a
    group may still cross a rack's end inside one of Seer's domains (docs/seer.md)."""
    if not rack_domain(host):
        return 1, ()
    sizes: List[int] = []
    left = max(1, needed)
    for n in _racks_in_order(pairs, cache):
        sizes.append(n)
        left -= n
        if left <= 0:
            break
    if not sizes:
        return 1, ()
    small = min(sizes)
    if len(set(sizes)) == 1:
        return small, ()
    shown = sorted(set(sizes), reverse=True)
    said = " and ".join(f"{n:,} hosts ({n * gpus:,} GPUs)" for n in shown)
    return small, (f"approximation: the job's NVLink domains are racks of {said}; Seer prices "
                   f"each as {small:,} hosts ({small * gpus:,} GPUs), the smallest, its ranks "
                   "filling them in order as if every rack were that size",)


def _racks_in_order(pairs, cache):
    """The hosts of each rack of the placement's (count, instance) pairs, in placement order."""
    for c, inst in pairs:
        racks = group_of(inst, ("rack",), cache)
        for _ in range(c if racks.runs else 0):
            yield from _rack_sizes(racks, cache)


def _rack_sizes(group, cache):
    """The hosts of each rack of `group`, in order."""
    for run in group.runs:
        for _ in range(run.count):
            if isinstance(run.item, Group):
                yield from _rack_sizes(run.item, cache)
            else:
                yield max(1, count_of(run.item, ("host",), cache))
