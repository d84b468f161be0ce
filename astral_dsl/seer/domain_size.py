"""The NVLink domain Seer takes as its "host" when the design's hosts share their rack's
(`nvlink_domain = rack`: the trays of a GB200 or GB300 NVL72), on sites whose racks may differ
in size (seer/cluster.py)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.analyses.job_racks import racks_in_order
from astral_dsl.analyses.nvlink_share import rack_domain
from astral_dsl.model.rollup import count_of


def domain_hosts(host, pairs, cache, needed: int, gpus: int,
                 per_rack: Optional[int] = None) -> Tuple[int, Tuple[str, ...]]:
    """Hosts per NVLink domain (Seer's "host"): 1, or with `nvlink_domain = rack` the hosts of
    the smallest rack among those the job's `needed` hosts fill in placement order (a group of
    its size fits in any of them); a note when those racks differ in size (`gpus` per host), as
    Seer's hosts are all alike: its ranks are placed as if every rack were the smallest, so a
    group may still cross a rack's end inside one of Seer's domains (docs/seer.md). With
    `hosts_per_rack = N` (`per_rack`) the job's share of a rack is its domain: at most N hosts
    (analyses/job_racks.py)."""
    if not rack_domain(host):
        return 1, ()
    sizes: List[int] = []
    left = max(1, needed)
    for rack, n in racks_in_order(pairs, cache):
        n = max(1, n)
        if per_rack is not None:
            if not count_of(rack, ("gpu",), cache):
                continue            # a rack of the placement without GPUs: not the job's
            n = min(n, per_rack)
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
