"""Switches per group of a tier whose groups differ in size: a fabric attached to a site over
`pods = [1 x Big, 3 x Small]` (network.py) gives each pod's groups the switches its own hosts
need, not the largest pod's.

Each scope instance's groups are sized for themselves: a first tier's group for the NIC ports
of the instance's busiest group (rail 0, plane A: fabric_names.wiring), a higher tier's group
for the uplinks of the lower switches it holds, rounded up by the even-uplink rule
(formulas.even_upper_switches, with the lower groups' switches counted one by one when they
differ). Within one scope instance every rail and plane has the same count (its busiest
group's: the `sized_for` note says what that costs). The result, `Sizes`, is what TierCount
keeps: runs of scope instances in the owner's order, so that the switch names, the cables, the
rank map, the failures and the pictures list exactly the switches counted.

Example (d/uneven of audit 45: 8 rails, leaf 32 down / 32 up per (pod, rail), spine 32 down
per pod, core 64 down per site): Big (40 hosts) has 40 ports per rail -> 2 leaves per rail and
16 x 32 / 32 = 16 spines; each Small (8 hosts) 1 leaf per rail and 8 spines; the core takes
40 x 32 / 64 = 20, from each of 40 spines (40 <= 64: a mesh), so a divisor of 32: 32."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses import fabric_names, formulas
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group

# a tier's scope -> the kinds of the instances it names
SCOPE_KINDS = {"rack": ("rack",), "row": ("row", "block"), "block": ("row", "block"),
               "pod": ("pod",), "hall": ("hall",), "site": ("site",)}
# (scope instances in a row, canonical path of their instance, switches per group, reach,
# links each of their groups serves from below)
Run = Tuple[int, str, int, int, float]
MAX_RUNS = 1 << 16


def positions(owner, kinds: Tuple[str, ...], cache) -> Optional[List[Tuple[int, object]]]:
    """The scope instances of `kinds` in `owner`, in the owner's order, as (count, instance)
    runs (None past MAX_RUNS runs)."""
    out: List[Tuple[int, object]] = []

    def walk(group: Group) -> bool:
        for run in group.runs:
            if isinstance(run.item, Group):
                for _ in range(run.count):
                    if not walk(run.item):
                        return False
            elif out and out[-1][1] is run.item:
                out[-1] = (out[-1][0] + run.count, run.item)
            else:
                out.append((run.count, run.item))
                if len(out) > MAX_RUNS:
                    return False
        return True
    return out if walk(group_of(owner, kinds, cache)) else None


def upper_size(lower: List[Tuple[int, int]], per_lower: int, up: int, down: int
               ) -> Tuple[int, int, int, float]:
    """(switches, reach, needed, links served) of one upper group over the lower groups of
    `lower` ((lower scope instances, switches in each of their groups)), each lower scope
    instance giving `per_lower` groups to it."""
    sizes = {size for n, size in lower if n}
    merged = sum(n for n, _ in lower) * per_lower
    total = sum(n * size for n, size in lower) * per_lower
    needed = math.ceil(total * up / down - 1e-9) if down else 0
    if not total or not merged:
        return 0, 0, 0, 0.0
    biggest = max(sizes)
    count, plane = formulas.even_upper_switches(
        needed, biggest, up, merged, down, lower_total=None if len(sizes) == 1 else total)
    return count, plane or count, needed, float(total * up)


def runs(owner, kinds, cache, size_of: Dict[int, Tuple[int, int]]) -> Optional[Tuple[Run, ...]]:
    """The positional runs of a tier's scope instances with their (switches per group, reach,
    links per group) (`size_of`: id(instance) -> them); None past MAX_RUNS."""
    found = positions(owner, kinds, cache)
    if found is None:
        return None
    return tuple((n, inst.path) + tuple(size_of[id(inst)]) for n, inst in found)


def at(sizes: Tuple[Run, ...], index: int) -> Optional[Run]:
    """The run holding scope instance `index` (None out of range)."""
    for run in sizes:
        if index < run[0]:
            return run if index >= 0 else None
        index -= run[0]
    return None


def distinct(sizes: Tuple[Run, ...]) -> List[Tuple[str, int, int]]:
    """(canonical path, scope instances, switches per group) per distinct scope instance, in
    order of first appearance."""
    out: Dict[str, List[int]] = {}
    for run in sizes:
        slot = out.setdefault(run[1], [0, run[2]])
        slot[0] += run[0]
    return [(path, n, size) for path, (n, size) in out.items()]


def describe(sizes: Tuple[Run, ...], limit: int = 4) -> str:
    """`2 per group in `Site.pods[0]`, 1 in `Site.pods[1]` (x3)` (the first `limit`)."""
    found = distinct(sizes)
    parts = [f"{size:,}{' per group' if i == 0 else ''} in `{path}`"
             + (f" (x{n:,})" if n > 1 else "") for i, (path, n, size) in enumerate(found[:limit])]
    if len(found) > limit:
        parts.append(f"and {len(found) - limit:,} more")
    return ", ".join(parts)


def span(sizes: Tuple[Run, ...], largest: int) -> str:
    """Switches per group: `2`, or `1 to 2` when the groups differ."""
    low = min((run[2] for run in sizes), default=largest)
    return f"{largest:,}" if low == largest else f"{low:,} to {largest:,}"


def of_path(sizes: Tuple[Run, ...], path: str) -> Optional[Run]:
    """The run of the scope instances whose canonical instance is `path`."""
    return next((run for run in sizes if run[1] == path), None)




def exact(owner, kinds: Optional[Tuple[str, ...]], cache, down: int, busiest=None,
          lower=None) -> Dict[int, Tuple[int, int, int, float]]:
    """id(scope instance) -> (switches per group, reach, needed before the even-uplink rule,
    links per group) for every distinct scope instance of a tier in `owner` (`kinds` None: the
    owner is the one group). A first tier: `busiest(instance)`, (the NIC ports of its busiest
    group, those of an average group). A higher
    tier: `lower` = (the lower tier's scope kinds or None, its exact sizes, the lower groups
    each lower scope instance gives one group of this tier (prev split / split), uplinks per
    lower switch)."""
    insts = [owner] if kinds is None else [i for _, i in group_of(owner, kinds, cache).flat()]
    out: Dict[int, Tuple[int, int, int, float]] = {}
    for inst in insts:
        if lower is None:
            most, links = busiest(inst)
            n = math.ceil(most / down - 1e-9) if down else 0
            out[id(inst)] = (n, n, n, links)
            continue
        lower_kinds, sizes, per_lower, up = lower
        below = [(1, sizes[id(owner)][0])] if lower_kinds is None else \
            [(n, sizes[id(li)][0]) for n, li in group_of(inst, lower_kinds, cache).flat()]
        out[id(inst)] = upper_size(below, per_lower, up, down)
    return out


# ---- sizing a tier's groups (network.py) -------------------------------------------------------
def busiest_per_host(layout: Tuple[int, ...], rails: int, planes: int,
                      per: Tuple[str, ...]) -> int:
    """NIC ports one host of a model puts on its busiest group (fabric_names.wiring: NIC k on
    rail k mod R, so rail 0 has ceil(n / R) of its n NICs; port j on plane j mod P)."""
    return fabric_names.busiest(fabric_names.wiring(layout, rails, planes, "rail" in per,
                                                    "plane" in per))


def busiest_ports(inst, owner, hosts, hosts_of, cache, rails: int, planes: int,
                  per: Tuple[str, ...]) -> int:
    """The NIC ports of the busiest first-tier group of scope instance `inst` (`hosts`: the
    owner's network.Hosts, `hosts_of(instance, cache)`: another's)."""
    mine = hosts if inst is owner else hosts_of(inst, cache)
    return sum(k[0] * busiest_per_host(lay, rails, planes, per)
               for k, lay in zip(mine.kinds, mine.layouts))


def exact_tier(tc, owner, scope: str, found, cache, hosts, hosts_of, wire, prev, prev_exact,
               prev_split: int, split: int, nested: bool, demand: float, mult: int
               ) -> Tuple[Any, Optional[Dict]]:
    """The tier (network.TierCount) with each scope instance's groups sized for themselves when
    they differ, else as counted; and its sizes per scope instance, for the tier above."""
    kinds = None if scope == owner.kind else SCOPE_KINDS.get(scope, (scope,))
    down = tc.down_ports
    if not down or (prev is None and not (found or kinds is None)):
        return tc, None
    if prev is None:
        found_exact = exact(owner, kinds, cache, down, busiest=lambda i: (
            busiest_ports(i, owner, hosts, hosts_of, cache, wire[0], wire[1], tc.per),
            (hosts if i is owner else hosts_of(i, cache)).ports / max(1, split)))
    elif nested and prev_exact is not None and split and prev_split % split == 0:
        lower = None if prev.scope == owner.kind else SCOPE_KINDS.get(prev.scope, (prev.scope,))
        found_exact = exact(owner, kinds, cache, down,
                            lower=(lower, prev_exact, prev_split // split, prev.up_ports))
    else:
        return tc, None
    kept = {k: (tc.per_group, tc.reach, tc.needed) for k in found_exact}
    values = {v[:2] for v in found_exact.values()}
    if len(values) == 1:
        # alike groups: as counted, unless the groups below differ (counted for their largest)
        if not (prev is not None and prev.sizes):
            return tc, kept
        found_runs: Optional[Tuple] = ()
    else:
        found_runs = runs(owner, kinds, cache,
                          {k: v[:2] + v[3:] for k, v in found_exact.items()}) if kinds else None
        if found_runs is None:
            return tc, kept     # past MAX_RUNS runs: every group as the largest
    # switches per owner: each run's scope instances x their groups (split), or every group alike
    count = sum(r[0] * r[2] for r in found_runs) * split if found_runs else \
        next(iter(values))[0] * (tc.groups // mult)
    size, reach, needed, _ = max(found_exact.values())
    rounding = None if size <= needed else rounding_reason(
        tc.name, prev, needed, size, reach, 0, down) if prev is not None else None
    sized_for = None
    if prev is None:
        mine = own(owner, scope, cache, hosts, hosts_of, wire[0], wire[1], tc.per, down)
        if mine < count:
            sized_for = (f"the groups within one `{scope}` differ (its rails or planes): each "
                         f"is sized for the busiest of its `{scope}`; each group sized for its "
                         f"own hosts would make {mine * mult:,} switches, not {count * mult:,}")
    return attrs.evolve(
        tc, per_group=size, switches=count * mult, down_used=demand / count if count else 0.0,
        up_links=count * tc.up_ports * mult, needed=needed, rounding=rounding, reach=reach,
        mesh=all(v[1] == v[0] for v in found_exact.values() if v[0]), sizes=found_runs,
        failed=tc.failed / tc.switches * count * mult if tc.switches else 0.0,
        sized_for=sized_for), found_exact


def largest(owner, scope: str, cache, hosts, hosts_of, rails: int, planes: int,
            per: Tuple[str, ...], prev, prev_split: int, split: int) -> Tuple[int, str]:
    """The largest group of a tier and where it is: for the first tier, the NIC ports of its
    busiest group; for a higher tier, the most groups of the tier below that one of its groups
    holds (0 when they do not nest: `split` 0). Scope instances may differ in size (`pods = [1 x
    Big, 3 x Small]`) and NICs may split unevenly over the rails: the counts are the largest
    group's, never the average's (which would leave the largest unwireable)."""
    kinds = SCOPE_KINDS.get(scope, (scope,))
    insts = [owner] if scope == owner.kind else \
        [i for _, i in group_of(owner, kinds, cache).flat()]

    def size(inst) -> int:
        if prev is None:
            return busiest_ports(inst, owner, hosts, hosts_of, cache, rails, planes, per)
        if not split:
            return 0
        lower = 1 if prev.scope == owner.kind else \
            count_of(inst, SCOPE_KINDS.get(prev.scope, (prev.scope,)), cache)
        return lower * prev_split // split
    best, at = 0, owner
    for inst in insts:
        n = size(inst)
        if n > best:
            best, at = n, inst
    where = f"`{at.path}`"
    if prev is None and "rail" in per and any(k[1] % rails for k in hosts.kinds if k[0]):
        where += " on rail 0"
    return best, where


def own(owner, scope: str, cache, hosts, hosts_of, rails: int, planes: int,
        per: Tuple[str, ...], down: int) -> int:
    """First-tier switches of the owner with each group sized for its own hosts."""
    pairs = [(1, owner)] if scope == owner.kind else \
        group_of(owner, SCOPE_KINDS.get(scope, (scope,)), cache).flat()
    return sum(n * fabric_names.own_switches(
        [(k[0], lay) for k, lay in zip(mine.kinds, mine.layouts)], rails, planes, "rail" in per,
        "plane" in per, down) for n, mine in ((n, hosts if i is owner else hosts_of(i, cache))
                                              for n, i in pairs))


def rounding_reason(name: str, prev, needed: int, per_group: int, plane: Optional[int],
                    merged: int, down: int) -> str:
    """Why a tier has more switches per group than its links need (for the size report)."""
    u = prev.up_ports
    if plane is not None and plane == per_group:
        return (f"{needed} `{name}` switches per group would split each `{prev.name}` "
                f"switch's {u} uplinks unevenly ({u} / {needed} = {u / needed:.3g}): rounded "
                f"up to {per_group}, the next count that divides {u} ({u // per_group} "
                f"uplinks to each)")
    return (f"{needed} `{name}` switches per group would split each `{prev.name}` switch's {u} "
            f"uplinks unevenly: each `{prev.name}` switch reaches a plane of {plane} `{name}` "
            f"switches (the smallest divisor of {u} that is at least {merged} groups x {u} / "
            f"{down} downlinks), so {prev.per_group} planes x {plane} = {per_group}")


__all__ = ["MAX_RUNS", "Run", "SCOPE_KINDS", "at", "busiest_per_host", "busiest_ports",
           "describe", "distinct", "exact", "exact_tier", "largest", "of_path", "own",
           "positions", "rounding_reason", "runs", "span", "upper_size"]
