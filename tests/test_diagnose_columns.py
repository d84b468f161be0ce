"""The column helpers the diagnosis's speed rests on: each must give exactly what the plain
numpy computation gives (same ids, same order, same floats), on hand-worked cases and on
random ones, including the rare paths (out-of-order records, keys too wide to pack)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose
from astral_dsl.diagnose import evidence, match, row_groups
from astral_dsl.diagnose.background import _Terms
from astral_dsl.diagnose.likelihood import Q_GRID
from astral_dsl.observe.records import PHASE_INDEX, RankTrace, distinct, totals

RNG = np.random.default_rng(20_000)
SMALL = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "small.astral"


def _reference_group_ids(*cols):
    """np.unique over rows: ids ascending by the rows, the first row (by position) of each."""
    rows = np.stack(cols, axis=1)
    _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return inv.reshape(-1), first


@pytest.mark.parametrize("scale", [1, 10 ** 7])        # counted (few rows) and sorted
def test_group_ids_by_hand(scale):
    # rows (2,0) (1,5) (2,0) (1,3): ascending (1,3) < (1,5) < (2,0) -> ids 2 1 2 0; the first
    # row of each: (1,3) row 3, (1,5) row 1, (2,0) row 0
    a = np.array([2, 1, 2, 1]) * scale
    b = np.array([0, 5, 0, 3]) * scale
    inv, firsts = row_groups.group_ids(a, b)
    assert inv.tolist() == [2, 1, 2, 0] and firsts.tolist() == [3, 1, 0]


def test_group_ids_random_against_unique():
    for trial in range(300):
        n = int(RNG.integers(1, 80))
        scale = [1, 3, 1000, 10 ** 9, 10 ** 17][trial % 5]     # the last: no single key fits
        cols = [RNG.integers(-scale, scale + 1, n) for _ in range(int(RNG.integers(1, 4)))]
        inv, firsts = row_groups.group_ids(*cols)
        ref_inv, ref_first = _reference_group_ids(*cols)
        assert inv.tolist() == ref_inv.tolist() and firsts.tolist() == ref_first.tolist()


def test_stable_order_is_the_stable_argsort():
    for total in (2, 50, 1 << 40, 1 << 60):                # 1 << 60: too wide, argsort
        key = RNG.integers(0, total, 5_000)
        order, sorted_key = row_groups.stable_order(key, total)
        assert order.tolist() == np.argsort(key, kind="stable").tolist()
        assert sorted_key.tolist() == np.sort(key).tolist()


def test_occurrence_on_a_rank_in_time_order_and_not():
    rank = np.array([0, 0, 0, 1, 1])
    kind = np.array([3, 3, 3, 3, 3])
    it = np.array([1, 1, 1, 1, 1])
    # rank 0 in time order: 0 1 2; rank 1 out of order (starts 9 then 8): 1 0
    occ = row_groups.occurrence_on_rank(rank, (kind, it), np.array([1.0, 2.0, 3.0, 9.0, 8.0]))
    assert occ.tolist() == [0, 1, 2, 1, 0]
    for _ in range(200):
        n = int(RNG.integers(1, 60))
        rank = np.sort(RNG.integers(0, 4, n))                 # each rank's records together
        local = (RNG.integers(0, 3, n), RNG.integers(0, 2, n))
        when = RNG.random(n) if RNG.random() < 0.5 else np.sort(RNG.random(n))
        ids, _ = row_groups.group_ids(rank, *local)
        assert row_groups.occurrence_on_rank(rank, local, when).tolist() == \
            row_groups.occurrence(ids, when).tolist()


def test_a_transfer_to_itself_is_one_distinct_rank():
    # rank 4 sends to itself and receives from itself (one instance, two records, one rank);
    # rank 4 sends to 5 and 5 receives (two ranks)
    n = 4
    rank = np.array([4, 4, 4, 5])
    op = np.array([1, 2, 1, 2], dtype=np.int8)               # send, recv, send, recv
    peer = np.array([4, 4, 5, 4])
    kind = np.full(n, match.P2P)
    it = np.zeros(n, dtype=np.int64)
    start = np.array([0.0, 0.0, 1.0, 1.0])
    rm = diagnose.rank_map(astral_dsl.load(str(SMALL)))
    records, inst = match._match(rm, rank, rank // 8, it, kind, start, start + 1, peer, op)
    assert inst.members.tolist() == [2, 2] and inst.distinct.tolist() == [1, 2]
    assert inst.group.tolist() == [4, 4] and inst.peer.tolist() == [4, 5]


def _trace(it, phase, start, dur):
    n = len(it)
    z = np.zeros(n, dtype=np.int64)
    return RankTrace(0, None, "f", "log", np.array(it, dtype=np.int64),
                     np.array(phase, dtype=np.int8), np.array(start, dtype=np.float64),
                     np.array(dur, dtype=np.float64), z, z.astype(np.int8), z)


def test_totals_by_hand():
    fw, dp, mem = PHASE_INDEX["forward"], PHASE_INDEX["dp_comm"], PHASE_INDEX["memory"]
    a = _trace([1, 1, 2, 1], [fw, dp, fw, mem], [0.0, 1.0, 5.0, 2.5], [1.0, 0.5, 2.0, 0.25])
    b = _trace([7], [dp], [3.0], [1.5])
    tot = totals([a, b])
    # trace a, iteration 1: compute 1.0, comm 0.5, memory 0.25, from 0.0 to 2.75, 3 records;
    # iteration 2: compute 2.0 from 5.0 to 7.0; trace b, iteration 7: comm 1.5, 3.0 to 4.5
    assert tot.summary(0) == {
        1: {"compute_s": 1.0, "comm_s": 0.5, "memory_s": 0.25, "span_s": 2.75, "events": 3},
        2: {"compute_s": 2.0, "comm_s": 0.0, "memory_s": 0.0, "span_s": 2.0, "events": 1}}
    assert tot.summary(1) == {7: {"compute_s": 0.0, "comm_s": 1.5, "memory_s": 0.0,
                                  "span_s": 1.5, "events": 1}}
    assert a.summary() == tot.summary(0)


def test_totals_sum_in_record_order_as_one_trace_at_a_time():
    traces = []
    for k in range(6):
        n = int(RNG.integers(0, 200))
        it = RNG.integers(0, 4, n) if k % 2 else np.sort(RNG.integers(0, 4, n))
        traces.append(_trace(it, RNG.integers(0, 12, n), RNG.normal(size=n) * 10,
                             RNG.random(n) * 1e-3))
    tot = totals(traces)
    for i, t in enumerate(traces):
        its, inv = np.unique(t.iteration, return_inverse=True)
        compute = np.bincount(inv[np.isin(t.phase, [0, 1, 2, 3])],
                              weights=t.duration[np.isin(t.phase, [0, 1, 2, 3])],
                              minlength=its.size)
        assert [s["compute_s"] for s in tot.summary(i).values()] == compute.tolist()


def test_distinct_is_unique():
    for _ in range(100):
        a = RNG.integers(-5, 50, int(RNG.integers(0, 40)))
        assert distinct(a).tolist() == np.unique(a).tolist()
        assert distinct(np.sort(a)).tolist() == np.unique(a).tolist()


def test_median_is_numpys():
    assert evidence.median([3.0, 1.0, 2.0]) == 2.0
    assert evidence.median([1.0, 2.0]) == 1.5
    assert np.isnan(evidence.median([1.0, float("nan")]))
    for _ in range(2_000):
        v = (RNG.random(int(RNG.integers(1, 9))) * 10.0 ** RNG.integers(-6, 3)).tolist()
        assert evidence.median(v) == float(np.median(v))


def test_evidence_terms_updated_are_the_terms_computed_anew():
    log_r = RNG.normal(size=10_000) * 3
    terms = _Terms(log_r)
    explained = np.flatnonzero(log_r > 1)
    log_r[explained] = 0.0
    terms.update(explained, log_r)
    fresh = _Terms(log_r)
    for q, a, b in zip(Q_GRID, terms.by_q, fresh.by_q):
        assert np.array_equal(a, b), q
