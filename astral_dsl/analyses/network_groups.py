"""Switches per group of a tier whose groups differ in size: a fabric attached to a site over
`pods = [1 x Big, 3 x Small]` (network.py) gives each pod's groups the switches its own hosts
need, not the largest pod's.

Each scope instance's groups are sized for themselves: a first tier's group for the NIC ports
of the instance's busiest group (rail 0, plane A: fabric_names.wiring), a higher tier's group
for the uplinks of the lower switches it holds, rounded up by the even-uplink rule
(formulas.even_upper_switches, with the lower groups' switches counted one by one when they
differ). Within one scope instance each rail and plane is sized for its own links as well
(`by_group`: 6 NICs on 4 rails put 64 ports of 32 hosts on rails 0 and 1, 32 on rails 2 and 3:
2 and 1 leaves of 50 ports), and a tier above counts the lower groups it holds one by one. The
result is what TierCount keeps: runs of scope instances in the owner's order (`sizes`) and
each one's groups by rail and plane (`by_group`), so that the switch names, the cables, the
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
from astral_dsl.model.tier_groups import kinds_of, scope_kinds
from astral_dsl.model.values import Group, plane_label
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


def describe_groups(groups: Tuple, limit: int = 4) -> str:
    """`2 switches on rail 0, rail 1; 1 on rail 2, rail 3` (TierCount.by_group's only scope
    instance, or `in `path`: ...` for each of the first `limit` when they differ)."""
    def one(g) -> str:
        by: Dict[int, List[str]] = {}
        for (rail, plane), size, _, _ in g:
            where = " ".join(x for x in (f"rail {rail}" if rail is not None else "",
                                         f"plane {plane_label(plane)}" if plane is not None
                                         else "") if x)
            by.setdefault(size, []).append(where)
        return "; ".join(f"{size:,}{' switches' if i == 0 else ''} on {', '.join(w)}"
                         for i, (size, w) in enumerate(sorted(by.items(), reverse=True)))
    if len(groups) == 1:
        return one(groups[0][2])
    parts = [f"in `{path}` (x{n:,}) {one(g)}" for path, n, g in groups[:limit]]
    return "; ".join(parts + ([f"and {len(groups) - limit:,} more"]
                              if len(groups) > limit else []))


def span(sizes: Tuple[Run, ...], largest: int, groups: Tuple = ()) -> str:
    """Switches per group: `2`, or `1 to 2` when the groups differ (`groups`: TierCount.by_group,
    whose groups of no port hold none)."""
    low = min([run[2] for run in sizes] + [n for _, _, g in groups for _, n, _, _ in g if n],
              default=largest)
    return f"{largest:,}" if low == largest else f"{low:,} to {largest:,}"


def of_path(sizes: Tuple[Run, ...], path: str) -> Optional[Run]:
    """The run of the scope instances whose canonical instance is `path`."""
    return next((run for run in sizes if run[1] == path), None)




def exact(owner, kinds: Optional[Tuple[str, ...]], cache, down: int, ports=None,
          lower=None) -> Tuple[Dict[int, Tuple[int, int, int, float]], Dict[int, Dict]]:
    """(id(scope instance) -> (switches per group, reach, needed before the even-uplink rule,
    links per group) of its largest group; id(scope instance) -> {(rail, plane): the same, of
    that group}) for every distinct scope instance of a tier in `owner` (`kinds` None: the
    owner is the one group). A first tier: `ports(instance)`, ({(rail, plane): the NIC ports
    it puts on that group}, those of an average group): each group ceil(ports / down). A
    higher tier: `lower` = (the lower tier's scope kinds or None, its groups' sizes as this
    returns them, uplinks per lower switch, the group of this tier a lower group's (rail,
    plane) climbs to): each group over the lower groups it holds, one by one."""
    insts = [owner] if kinds is None else [i for _, i in group_of(owner, kinds, cache).flat()]
    out: Dict[int, Tuple[int, int, int, float]] = {}
    keyed: Dict[int, Dict] = {}
    for inst in insts:
        if lower is None:
            groups, links = ports(inst)
            mine = {k: (n, n, n, float(p)) for k, p in groups.items()
                    for n in [math.ceil(p / down - 1e-9) if down else 0]}
            most = max((v[0] for v in mine.values()), default=0)
            out[id(inst)] = (most, most, most, links)
        else:
            lower_kinds, sizes, up, project = lower
            below = [(1, owner)] if lower_kinds is None else \
                group_of(inst, lower_kinds, cache).flat()
            entries: Dict = {}
            for n, li in below:
                for k, v in sizes[id(li)].items():
                    if v[0]:
                        entries.setdefault(project(k), []).append((n, v[0]))
            mine = {k: upper_size(e, 1, up, down) for k, e in entries.items()}
            out[id(inst)] = max(mine.values(), default=(0, 0, 0, 0.0))
        keyed[id(inst)] = mine
    return out, keyed


def _order(key) -> Tuple[int, int]:
    return tuple(-1 if x is None else x for x in key)       # type: ignore[return-value]


def by_group(owner, kinds, cache, keyed: Dict[int, Dict]) -> Tuple:
    """TierCount.by_group: per distinct scope instance (its canonical path, "" when every one
    is alike; how many the owner holds), its groups' ((rail, plane), switches, reach, links
    from below) in order."""
    insts = [(1, owner)] if kinds is None else group_of(owner, kinds, cache).flat()
    out: Dict[str, List] = {}
    for n, inst in insts:
        slot = out.setdefault(inst.path, [0, tuple((k, v[0], v[1], v[3]) for k, v in sorted(
            keyed[id(inst)].items(), key=lambda kv: _order(kv[0])))])
        slot[0] += n
    if len({g for _, g in out.values()}) == 1:
        return (("", sum(n for n, _ in out.values()), next(iter(out.values()))[1]),)
    return tuple((p, n, g) for p, (n, g) in out.items())


def group_of_key(groups: Tuple, path: Optional[str], key) -> Optional[Tuple[int, int]]:
    """(switches, reach) of group `key` of the scope instance whose canonical path is `path`
    in TierCount.by_group (None: not there; (0, 0) for a group no port reaches)."""
    found = groups[0][2] if len(groups) == 1 else \
        next((g for p, _, g in groups if p == path), None)
    if found is None:
        return None
    return next(((n, r) for k, n, r, _ in found if k == key), (0, 0))


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
    owner's network_records.Hosts, `hosts_of(instance, cache)`: another's)."""
    mine = hosts if inst is owner else hosts_of(inst, cache)
    return sum(k[0] * busiest_per_host(lay, rails, planes, per)
               for k, lay in zip(mine.kinds, mine.layouts))


