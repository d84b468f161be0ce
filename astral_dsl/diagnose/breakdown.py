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

from typing import Dict, Optional, Sequence, Tuple

import attrs
import numpy as np

from astral_dsl.observe.records import COMM_KIND, PHASE_INDEX, PHASES, RankTrace

KERNELS_LISTED = 8           # kernels (or phases) whose spread across ranks is reported
SLOWEST = 5                  # ranks listed as the slowest
_COMPUTE = np.array(sorted(PHASE_INDEX[p] for p in ("forward", "backward", "optimizer",
                                                    "compute")))
_KINDS = {PHASE_INDEX[p]: k for p, k in COMM_KIND.items()}
_KINDS[PHASE_INDEX["comm"]] = "other"
_KIND_NAMES = tuple(sorted(set(_KINDS.values())))
_KIND_CODE = np.full(256, -1, dtype=np.int64)        # phase code -> index into _KIND_NAMES
for _p, _k in _KINDS.items():
    _KIND_CODE[_p] = _KIND_NAMES.index(_k)


@attrs.frozen
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


@attrs.frozen
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


@attrs.frozen
class Slow:
    rank: int
    stage: int
    compute_s: float
    peers_s: float

    def to_json(self) -> Dict:
        return {"rank": self.rank, "stage": self.stage, "compute_s": self.compute_s,
                "peers_s": self.peers_s, "ratio_to_peers": self.compute_s / self.peers_s
                if self.peers_s > 0 else None}


@attrs.frozen(eq=False)
class Breakdown:
    source: str                        # "kineto" (intervals) or "log" (durations)
    ranks: Tuple[RankBreakdown, ...]
    spread: Tuple[Spread, ...]
    slowest: Tuple[Slow, ...]

    def median(self, field: str) -> Optional[float]:
        vals = [getattr(r, field) for r in self.ranks if getattr(r, field) is not None]
        return float(np.median(vals)) if vals else None

    def median_kinds(self) -> Dict[str, float]:
        kinds = sorted({k for r in self.ranks for k in r.comm_by_kind_s})
        return {k: float(np.median([r.comm_by_kind_s.get(k, 0.0) for r in self.ranks]))
                for k in kinds}

    def to_json(self) -> Dict:
        return {"source": self.source,
                "median": {f: self.median(f) for f in ("window_s", "compute_s", "comm_s",
                                                       "memory_s", "idle_s", "overlap")}
                | {"comm_by_kind_s": self.median_kinds()},
                "ranks": [r.to_json() for r in self.ranks],
                "kernel_spread": [s.to_json() for s in self.spread],
                "slowest": [s.to_json() for s in self.slowest]}


def union(start: np.ndarray, end: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The merged intervals of [start, end) (sorted, disjoint), as HTA's merge_kernel_intervals
    merges them (an interval starting where the last ended joins it)."""
    if start.size == 0:
        return start, end
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def covered(start: np.ndarray, end: np.ndarray) -> float:
    s, e = union(start, end)
    return float((e - s).sum())


def of_trace(t: RankTrace, stage: int) -> Optional[RankBreakdown]:
    n_it = len(t.iterations)
    if len(t) == 0 or n_it == 0:
        return None
    start, end = t.start, t.start + t.duration
    window = float(end.max() - start.min())
    comp = np.isin(t.phase, _COMPUTE)
    mem = t.phase == PHASE_INDEX["memory"]
    code = _KIND_CODE[t.phase.astype(np.int64) & 255]
    comm = code >= 0
    present = np.flatnonzero(np.bincount(code[comm], minlength=len(_KIND_NAMES)))
    between = _between(t)
    if t.source == "kineto":
        c = covered(start[comp], end[comp])
        m = covered(start[comm], end[comm])
        busy = covered(start, end)
        both = c + m - covered(start[comp | comm], end[comp | comm])
        kinds = {_KIND_NAMES[k]: covered(start[code == k], end[code == k])
                 for k in present.tolist()}
        memory = covered(start[mem], end[mem])
        idle = window - busy
        overlap = both / m if m > 0 else None
    else:
        c = float(t.duration[comp].sum())
        m = float(t.duration[comm].sum())
        sums = np.bincount(code[comm], weights=t.duration[comm], minlength=len(_KIND_NAMES))
        kinds = {_KIND_NAMES[k]: float(sums[k]) for k in present.tolist()}
        memory = float(t.duration[mem].sum())
        idle = max(0.0, window - float(t.duration.sum()))
        overlap = None
    f = 1.0 / n_it
    return RankBreakdown(t.rank, stage, n_it, window * f, c * f, m * f,
                         {k: v * f for k, v in kinds.items()}, memory * f, idle * f,
                         min(between, idle) * f, overlap)


def _between(t: RankTrace) -> float:
    """Idle time between consecutive iterations: the next one's first start after this one's
    last end."""
    its, index = t.iteration_index()
    if its.size < 2:
        return 0.0
    end = t.start + t.duration
    first = np.full(its.size, np.inf)
    last = np.full(its.size, -np.inf)
    np.minimum.at(first, index, t.start)
    np.maximum.at(last, index, end)
    return float(np.clip(first[1:] - last[:-1], 0.0, None).sum())


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
    rows = [attrs.evolve(b, streams_idle_s=streams_idle.get(b.rank)) for b in
            (of_trace(t, stage.get(r, 0)) for r, t in sorted(traces.items())) if b is not None]
    source = "kineto" if all(t.source == "kineto" for t in traces.values()) else "log"
    slow = sorted(comparisons, key=lambda c: (-c.ratio, c.rank))[:SLOWEST]
    return Breakdown(source, tuple(rows), spread(list(traces.values())),
                     tuple(Slow(c.rank, c.stage, c.compute_s, c.peers_s) for c in slow))


__all__ = ["Breakdown", "RankBreakdown", "Spread", "covered", "of_trace", "of_traces",
           "union"]
