"""What a fabric's damage (network_damage.py) breaks, the engineering checks under a scenario:
GPUs whose NICs have no live port are cut off (E616), GPUs that lose every path above a tier
reach only the hosts under one switch (E617), and a share of uplinks lost that pushes a tier
above the declared `max_oversubscription` is E602 for the flows that cross it; NICs left on part
of their ports or slowed above a tier are in the notes. On hosts whose NVLink domain spans
several of them (`nvlink_domain = rack`), a GPU whose own NIC lost its every path sends through
a neighbour's NIC (PXN, nvlink_share.py): a note, E616/E617 only when its domain has no NIC with
a path left."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses.field_reading import error
from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.analyses.network_damage import EPS, Damage, Segment, at, degraded
from astral_dsl.analyses.nvlink_share import DomainAt, reroute
from astral_dsl.diagnostics import Diagnostic, Span
from astral_dsl.units import format_number


def _n(x: float) -> str:
    return f"{int(round(x)):,}"


def _plural(n: float, one: str, many: str) -> str:
    return f"{_n(n)} {one if round(n) == 1 else many}"


def judge(damage: Damage, limit: Optional[float], where,
          domain_at: Optional[DomainAt] = None) -> Tuple[List[Diagnostic], List[str]]:
    """The diagnostics and notes of a fabric's damage. `where(position)`: a host's path;
    `domain_at(position)`: its rack's hosts and whether they are one NVLink domain (None: no
    host's domain spans several hosts)."""
    diags: List[Diagnostic] = []
    notes: List[str] = []
    everything = [(0, damage.total_hosts)]
    top = len(damage.tier_names) - 1
    lost: List[Tuple[int, Segment]] = []     # (tier t, 0: every port; the segment)
    slow_by: Dict[Tuple[Tuple[int, ...], Tuple[int, ...]], List[Segment]] = {}
    above_by: Dict[Tuple[int, float, Tuple[int, ...], bool], List[Segment]] = {}
    for k in range(damage.nics):
        base = damage.segments(k, 0, everything)
        for s in base:
            if s.live == 0:
                lost.append((0, s))
            else:
                slow_by.setdefault((s.causes, (s.live,)), []).append(s)
        reached = _minus(everything, [(s.start, s.stop) for s in base if s.live == 0])
        for t in range(1, top + 1):
            gone = [s for s in damage.segments(k, t, reached) if s.live == 0]
            lost.extend((t, s) for s in gone)
            reached = _minus(reached, [(s.start, s.stop) for s in gone])
        for t, share, causes, onward, s in _slowed(damage, k, top, base, reached):
            above_by.setdefault((t, share, causes, onward), []).append(s)
    moved: List[Tuple[int, float, Segment]] = []
    if domain_at is not None and lost:
        lost, moved = reroute(damage, top, lost, domain_at)
        notes.extend(_shared(damage, moved))
    cut_by: Dict[Tuple[int, ...], List[Segment]] = {}
    part_by: Dict[Tuple[int, Tuple[int, ...]], List[Segment]] = {}
    for t, s in lost:
        if t == 0:
            cut_by.setdefault(s.causes, []).append(s)
        else:
            part_by.setdefault((t, s.causes), []).append(s)
    spans = damage.spans
    for causes, segs in cut_by.items():
        gpus = sum((s.stop - s.start) * damage.gpus_on(s.nic) for s in segs) * damage.replicas
        diags.append(error("E616", f"{_plural(gpus, 'GPU loses', 'GPUs lose')} every NIC port: "
                                   f"cut off from the network ({damage.named(causes)} failed)",
                           _span(spans, causes),
                           "a GPU needs a live port: dual-home its NIC (two ports on two planes) "
                           "or keep the part in service", _examples(damage, segs, where)))
    for (t, causes), segs in part_by.items():
        gpus = sum((s.stop - s.start) * damage.gpus_on(s.nic) for s in segs) * damage.replicas
        below = damage.tier_names[t - 1]
        diags.append(error("E617", f"{_plural(gpus, 'GPU loses', 'GPUs lose')} every path into "
                                   f"tier `{damage.tier_names[t]}` ({damage.named(causes)} "
                                   f"failed): they reach only the hosts under their own "
                                   f"`{below}` switches", _span(spans, causes),
                           "keep a path above each switch: fail a share of a tier, not all of "
                           "what a group climbs through", _examples(damage, segs, where, moved)))
    for (causes, live), segs in slow_by.items():
        nics = sum(s.stop - s.start for s in segs) * damage.replicas
        notes.append(f"{_plural(nics, 'NIC runs', 'NICs run')} on {live[0]} of "
                     f"{damage.ports_per_nic} ports ({damage.named(causes)} failed)")
    for (t, share, causes, onward), segs in above_by.items():
        nics = sum(s.stop - s.start for s in segs) * damage.replicas
        notes.append(f"{_plural(nics, 'NIC runs', 'NICs run')} at "
                     f"{format_number(round(share * 100, 2))} % of "
                     f"{'its' if round(nics) == 1 else 'their'} bandwidth for traffic "
                     f"into tier `{damage.tier_names[t]}`{' and above' if onward else ''} "
                     f"({damage.named(causes)} failed)")
    diags.extend(_oversubscribed(damage, limit, notes))
    return diags, notes


