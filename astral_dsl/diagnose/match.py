"""Matching the records of different ranks that belong to one collective or one transfer.

NCCL runs the collectives of one communicator in the same order on every member, so the k-th
collective of a kind in an iteration on rank r and the k-th on rank r' of the same group are one
instance. A pipeline transfer is matched by its two ends: the k-th send from a to b in an
iteration with the k-th receive at b from a (counted in the order they end: transfers between
two ranks are first in, first out). The group of a collective comes from the rank map
(the rank's TP, CP, EP, DP or PP group) or, in a profiler trace, from the process group the
kernel ran in (its ranks compared with the rank map's groups)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs
import numpy as np

from astral_dsl.analyses.rankmap import RankMap
from astral_dsl.observe.records import COMM_KIND, OP_INDEX, PHASES, RankTrace

KIND_CODES = {"tp": 0, "cp": 1, "ep": 2, "dp": 3, "pp": 4, "world": 5}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
P2P = 9                      # kind code of pipeline transfers


@attrs.frozen(eq=False)
class Records:
    """Every communication record of every rank read, as columns."""
    rank: np.ndarray
    host: np.ndarray
    iteration: np.ndarray
    kind: np.ndarray          # KIND_CODES, P2P for sends / receives
    start: np.ndarray
    end: np.ndarray
    instance: np.ndarray      # index into Instances, -1 when unmatched


@attrs.frozen(eq=False)
class Instances:
    kind: np.ndarray          # per instance
    group: np.ndarray         # collective: group index; p2p: sender rank
    peer: np.ndarray          # p2p: receiver rank; collective: -1
    iteration: np.ndarray
    seq: np.ndarray           # k: occurrence in the iteration
    members: np.ndarray       # records matched
    expected: np.ndarray      # members the instance should have
    distinct: np.ndarray      # distinct ranks among them

    @property
    def complete(self) -> np.ndarray:
        return (self.members == self.expected) & (self.distinct == self.expected)

    def __len__(self) -> int:
        return int(self.kind.shape[0])


def _kind_of_groups(trace: RankTrace, rm: RankMap) -> Dict[int, int]:
    """Process-group index of a profiler trace -> kind code, by comparing its ranks with the rank
    map's groups of this rank."""
    out: Dict[int, int] = {}
    for i, g in enumerate(trace.groups):
        ranks = set(g.ranks)
        if not ranks:
            continue
        if len(ranks) == rm.world and trace.rank < rm.world:
            out[i] = KIND_CODES["world"]
            continue
        for kind in ("tp", "dp", "pp", "cp", "ep"):
            if trace.rank < rm.world and set(rm.group(kind, trace.rank).ranks) == ranks \
                    and len(ranks) > 1:
                out[i] = KIND_CODES[kind]
                break
    return out


def collect(traces: Dict[int, RankTrace], rm: RankMap) -> Tuple[Records, Instances]:
    phase_kind = np.full(len(PHASES), -1, dtype=np.int64)
    for name, kind in COMM_KIND.items():
        phase_kind[PHASES.index(name)] = KIND_CODES[kind]
    parts: List[Tuple] = []
    host_of = np.array([r.host_index for r in rm.ranks], dtype=np.int64)
    for rank, t in traces.items():
        if rank >= rm.world or len(t) == 0:
            continue
        kind = phase_kind[t.phase]
        if t.groups:
            by_group = _kind_of_groups(t, rm)
            if by_group:
                gk = np.array([by_group.get(int(g), -1) for g in range(len(t.groups))])
                has = t.group >= 0
                refined = np.where(has, gk[np.where(has, t.group, 0)], -1)
                kind = np.where(refined >= 0, refined, kind)
        p2p = (t.op == OP_INDEX["send"]) | (t.op == OP_INDEX["recv"])
        kind = np.where(p2p & (t.peer >= 0), P2P, np.where(p2p, -1, kind))
        keep = kind >= 0
        if not keep.any():
            continue
        n = int(keep.sum())
        parts.append((np.full(n, rank), np.full(n, host_of[rank]), t.iteration[keep],
                      kind[keep], t.start[keep], (t.start + t.duration)[keep], t.peer[keep],
                      t.op[keep]))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return Records(z, z, z, z, np.zeros(0), np.zeros(0), z), _empty_instances()
    rank, host, it, kind, start, end, peer, op = (np.concatenate(c) for c in zip(*parts))
    return _match(rm, rank, host, it, kind, start, end, peer, op)


