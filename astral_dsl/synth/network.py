"""The drill generator's network model: a transfer between two hosts runs on every port of the
GPU's NIC (one per plane), each with a few flows (NCCL channels); two ports on one first-tier
switch meet there, others climb to the lowest tier group that holds both and take one of its
switches per flow (ECMP: a hash). A transfer is slowed by the slowest rate on any of its flows;
a ring collective by the slowest on any of its ring edges. A transfer or a ring inside one
NVLink domain (a host, an NVL72 rack) runs on NVLink and crosses no NIC or switch; a GPU whose
NVLink port is degraded (`nvlink`) slows every collective and transfer it holds with another
GPU of its domain (nvlink_slow). The rank map
gives the wiring (which port lands on which switch, and the names) and that NVLink-domain rule
(rankmap.one_domain); the faults give the rates of the parts they name (generator.py replays
the schedule over them)."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from astral_dsl.analyses.rankmap import RankMap, domain_of, one_domain
from astral_dsl.synth.faults import Fault

CHANNELS = 4            # flows per port and transfer (NCCL channels per NIC port)
MAX_FLAPS = 63          # flapping links a drill holds: a bit each of an int64 mask (flap_mask)


def _mix(*values: int) -> int:
    """A well-mixed 64-bit hash of small integers (splitmix64 steps): the ECMP choice."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = (h ^ (v & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        h = (h ^ (h >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return h