def _shared(damage: Damage, moved: List[Tuple[int, float, Segment]]) -> List[str]:
    """The notes of the GPUs that send through a neighbour's NIC (PXN), by tier, causes and the
    share of its healthy rate the slowest GPU of their domain gets."""
    by: Dict[Tuple[int, Tuple[int, ...], float], int] = {}
    for t, share, s in moved:
        key = (t, s.causes, round(share, 4))
        by[key] = by.get(key, 0) + (s.stop - s.start) * damage.gpus_on(s.nic)
    out = []
    for (t, causes, share), gpus in by.items():
        gpus *= damage.replicas
        one = round(gpus) == 1
        what = "every NIC port" if t == 0 else f"every path into tier " \
            f"`{damage.tier_names[t]}` through {'its' if one else 'their'} own NIC"
        # nvlink_share.communicator: the check knows no job, and takes the whole rack's NICs
        via = ("the NIC of another GPU of its NVLink domain (NCCL's PXN, for a job that holds "
               "its rack), sharing it") if one else \
            ("the NICs of other GPUs of their NVLink domain (NCCL's PXN, for a job that holds "
             "their rack), sharing them")
        out.append(f"{_plural(gpus, 'GPU loses', 'GPUs lose')} {what} "
                   f"({damage.named(causes)} failed): {'it sends' if one else 'they send'} "
                   f"through {via}: the slowest GPU on a shared NIC gets "
                   f"{format_number(round(share * 100, 2))} % of its healthy bandwidth")
    return out


def _slowed(damage: Damage, k: int, top: int, base: List[Segment], reached: List[Interval]):
    """(tier t, share of its healthy bandwidth, causes, whether the share holds for the traffic
    into every tier above t too, hosts) where NIC `k`'s traffic into tier t runs slower than
    its traffic into the tier below (into the first tier: than its live ports give): the tier
    named is the lowest whose traffic the failure slows (a lost `tor -- agg` link slows the
    traffic into `agg`, not only that into `core`)."""
    if top < 1:
        return []
    tiers = [base] + [damage.segments(k, t, reached) for t in range(1, top + 1)]
    looked = [(segs, [s.start for s in segs]) for segs in tiers]
    cuts = sorted({x for segs in tiers[1:] for s in segs for x in (s.start, s.stop)})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        here = [at(segs, starts, a) for segs, starts in looked]
        if all(s is None for s in here[1:]):
            continue
        share = [(here[0].live if here[0] is not None else damage.ports_per_nic)
                 / damage.ports_per_nic]
        share += [round(s.ports / damage.healthy(t), 6) if s is not None else 1.0
                  for t, s in enumerate(here[1:], 1)]
        for t in range(1, top + 1):
            if here[t] is not None and share[t] < share[t - 1] - EPS:
                out.append((t, share[t], here[t].causes, t < top and share[top] >= share[t],
                            attrs.evolve(here[t], start=a, stop=b)))
    return out


