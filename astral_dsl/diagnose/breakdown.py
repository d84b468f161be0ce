"""The per-rank breakdown operators expect from HolisticTraceAnalysis (HTA): where each rank's
time went over the iterations read, the overlap of its compute with its communication, how
much each kernel's duration varies across ranks, and the slowest ranks.

From profiler traces, as HTA computes it (hta/analyzers/breakdown_analysis.py,
communication_analysis.py): the window runs from the rank's first kernel's start to its last
kernel's end; `compute_s` is the union of its compute kernels' intervals, `comm_s` the union of
its NCCL kernels' (and per kind, each kind's own union), `memory_s` the union of memory copies
and sets, `idle_s` the window less the union of every kernel; `overlap` is the time compute and
communication run together over the communication's time (HTA's comp_comm_overlap). Idle time
by cause: between iterations (from an iteration's last kernel to the next one's first: the
optimizer's host work, data loading) and within them (pipeline bubbles, waits for peers and
for the host). tests/test_breakdown.py checks these against HTA's own numbers on real traces.

From rank logs, which give durations and not every kernel's interval, the same fields are the
rows' summed durations (`compute_s`, `comm_s` per kind, `memory_s`), the idle time the window
less their sum, and no overlap (null: it needs intervals).

Every figure is per iteration (the totals over the window divided by the iterations read)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import attrs
import numpy as np

from astral_dsl import records
from astral_dsl.observe.records import COMM_KIND, PHASE_INDEX, PHASES, RankTrace

KERNELS_LISTED = 8           # kernels (or phases) whose spread across ranks is reported
SLOWEST = 5                  # ranks listed as the slowest
_IS_COMPUTE = np.zeros(256, dtype=bool)              # phase code -> a compute phase
_IS_COMPUTE[[PHASE_INDEX[p] for p in ("forward", "backward", "optimizer", "compute")]] = True
_KINDS = {PHASE_INDEX[p]: k for p, k in COMM_KIND.items()}
_KINDS[PHASE_INDEX["comm"]] = "other"
_KIND_NAMES = tuple(sorted(set(_KINDS.values())))
_KIND_CODE = np.full(256, -1, dtype=np.int64)        # phase code -> index into _KIND_NAMES
for _p, _k in _KINDS.items():
    _KIND_CODE[_p] = _KIND_NAMES.index(_k)


def median(values) -> Optional[float]:
    """The median of the values that are not None (None when there are none)."""
    vals = [v for v in values if v is not None]
    return float(np.median(vals)) if vals else None


@records.frozen
class RankBreakdown:
    rank: int
    stage: int
    iterations: int
    window_s: float                    # per iteration: first kernel's start to last's end
    compute_s: float
    comm_s: float
    comm_by_kind_s: Dict[str, float]
    memory_s: float
    idle_s: float
    idle_between_iterations_s: float
    overlap: Optional[float]           # compute during communication / communication
    streams_idle_s: Optional[Dict[str, float]] = None   # HTA's idle time by cause, summed
    #                                                     over the rank's streams (--hta)

    def to_json(self) -> Dict:
        return {"rank": self.rank, "stage": self.stage, "iterations": self.iterations,
                "window_s": self.window_s, "compute_s": self.compute_s, "comm_s": self.comm_s,
                "comm_by_kind_s": self.comm_by_kind_s, "memory_s": self.memory_s,
                "idle_s": self.idle_s, "idle_by_cause_s": {
                    "between_iterations": self.idle_between_iterations_s,
                    "within_iterations": max(0.0, self.idle_s -
                                             self.idle_between_iterations_s)},
                "overlap": self.overlap,
                "streams_idle_by_cause_s": self.streams_idle_s}


@records.frozen
class Spread:
    """One kernel's (or phase's) mean duration across the ranks that ran it."""
    name: str
    ranks: int
    min_s: float
    median_s: float
    max_s: float
    slowest_rank: int

    def to_json(self) -> Dict:
        return {"name": self.name, "ranks": self.ranks, "min_s": self.min_s,
                "median_s": self.median_s, "max_s": self.max_s,
                "max_over_median": self.max_s / self.median_s if self.median_s > 0 else None,
                "slowest_rank": self.slowest_rank}


@records.frozen
class Slow:
    rank: int
    stage: int
    compute_s: float
    peers_s: float

    def to_json(self) -> Dict:
        return {"rank": self.rank, "stage": self.stage, "compute_s": self.compute_s,
                "peers_s": self.peers_s, "ratio_to_peers": self.compute_s / self.peers_s
                if self.peers_s > 0 else None}


@records.frozen(eq=False)
class Breakdown:
    source: str                        # "kineto" (intervals), "log" (durations) or "both"
    ranks: Tuple[RankBreakdown, ...]
    spread: Tuple[Spread, ...]
    slowest: Tuple[Slow, ...]

    # Every median below is over ranks, of each rank's figure per iteration (its totals over
    # the iterations read divided by their number): one statistic, `median` (np.median: the
    # mean of the two middle values for an even count of ranks).
    def median(self, field: str) -> Optional[float]:
        return median([getattr(r, field) for r in self.ranks])

    def median_kinds(self) -> Dict[str, float]:
        kinds = sorted({k for r in self.ranks for k in r.comm_by_kind_s})
        return {k: median([r.comm_by_kind_s.get(k, 0.0) for r in self.ranks]) for k in kinds}

    def median_causes(self) -> Dict[str, float]:
        """HTA's idle time by cause (--hta), over the ranks HTA read."""
        read = [r.streams_idle_s for r in self.ranks if r.streams_idle_s]
        return {c: median([x[c] for x in read]) for c in (read[0] if read else ())}

    def to_json(self) -> Dict:
        return {"source": self.source,
                "median": {f: self.median(f) for f in ("window_s", "compute_s", "comm_s",
                                                       "memory_s", "idle_s", "overlap")}
                | {"comm_by_kind_s": self.median_kinds()},
                "ranks": [r.to_json() for r in self.ranks],
                "kernel_spread": [s.to_json() for s in self.spread],
                "slowest": [s.to_json() for s in self.slowest]}


