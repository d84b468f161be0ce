"""The damage failed fabric parts do, on one replica of a fabric's owner (hosts are intervals
of host numbers, host_positions.py), and what it breaks.

- ports: per (NIC, port), the hosts on which that port is dark;
- uplinks: per (tier t, rail, plane), the hosts whose traffic into tier t loses a share of its
  links (1: every link) once it climbs to tier `top` or above (on one NIC port when the loss is
  that of the first-tier switch the port lands on: a host's ports may straddle two).

A NIC runs on its live ports; the traffic of a collective is split evenly over them and waits
for the slowest, so its rate is (live ports) x (the bandwidth share of the slowest path), where
a path into tier t that lost `lost` of its links has the share 1 / max(1, over / (1 - lost)),
`over` being the oversubscription of the tier below it. A port whose path to the tier the
traffic needs is cut counts as dark for that traffic.

`judge` says what that breaks (engineering checks under a scenario): GPUs whose NICs have no
live port are cut off (E616), GPUs that lose every path above a tier reach only the hosts under
one switch (E617), and a share of uplinks lost that pushes a tier above the declared
`max_oversubscription` is E602 for the flows that cross it; NICs left on part of their ports
are in the notes."""
from __future__ import annotations

import bisect
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.units import format_number

EPS = 1e-9


@records.frozen
class Piece:
    """Hosts [start, stop) whose traffic on a key loses `lost` of its links (1: none left)
    once it climbs to tier `top` or above (0: any traffic leaving the host)."""
    start: int
    stop: int
    lost: float
    top: int
    cause: int                       # index into Damage.causes
    port: Optional[Tuple[int, int]] = None   # the (NIC, port) it applies to; None: every one


class _Map:
    """Disjoint segments of summed losses over pieces, with the causes in each."""

    def __init__(self, pieces: Sequence[Piece]):
        events: Dict[int, List[Tuple[float, int, int]]] = {}
        for p in pieces:
            events.setdefault(p.start, []).append((p.lost, p.cause, 1))
            events.setdefault(p.stop, []).append((-p.lost, p.cause, -1))
        self.starts: List[int] = []
        self.values: List[Tuple[float, Tuple[int, ...]]] = []
        lost, active = 0.0, {}
        for x in sorted(events):
            for d, c, n in events[x]:
                lost += d
                active[c] = active.get(c, 0) + n
            causes = tuple(sorted(k for k, n in active.items() if n > 0))
            self.starts.append(x)
            self.values.append((max(0.0, lost) if causes else 0.0, causes))

    def at(self, x: int) -> Tuple[float, Tuple[int, ...]]:
        i = bisect.bisect_right(self.starts, x) - 1
        return self.values[i] if i >= 0 else (0.0, ())


@records.frozen
class Segment:
    """Hosts [start, stop) where NIC `nic` runs at `ports` port speeds (live ports times the
    bandwidth share of their slowest path), below its healthy `healthy`."""
    start: int
    stop: int
    nic: int
    ports: float
    healthy: float
    live: int                        # ports left alive (0: cut off)
    causes: Tuple[int, ...]


