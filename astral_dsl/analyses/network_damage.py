"""The damage failed fabric parts do, on one replica of a fabric's owner (hosts are intervals
of host numbers, host_positions.py); what it breaks is damage_judge.py's.

- ports: per (NIC, port), the hosts on which that port is dark;
- uplinks: per (tier t, rail, plane), the hosts whose traffic into tier t loses a share of its
  links (1: every link) once it climbs to tier `top` or above (on one NIC port when the loss is
  that of the first-tier switch the port lands on: a host's ports may straddle two).

A NIC runs on its live ports; the traffic of a collective is split evenly over them and waits
for the slowest, so its rate is (live ports) x (the bandwidth share of the slowest path), where
a path into tier t that lost `lost` of its links has the share 1 / max(1, over / (1 - lost)),
`over` being the oversubscription of the tier below it. A port whose path to the tier the
traffic needs is cut counts as dark for that traffic."""
from __future__ import annotations

import bisect
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.diagnostics import Span

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
    oversub: Tuple[float, ...]                  # per tier: down / up, as declared
    tier_names: Tuple[str, ...]
    ports: Dict[Tuple[int, int], List[Piece]]   # (nic, port) -> hosts where it is dark
    uplinks: Dict[Tuple[int, Optional[int], Optional[int]], List[Piece]]  # (tier, rail, plane)
    causes: Tuple[str, ...]                     # the failed parts, as written
    spans: Tuple[Optional[Span], ...] = ()
    failed: Tuple[Tuple[str, float], ...] = ()  # tier -> switches off (one owner replica)
    shares: frozenset = frozenset()             # causes that are failed shares of a tier
    _maps: Dict = attrs.field(factory=dict)

    def gpus_on(self, nic: int) -> int:
        """GPUs of a host that use NIC `nic` (GPU i uses NIC i mod NICs)."""
        return len(range(nic, self.gpus_per_host, self.nics)) if self.nics else 0

    def job_gpus_on(self, nic: int, host: int, partial: Optional[Tuple[int, int]] = None) -> int:
        """The job's GPUs of host `host` that use NIC `nic`: all of them, but on the job's last
        host, `partial` = (host, n), only those among its first n GPUs."""
        if partial is not None and host == partial[0]:
            return len(range(nic, partial[1], self.nics)) if self.nics else 0
        return self.gpus_on(nic)

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

    def job_gpus(self, seg: Segment, partial: Optional[Tuple[int, int]] = None) -> int:
        """The job's GPUs on NIC `seg.nic` of the hosts of `seg`: each host's GPUs on that NIC,
        but on the job's last host, `partial` = (host, n), only its first n GPUs are the
        job's (GPU g uses NIC g mod NICs)."""
        n = (seg.stop - seg.start) * self.gpus_on(seg.nic)
        if partial is not None and seg.start <= partial[0] < seg.stop and self.nics:
            n -= self.gpus_on(seg.nic) - len(range(seg.nic, partial[1], self.nics))
        return n

    def worst(self, top: int, hosts: Sequence[Interval],
              partial: Optional[Tuple[int, int]] = None):
        """(the lowest rate among the job's GPUs on `hosts` in port speeds, None when none is
        below healthy; its causes; how many of the job's GPUs are below healthy) for traffic
        that climbs to tier `top`; `partial`: the job's last host when it holds fewer of the
        job's GPUs than it has (partial_host)."""
        lowest, causes, gpus = None, (), 0
        for k in range(self.nics):
            for s in self.segments(k, top, hosts):
                mine = self.job_gpus(s, partial)
                if not mine:
                    continue        # a NIC of the last host's GPUs past the job's last rank
                gpus += mine
                if lowest is None or s.ports < lowest:
                    lowest, causes = s.ports, s.causes
        return lowest, causes, gpus

    def named(self, causes: Iterable[int]) -> str:
        return ", ".join(f"`{self.causes[c]}`" for c in causes)


def partial_host(hosts: Sequence[Interval], per_host: int,
                 ranks: Optional[int]) -> Optional[Tuple[int, int]]:
    """(the job's last host, how many of its GPUs are the job's) when the job's `ranks` GPUs,
    host by host in `hosts`' order, leave some GPUs of that host out (a DP group of 5 on hosts
    of 4: 1 GPU of the second host); None when each host is the job's whole."""
    if not ranks or not hosts:
        return None
    used = ranks - (sum(b - a for a, b in hosts) - 1) * per_host
    return (hosts[-1][1] - 1, used) if 0 < used < per_host else None


def at(segs: Sequence[Segment], starts: Sequence[int], x: int) -> Optional[Segment]:
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


__all__ = ["Damage", "Piece", "Segment", "at", "degraded", "worst_oversubscription"]