def _empty_instances() -> Instances:
    z = np.zeros(0, dtype=np.int64)
    return Instances(z, z, z, z, z, z, z, z)


def group_ids(*cols: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Dense ids of the distinct rows of `cols` (int arrays of one length): (inverse, index of
    each group's first row in sorted order: the rows sorted by cols[0], then cols[1], ...,
    then by position)."""
    n = cols[0].size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = _one_key(cols)
    if key is not None:                  # one sort of one integer: the same order, faster
        order = np.argsort(key, kind="stable")
        sk = key[order]
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
    else:
        order = np.lexsort(cols[::-1])
        new = np.zeros(n, dtype=bool)
        new[0] = True
        for c in cols:
            sc = c[order]
            new[1:] |= sc[1:] != sc[:-1]
    ids_sorted = np.cumsum(new) - 1
    inv = np.empty(n, dtype=np.int64)
    inv[order] = ids_sorted
    return inv, order[new]


def _one_key(cols) -> Optional[np.ndarray]:
    """The rows of `cols` as one int64 each, ordered as the rows (mixed radix, cols[0] the most
    significant digit); None when their ranges do not fit 63 bits."""
    lows, spans = [], []
    total = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        lows.append(lo)
        spans.append(hi - lo + 1)
        total *= hi - lo + 1
    if total >= 1 << 62:
        return None
    key = np.zeros(cols[0].size, dtype=np.int64)
    for c, lo, span in zip(cols, lows, spans):
        key *= span
        key += c - lo
    return key


def occurrence(ids: np.ndarray, start: np.ndarray) -> np.ndarray:
    """For each record, how many records with the same id start before it."""
    order = np.lexsort((start, ids))
    sk = ids[order]
    first = np.r_[True, sk[1:] != sk[:-1]]
    idx = np.arange(sk.size)
    run_start = np.maximum.accumulate(np.where(first, idx, 0))
    occ = np.empty(sk.size, dtype=np.int64)
    occ[order] = idx - run_start
    return occ


def _match(rm: RankMap, rank, host, it, kind, start, end, peer, op):
    n = rank.size
    coll = kind != P2P
    group = np.full(n, -1, dtype=np.int64)
    size = np.ones(n, dtype=np.int64)
    for name, code in KIND_CODES.items():
        sel = coll & (kind == code)
        if not sel.any():
            continue
        if name == "world":
            group[sel] = 0
            size[sel] = rm.world
            continue
        of_rank = np.asarray(rm.group_of_rank[name])
        sizes = np.array([len(g.ranks) for g in rm.groups[name]])
        group[sel] = of_rank[rank[sel]]
        size[sel] = sizes[group[sel]]
    send = (~coll) & (op == OP_INDEX["send"])
    sender = np.where(coll, -1, np.where(send, rank, peer))
    receiver = np.where(coll, -1, np.where(send, peer, rank))
    # occurrence on the rank: collectives per (rank, kind, iteration); transfers per (sender,
    # receiver, direction of the record, iteration)
    per_rank, _ = group_ids(np.where(coll, rank, sender), np.where(coll, kind, receiver),
                            it, np.where(coll, -1, send.astype(np.int64)))
    occ = occurrence(per_rank, np.where(coll, start, end))   # transfers: FIFO, ends in order
    valid = (~coll) | (group >= 0)
    key_a = np.where(coll, kind, P2P)
    key_b = np.where(coll, group, sender)
    key_c = np.where(coll, -1, receiver)
    inv, firsts = group_ids(key_a, key_b, key_c, it, occ, np.where(valid, 0, np.arange(n) + 1))
    m = firsts.size
    members = np.bincount(inv, minlength=m)
    rk, _ = group_ids(inv, rank)
    distinct = np.bincount(inv[np.unique(rk, return_index=True)[1]], minlength=m)
    i_coll = coll[firsts]
    instances = Instances(
        kind=kind[firsts], group=key_b[firsts], peer=np.where(i_coll, -1, receiver[firsts]),
        iteration=it[firsts], seq=occ[firsts], members=np.where(valid[firsts], members, 0),
        expected=np.where(i_coll, size[firsts], 2), distinct=distinct)
    records = Records(rank, host, it, kind, start, end, np.where(valid, inv, -1))
    return records, instances


__all__ = ["Instances", "KIND_CODES", "KIND_NAMES", "P2P", "Records", "collect", "group_ids",
           "occurrence"]
