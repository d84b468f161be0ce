"""Discrete-event simulation of one iteration at pipeline-block granularity.

Each pipeline stage is represented by one rank (the ranks of a TP, CP or DP group behave alike).
Its compute stream runs the blocks (one stage's forward or backward of one micro-batch through
one model chunk) in the order of the real schedule: Megatron's 1F1B (warm-up of p - i - 1
forwards, steady one-forward-one-backward, cool-down), its interleaved variant with v chunks, or
GPipe. A block starts when its stream is free and its input has arrived: the activation (or
gradient) leaves the previous stage on that stage's PP stream (FIFO, one transfer at a time) and
takes the p2p time. As in Megatron-LM's schedules, a send is synchronous: the sender's compute
stream waits until its transfer has arrived. The bubble is not a formula: it is the idle time
this produces.

After the last backward of each chunk, the gradients of its layers are final: they are reduced
over the data-parallel group in buckets on the DP stream, each bucket as soon as its layers'
weight gradients are done (overlapped with the rest of the backward), or all at once after the
backward when the overlap is off. The optimizer step waits for the global gradient norm (an
all-reduce over every rank, so the slowest stage sets the pace), then runs; with ZeRO the updated
parameters are all-gathered. The iteration ends when the last stage's step ends."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from astral_dsl.seer import comm

BLOCKING_P2P = True     # Megatron-LM's schedules wait for each send/receive pair to complete
BUCKET_PARAMS = 40e6     # Megatron-LM's default DDP bucket (max(40M, 1M x dp) parameters)


def order(p: int, v: int, m: int, stage: int, schedule: str) -> List[Tuple[str, int, int]]:
    """(phase, chunk, micro-batch) in the order stage `stage` runs them."""
    if schedule == "gpipe":
        return [("F", c, j) for c in range(v) for j in range(m)] + \
               [("B", c, j) for c in reversed(range(v)) for j in range(m)]
    if v == 1:
        warm = min(p - stage - 1, m)
        out = [("F", 0, j) for j in range(warm)]
        for k in range(m - warm):
            out += [("F", 0, warm + k), ("B", 0, k)]
        out += [("B", 0, j) for j in range(m - warm, m)]
        return out
    groups = math.ceil(m / p)
    fwd, bwd = [], []
    for k in range(groups * p * v):
        c, j = (k // p) % v, (k // (p * v)) * p + k % p
        if j < m:
            fwd.append(("F", c, j))
            bwd.append(("B", v - 1 - c, j))
    total = len(fwd)
    warm = total if m <= p else min(total, (p - stage - 1) * 2 + (v - 1) * p)
    out = fwd[:warm]
    for k in range(total - warm):
        out += [fwd[warm + k], bwd[k]]
    out += bwd[total - warm:]
    return out


def deferred(p: int, v: int, m: int, stage: int, schedule: str) -> set:
    """Positions (in `order`) of the forwards whose output Megatron-LM's interleaved schedule
    sends only after the backward that follows them: its steady state exchanges both in one
    batched send/receive (send_forward_backward_recv_forward_backward)."""
    if schedule == "gpipe" or v == 1 or m <= p:
        return set()
    total = m * v
    warm = min(total, (p - stage - 1) * 2 + (v - 1) * p)
    return {warm + 2 * k for k in range(total - warm)}


@dataclass
class Block:
    phase: str
    chunk: int
    mb: int
    start: float
    end: float
    wait: float = 0.0       # idle before it on the compute stream
    wait_pp: float = 0.0    # of which: waiting for the p2p transfer itself
    blocked: float = 0.0    # after it: held by its own synchronous send


@dataclass
class StageRun:
    blocks: List[Block] = field(default_factory=list)
    sends: List[Tuple[float, float, str, int, int]] = field(default_factory=list)  # PP stream
    dp: List[Tuple[float, float, float]] = field(default_factory=list)  # (start, end, params)
    backward_end: float = 0.0
    optimizer: Tuple[float, float] = (0.0, 0.0)
    gather: Tuple[float, float] = (0.0, 0.0)
    end: float = 0.0


def simulate(low, m: int) -> Tuple[List[StageRun], float]:
    """Run the schedule with the lowering's block templates; returns per-stage runs and the
    iteration time. (Megatron-LM's interleaved schedule needs m to be a multiple of p; for other
    m its batched exchanges could wait on each other, and each send goes out on its own.)"""
    try:
        return _simulate(low, m, batched=True)
    except RuntimeError:
        return _simulate(low, m, batched=False)


def _simulate(low, m: int, batched: bool) -> Tuple[List[StageRun], float]:
    par = low.job.parallel
    p, v = par.pp, par.v
    dur = {(i, ph, c): low.template(i, c, ph).duration
           for i in range(p) for c in range(v) for ph in ("F", "B")}
    hop = low.p2p_time() if p > 1 else 0.0
    orders = [order(p, v, m, i, par.schedule) for i in range(p)]
    late = [deferred(p, v, m, i, par.schedule) if batched else set() for i in range(p)]
    held = [None] * p         # a forward output waiting for the next batched exchange
    # arrival time of each block's input: (stage, phase, chunk, mb) -> (ready, transfer time)
    ready: Dict[Tuple[int, str, int, int], Tuple[float, float]] = {}
    fdone: Dict[Tuple[int, int], float] = {}
    runs = [StageRun() for _ in range(p)]
    ptr, free, pp_free = [0] * p, [0.0] * p, [0.0] * p
    queue, waiting = deque(range(p)), {}

    def deliver(i, dest, sent_at):
        """Stage i's output goes to `dest` on i's PP stream (FIFO)."""
        start = max(sent_at, pp_free[i])
        pp_free[i] = arrive = start + hop
        runs[i].sends.append((start, arrive, dest[1], dest[2], dest[3]))
        ready[dest] = (arrive, hop)
        if BLOCKING_P2P:
            blk = runs[i].blocks[-1] if runs[i].blocks else None
            if arrive > free[i] and blk is not None:
                blk.blocked += arrive - max(free[i], blk.end)
            free[i] = max(free[i], arrive)
        if dest in waiting:
            queue.append(waiting.pop(dest))

    while queue:
        i = queue.popleft()
        seq, run = orders[i], runs[i]
        while ptr[i] < len(seq):
            ph, c, j = seq[ptr[i]]
            if ph == "F" and i == 0 and c == 0:
                arrive, hop_t = 0.0, 0.0
            elif ph == "B" and i == p - 1 and c == v - 1:
                arrive, hop_t = fdone[(c, j)], 0.0
            else:
                got = ready.get((i, ph, c, j))
                if got is None:
                    waiting[(i, ph, c, j)] = i
                    break
                arrive, hop_t = got
            start = max(free[i], arrive)
            end = start + dur[(i, ph, c)]
            wait = start - free[i]
            run.blocks.append(Block(ph, c, j, start, end, wait, min(wait, hop_t)))
            free[i] = end
            if ph == "F" and i == p - 1:
                fdone[(c, j)] = end
            dest = _dest(i, ph, c, j, p, v)
            if ptr[i] in late[i]:
                held[i] = dest
                dest = None
            elif held[i] is not None:
                deliver(i, held[i], end)
                held[i] = None
            ptr[i] += 1
            if dest is not None:
                deliver(i, dest, end)
    if any(ptr[i] < len(orders[i]) for i in range(p)):
        raise RuntimeError("pipeline schedule deadlocked")
    for i, run in enumerate(runs):
        run.backward_end = free[i]
    return runs, _tail(low, runs, orders)


def _dest(i, ph, c, j, p, v):
    """The block that needs this block's output (activation forward, gradient backward)."""
    if p == 1:
        return None
    if ph == "F":
        return (i + 1, "F", c, j) if i < p - 1 else ((0, "F", c + 1, j) if c < v - 1 else None)
    return (i - 1, "B", c, j) if i > 0 else ((p - 1, "B", c - 1, j) if c > 0 else None)