def _oversubscribed(damage: Damage, limit: Optional[float], notes: List[str]):
    """E602 (or a note within the limit) for uplinks that lost a share of their links (a
    failed share of a tier alone has its own: network_failures.share_lost)."""
    out = []
    seen = set()
    for t, lost, causes, over, top in degraded(damage):
        key = (t, causes, round(over, 9), top)
        if key in seen or damage.shares.issuperset(causes):
            continue
        seen.add(key)
        what, why = _over_text(damage, t, lost, causes, over, top)
        if limit is not None and over > limit * (1 + EPS):
            out.append(error("E602", what + f", above the declared limit "
                                            f"{format_number(limit)}:1",
                             _span(damage.spans, causes),
                             "the tier needs spare uplinks to keep its limit with a switch "
                             "or link down, or a looser `max_oversubscription`", [why]))
        else:
            notes.append(what)
    return out


def _over_text(damage: Damage, t: int, lost: float, causes, over: float,
               top: int) -> Tuple[str, str]:
    """(what is oversubscribed, the arithmetic) for uplinks into tier t that lost `lost` of
    their links, for the traffic climbing to tier `top`."""
    below, into = damage.tier_names[t - 1], damage.tier_names[t]
    ratio, share = format_number(round(over, 4)), format_number(round(lost * 100, 3))
    base = format_number(round(damage.oversub[t - 1], 4))
    arithmetic = f"{base}:1 / (1 - {share} %) = {ratio}:1"
    if top == t:
        return (f"tier `{below}` runs {ratio}:1 into `{into}` for the traffic of the hosts "
                f"behind the switches that lost {share} % of their uplinks "
                f"({damage.named(causes)} failed)",
                f"each of those `{below}` switches loses {share} % of its uplinks into `{into}`, "
                f"so its {arithmetic}")
    them = "it" if len(causes) == 1 else "them"
    return (f"{damage.named(causes)} failed: the traffic into `{damage.tier_names[top]}` of the "
            f"hosts behind the `{below}` switches below {them} runs {ratio}:1",
            f"each of those `{below}` switches routes its traffic into "
            f"`{damage.tier_names[top]}` around the failed links, over the uplinks to the "
            f"other `{into}` switches: it loses {share} % of its uplinks for that traffic, so "
            f"its {arithmetic}; the traffic that turns at `{into}` keeps every link")


def _span(spans, causes) -> Optional[Span]:
    for c in causes:
        if c < len(spans) and spans[c] is not None:
            return spans[c]
    return None


def _examples(damage: Damage, segs: List[Segment], where, moved=()) -> List[str]:
    """The first runs of hosts of `segs`; those whose GPUs send through a neighbour's NIC
    (`moved`: PXN) say so, as the failures named are then those of the NICs they use."""
    out = []
    for s in segs[:3]:
        host = where(s.start)
        n = s.stop - s.start
        pxn = any(m.nic == s.nic and m.start < s.stop and s.start < m.stop for _, _, m in moved)
        out.append(f"NIC {s.nic} of {n:,} host{'s' if n != 1 else ''}"
                   + (f" from `{host}`" if host else "")
                   + (" (its own path lost: its GPUs send through the NICs of their NVLink "
                      "domain, PXN)" if pxn else ""))
    if len(segs) > 3:
        out.append(f"... and {len(segs) - 3:,} more runs of hosts")
    return out


def _minus(xs: Sequence[Interval], ys: Sequence[Interval]) -> List[Interval]:
    out = []
    ys = merge(ys)
    for a, b in merge(xs):
        cur = a
        for c, d in ys:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append((cur, c))
            cur = max(cur, d)
        if cur < b:
            out.append((cur, b))
    return out


__all__ = ["judge"]
