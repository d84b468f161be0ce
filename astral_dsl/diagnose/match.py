"""Matching the records of different ranks that belong to one collective or one transfer.

NCCL runs the collectives of one communicator in the same order on every member, so the k-th
collective of a kind in an iteration on rank r and the k-th on rank r' of the same group are one
instance. A pipeline transfer is matched by its two ends: the k-th send from a to b in an
iteration with the k-th receive at b from a (counted in the order they end: transfers between
two ranks are first in, first out). The group of a collective comes from the rank map
(the rank's TP, CP, EP, DP or PP group) or, in a profiler trace, from the process group the
kernel ran in (its ranks compared with the rank map's groups)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from astral_dsl import records
from astral_dsl.analyses.rankmap import RankMap
from astral_dsl.diagnose.row_groups import occurrence_on_rank, one_key, sort_rows
from astral_dsl.observe.kineto import group_kind
from astral_dsl.observe.records import COMM_KIND, OP_INDEX, PHASES, RankTrace, op_of

KIND_CODES = {"tp": 0, "cp": 1, "ep": 2, "dp": 3, "pp": 4, "world": 5, "dpcp": 6, "edp": 7,
              "etp": 8}
# the rank map's kinds of group a process group's ranks are compared with (dpcp: with context
# parallelism, edp: with expert parallelism, etp: with expert tensor parallelism;
# rankmap._groups)
GROUP_KINDS = ("tp", "dp", "pp", "cp", "ep", "dpcp", "edp", "etp")
NO_GROUP = -2                # a process group whose ranks are none of the rank's groups'
# the kinds that share the data-parallel forecast and label ("dp": Seer prices it over DP x CP)
DP_FAMILY = ("dp", "dpcp", "edp")
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
P2P = 9                      # kind code of pipeline transfers


@records.frozen(eq=False)
class Records:
    """Every communication record of every rank read, as columns."""
    rank: np.ndarray
    host: np.ndarray
    iteration: np.ndarray
    kind: np.ndarray          # KIND_CODES, P2P for sends / receives
    op: np.ndarray            # records.OPS: which collective, where the data says
    start: np.ndarray
    end: np.ndarray
    instance: np.ndarray      # index into Instances, -1 when unmatched


@records.frozen(eq=False)
class Instances:
    kind: np.ndarray          # per instance
    op: np.ndarray            # records.OPS: which collective (OP_INDEX["collective"]: the data
    #                           does not say; 0 for a transfer)
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


def _kind_of_groups(trace: RankTrace, rm: RankMap, sets: Optional[Dict] = None
                    ) -> Dict[int, int]:
    """Process-group index of a profiler trace -> kind code, by comparing its ranks with the rank
    map's groups of this rank; NO_GROUP for one whose ranks are none of them (its records cannot
    be matched on the rank map's groups: Megatron-Core's TENSOR_AND_DATA_PARALLEL_GROUP, say).
    `sets`: the rank sets already made (one dict per rank map)."""
    sets = {} if sets is None else sets
    out: Dict[int, int] = {}
    inside = trace.rank < rm.world

    def of(kinds) -> Optional[int]:
        for kind in kinds:
            if kind in rm.groups:
                mine = rm.group(kind, trace.rank).ranks
                if len(mine) >= len(ranks) and _set_of(sets, mine) == ranks:   # sizes first
                    return KIND_CODES[kind]
        return None

    for i, g in enumerate(trace.groups):
        ranks = _set_of(sets, g.ranks)
        if not ranks or not inside:
            continue
        # the kind its description names first: a DP group of every rank (tp 1, pp 1: a pure
        # data-parallel or FSDP job) is the DP group, not the world's; the experts' (tp = ep:
        # its ranks are the DP group's too) the EDP group, whose forecast is the experts' part
        named = group_kind(g.desc, g.name)
        hit = of(_named_kinds(g, named))
        if hit is None and len(ranks) == rm.world:
            hit = KIND_CODES["world"]
        if hit is None and len(ranks) >= 2:
            hit = of(GROUP_KINDS)
            hit = NO_GROUP if hit is None else hit
        if hit is not None:
            out[i] = hit
    return out


def _named_kinds(group, named: str) -> Tuple[str, ...]:
    """The kinds a process group whose words name `named` is tried as, in order. Data
    parallelism: the experts' group (Megatron-Core's EXPERT_DATA_PARALLEL_GROUP) as `edp`
    first, every other as `dp`, then `dpcp`, then `edp`. Tensor parallelism: the experts'
    (EXPERT_TENSOR_PARALLEL_GROUP) as `etp` first, then `tp` (ETP = TP in the default order:
    the same ranks), every other as `tp`."""
    if named not in ("dp", "tp"):
        return (named,) if named else ()
    expert = "expert" in f"{group.desc or ''} {group.name or ''}".lower()
    if named == "tp":
        return ("etp", "tp") if expert else ("tp",)
    return ("edp",) + DP_FAMILY[:2] if expert else DP_FAMILY


def _set_of(sets: Dict, ranks: Tuple[int, ...]) -> frozenset:
    try:
        hit = sets.get(ranks)
    except TypeError:                      # not a tuple: not kept
        return frozenset(ranks)
    if hit is None:
        hit = sets[ranks] = frozenset(ranks)
    return hit


def _group_kinds(trace: RankTrace, rm: RankMap, sets: Dict) -> Optional[np.ndarray]:
    """Kind code of each process group of the trace (-1: none), or None when no group has
    one."""
    by_group = _kind_of_groups(trace, rm, sets) if trace.groups else None
    if not by_group:
        return None
    return np.array([by_group.get(g, -1) for g in range(len(trace.groups))], dtype=np.int64)


def collect(traces: Dict[int, RankTrace], rm: RankMap) -> Tuple[Records, Instances]:
    phase_kind = np.full(len(PHASES), -1, dtype=np.int64)
    for name, kind in COMM_KIND.items():
        phase_kind[PHASES.index(name)] = KIND_CODES[kind]
    if "dpcp" in rm.groups:        # a log's gradient reductions: over DP x CP (Megatron-Core)
        phase_kind[PHASES.index("dp_comm")] = KIND_CODES["dpcp"]
    host_of = np.array([r.host_index for r in rm.ranks], dtype=np.int64)
    used = [(rank, t) for rank, t in traces.items() if rank < rm.world and len(t) > 0]
    if not used:
        return _no_records()
    # every rank's records one after the other (each rank's contiguous: _match counts on it)
    ts = [t for _, t in used]
    lengths = np.array([len(t) for t in ts], dtype=np.int64)
    rank = np.repeat(np.array([r for r, _ in used], dtype=np.int64), lengths)
    phase = np.concatenate([t.phase for t in ts])
    group = np.concatenate([t.group for t in ts])
    peer = np.concatenate([t.peer for t in ts])
    op = np.concatenate([_ops(t) for t in ts])
    kind = phase_kind[phase]
    # a profiler trace names the process group of each kernel: its kind, where known, is the
    # record's; the traces' tables one after the other, each record's looked up at its own
    tables, base = [], np.full(len(ts), -1, dtype=np.int64)
    offset, sets = 0, {}
    for i, t in enumerate(ts):
        gk = _group_kinds(t, rm, sets)
        if gk is None:
            continue
        if int(t.group.max()) >= gk.size:
            gk[t.group[t.group >= 0]]          # a group the trace does not list: IndexError
        tables.append(gk)
        base[i] = offset
        offset += gk.size
    if tables:
        table = np.concatenate(tables)
        rec_base = np.repeat(base, lengths)
        has = (group >= 0) & (rec_base >= 0)
        refined = np.full(kind.size, -1, dtype=np.int64)
        refined[has] = table[rec_base[has] + group[has]]
        kind = np.where(refined >= 0, refined, np.where(refined == NO_GROUP, -1, kind))
    p2p = (op == OP_INDEX["send"]) | (op == OP_INDEX["recv"])
    kind = np.where(p2p & (peer >= 0), P2P, np.where(p2p, -1, kind))
    keep = np.flatnonzero(kind >= 0)
    if keep.size == 0:
        return _no_records()
    start = np.concatenate([t.start for t in ts])[keep]
    end = np.concatenate([t.start + t.duration for t in ts])[keep]
    it = np.concatenate([t.iteration for t in ts])
    rank = rank[keep]
    return _match(rm, rank, host_of[rank], it[keep], kind[keep], start, end, peer[keep],
                  op[keep])


def _ops(t: RankTrace) -> np.ndarray:
    """The OPS code of each record of a trace: its own, and for an NCCL kernel whose arguments
    do not name its collective, the one its kernel's name states (ncclDevKernel_AllGather_...,
    ncclKernel_ReduceScatter_...)."""
    if t.kernel is None or not t.kernel_names:
        return t.op
    named = np.array([op_of(n) for n in t.kernel_names], dtype=t.op.dtype)[t.kernel]
    unnamed = (t.op == OP_INDEX["collective"]) & (named >= OP_INDEX["all_reduce"])
    return np.where(unnamed, named, t.op)


def _no_records() -> Tuple[Records, Instances]:
    z = np.zeros(0, dtype=np.int64)
    return Records(z, z, z, z, z, np.zeros(0), np.zeros(0), z), _empty_instances()


def _empty_instances() -> Instances:
    z = np.zeros(0, dtype=np.int64)
    return Instances(z, z, z, z, z, z, z, z, z)


def _group_and_size(rm: RankMap, rank, kind, coll) -> Tuple[np.ndarray, np.ndarray]:
    """Per collective record: the index of its rank's group of its kind, and the group's size
    (-1 and 1 for the others, and for kinds without groups)."""
    n = rank.size
    group = np.full(n, -1, dtype=np.int64)
    size = np.ones(n, dtype=np.int64)
    c = np.flatnonzero(coll)
    if c.size == 0:
        return group, size
    groups = np.full((max(KIND_CODES.values()) + 1, rm.world), -1, dtype=np.int64)
    sizes = np.ones(groups.shape, dtype=np.int64)
    for name, code in KIND_CODES.items():
        if name not in rm.groups and name != "world":
            continue
        if name == "world":
            groups[code] = 0
            sizes[code] = rm.world
            continue
        of_rank = np.asarray(rm.group_of_rank[name], dtype=np.int64)
        groups[code] = of_rank
        sizes[code] = np.array([len(g.ranks) for g in rm.groups[name]], dtype=np.int64)[of_rank]
    k = kind[c]
    known = (k >= 0) & (k < groups.shape[0])
    c, k = c[known], k[known]
    group[c] = groups[k, rank[c]]
    size[c] = sizes[k, rank[c]]
    return group, size


def _match(rm: RankMap, rank, host, it, kind, start, end, peer, op):
    """Records (each rank's contiguous) into instances."""
    n = rank.size
    coll = kind != P2P
    group, size = _group_and_size(rm, rank, kind, coll)
    send = (~coll) & (op == OP_INDEX["send"])
    sender = np.where(coll, -1, np.where(send, rank, peer))
    receiver = np.where(coll, -1, np.where(send, peer, rank))
    # occurrence on the rank: collectives per (rank, kind, iteration); transfers per (sender,
    # receiver, direction of the record, iteration): on the record's rank, per (the other
    # end, iteration, direction)
    occ = occurrence_on_rank(rank, (np.where(coll, kind, peer), it,
                                     np.where(coll, 0, np.where(send, 2, 1))),
                              np.where(coll, start, end))   # transfers: FIFO, ends in order
    valid = (~coll) | (group >= 0)
    key_a = np.where(coll, kind, P2P)
    key_b = np.where(coll, group, sender)
    key_c = np.where(coll, -1, receiver)
    cols = (key_a, key_b, key_c, it, occ, np.where(valid, 0, np.arange(n) + 1))
    order, new = sort_rows(cols, *one_key(cols))
    ids = np.cumsum(new) - 1                          # instance of each sorted record
    inv = np.empty(n, dtype=np.int64)
    inv[order] = ids
    firsts = order[new]
    m = firsts.size
    members = np.bincount(inv, minlength=m)
    # distinct ranks: an instance's records are sorted by position, so one rank's are adjacent
    rs = rank[order]
    pair = new.copy()
    pair[1:] |= rs[1:] != rs[:-1]
    distinct = np.bincount(ids[pair], minlength=m)
    i_coll = coll[firsts]
    instances = Instances(
        kind=kind[firsts], op=np.where(i_coll, op[firsts], 0).astype(np.int64), group=key_b[firsts], peer=np.where(i_coll, -1, receiver[firsts]),
        iteration=it[firsts], seq=occ[firsts], members=np.where(valid[firsts], members, 0),
        expected=np.where(i_coll, size[firsts], 2), distinct=distinct)
    records = Records(rank, host, it, kind, op.astype(np.int64), start, end,
                      np.where(valid, inv, -1))
    return records, instances


__all__ = ["DP_FAMILY", "GROUP_KINDS", "Instances", "KIND_CODES", "KIND_NAMES", "NO_GROUP", "P2P",
           "Records", "collect"]