def _merge(start: np.ndarray, end: np.ndarray):
    """(start, end sorted by start; the index of each merged interval's first; each merged
    interval's end), merged as HTA's merge_kernel_intervals merges them (an interval starting
    where the last ended joins it). Records come in time order: sorted only when they are
    not. Also returns the order applied (None: none)."""
    order = None
    if start.size > 1 and not (start[1:] >= start[:-1]).all():
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    new = np.empty(start.size, dtype=bool)
    new[0] = True
    np.greater(start[1:], reach[:-1], out=new[1:])
    idx = np.flatnonzero(new)
    return start, idx, np.maximum.reduceat(end, idx), order


def union(start: np.ndarray, end: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The merged intervals of [start, end), sorted and disjoint."""
    if start.size == 0:
        return start, end
    s, idx, e, _ = _merge(start, end)
    return s[idx], e


def covered(start: np.ndarray, end: np.ndarray) -> float:
    s, e = union(start, end)
    return float((e - s).sum())


def covered_per(x0: np.ndarray, x1: np.ndarray, seg: np.ndarray, n: int) -> np.ndarray:
    """covered() of each segment's intervals (segments apart in time: none merges with
    another's)."""
    if x0.size == 0:
        return np.zeros(n)
    s, idx, e, order = _merge(x0, x1)
    first_seg = (seg if order is None else seg[order])[idx]
    return np.bincount(first_seg, weights=e - s[idx], minlength=n)


def of_trace(t: RankTrace, stage: int) -> Optional[RankBreakdown]:
    rows = _rows([t], [stage])
    return rows[0] if rows else None


def _rows(traces: Sequence[RankTrace], stages: Sequence[int]) -> List[RankBreakdown]:
    """The breakdown of each trace with records and iterations, all at once: each rank's
    times from its first start, the ranks one after the other a second apart, so that one pass
    over every record finds every rank's unions."""
    keep = [i for i, t in enumerate(traces) if len(t) and t.iterations]
    ts = [traces[i] for i in keep]
    if not ts:
        return []
    n = len(ts)
    sizes = np.array([len(t) for t in ts])
    seg = np.repeat(np.arange(n), sizes)
    lo = np.r_[0, np.cumsum(sizes)[:-1]]
    start = np.concatenate([t.start for t in ts])
    dur = np.concatenate([t.duration for t in ts])
    end = start + dur
    phase = np.concatenate([t.phase for t in ts]).astype(np.int64) & 255
    first, last = np.minimum.reduceat(start, lo), np.maximum.reduceat(end, lo)
    window = last - first
    shift = (np.r_[0.0, np.cumsum(window + 1.0)[:-1]] - first)[seg]
    x0, x1 = start + shift, end + shift
    comp, mem = _IS_COMPUTE[phase], phase == PHASE_INDEX["memory"]
    code = _KIND_CODE[phase]
    comm = code >= 0
    kinds = np.flatnonzero(np.bincount(code[comm], minlength=len(_KIND_NAMES))).tolist()

    def per(mask):
        return covered_per(x0[mask], x1[mask], seg[mask], n)

    def summed(mask):
        return np.bincount(seg[mask], weights=dur[mask], minlength=n)

    kineto = np.array([t.source == "kineto" for t in ts])
    by_kind = {}
    if kineto.any():
        c, m = per(comp), per(comm)
        both = c + m - per(comp | comm)
        busy = per(np.ones(seg.size, dtype=bool))
        memory = per(mem)
        cx0, cx1, cseg, ccode = x0[comm], x1[comm], seg[comm], code[comm]
        by_kind = {k: covered_per(cx0[ccode == k], cx1[ccode == k], cseg[ccode == k], n)
                   for k in kinds}
    else:
        c = m = both = busy = memory = np.zeros(n)
    if not kineto.all():              # rank logs: durations, not intervals
        c = np.where(kineto, c, summed(comp))
        m = np.where(kineto, m, summed(comm))
        memory = np.where(kineto, memory, summed(mem))
        busy = np.where(kineto, busy, np.minimum(window, summed(np.ones(seg.size, bool))))
        for k in kinds:
            by_kind[k] = np.where(kineto, by_kind.get(k, np.zeros(n)), summed(code == k))
    idle = np.maximum(0.0, window - busy)
    between = _between(ts, start, end, lo)
    out = []
    for i, t in enumerate(ts):
        f = 1.0 / len(t.iterations)
        mine = code[lo[i]:lo[i] + sizes[i]]
        kinds_i = {_KIND_NAMES[k]: float(by_kind[k][i]) * f for k in kinds
                   if (mine == k).any()}
        out.append(RankBreakdown(
            t.rank, stages[keep[i]], len(t.iterations), float(window[i]) * f,
            float(c[i]) * f, float(m[i]) * f, kinds_i, float(memory[i]) * f,
            float(idle[i]) * f, min(float(between[i]), float(idle[i])) * f,
            float(both[i] / m[i]) if kineto[i] and m[i] > 0 else None))
    return out


def _between(ts: Sequence[RankTrace], start, end, lo) -> np.ndarray:
    """Per trace: idle time between its consecutive iterations (the next one's first start
    after this one's last end)."""
    index = [t.iteration_index() for t in ts]
    counts = np.array([its.size for its, _ in index])
    base = np.r_[0, np.cumsum(counts)[:-1]]
    row = np.concatenate([b + ix for b, (_, ix) in zip(base.tolist(), index)])
    n_rows = int(counts.sum())
    if (row[1:] >= row[:-1]).all():           # records in iteration order: one reduce each
        cut = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
        first = np.full(n_rows, np.inf)
        last = np.full(n_rows, -np.inf)
        first[row[cut]] = np.minimum.reduceat(start, cut)
        last[row[cut]] = np.maximum.reduceat(end, cut)
    else:
        first = np.full(n_rows, np.inf)
        last = np.full(n_rows, -np.inf)
        np.minimum.at(first, row, start)
        np.maximum.at(last, row, end)
    gap = np.clip(first[1:] - last[:-1], 0.0, None)
    same = np.ones(max(0, n_rows - 1), dtype=bool)
    same[(base[1:] - 1)[base[1:] > 0]] = False     # the last row of a trace and the next's first
    owner = np.repeat(np.arange(len(ts)), counts)[:-1]
    return np.bincount(owner[same], weights=gap[same], minlength=len(ts))


def spread(traces: Sequence[RankTrace]) -> Tuple[Spread, ...]:
    """Each of the KERNELS_LISTED kernels (phases for rank logs) with the most time: its mean
    duration on every rank that ran it, min, median and max across the ranks."""
    per: Dict[str, Dict[int, float]] = {}
    total: Dict[str, float] = {}
    for t in traces:
        if t.kernel is not None and t.kernel_names:
            ids, names = t.kernel, t.kernel_names
        else:
            ids, names = t.phase.astype(np.int64), PHASES
        if ids.size == 0:
            continue
        sums = np.bincount(ids, weights=t.duration, minlength=len(names))
        counts = np.bincount(ids, minlength=len(names))
        for i in np.flatnonzero(counts).tolist():
            name = names[i]
            per.setdefault(name, {})[t.rank] = float(sums[i] / counts[i])
            total[name] = total.get(name, 0.0) + float(sums[i])
    top = sorted(total, key=lambda n: (-total[n], n))[:KERNELS_LISTED]
    out = []
    for name in top:
        ranks = per[name]
        vals = np.array(list(ranks.values()))
        slowest = max(sorted(ranks), key=lambda r: ranks[r])
        out.append(Spread(name, len(ranks), float(vals.min()), float(np.median(vals)),
                          float(vals.max()), slowest))
    return tuple(out)


def _source(read: Set[str]) -> str:
    """What the ranks were read from: "kineto" (profiler traces), "log" (rank logs), or "both"
    when some ranks came from each (each rank's figures are its own source's)."""
    if read == {"kineto"}:
        return "kineto"
    return "both" if "kineto" in read else "log"


def of_traces(traces: Dict[int, RankTrace], rm, comparisons=(),
              streams_idle: Optional[Dict[int, Dict[str, float]]] = None
              ) -> Optional[Breakdown]:
    """The breakdown of every rank read; `comparisons`: the ranks' compute against their
    stage's (compute.Found.comparisons), for the slowest ranks; `streams_idle`: per rank, HTA's
    idle time by cause (observe.hta)."""
    if not traces:
        return None
    stage = {r.rank: r.stage for r in rm.ranks}
    streams_idle = streams_idle or {}
    ordered = [t for _, t in sorted(traces.items())]
    rows = [attrs.evolve(b, streams_idle_s=streams_idle.get(b.rank))
            for b in _rows(ordered, [stage.get(t.rank, 0) for t in ordered])]
    source = _source({t.source for t in traces.values()})
    slow = sorted(comparisons, key=lambda c: (-c.ratio, c.rank))[:SLOWEST]
    return Breakdown(source, tuple(rows), spread(list(traces.values())),
                     tuple(Slow(c.rank, c.stage, c.compute_s, c.peers_s) for c in slow))


__all__ = ["Breakdown", "RankBreakdown", "Spread", "covered", "median", "of_trace",
           "of_traces", "union"]