def exact_tier(tc, owner, scope: str, found, cache, hosts, hosts_of, wire, prev, prev_exact,
               prev_split: int, split: int, nested: bool, demand: float, mult: int
               ) -> Tuple[Any, Optional[Dict]]:
    """The tier (network_records.TierCount) with each group sized for itself (each scope
    instance's, and within one each rail's and plane's: `by_group`) when they differ, else as
    counted; and its groups' sizes, for the tier above."""
    kinds = scope_kinds(scope, owner.kind)
    down = tc.down_ports
    if not down or (prev is None and not (found or kinds is None)):
        return tc, None
    if prev is None:
        def ports(i):
            mine = hosts if i is owner else hosts_of(i, cache)
            return (fabric_names.group_ports(
                [(k[0], lay) for k, lay in zip(mine.kinds, mine.layouts)], wire[0], wire[1],
                "rail" in tc.per, "plane" in tc.per), mine.ports / max(1, split))
        found_exact, keyed = exact(owner, kinds, cache, down, ports=ports)
    elif nested and prev_exact is not None and split and prev_split % split == 0:
        lower = scope_kinds(prev.scope, owner.kind)
        per = tc.per
        found_exact, keyed = exact(owner, kinds, cache, down, lower=(
            lower, prev_exact, prev.up_ports,
            lambda k: (k[0] if "rail" in per else None, k[1] if "plane" in per else None)))
    else:
        return tc, None
    # the groups of one scope instance differ (its rails or planes: NICs that split unevenly)
    uneven = any(len({v[0] for v in d.values()}) > 1 for d in keyed.values())
    values = {v[:2] for v in found_exact.values()}
    groups = by_group(owner, kinds, cache, keyed) if uneven else ()
    found_runs: Optional[Tuple] = ()
    if len(values) == 1 and len(groups) <= 1:
        # alike groups: as counted, unless the groups below differ (counted for their largest)
        if not uneven and not (prev is not None and (prev.sizes or prev.by_group)):
            return tc, _as_counted(tc, keyed)
    elif kinds:
        found_runs = runs(owner, kinds, cache,
                          {k: v[:2] + v[3:] for k, v in found_exact.items()})
        if found_runs is None:
            return tc, _as_counted(tc, keyed)     # past MAX_RUNS runs: every group as the largest
    insts = [(1, owner)] if kinds is None else group_of(owner, kinds, cache).flat()
    # switches per owner: each group its own; each run's scope instances x their groups
    # (split); or every group alike
    count = sum(n * sum(v[0] for v in keyed[id(i)].values()) for n, i in insts) if uneven \
        else sum(r[0] * r[2] for r in found_runs) * split if found_runs else \
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
    every = [v for d in keyed.values() for v in d.values() if v[0]]
    return attrs.evolve(
        tc, per_group=size, switches=count * mult, down_used=demand / count if count else 0.0,
        up_links=count * tc.up_ports * mult, needed=needed, rounding=rounding, reach=reach,
        mesh=all(v[1] == v[0] for v in every), sizes=found_runs or (),
        failed=tc.failed / tc.switches * count * mult if tc.switches else 0.0,
        sized_for=sized_for, by_group=groups), keyed


def _as_counted(tc, keyed: Dict[int, Dict]) -> Dict[int, Dict]:
    """Every group of the tier at its counted size (for the tier above)."""
    return {i: {k: (tc.per_group, tc.reach, tc.needed, v[3]) for k, v in d.items()}
            for i, d in keyed.items()}


def largest(owner, scope: str, cache, hosts, hosts_of, rails: int, planes: int,
            per: Tuple[str, ...], prev, prev_split: int, split: int) -> Tuple[int, str]:
    """The largest group of a tier and where it is: for the first tier, the NIC ports of its
    busiest group; for a higher tier, the most groups of the tier below that one of its groups
    holds (0 when they do not nest: `split` 0). Scope instances may differ in size (`pods = [1 x
    Big, 3 x Small]`) and NICs may split unevenly over the rails: the counts are the largest
    group's, never the average's (which would leave the largest unwireable)."""
    kinds = kinds_of(scope)
    insts = [owner] if scope == owner.kind else \
        [i for _, i in group_of(owner, kinds, cache).flat()]

    def size(inst) -> int:
        if prev is None:
            return busiest_ports(inst, owner, hosts, hosts_of, cache, rails, planes, per)
        if not split:
            return 0
        lower = 1 if prev.scope == owner.kind else \
            count_of(inst, kinds_of(prev.scope), cache)
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
        group_of(owner, kinds_of(scope), cache).flat()
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


__all__ = ["MAX_RUNS", "Run", "at", "busiest_per_host", "busiest_ports", "by_group",
           "describe", "distinct", "exact", "exact_tier", "group_of_key", "largest", "of_path",
           "own", "positions", "rounding_reason", "runs", "span", "upper_size"]
