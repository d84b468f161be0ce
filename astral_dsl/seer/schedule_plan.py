"""The dependency structure of a pipeline schedule, for the simulation (schedule.py): who waits
for whom among the blocks of every stage (Megatron-LM's batched exchanges or each send on its
own), independent of any duration, and an order in which every block's input is ready when it
comes; remembered per shape (p, v, m, schedule), and whether a shape can run at all (the
interleaved order can deadlock)."""
from __future__ import annotations

from collections import deque
from itertools import chain
from typing import Dict, Tuple

from astral_dsl import records
from astral_dsl.kept import Kept
from astral_dsl.seer.pipeline import codes, deferred, split_key


def plan_of(p: int, v: int, m: int, schedule: str, overlap: bool) -> "Tuple[_Plan, _Steps]":
    """The structure simulate runs: Megatron-LM's batched exchanges, or each send on its own
    where they could wait on each other or where the sends are asynchronous (`overlap`)."""
    if not overlap:
        try:
            return cached_structure(p, v, m, schedule, True)
        except RuntimeError:
            pass
    return cached_structure(p, v, m, schedule, False)


def runnable(p: int, v: int, m: int, schedule: str) -> bool:
    """Whether the schedule's block order can run m micro-batches: batched exchanges, or
    failing that each send on its own (simulate). Always with one chunk or m a multiple of p;
    the interleaved order can deadlock otherwise (e.g. p = 4, v = 3, m = 5)."""
    if v <= 1 or (m // split_key(schedule)[1]) % p == 0:     # each run's micro-batches
        return True
    for batched in (True, False):
        try:
            cached_structure(p, v, m, schedule, batched)
            return True
        except RuntimeError:
            pass
    return False


CACHE_BLOCKS = 400_000          # blocks of dependency orders kept for reuse (~100 MiB: 84 MiB at
#                                 343,208 blocks, benchmarks/bench_retention.py)
_CACHE = Kept(CACHE_BLOCKS, weigh=lambda hit: len(hit[0].stage))


def cached_structure(p: int, v: int, m: int, schedule: str, batched: bool
                      ) -> "Tuple[_Plan, _Steps]":
    """_structure and its _Steps, remembered for the most recent shapes up to CACHE_BLOCKS
    blocks in all (the rule, a sweep, the calibration and an editor forecast the same shapes
    again)."""
    key = (p, v, m, schedule, batched)
    hit = _CACHE.get(key)
    if hit is None:
        plan = _structure(p, v, m, schedule, batched)
        hit = _CACHE.put(key, (plan, _Steps(plan, v, m)))
    return hit


@records.frozen
class _Plan:
    """Who waits for whom, independent of any duration. Blocks are numbered g = base[stage] +
    position; a key numbers (stage, phase, chunk, micro-batch) as stage * 2 v m + code
    (pipeline.codes). Per block: its stage, the key of the input it waits for (-1: none) and
    whether that input crosses the PP link, the key of the block its output goes to (-1: none)
    and whether over the PP link, whether its send is deferred to the next batched exchange.
    `sequence` is an order in which every block's input is ready when it comes: one run of the
    dependencies alone, valid for any durations (the dependencies do not depend on them)."""
    codes: Tuple[Tuple[int, ...], ...]
    base: Tuple[int, ...]
    stage: Tuple[int, ...]
    src: Tuple[int, ...]
    remote: Tuple[bool, ...]
    dst: Tuple[int, ...]
    dst_remote: Tuple[bool, ...]
    late: Tuple[bool, ...]
    sequence: Tuple[int, ...]


LOCAL, HELD, SEND = 0, 1, 2      # what a block does with its output (_Steps.does)


class _Steps:
    """A _Plan as _run walks it: per block in the plan's `sequence`, its number g, its stage,
    the key of its input (-1: none), the key of its output, what it does with that output
    (LOCAL: its own stage's next block takes it, HELD: kept for the next batched exchange,
    SEND: sent over the PP link with any held one) and its slot in the table of block durations
    (stage x 2v + phase x v + chunk); per block number g, its position in its stage's
    order (`local`); per stage, chunk -> the position of its last backward (`last_backward`)."""

    __slots__ = ("blocks", "stage", "src", "dst", "does", "slot", "local", "last_backward")

    def __init__(self, plan: "_Plan", v: int, m: int):
        seq, stage = plan.sequence, plan.stage
        self.blocks = seq
        self.stage = tuple(stage[g] for g in seq)
        self.src = tuple(plan.src[g] for g in seq)
        self.dst = tuple(plan.dst[g] for g in seq)
        dst, remote, late = plan.dst, plan.dst_remote, plan.late
        self.does = tuple(LOCAL if dst[g] >= 0 and not remote[g] else HELD if late[g] else SEND
                          for g in seq)
        codes, base = plan.codes, plan.base
        self.slot = tuple(stage[g] * 2 * v + codes[stage[g]][g - base[stage[g]]] // m
                          for g in seq)
        self.local = tuple(k for run in codes for k in range(len(run)))
        self.last_backward = tuple(_last_backwards(run, v, m) for run in codes)


def _last_backwards(codes, v: int, m: int) -> Dict[int, int]:
    """chunk -> the position of its last backward in a stage's order (`codes`)."""
    out: Dict[int, int] = {}
    vm = v * m
    for k in range(len(codes) - 1, -1, -1):
        x = codes[k]
        c = (x - vm) // m
        if x >= vm and c not in out:
            out[c] = k
            if len(out) == v:
                break
    return out


def _links(p: int, v: int, m: int, i: int, schedule: str, batched: bool):
    """Stage i's blocks: codes, input keys, remote inputs, output keys, remote outputs,
    deferred sends (see _Plan)."""
    vm = v * m
    seq = codes(p, v, m, i, schedule)
    own, nxt, prv = 2 * i * vm, 2 * (i + 1) * vm, 2 * (i - 1) * vm
    src = [own + x for x in seq]
    remote = [True] * len(seq)
    if i == 0:                     # micro-batches enter at stage 0, chunk 0
        src = [-1 if x < m else y for x, y in zip(seq, src)]
        remote = [x >= m for x in seq]
    if i == p - 1:                 # the last chunk's backward follows its own forward
        remote = [r and not (x >= vm + (v - 1) * m) for x, r in zip(seq, remote)]
    if 0 < i < p - 1:
        dst = [x + (nxt if x < vm else prv) for x in seq]
        dst_remote = remote
    else:
        dst, dst_remote = [], []
        last_stage = 2 * (p - 1) * vm
        for x in seq:
            if x < vm:             # forward
                if i < p - 1:
                    dst.append(nxt + x)
                    dst_remote.append(True)
                elif x < (v - 1) * m:                  # on to the next chunk on stage 0
                    dst.append(x + m)
                    dst_remote.append(True)
                else:                                  # turns into its own backward
                    dst.append(own + x + vm)
                    dst_remote.append(False)
            elif i > 0:
                dst.append(prv + x)
                dst_remote.append(True)
            elif x >= vm + m:                          # back to the previous chunk
                dst.append(last_stage + x - m)
                dst_remote.append(True)
            else:
                dst.append(-1)
                dst_remote.append(False)
    deferred_at = deferred(p, v, m, i, schedule) if batched else set()
    late = [k in deferred_at for k in range(len(seq))]
    return seq, src, remote, dst, dst_remote, late


def _structure(p: int, v: int, m: int, schedule: str, batched: bool) -> _Plan:  # noqa: C901
    links = [_links(p, v, m, i, schedule, batched) for i in range(p)]
    base, stage = [], []
    for i, (seq, *_) in enumerate(links):
        base.append(len(stage))
        stage.extend([i] * len(seq))
    cat = [list(chain.from_iterable(x[f] for x in links)) for f in range(1, 6)]
    src, remote, dst, dst_remote, late = cat
    ready = bytearray(2 * p * v * m)
    waiting: Dict[int, int] = {}
    held, ptr = [-1] * p, list(base)
    end = [b + len(x[0]) for b, x in zip(base, links)]
    queue, sequence = deque(range(p)), []
    while queue:
        i = queue.popleft()
        g, stop = ptr[i], end[i]
        while g < stop:
            want = src[g]
            if want >= 0 and not ready[want]:
                waiting[want] = i
                break
            sequence.append(g)
            d = dst[g]
            outs = ()
            if d >= 0 and not dst_remote[g]:
                outs = (d,)
            elif late[g]:
                held[i] = d
            else:
                outs = (held[i], d) if held[i] >= 0 else (d,)
                held[i] = -1
            for d in outs:
                if d >= 0:
                    ready[d] = 1
                    if d in waiting:
                        queue.append(waiting.pop(d))
            g += 1
        ptr[i] = g
    if ptr != end:
        raise RuntimeError("pipeline schedule deadlocked")
    return _Plan(tuple(tuple(x[0]) for x in links), tuple(base), tuple(stage), tuple(src),
                 tuple(remote), tuple(dst), tuple(dst_remote), tuple(late), tuple(sequence))