class Net:
    """Rates of the parts the faults name, and flows over the wiring."""

    def __init__(self, rank_map: RankMap, faults: Sequence[Fault], seed: int):
        self.rm = rank_map
        self.seed = seed
        self.rate: Dict[str, float] = {}
        self.flaps: List[Fault] = []            # flapping links: bit i of a mask is flaps[i]
        self.nvlink: Dict[int, float] = {}      # rank -> rate of its GPU's NVLink port
        for f in faults:
            if f.kind in ("nic_port", "tor", "agg", "uplink"):
                self.rate[f.part] = min(self.rate.get(f.part, 1.0), f.severity)
            elif f.kind == "nvlink":
                self.nvlink[f.rank] = min(self.nvlink.get(f.rank, 1.0), f.severity)
            elif f.kind == "link_flap":
                self.flaps.append(f)
        self.gpu_windows: List[Fault] = []
        self._pairs: Dict[Tuple[int, int], Tuple[float, int]] = {}    # _pair's, by (a, b)

    def route(self, a: int, b: int) -> List[List[str]]:
        """The parts (ports, host cables, switches, uplinks) each flow between ranks a and b
        crosses: every port pair of one plane carries CHANNELS flows; between first-tier
        switches each flow climbs one switch of every tier group on each side up to the group
        both share (ECMP: a hash of the pair, the port, the channel and the tier)."""
        pa, pb = self.rm.ranks[a].ports, self.rm.ranks[b].ports
        lo, hi = min(a, b), max(a, b)
        out = []
        for x, y in zip(pa, pb):
            base = [x.name, y.name, x.switch, y.switch, f"{x.name} -- {x.switch}",
                    f"{y.name} -- {y.switch}"]
            meet = None if x.switch == y.switch else next(
                (k for k in range(1, len(x.tiers)) if x.tiers[k] == y.tiers[k]), None)
            if meet is None:
                out.append(base)
                continue
            for ch in range(CHANNELS):
                crossed = list(base)
                below = [x.switch, y.switch]
                for k in range(1, meet + 1):
                    sides = (x, y) if k < meet else (x,)
                    picks = []
                    for side, p in enumerate(sides):
                        key = p.tiers[k]
                        n = max(1, self.rm.size_of(key))
                        h = _mix(lo, hi, x.port, ch, self.seed) if k == meet else \
                            _mix(lo, hi, x.port, ch, k, side, self.seed)
                        picks.append(key.switch(h % n))
                    if k == meet:
                        picks.append(picks[0])
                    for side in (0, 1):
                        crossed += [picks[side], f"{below[side]} -- {picks[side]}"]
                    below = picks
                out.append(crossed)
        return out

    def crosses(self, ranks: Sequence[int]) -> bool:
        """Whether the traffic among `ranks` (a transfer's two ranks, a collective's group)
        leaves its NVLink domain: the rank map's rule (rankmap.one_domain: one host, or an NVL72
        rack whose hosts declare `nvlink_domain = rack`), as Seer prices it. Traffic that stays
        in it runs on NVLink and crosses no NIC, cable or switch."""
        return not one_domain([self.rm.ranks[r] for r in ranks])

    def nvlink_slow(self, ranks: Sequence[int]) -> float:
        """Slow-down of a collective among `ranks` (a group, or a transfer's two ranks) by the
        degraded NVLink ports of its members' GPUs: a member whose port runs at a fraction of
        its rate, with another member in its NVLink domain, exchanges with it over that port
        (NCCL's rings and trees pass through the GPUs of one node over NVLink, each node's
        GPUs one after the other: NCCL 2.x src/graph/search.cc), so the collective runs at
        that fraction; 1 when none."""
        peers = set(self.domain_peers(ranks))
        return max([1.0] + [1.0 / rate for r, rate in self.nvlink.items() if r in peers])

    def domain_peers(self, ranks: Sequence[int]) -> List[int]:
        """The members of `ranks` with another member in their NVLink domain (rankmap.domain_of:
        the NVL72 rack's, else the host): those nvlink_slow slows the group for."""
        key = [domain_of(self.rm.ranks[int(r)]) for r in ranks]
        count: Dict[str, int] = {}
        for k in key:
            count[k] = count.get(k, 0) + 1
        return [int(r) for r, k in zip(ranks, key) if count[k] > 1]

    def _flows(self, a: int, b: int):
        """(rate, the flapping links it crosses: a bit each) of each flow between ranks a and
        b."""
        return [(min(self.rate.get(part, 1.0) for part in crossed),
                 sum(1 << i for i, f in enumerate(self.flaps) if f.part in crossed))
                for crossed in self.route(a, b)]

    def _pair(self, a: int, b: int) -> Tuple[float, int]:
        """(slow-down, flapping mask) of the flows between ranks a and b: the slowest flow's
        1 / rate (at least 1) and the flapping links any crosses. Worked out once per pair of a
        drill (its schedule sends between the same ranks at every step and micro-batch); 1 and
        none without slowed parts or flapping links (no flow need be routed)."""
        hit = self._pairs.get((a, b))
        if hit is None:
            slow, flap = 1.0, 0
            if self.rate or self.flaps:
                for rate, f in self._flows(a, b):
                    slow = max(slow, 1.0 / rate)
                    flap |= f
            hit = self._pairs[a, b] = (slow, flap)
        return hit

    def _factor(self, pairs):
        slow, flap = 1.0, 0
        for a, b in pairs:
            s, f = self._pair(a, b)
            slow = max(slow, s)
            flap |= f
        return slow, flap

    def pairs(self, src: np.ndarray, dst: np.ndarray):
        """Static slow-down and flapping mask of the transfers src[d, t] -> dst[d, t]."""
        static = np.ones(src.shape)
        flap = flap_mask(src.shape)
        for pos in np.ndindex(src.shape):
            pair = (int(src[pos]), int(dst[pos]))
            if self.crosses(pair):
                static[pos], flap[pos] = self._factor([pair])
            elif self.nvlink:
                static[pos] = self.nvlink_slow(pair)
        return static, flap

    def rings(self, ranks: np.ndarray):
        """Per TP index: the ring over the data-parallel replicas (axis 0)."""
        D, T = ranks.shape
        static = np.ones((1, T))
        flap = flap_mask((1, T))
        if D < 2:
            return static, flap
        for t in range(T):
            group = ranks[:, t].tolist()
            if self.crosses(group):
                ring = [(int(ranks[d, t]), int(ranks[(d + 1) % D, t])) for d in range(D)]
                static[0, t], flap[0, t] = self._factor(ring)
            if self.nvlink:                                 # its members' NVLink ports
                static[0, t] = max(static[0, t], self.nvlink_slow(group))
        return static, flap

    def gpu_slow(self, ranks: np.ndarray, when: np.ndarray) -> np.ndarray:
        """Compute slow-down of the GPUs of `ranks` for blocks starting at `when`: a GPU fault
        with windows slows the blocks that start in them."""
        out = np.ones(np.shape(ranks))
        for f in self.gpu_windows:
            hit = ranks == f.rank
            if hit.any():
                bad = np.zeros(np.shape(ranks), dtype=bool)
                for lo, hi in f.windows:
                    bad |= (when >= lo) & (when < hi)
                out = np.where(hit & bad, out * (1 + f.severity), out)
        return out

    def flap_factor(self, mask: np.ndarray, when: np.ndarray) -> np.ndarray:
        """The slow-down of transfers crossing the flapping links of `mask` (flap_mask: a bit
        each) that start at `when`: the slowest of the links bad then (a transfer runs at its
        slowest flow's pace)."""
        if not self.flaps or not np.any(mask):
            return np.ones(np.shape(mask))
        out = None
        for i, f in enumerate(self.flaps):
            bad = np.zeros(np.shape(when), dtype=bool)
            for lo, hi in f.windows:
                bad |= (when >= lo) & (when < hi)
            slow = np.where((np.asarray(mask) >> i) & 1 & bad, 1.0 / f.severity, 1.0)
            out = slow if out is None else np.maximum(out, slow)
        return out


def flap_mask(shape) -> np.ndarray:
    """No flapping link crossed yet: per transfer or group, a bit for each of Net.flaps."""
    return np.zeros(shape, dtype=np.int64)


__all__ = ["CHANNELS", "MAX_FLAPS", "Net", "flap_mask"]
