"""The job's hosts in its fabric and the fabric's tiers as the job sees them (seer/cluster.py):
the hosts of a placement, numbered in one replica of the fabric's owner (the first GPUs of the
placement; with `hosts_per_rack`, the first hosts of each rack: analyses/job_racks.py), and per
tier the hosts under one of its groups in the scope instances the job's hosts are in (under
one first-tier switch: those whose ports the rank map's wiring puts on it, fabric_names.fill)."""
from __future__ import annotations

from typing import List, Optional

from astral_dsl.analyses.fabric_names import busiest, fill, host_runs, wiring
from astral_dsl.analyses.host_positions import Interval, Positions, TooMany, path_steps, \
    route_below
from astral_dsl.analyses.job_racks import counter, hosts_per_rack, positions_of
from astral_dsl.model.design import Ref
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.tier_groups import kinds_of
from astral_dsl.model.values import Group
from astral_dsl.seer.comm import Tier


def hosts_of_job(design, job, owner, positions: Positions, per_host: int,
              ranks: Optional[int]) -> List[Interval]:
    """The hosts of `job` (numbers in one replica of the fabric's `owner`): the first `ranks`
    GPUs of its placement, host by host in the order the design lists them; with
    `hosts_per_rack = N` the first N hosts of each rack (analyses/job_racks.py, the rule of the
    rank map's walk too)."""
    n = -(-ranks // max(1, per_host)) if ranks else positions.total
    per_rack = hosts_per_rack(job)

    def first(intervals, wanted):      # the rank map's rule (job_racks), on host positions
        return positions_of(intervals, positions, per_rack, wanted)

    route = job.route("placement")            # the replicas as written (`Astral.pods[3]`)
    if route is not None and not route.from_template:
        base = path_steps(owner.path, route.root)
        below = route_below(route.steps, base) if base is not None else None
        if below is not None:
            return first(positions.named(below), n)
        if base is not None and len(route.steps) < len(base) and \
                route_below(route.steps, base[:len(route.steps)]) is not None:
            return first([(0, positions.total)], n)   # the placement holds the fabric's owner
    target = job.field("placement")
    paths = [target.path] if isinstance(target, Ref) else \
        [r.path for _, r in target.flat() if isinstance(r, Ref)] if isinstance(target, Group) \
        else [owner.path]
    out: List[Interval] = []
    for p in paths:
        steps = path_steps(p, owner.path)
        if steps is not None:
            out.extend(positions.named(steps))
        elif owner.path.startswith(p + ".") or owner.path.startswith(p + "["):
            out.append((0, positions.total))       # the placement holds the fabric's owner
    return first(out, n)


def job_scopes(design, job, fabric, per_host, ranks, cache):
    """(Positions of the fabric's owner, the job's hosts in it), for the reach of a tier's
    groups where the job runs (None: no owner)."""
    owner = design.instance(fabric.owner)
    if owner is None:
        return None
    where = Positions(owner, cache)
    try:
        mine = hosts_of_job(design, job, owner, where, per_host, ranks)
        # with `hosts_per_rack`, a group of a tier reaches only the job's share of its racks
        every = counter(hosts_of_job(design, job, owner, where, per_host, None)) \
            if hosts_per_rack(job) is not None else None
        return where, mine, every
    except (KeyError, TooMany):     # a placement past what positions can name: the first
        return None


def _reach_of_job(kinds, spans) -> Optional[int]:
    """The hosts under one group of a tier whose scope is `kinds`, in the scope instances the
    job's hosts are in: the fewest of them (its groups wait for the slowest; pods of different
    sizes reach different numbers of hosts). None: the job's hosts are in none. At most 4,096
    instances are looked at (past that, the fewest among them)."""
    where, hosts, every = spans
    fewest, seen = None, 0
    for a, b in hosts:
        x = a
        while x < b and seen < (1 << 12):
            found = where.scope_at(kinds, x)
            if found is None:
                break
            lo, hi = found[1]
            n = hi - lo if every is None else every(lo, hi)
            fewest = n if fewest is None else min(fewest, n)
            seen, x = seen + 1, max(hi, x + 1)
    return fewest


def _switch_reach(owner, t, fabric, layout: List[int], spans, cache) -> Optional[int]:
    """The hosts under one first-tier switch where the job runs: per scope instance of the
    tier holding the job's hosts, the most of them one switch of the busiest group (rail 0,
    plane A) holds whole, every host of the scope taking its ports in order, those the job
    leaves (`hosts_per_rack`'s spare trays) too (fabric_names.fill: where the rank map puts
    them); the fewest over those instances, as _reach_of_job. None: the job's hosts are in
    none. At most 4,096 instances are looked at, and once those counted host by host or
    switch by switch (spare hosts, hosts that differ) hold 65,536 hosts, no more."""
    where, hosts, every = spans
    wire = (fabric.rails, fabric.planes, "rail" in t.per, "plane" in t.per)
    places = wiring(layout, *wire)
    if not places:
        return None
    port = next(p for p in places if p.count == busiest(places))
    kinds = None if t.scope == owner.kind else kinds_of(t.scope)
    fewest, seen, work = None, 0, 0
    for a, b in hosts:
        x = a
        while x < b and seen < (1 << 12) and work <= (1 << 16):
            found = (owner, (0, where.total)) if kinds is None else where.instance_at(kinds, x)
            if found is None:
                break
            inst, (lo, hi) = found
            counted = None if every is None else (lambda i, j, lo=lo: every(lo + i, lo + j))
            runs = host_runs(inst, wire, cache)
            n = fill(hi - lo, port, t.down_ports, runs, wire, counted)
            fewest = n if fewest is None else min(fewest, n)
            work += hi - lo if runs is not None or counted is not None else 0
            seen, x = seen + 1, max(hi, x + 1)
    return fewest


def loaded(t) -> float:
    """A tier's oversubscription as its switches are loaded: the ratio of its ports (down to
    up, over the share of the tier above a scenario leaves) times the share of its down ports
    that are wired, so a leaf of 48 down and 16 up ports with 32 hosts' ports runs 2:1, not
    3:1 (analyses/network_checks.py says it so beside E602): unwired ports carry no traffic.
    Only where every group of the tier is one switch alike (the average fill is then each
    switch's); a group of several switches fills its first ones whole (its hosts' ports take
    the down ports in order), and groups that differ may be fuller than the average: their
    ports' ratio stands, the worst."""
    over = t.oversubscription or 1.0
    if t.per_group == 1 and not t.sizes and not t.by_group and 0 < t.down_used < t.down_ports:
        return over * t.down_used / t.down_ports
    return over


def tiers_of(design, fabric, layout: List[int], job_hosts, cache, spans=None) -> List[Tier]:
    """The fabric's tiers as the job sees them: per tier the hosts under one of its groups
    where the job runs (`spans`: job_scopes), rails and oversubscription. `layout`: the ports
    of each NIC of a host (cluster_of)."""
    owner = design.instance(fabric.owner)
    out: List[Tier] = []
    for i, t in enumerate(fabric.tiers):
        if owner is not None and t.scope != owner.kind:
            kinds = kinds_of(t.scope)
            reach = _reach_of_job(kinds, spans) if spans is not None else None
            if reach is None:
                scopes = group_of(owner, kinds, cache).flat()
                reach = count_of(scopes[0][1], ("host",), cache) if scopes else job_hosts
        elif owner is not None:
            reach = count_of(owner, ("host",), cache) if spans is None or spans[2] is None \
                else spans[2](0, spans[0].total)       # the job's share of its racks
        else:
            reach = job_hosts
        if i == 0 and t.down_ports:
            whole = _switch_reach(owner, t, fabric, layout, spans, cache) \
                if spans is not None and owner is not None else None
            if whole is None:
                # the hosts under one first-tier switch of the busiest group (rail 0, plane A:
                # NICs that split unevenly over the rails put more there, fabric_names.wiring)
                whole = t.down_ports // max(1, busiest(wiring(
                    layout, fabric.rails, fabric.planes, "rail" in t.per, "plane" in t.per)))
            reach = min(reach, whole) or 1
        out.append(Tier(t.name, max(1, reach), "rail" in t.per, loaded(t)))
    return out


__all__ = ["hosts_of_job", "job_scopes", "tiers_of"]
