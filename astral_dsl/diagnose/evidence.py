"""Comparing each rank and each collective with its peers and with the forecast.

- Compute: a rank's compute seconds per iteration (every compute kernel or phase), and the
  median of its pipeline stage's ranks (they run the same layers): compute.py weighs them.
- Collectives and transfers: the effective time of an instance is the moment every member
  finished (aligned clocks) minus the moment the last member arrived: the time the network took
  once nobody was waited for (a late arrival is the late rank's compute, not the network);
  inside one host, the shortest member's record (the last to arrive's; a rank log's per
  iteration sum of TP collectives: the one with the least waiting in it). It
  is compared with the median of the same collective at the same place of the schedule (same
  kind, collective, stage or stage pair, iteration and position) in the other groups; with fewer
  than MIN_PEERS of them, with the forecast of its kind and collective: a data-parallel group's
  gradient reductions (all-reduce, reduce-scatter of a bucket) and its parameter all-gathers
  are different collectives of different sizes, each compared with its own. One whose data does
  not say which (`unnamed`) is compared with the forecast only where the forecast's collectives
  of its kind are of one size. Slow: above by NET_SLOW and by at least NET_FLOOR_S.

Thresholds: GPUs of one model differ by a few percent (clocks, power capping); NCCL collectives
of one size by a few percent run to run. NET_SLOW sits well above that and below the smallest
fault worth finding (a link at two thirds of its rate): it counts the instances shown as slow;
localise.py weighs every instance by likelihood."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from astral_dsl import records
from astral_dsl.diagnose import in_blocks
from astral_dsl.diagnose.breakdown import covered_per
from astral_dsl.diagnose.match import KIND_CODES, P2P, Instances, Records
from astral_dsl.diagnose.row_groups import group_ids, occurrence
from astral_dsl.observe.records import OP_INDEX, Totals, totals

NET_SLOW = 0.25
NET_FLOOR_S = 20e-6
MIN_PEERS = 3


@records.frozen(eq=False)
class Timing:
    effective: np.ndarray       # per instance, seconds (NaN when not usable)
    expected: np.ndarray        # peers' median or forecast
    slow: np.ndarray            # bool
    usable: np.ndarray          # bool: complete, all members aligned
    unnamed: np.ndarray         # bool: too few peers, and the forecast has one time per
    #                             collective of its kind (op) while the data names none: not
    #                             compared
    unforecast: np.ndarray      # bool: too few peers, and the data names an all-gather the
    #                             forecast of its kind has none of (a zero-0 job's): not
    #                             compared
    stage: np.ndarray           # the stage of each (a transfer's: its sender's)
    forecast: Optional[np.ndarray] = None   # bool: expected is the forecast's (too few peers)
    uncompared: Optional[np.ndarray] = None  # bool: too few peers and no forecast of its kind
    #                                         (neither unnamed nor unforecast): not compared


def compute_per_rank(traces, iterations, tot: Optional[Totals] = None
                     ) -> Dict[int, Dict[int, float]]:
    """rank -> iteration -> compute seconds (ranks with compute records; `tot`: the traces'
    totals when already counted)."""
    tot = tot if tot is not None else totals(list(traces.values()))
    seconds = tot.seconds[:, 0].tolist()
    records = tot.records[:, 0].tolist()
    out: Dict[int, Dict[int, float]] = {}
    for i, rank in enumerate(traces):
        rows = tot.rows(i)
        n = records[rows.start:rows.stop]
        if not any(n):
            continue
        out[rank] = {it: v for it, v, c in zip(tot.iterations[i], seconds[rows.start:rows.stop],
                                                n) if c and it in iterations}
    return out


def idle_per_rank(traces, iterations, tot: Totals) -> Dict[int, Dict[int, float]]:
    """rank -> iteration -> seconds its GPU ran nothing: within the iteration (its span, first
    start to last end, less the union of its records' intervals; a rank log, which gives
    durations and not intervals: less their sum), and before it since the previous iteration
    read ended (the host's work between steps: the optimizer's, data loading). A GPU waiting
    for a peer waits inside a collective (busy); one waiting for its own host (launches, data,
    the Python process) is idle. `tot`: the traces' totals (records.totals, in `traces`'
    order)."""
    ts = list(traces.values())
    n = int(tot.offsets[-1]) if len(ts) else 0
    if not n:
        return {}
    row = np.concatenate([o + t.iteration_index()[1] for o, t in
                          zip(tot.offsets.tolist(), ts)])
    start = np.concatenate([t.start for t in ts]).astype(np.float64, copy=False)
    end = start + np.concatenate([t.duration for t in ts])
    first, last = tot.first, tot.last
    span = np.where(np.isfinite(first) & np.isfinite(last), last - first, 0.0)
    # each row's records moved apart from every other row's (a row's spans one after the
    # other, a second apart), so that one merge finds every row's union
    shift = np.r_[0.0, np.cumsum(span + 1.0)[:-1]] - np.where(np.isfinite(first), first, 0.0)
    busy = covered_per(start + shift[row], end + shift[row], row, n)
    logged = np.repeat(np.array([t.source != "kineto" for t in ts]),
                       [len(x) for x in tot.iterations])
    busy = np.where(logged, np.minimum(span, tot.seconds.sum(axis=1)), busy)
    idle = np.maximum(0.0, span - busy)
    out: Dict[int, Dict[int, float]] = {}
    for i, rank in enumerate(traces):
        rows = tot.rows(i)
        gaps = np.maximum(0.0, first[rows.start + 1:rows.stop] - last[rows.start:rows.stop - 1])
        before = np.r_[0.0, np.where(np.isfinite(gaps), gaps, 0.0)]
        own = (idle[rows.start:rows.stop] + before).tolist()
        out[rank] = {it: v for it, v in zip(tot.iterations[i], own) if it in iterations}
    return out


def timing(records: Records, inst: Instances, clocks, stage_of_rank: np.ndarray,
           forecast: Dict[Tuple[int, int], float], tp_forecast: Optional[Dict] = None,
           band: Tuple[float, float] = (1.0, 1.0),
           tp_domains: Optional[np.ndarray] = None) -> Timing:
    """`clocks`: the hosts' fitted clocks (clocks.Clocks); their bad hosts' instances are not
    usable. `forecast`: (kind, stage) -> seconds for every collective of the kind, or
    (kind, stage, op) -> seconds for one collective (records.OP_INDEX) where the kind's differ;
    an instance takes its own op's, else its kind's. `tp_forecast`: Seer's TP collectives,
    priced inside its blocks (in_blocks.forecast_tp), for TP instances with too few peers, at
    the level of their faster half, within `band` (the forecast's, verdict.band_of) where
    `tp_domains` (per TP group, in_blocks.tp_domains) puts them all in one NVLink domain
    (in_blocks.judged)."""
    n = len(inst)
    ok = records.instance >= 0
    r_inst = records.instance[ok]
    bad_hosts = clocks.bad
    start = clocks.correct(records.host[ok], records.start[ok])
    end = clocks.correct(records.host[ok], records.end[ok])
    last_in = np.full(n, -np.inf)
    np.maximum.at(last_in, r_inst, start)
    end_sum = np.bincount(r_inst, weights=end, minlength=n)
    cnt = np.bincount(r_inst, minlength=n)
    finish = end_sum / np.maximum(cnt, 1)
    bad = np.zeros(n, dtype=bool)
    if bad_hosts:
        hit = np.isin(records.host[ok], list(bad_hosts))
        bad[np.unique(r_inst[hit])] = True
    hmin = np.full(n, np.iinfo(np.int64).max)
    hmax = np.full(n, -1)
    np.minimum.at(hmin, r_inst, records.host[ok])
    np.maximum.at(hmax, r_inst, records.host[ok])
    usable = inst.complete & ~bad & (inst.kind != KIND_CODES["world"])
    eff = np.where(usable, finish - last_in, np.nan)
    # inside one host (one clock, its NVLink): the shortest member's record, the last to
    # arrive's (its end less its start: nobody waited for); where a rank log sums a kind's
    # collectives into one row an iteration (TP inside its host), the sum of the collectives
    # with the least waiting in it (the mean end less the latest start had been the others'
    # waits for the slowest)
    shortest = np.full(n, np.inf)
    np.minimum.at(shortest, r_inst, end - start)
    eff = np.where(usable & (hmax == hmin), shortest, eff)
    # the place in the schedule: kind, stage (of the group or of the sender and receiver),
    # iteration, position
    first_rank = _first_rank(records, inst)
    stage_a = stage_of_rank[np.where(inst.kind == P2P, inst.group, first_rank)]
    stage_b = np.where(inst.kind == P2P, stage_of_rank[np.maximum(inst.peer, 0)], -1)
    slot, _ = group_ids(inst.kind, inst.op, stage_a, stage_b, inst.iteration, inst.seq)
    expected = _median_by(slot, eff, usable)
    peers = np.bincount(slot, weights=usable.astype(float))[slot]
    fc, split = _forecast_of(forecast, inst, stage_a)
    few = peers < MIN_PEERS
    expected = np.where(few, fc, expected)
    # TP collectives with too few peers: Seer's price of them inside its blocks, at the level
    # of the faster half (of those forecast at NET_FLOOR_S or more) within the forecast's band
    # (in_blocks.py)
    tp_fc, in_block = in_blocks.judged(inst, stage_a, eff, usable & few & ~np.isfinite(fc) &
                                       ~split, tp_forecast or {}, band, tp_domains,
                                       NET_FLOOR_S)
    expected = np.where(in_block, tp_fc, expected)
    fc = np.where(in_block, tp_fc, fc)
    slow = usable & np.isfinite(expected) & (eff > expected * (1 + NET_SLOW)) & \
        (eff - expected > NET_FLOOR_S)
    none = usable & few & split & ~np.isfinite(fc)
    unnamed = none & (inst.op == OP_INDEX["collective"])
    unforecast = none & (inst.op == OP_INDEX["all_gather"])
    uncompared = usable & few & ~np.isfinite(fc) & ~unnamed & ~unforecast
    return Timing(eff, expected, slow, usable, unnamed, unforecast, stage_a,
                  few & np.isfinite(fc), uncompared)


def _forecast_of(forecast: Dict[Tuple, float], inst: Instances, stage: np.ndarray
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """(each instance's forecast seconds, NaN where none; whether the forecast of its kind and
    stage is per collective), looked up once per distinct (kind, op, stage, place). `forecast`
    keys: (kind, stage) for every collective of the kind; (kind, stage, op) for one
    collective; (kind, stage, op, k) for the k-th of that collective in an iteration (buckets
    of different sizes), used where the group runs as many of them in the iteration as the
    forecast does."""
    n = len(inst)
    if not forecast:
        return np.full(n, np.nan), np.zeros(n, dtype=bool)
    per_op = {key[:2] for key in forecast if len(key) >= 3}
    places: Dict[Tuple, int] = {}
    for key in forecast:
        if len(key) == 4:
            places[key[:3]] = places.get(key[:3], 0) + 1
    k_th = np.full(n, -1, dtype=np.int64)
    if places:                      # the place of each among its group's of its op
        ids, _ = group_ids(inst.kind, inst.group, inst.iteration, inst.op)
        k_th = occurrence(ids, inst.seq)
        many = np.bincount(ids)[ids]
        want = np.array([places.get(key, -1) for key in
                         zip(inst.kind.tolist(), stage.tolist(), inst.op.tolist())])
        k_th = np.where(many == want, k_th, -1)
    which, firsts = group_ids(inst.kind, inst.op, stage, k_th)
    fc, split = [], []
    for k, o, s, i in zip(inst.kind[firsts].tolist(), inst.op[firsts].tolist(),
                          stage[firsts].tolist(), k_th[firsts].tolist()):
        fc.append(forecast.get((k, s, o, i), forecast.get((k, s, o),
                                                          forecast.get((k, s), np.nan))))
        split.append((k, s) in per_op)
    return np.array(fc, dtype=np.float64)[which], np.array(split, dtype=bool)[which]


def _first_rank(records: Records, inst: Instances) -> np.ndarray:
    ok = records.instance >= 0
    out = np.full(len(inst), np.iinfo(np.int64).max)
    np.minimum.at(out, records.instance[ok], records.rank[ok])
    return np.where(out == np.iinfo(np.int64).max, 0, out)


def _median_by(slot: np.ndarray, values: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Median of the usable values of each slot, broadcast back to the instances."""
    n_slots = int(slot.max()) + 1 if slot.size else 0
    v = np.where(usable, values, np.inf)
    order = np.lexsort((v, slot))
    counts = np.bincount(slot[usable], minlength=n_slots)
    starts = np.r_[0, np.cumsum(np.bincount(slot, minlength=n_slots))[:-1]]
    med = np.full(n_slots, np.nan)
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    sv = v[order]
    med[has] = (sv[lo] + sv[hi]) / 2
    return med[slot]


def stage_medians(compute: Dict[int, Dict[int, float]], stage_of_rank: np.ndarray,
                  iterations) -> Dict[Tuple[int, int], float]:
    """(stage, iteration) -> median compute seconds of the stage's ranks."""
    vals: Dict[Tuple[int, int], list] = {}
    for rank, per in compute.items():
        for it, v in per.items():
            vals.setdefault((int(stage_of_rank[rank]), it), []).append(v)
    return {k: float(np.median(v)) for k, v in vals.items()}


def median_ratio(per: Dict[int, float], medians: Dict[Tuple[int, int], float], stage: int
                 ) -> Optional[float]:
    ratios = [v / medians[(stage, it)] for it, v in per.items()
              if medians.get((stage, it), 0) > 0]
    return median(ratios) if ratios else None


def median(values) -> float:
    """float(np.median(values)) of a short list of numbers, without numpy's overhead (tens of
    microseconds a call, once per rank): the same number, the middle value or the mean of the
    two middle ones ((a + b) / 2, as np.mean computes it); NaN and no value: numpy's answer."""
    v = sorted(values)
    n = len(v)
    if n == 0 or any(x != x for x in v):
        return float(np.median(values))
    h = n // 2
    return float(v[h]) if n % 2 else float((v[h - 1] + v[h]) / 2)


__all__ = ["MIN_PEERS", "NET_FLOOR_S", "NET_SLOW", "Timing", "compute_per_rank", "idle_per_rank",
           "median", "median_ratio", "stage_medians", "timing"]