@records.frozen(eq=False)
class Damage:
    """The failed fabric parts of one fabric, resolved on one replica of its owner."""
    owner: str
    replicas: int                               # owner replicas it stands for
    total_hosts: int
    rails: int
    planes: int
    nics: int                                   # NICs per host
    ports_per_nic: int
    gpus_per_host: int
    per: Tuple[Tuple[bool, bool], ...]          # per tier: split by rail, by plane
    oversub: Tuple[float, ...]                  # per tier: down / up (failed fractions in)
    tier_names: Tuple[str, ...]
    ports: Dict[Tuple[int, int], List[Piece]]   # (nic, port) -> hosts where it is dark
    uplinks: Dict[Tuple[int, Optional[int], Optional[int]], List[Piece]]  # (tier, rail, plane)
    causes: Tuple[str, ...]                     # the failed parts, as written
    spans: Tuple[Optional[Span], ...] = ()
    failed: Tuple[Tuple[str, float], ...] = ()  # tier -> switches off (one owner replica)
    _maps: Dict = attrs.field(factory=dict)

    def gpus_on(self, nic: int) -> int:
        """GPUs of a host that use NIC `nic` (GPU i uses NIC i mod NICs)."""
        return len(range(nic, self.gpus_per_host, self.nics)) if self.nics else 0

    def _map(self, key) -> _Map:
        hit = self._maps.get(key)
        if hit is None:
            if key[0] == "port":
                pieces = self.ports.get(key[1:], ())
            else:
                t, rail, plane, top, port = key[1:]
                pieces = [p for p in _on_port(self.uplinks.get((t, rail, plane), ()), port)
                          if p.top <= top]
            hit = self._maps[key] = _Map(pieces)
        return hit

    def _port_key(self, key, nic: int, port: int) -> Optional[Tuple[int, int]]:
        """(nic, port) when some loss of uplink `key` applies to one NIC port only, else None
        (the map is then shared by every port)."""
        return (nic, port) if any(p.port is not None for p in self.uplinks[key]) else None

    def key(self, t: int, nic: int, port: int) -> Tuple[int, Optional[int], Optional[int]]:
        """The uplink key of the traffic of NIC `nic`'s port `port` into tier t."""
        by_rail, by_plane = self.per[t - 1]
        return (t, nic % self.rails if by_rail else None,
                port % self.planes if by_plane else None)

    def healthy(self, top: int) -> float:
        return self.ports_per_nic * min((1.0 / max(1.0, self.oversub[t - 1])
                                         for t in range(1, top + 1)), default=1.0)

    def segments(self, nic: int, top: int, hosts: Sequence[Interval]) -> List[Segment]:
        """Where, among `hosts`, NIC `nic` runs below its healthy rate for traffic that climbs
        to tier `top`."""
        maps, bounds = [], set()
        for j in range(self.ports_per_nic):
            dark = self._map(("port", nic, j)) if (nic, j) in self.ports else None
            ups = []
            for t in range(1, top + 1):
                k = self.key(t, nic, j)
                m = self._map(("up",) + k + (top, self._port_key(k, nic, j))) \
                    if k in self.uplinks else None
                ups.append((t, m))
                if m is not None:
                    bounds.update(m.starts)
            if dark is not None:
                bounds.update(dark.starts)
            maps.append((dark, ups))
        if not bounds:
            return []
        healthy = self.healthy(top)
        out: List[Segment] = []
        ordered = sorted(bounds)
        for a, b in merge(hosts):
            lo, hi = bisect.bisect_right(ordered, a), bisect.bisect_left(ordered, b)
            cuts = [a] + ordered[lo:hi] + [b]
            for x, y in zip(cuts, cuts[1:]):
                live, share, causes = self._rate(maps, x)
                rate = live * share if live else 0.0
                if rate >= healthy - EPS:
                    continue
                causes = tuple(sorted(causes))
                last = out[-1] if out else None
                if last is not None and last.stop == x and last.ports == rate and \
                        last.causes == causes and last.live == live:
                    out[-1] = attrs.evolve(last, stop=y)
                else:
                    out.append(Segment(x, y, nic, rate, healthy, live, causes))
        return out

    def _rate(self, maps, x: int):
        live, share, causes = 0, 1.0, set()
        for dark, ups in maps:
            if dark is not None:
                lost, c = dark.at(x)
                if lost >= 1 - EPS:
                    causes.update(c)
                    continue
            port_share = 1.0
            for t, m in ups:
                lost, c = m.at(x) if m is not None else (0.0, ())
                over = self.oversub[t - 1]
                if lost >= 1 - EPS:
                    port_share = 0.0
                else:
                    port_share = min(port_share, 1.0 / max(1.0, over / (1 - lost)))
                if lost > EPS:
                    causes.update(c)
            if port_share > 0:
                live += 1
                share = min(share, port_share)
        return live, share, causes

    def worst(self, top: int, hosts: Sequence[Interval]):
        """(the lowest rate among the GPUs of `hosts` in port speeds, None when none is below
        healthy; its causes; how many GPUs are below healthy) for traffic that climbs to tier
        `top`."""
        lowest, causes, gpus = None, (), 0
        for k in range(self.nics):
            for s in self.segments(k, top, hosts):
                gpus += (s.stop - s.start) * self.gpus_on(k)
                if lowest is None or s.ports < lowest:
                    lowest, causes = s.ports, s.causes
        return lowest, causes, gpus

    def named(self, causes: Iterable[int]) -> str:
        return ", ".join(f"`{self.causes[c]}`" for c in causes)


# ---- what it breaks ---------------------------------------------------------------------------
def _err(code: str, message: str, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint, notes=tuple(notes))


def _n(x: float) -> str:
    return f"{int(round(x)):,}"


def _plural(n: float, one: str, many: str) -> str:
    return f"{_n(n)} {one if round(n) == 1 else many}"