def _tail(low, runs: List[StageRun], orders) -> float:
    v = low.job.parallel.v
    lay = low.groups["dp"]
    for i, run in enumerate(runs):
        last = {}
        for blk in run.blocks:
            if blk.phase == "B":
                last[blk.chunk] = blk
        dp_free = 0.0
        if lay.n > 1 and low.job.parallel.zero < 3:
            ready_list = []      # (time, params) per layer, when its gradient is final
            for c in range(v):
                blk = last.get(c)
                tpl = low.template(i, c, "B")
                ends = tpl.layer_ends()
                for L, off in ends.items():
                    ready_list.append((blk.start + off, low.layer_params(L)))
                if c == 0:   # embedding / head weights: final with chunk 0's last backward
                    own = sum(low.layer_params(L) for first, n in low.chunks[i]
                              for L in range(first, first + n))
                    if low.stage_params(i) > own:
                        ready_list.append((blk.end, low.stage_params(i) - own))
            ready_list.sort()
            if not low.job.overlap_grad_reduce:
                ready_list = [(run.backward_end, sum(x for _, x in ready_list))]
            size = max(BUCKET_PARAMS, 1e6 * lay.n)
            acc, t_ready = 0.0, 0.0
            buckets = []
            for t, params in ready_list:
                acc += params
                t_ready = t
                if acc >= size:
                    buckets.append((t_ready, acc))
                    acc = 0.0
            if acc > 0:
                buckets.append((t_ready, acc))
            for t, params in buckets:
                start = max(t, dp_free)
                dp_free = start + low.dp_reduce(params)
                run.dp.append((start, dp_free, params))
        run.end = max(run.backward_end, dp_free)
    world = comm.layout(low.net, "world", max(2, low.job.parallel.gpus),
                        1) if low.job.parallel.gpus > 1 else None
    sync = max(r.end for r in runs) + (comm.all_reduce(low.net, world, 8.0) if world else 0.0)
    finish = 0.0
    for i, run in enumerate(runs):
        opt = low.optimizer_time(i)
        run.optimizer = (sync, sync + opt)
        end = sync + opt
        if low.job.parallel.zero in (1, 2) and lay.n > 1:
            g = low.param_gather(low.stage_params(i))
            run.gather = (end, end + g)
            end += g
        run.end = end
        finish = max(finish, end)
    return finish
