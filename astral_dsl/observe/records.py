"""What was observed on one rank, as plain columns: one row per GPU kernel (a profiler trace) or
per logged phase (a compact rank log), with the iteration it belongs to.

Columns (numpy arrays of equal length, in time order):
- `iteration`: the training iteration (ProfilerStep number, the log's `iteration` column);
- `phase`: an index into PHASES (compute phases, communication phases, memory copies);
- `start`, `duration`: seconds on the rank's own clock (hosts' clocks differ: see the diagnosis);
- `peer`: the partner rank of a point-to-point transfer, -1 when unknown or not one;
- `op`: an index into OPS (send, recv, an all-reduce, reduce-scatter or all-gather where the
  data says which, another or an unnamed collective, or nothing);
- `group`: an index into the rank's `groups` (its process groups), -1 when unknown.

Pure data: readers in kineto.py and ranklog.py build it, the diagnosis reads it."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
import numpy as np

# Phases a rank log may name; profiler kernels map onto them (docs/diagnose.md).
PHASES = ("forward", "backward", "optimizer", "compute", "tp_comm", "cp_comm", "ep_comm",
          "dp_comm", "pp_comm", "comm", "memory", "other")
PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}
COMPUTE_PHASES = frozenset(("forward", "backward", "optimizer", "compute"))
COMM_PHASES = frozenset(("tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_comm", "comm"))
COMPUTE_CODES = np.array(sorted(PHASE_INDEX[p] for p in COMPUTE_PHASES), dtype=np.int8)
COMM_CODES = np.array(sorted(PHASE_INDEX[p] for p in COMM_PHASES), dtype=np.int8)
# communication phase -> the parallel dimension whose group it runs in
COMM_KIND = {"tp_comm": "tp", "cp_comm": "cp", "ep_comm": "ep", "dp_comm": "dp",
             "pp_comm": "pp"}

OPS = ("", "send", "recv", "collective", "all_reduce", "reduce_scatter", "all_gather")
OP_INDEX = {o: i for i, o in enumerate(OPS)}
# the collectives a name can state: a data-parallel group's gradient reductions (all-reduce,
# reduce-scatter) and its parameter all-gathers are different collectives of different sizes
_NAMED_OPS = (("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
              ("allreduce", "all_reduce"))


def op_of(name: str) -> int:
    """The OPS code of an operation's name: `send`, `recv`, or a collective named in any of the
    spellings seen (a log's `all_reduce`, `all-gather`; PyTorch's `Collective name`
    `_allgather_base`, `reduce_scatter_tensor_coalesced`; an NCCL kernel's
    `ncclDevKernel_AllGather_RING_LL`): all-reduce, reduce-scatter, all-gather, or `collective`
    (another collective, or one whose name does not say); '' is none."""
    if name in OP_INDEX:
        return OP_INDEX[name]
    flat = "".join(c for c in name.lower() if c.isalnum())
    if flat in ("send", "recv"):
        return OP_INDEX[flat]
    for word, op in _NAMED_OPS:
        if word in flat:
            return OP_INDEX[op]
    return OP_INDEX["collective"] if name else 0


@records.frozen
class ProcessGroup:
    """A communicator the rank belongs to, as the trace states it."""
    name: str
    desc: str
    ranks: Tuple[int, ...]

    def to_json(self) -> Dict:
        return {"name": self.name, "description": self.desc, "ranks": list(self.ranks)}


@records.frozen(eq=False)
class RankTrace:
    rank: int
    world_size: Optional[int]
    file: str
    source: str                              # "kineto" or "log"
    iteration: np.ndarray
    phase: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    peer: np.ndarray
    op: np.ndarray
    group: np.ndarray
    groups: Tuple[ProcessGroup, ...] = ()
    device: str = ""
    iterations_from: str = ""               # "ProfilerStep", "pattern", "log"
    timers: str = "compute"                 # what the compute phases measure: "compute" (the
    #                                         GPU's compute alone: kernels, or a log's forward,
    #                                         backward, compute rows) or "megatron" (Megatron-LM's
    #                                         forward-compute / backward-compute: wall time of a
    #                                         block, its TP collectives and TP waits included)
    kernel: Optional[np.ndarray] = None     # a profiler trace: per record, its kernel's name
    kernel_names: Tuple[str, ...] = ()      # (an index into kernel_names)
    _iterations: Tuple[int, ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        # asked for many times by the checks and the diagnosis: found once
        object.__setattr__(self, "_iterations", tuple(distinct(self.iteration).tolist()))

    @property
    def iterations(self) -> Tuple[int, ...]:
        return self._iterations

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def select(self, mask: np.ndarray) -> "RankTrace":
        return attrs.evolve(self, iteration=self.iteration[mask], phase=self.phase[mask],
                            start=self.start[mask], duration=self.duration[mask],
                            peer=self.peer[mask], op=self.op[mask], group=self.group[mask],
                            kernel=None if self.kernel is None else self.kernel[mask])

    def iteration_index(self) -> Tuple[np.ndarray, np.ndarray]:
        """(the iterations, ascending; for each record the index of its iteration in them)."""
        its = np.asarray(self._iterations, dtype=self.iteration.dtype)
        return its, np.searchsorted(its, self.iteration)

    def summary(self) -> Dict[int, Dict[str, float]]:
        """Per iteration: compute and communication (NCCL) seconds, memory copies, and the
        iteration's span on this rank's clock (first start to last end)."""
        return totals((self,)).summary(0)


@records.frozen(eq=False)
class Totals:
    """Per iteration of each of several traces (rows: the traces' iterations one after the
    other, ascending within each): seconds and records of each category (compute,
    communication, memory copies, the rest: CATEGORIES), first start and last end."""
    iterations: Tuple[Tuple[int, ...], ...]      # per trace
    offsets: np.ndarray                          # per trace: its first row
    seconds: np.ndarray                          # rows x categories
    records: np.ndarray                          # rows x categories
    first: np.ndarray
    last: np.ndarray

    def rows(self, i: int) -> range:
        return range(int(self.offsets[i]), int(self.offsets[i]) + len(self.iterations[i]))

    def summary(self, i: int) -> Dict[int, Dict[str, float]]:
        """RankTrace.summary() of trace i."""
        rows = self.rows(i)
        sums = self.seconds[rows.start:rows.stop].tolist()
        events = self.records[rows.start:rows.stop].sum(axis=1).tolist()
        spans = (self.last[rows.start:rows.stop] - self.first[rows.start:rows.stop]).tolist()
        return {it: {"compute_s": s[0], "comm_s": s[1], "memory_s": s[2], "span_s": span,
                     "events": n}
                for it, s, span, n in zip(self.iterations[i], sums, spans, events)}


def totals(traces: Sequence[RankTrace]) -> Totals:
    """The Totals of `traces`, in one pass over all their records: every bin of a weighted
    count sums its records in record order, as a count per trace would."""
    its = tuple(t.iterations for t in traces)
    offsets = np.cumsum([0] + [len(x) for x in its])
    n_rows = int(offsets[-1])
    cat = len(CATEGORIES)
    if not traces:
        z = np.zeros((0, cat))
        return Totals(its, offsets, z, z.astype(np.int64), np.zeros(0), np.zeros(0))
    row = np.concatenate([o + t.iteration_index()[1] for o, t in zip(offsets.tolist(), traces)])
    cell = row * cat + np.concatenate([_category(t.phase) for t in traces])
    weights = np.concatenate([t.duration for t in traces]).astype(np.float64, copy=False)
    seconds = np.bincount(cell, weights=weights, minlength=n_rows * cat).reshape(n_rows, cat)
    records = np.bincount(cell, minlength=n_rows * cat).reshape(n_rows, cat)
    start = np.concatenate([t.start for t in traces]).astype(np.float64, copy=False)
    end = np.concatenate([t.start + t.duration for t in traces]).astype(np.float64, copy=False)
    first = np.full(n_rows, np.inf)
    last = np.full(n_rows, -np.inf)
    if row.size and _ascending(row):     # records in iteration order: one reduce per row
        lo = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
        first[row[lo]] = np.minimum.reduceat(start, lo)
        last[row[lo]] = np.maximum.reduceat(end, lo)
    else:
        np.minimum.at(first, row, start)
        np.maximum.at(last, row, end)
    return Totals(its, offsets, seconds, records, first, last)


# phase code -> what summary() counts it as: compute, communication, memory copies, the rest
CATEGORIES = ("compute", "comm", "memory", "other")
_CATEGORY = np.full(256, 3, dtype=np.int64)
_CATEGORY[COMPUTE_CODES] = 0
_CATEGORY[COMM_CODES] = 1
_CATEGORY[PHASE_INDEX["memory"]] = 2


def _ascending(a: np.ndarray) -> bool:
    return a.size < 2 or bool((a[1:] >= a[:-1]).all())


def distinct(a: np.ndarray) -> np.ndarray:
    """np.unique of an integer array, without its overhead (a few microseconds on the short
    arrays of one rank); in one pass when `a` is already in order (records are in time
    order)."""
    s = a if _ascending(a) else np.sort(a)
    keep = np.empty(s.size, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _category(phase: np.ndarray) -> np.ndarray:
    """The _CATEGORY of each phase code: by table look-up for one-byte codes (the readers'),
    by comparison for wider ones."""
    if phase.dtype.itemsize == 1:
        return _CATEGORY[phase.view(np.uint8)]
    return np.where(np.isin(phase, COMPUTE_CODES), 0, np.where(
        np.isin(phase, COMM_CODES), 1, np.where(phase == PHASE_INDEX["memory"], 2, 3)))


def comm_mask(phase: np.ndarray) -> np.ndarray:
    """Which records are communication (COMM_CODES)."""
    return _category(phase) == 1


def columns(rows):
    """Arrays from (iteration, phase code, start, duration, peer, op code, group) tuples."""
    if not rows:
        empty_i = np.zeros(0, dtype=np.int64)
        return (empty_i, np.zeros(0, dtype=np.int8), np.zeros(0), np.zeros(0),
                np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8),
                np.zeros(0, dtype=np.int64))
    it, ph, st, du, pe, op, gr = zip(*rows)
    start = np.asarray(st, dtype=np.float64)
    order = np.argsort(start, kind="stable")
    return (np.asarray(it, dtype=np.int64)[order], np.asarray(ph, dtype=np.int8)[order],
            start[order], np.asarray(du, dtype=np.float64)[order],
            np.asarray(pe, dtype=np.int64)[order], np.asarray(op, dtype=np.int8)[order],
            np.asarray(gr, dtype=np.int64)[order])


def make(rank: int, world_size, file: str, source: str, rows, groups=(), device: str = "",
         iterations_from: str = "") -> RankTrace:
    it, ph, st, du, pe, op, gr = columns(rows)
    return RankTrace(rank, world_size, file, source, it, ph, st, du, pe, op, gr, tuple(groups),
                     device, iterations_from)