def judge(damage: Damage, limit: Optional[float], where) -> Tuple[List[Diagnostic], List[str]]:
    """The diagnostics and notes of a fabric's damage. `where(position)`: a host's path."""
    diags: List[Diagnostic] = []
    notes: List[str] = []
    everything = [(0, damage.total_hosts)]
    top = len(damage.tier_names) - 1
    cut_by: Dict[Tuple[int, ...], List[Segment]] = {}
    part_by: Dict[Tuple[int, Tuple[int, ...]], List[Segment]] = {}
    slow_by: Dict[Tuple[Tuple[int, ...], Tuple[int, ...]], List[Segment]] = {}
    above_by: Dict[Tuple[float, Tuple[int, ...]], List[Segment]] = {}
    for k in range(damage.nics):
        base = damage.segments(k, 0, everything)
        for s in base:
            if s.live == 0:
                cut_by.setdefault(s.causes, []).append(s)
            else:
                slow_by.setdefault((s.causes, (s.live,)), []).append(s)
        reached = _minus(everything, [(s.start, s.stop) for s in base if s.live == 0])
        for t in range(1, top + 1):
            lost = [s for s in damage.segments(k, t, reached) if s.live == 0]
            for s in lost:
                part_by.setdefault((t, s.causes), []).append(s)
            reached = _minus(reached, [(s.start, s.stop) for s in lost])
        for t, share, causes, onward, s in _slowed(damage, k, top, base, reached):
            above_by.setdefault((t, share, causes, onward), []).append(s)
    spans = damage.spans
    for causes, segs in cut_by.items():
        gpus = sum((s.stop - s.start) * damage.gpus_on(s.nic) for s in segs) * damage.replicas
        diags.append(_err("E616", f"{_plural(gpus, 'GPU loses', 'GPUs lose')} every NIC port: "
                                  f"cut off from the network ({damage.named(causes)} failed)",
                          _span(spans, causes),
                          "a GPU needs a live port: dual-home its NIC (two ports on two planes) "
                          "or keep the part in service", _examples(damage, segs, where)))
    for (t, causes), segs in part_by.items():
        gpus = sum((s.stop - s.start) * damage.gpus_on(s.nic) for s in segs) * damage.replicas
        below = damage.tier_names[t - 1]
        diags.append(_err("E617", f"{_plural(gpus, 'GPU loses', 'GPUs lose')} every path into "
                                  f"tier `{damage.tier_names[t]}` ({damage.named(causes)} "
                                  f"failed): they reach only the hosts under their own "
                                  f"`{below}` switches", _span(spans, causes),
                          "keep a path above each switch: fail a share of a tier, not all of "
                          "what a group climbs through", _examples(damage, segs, where)))
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
        at = [_at(segs, starts, a) for segs, starts in looked]
        if all(s is None for s in at[1:]):
            continue
        share = [(at[0].live if at[0] is not None else damage.ports_per_nic)
                 / damage.ports_per_nic]
        share += [round(s.ports / damage.healthy(t), 6) if s is not None else 1.0
                  for t, s in enumerate(at[1:], 1)]
        for t in range(1, top + 1):
            if at[t] is not None and share[t] < share[t - 1] - EPS:
                out.append((t, share[t], at[t].causes, t < top and share[top] >= share[t],
                            attrs.evolve(at[t], start=a, stop=b)))
    return out


def _at(segs: Sequence[Segment], starts: Sequence[int], x: int) -> Optional[Segment]:
    """The segment of `segs` (sorted, disjoint) that holds host x, if any."""
    i = bisect.bisect_right(starts, x) - 1
    return segs[i] if i >= 0 and segs[i].start <= x < segs[i].stop else None


def degraded(damage: Damage) -> Iterator[Tuple[int, float, Tuple[int, ...], float, int]]:
    """(tier t, share of its links lost, causes, the oversubscription of the tier below into
    t, the tier `top` the traffic that sees it climbs to) of every run of hosts whose uplinks
    into t lost part (not all) of their links: the one computation of the oversubscription a
    scenario leaves (E602 and its notes here, the review's scenario figures through
    `worst_oversubscription`). `top` > t when the lost links are routed around at tier t - 1
    (a switch of tier t that lost its links above: only the traffic climbing past it turns
    away from it)."""
    for (t, rail, plane), pieces in sorted(damage.uplinks.items(), key=lambda kv: str(kv[0])):
        for port in sorted({p.port for p in pieces if p.port is not None}) or [None]:
            mine = _on_port(pieces, port)
            m = _Map(mine)
            for _, (lost, causes) in zip(m.starts, m.values):
                if causes and EPS < lost < 1 - EPS:
                    top = max(p.top for p in mine if p.cause in causes)
                    yield t, lost, causes, damage.oversub[t - 1] / (1 - lost), max(t, top)


def _on_port(pieces: Iterable[Piece], port: Optional[Tuple[int, int]]) -> List[Piece]:
    """The pieces that apply to NIC port `port` (None: to every port, those of no port)."""
    return [p for p in pieces if p.port is None or p.port == port]


def worst_oversubscription(damage: Optional[Damage]) -> Optional[float]:
    """The highest oversubscription a tier runs at under the failures (None: no uplinks lost
    a share of their links)."""
    if damage is None:
        return None
    return max((over for _, _, _, over, _ in degraded(damage)), default=None)


def _oversubscribed(damage: Damage, limit: Optional[float], notes: List[str]):
    """E602 (or a note within the limit) for uplinks that lost a share of their links."""
    out = []
    seen = set()
    for t, lost, causes, over, top in degraded(damage):
        key = (t, causes, round(over, 9), top)
        if key in seen:
            continue
        seen.add(key)
        what, why = _over_text(damage, t, lost, causes, over, top)
        if limit is not None and over > limit * (1 + EPS):
            out.append(_err("E602", what + f", above the declared limit "
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


def _examples(damage: Damage, segs: List[Segment], where) -> List[str]:
    out = []
    for s in segs[:3]:
        host = where(s.start)
        n = s.stop - s.start
        out.append(f"NIC {s.nic} of {n:,} host{'s' if n != 1 else ''}"
                   + (f" from `{host}`" if host else ""))
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


__all__ = ["Damage", "Piece", "Segment", "degraded", "judge", "worst_oversubscription"]
