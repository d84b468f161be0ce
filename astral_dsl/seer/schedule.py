"""Discrete-event simulation of one iteration at pipeline-block granularity.

Each pipeline stage is represented by one rank (the ranks of a TP, CP or DP group behave alike).
Its compute stream runs the blocks (one stage's forward or backward of one micro-batch through
one model chunk) in the order of the real schedule (pipeline.py): Megatron's 1F1B (warm-up of
p - i - 1 forwards, steady one-forward-one-backward, cool-down), its interleaved variant with v
chunks, or GPipe. A block starts when its stream is free and its input has arrived: the
activation (or gradient) leaves the previous stage on that stage's PP stream (FIFO, one transfer
at a time) and takes the p2p time of the boundary it crosses (each boundary between stages is
priced by its own slowest pair: lower_comm.p2p_hops). As in Megatron-LM's schedules, a send is
synchronous: the sender's compute stream waits until its transfer has arrived. The bubble is not
a formula: it is the idle time this produces.

After the last backward of each chunk, the gradients of its layers are final: they are reduced
over the data-parallel group in buckets on the DP stream, each bucket as soon as its layers'
weight gradients are done (overlapped with the rest of the backward), or all at once after the
backward when the overlap is off. The optimizer step waits for the global gradient norm (an
all-reduce over every rank, so the slowest stage sets the pace), then runs; with ZeRO the updated
parameters are all-gathered (after the step, or during the next forward with
`overlap_param_gather`). The iteration ends when the last stage's step ends.

A stage's blocks are kept as flat lists (the simulation touches each block a few times, and a
1T-parameter run has tens of thousands of them); `StageRun.blocks` gives them as objects. Who
waits for whom, whatever the durations: schedule_plan.py."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs

from astral_dsl import records
from astral_dsl.seer import comm
from astral_dsl.seer.param_gather import BUCKET_PARAMS, bucket_groups, gather_gates
from astral_dsl.seer.pipeline import decode
# the dependency structure (walk.py, rule.py and the tests import these names from here)
from astral_dsl.seer.schedule_plan import CACHE_BLOCKS, HELD, LOCAL, _Plan, _Steps, plan_of, \
    runnable



class Block:
    """One block of a stage's run (a view of StageRun's lists)."""
    __slots__ = ("phase", "chunk", "mb", "start", "end", "wait", "wait_pp", "wait_dp",
                 "stretch", "blocked")

    def __init__(self, phase, chunk, mb, start, end, wait=0.0, wait_pp=0.0, wait_dp=0.0,
                 stretch=0.0, blocked=0.0):
        self.phase, self.chunk, self.mb, self.start, self.end = phase, chunk, mb, start, end
        self.wait = wait            # idle before it on the compute stream
        self.wait_pp = wait_pp      # of which: waiting for the p2p transfer itself
        self.wait_dp = wait_dp      # of which: waiting for its weights (overlapped gather)
        self.stretch = stretch      # longer than its template: its last weights came late
        self.blocked = blocked      # after it: held by its own synchronous send


@records.define
class StageRun:
    codes: List[int] = attrs.field(factory=list)      # its blocks in order (pipeline.codes)
    start: List[float] = attrs.field(factory=list)
    end: List[float] = attrs.field(factory=list)
    remote: List[bool] = attrs.field(factory=list)      # its input crosses the PP link
    blocked: Dict[int, float] = attrs.field(factory=dict)   # k -> held by its own send
    gated: Dict[int, Tuple[float, float]] = attrs.field(factory=dict)  # k -> (wait_dp, stretch)
    sends: List[Tuple[float, float, int]] = attrs.field(factory=list)  # (start, end, to key)
    dp: List[Tuple[float, float, float]] = attrs.field(factory=list)  # (start, end, params)
    backward_end: float = 0.0
    optimizer: Tuple[float, float] = (0.0, 0.0)
    gather: Tuple[float, float] = (0.0, 0.0)
    finish: float = 0.0
    v: int = 1                  # chunks and micro-batches: to read the keys of `sends`
    m: int = 1
    # one p2p transfer into this stage: of a forward's input (over the boundary before it,
    # or the wrap-around into stage 0) and of a backward's (the boundary after it)
    hops: Tuple[float, float] = (0.0, 0.0)
    # chunk -> position of its last backward (schedule_plan._Steps.last_backward, per shape)
    last_at: Dict[int, int] = attrs.field(factory=dict)

    def waits(self) -> List[float]:
        """Idle time of the compute stream before each block."""
        out, free, blocked = [], 0.0, self.blocked
        for k, (s, e) in enumerate(zip(self.start, self.end)):
            out.append(s - free)
            free = e + blocked.get(k, 0.0)
        return out

    def waits_pp(self, waits: List[float]) -> List[float]:
        """Of each wait, the time its input spent on the PP link."""
        gated, vm = self.gated, self.v * self.m
        fwd, bwd = self.hops
        return [min(w - gated[k][0] if k in gated else w, fwd if x < vm else bwd) if r else 0.0
                for k, (w, r, x) in enumerate(zip(waits, self.remote, self.codes))]

    @property
    def order(self) -> List[Tuple[str, int, int]]:
        """(phase, chunk, micro-batch) of each block."""
        return [decode(x, self.v, self.m) for x in self.codes]

    def transfers(self):
        """(start, end, phase, chunk, micro-batch) of the block each send feeds."""
        for s, e, key in self.sends:
            yield (s, e) + decode(key % (2 * self.v * self.m), self.v, self.m)

    @property
    def blocks(self) -> List[Block]:
        out, waits = [], self.waits()
        for k, ((ph, c, j), w, w_pp) in enumerate(zip(self.order, waits, self.waits_pp(waits))):
            dp, stretch = self.gated.get(k, (0.0, 0.0))
            out.append(Block(ph, c, j, self.start[k], self.end[k], w, w_pp, dp, stretch,
                             self.blocked.get(k, 0.0)))
        return out

    def last_backwards(self) -> Dict[int, Tuple[float, float]]:
        """chunk -> (start, end) of its last backward."""
        start, end = self.start, self.end
        return {c: (start[k], end[k]) for c, k in self.last_at.items()}


def simulate(low, m: int) -> Tuple[List[StageRun], float]:
    """Run the schedule with the lowering's block templates; returns per-stage runs and the
    iteration time. (Megatron-LM's interleaved schedule needs m to be a multiple of p; for other
    m its batched exchanges could wait on each other, and each send goes out on its own.)"""
    par = low.job.parallel
    overlap = async_sends(low.job)
    return _run(low, m, *plan_of(par.pp, par.v, m, low.job.schedule_key, overlap),
                overlap=overlap)


def async_sends(job) -> bool:
    """Whether the job's pipeline sends are asynchronous (`pp_overlap`, Megatron-Core's
    overlap_p2p_comm, which only the interleaved schedule takes): the sender goes on once its
    previous send has arrived (_run; `astral synth` replays the same rule)."""
    return bool(job.pp_overlap and job.parallel.v > 1)


def _run(low, m: int, plan: _Plan, steps: _Steps, overlap: bool = False
         ) -> Tuple[List[StageRun], float]:  # noqa: C901
    """The times of every block, in the plan's order: a block starts when its stage is free and
    its input has arrived; sends are FIFO on the sender's PP stream and synchronous, or with
    `overlap` (Megatron-Core's overlap_p2p_comm) asynchronous: the sender goes on once its
    previous send has arrived (schedules.py waits for the previous send's handle after posting
    the next)."""
    par = low.job.parallel
    p, v = par.pp, par.v
    hops = low.p2p_hops() if p > 1 else (0.0,)
    rows: Dict[int, List[float]] = {}        # stage key -> its blocks' durations
    table: List[float] = []
    for i in range(p):
        key = low.stage_key(i)
        if key not in rows:
            rows[key] = [low.template(i, c, ph).duration for ph in ("F", "B") for c in range(v)]
        table += rows[key]
    durs = [table[k] for k in steps.slot]      # in the order of the sequence
    n = len(durs)
    runs = [StageRun(codes=list(seq), remote=list(plan.remote[b:b + len(seq)]), v=v, m=m,
                     hops=(hops[i - 1], hops[i]), last_at=steps.last_backward[i])
            for i, (seq, b) in enumerate(zip(plan.codes, plan.base))]
    hop_in = key_hops(hops, p, v * m)
    gates = {}
    for i, run in enumerate(runs):
        gates.update({plan.base[i] + k: gate for k, gate in gather_gates(low, i, run).items()})
    starts, ends = [0.0] * n, [0.0] * n
    arrive = [0.0] * (2 * p * v * m + 1)      # the last: the input of a block with none (-1)
    local = steps.local                       # a block's position in its stage's order
    blocked = [run.blocked for run in runs]   # per stage, written as the blocks run
    gated = [run.gated for run in runs]
    sends = [run.sends.append for run in runs]
    held, free, pp_free = [-1] * p, [0.0] * p, [0.0] * p
    for g, i, want, d, does, dur in zip(steps.blocks, steps.stage, steps.src, steps.dst,
                                        steps.does, durs):
        t_free = free[i]
        start = arrive[want]
        if start < t_free:
            start = t_free
        end = start + dur
        if gates and g in gates:        # the chunk's first forward waits for its weights
            first, last, tail = gates[g]
            wait_dp = first - start if first > start else 0.0
            start, end = start + wait_dp, end + wait_dp
            stretch = last + tail - end if last + tail > end else 0.0
            end += stretch
            gated[i][local[g]] = (wait_dp, stretch)
        starts[g] = start
        ends[g] = end
        if does == LOCAL:
            arrive[d] = end                 # the last stage turns to its own backward
            free[i] = end
            continue
        if does == HELD:
            held[i] = d
            free[i] = end
            continue
        t_pp, h = pp_free[i], held[i]
        if h < 0 and d >= 0:                # one send on the PP stream (FIFO)
            s = end if end > t_pp else t_pp
            pp_free[i] = a = s + hop_in[d]
            sends[i]((s, a, d))
            arrive[d] = a
            if overlap:
                a = t_pp                    # the previous send's arrival
            if a > end:
                blocked[i][local[g]] = a - end
                end = a
            free[i] = end
            continue
        t_free, waited = end, 0.0
        if h >= 0:
            outs = (h, d) if d >= 0 else (h,)
            held[i] = -1
        else:
            outs = ()
        for d in outs:                      # the held send first, then its own
            s = end if end > t_pp else t_pp
            t_pp = a = s + hop_in[d]
            sends[i]((s, a, d))
            arrive[d] = a
            if a > t_free:
                blocked[i][local[g]] = waited = waited + a - t_free
                t_free = a
        free[i], pp_free[i] = t_free, t_pp
    for i, run in enumerate(runs):
        b, k = plan.base[i], len(plan.codes[i])
        run.start, run.end = starts[b:b + k], ends[b:b + k]
        run.backward_end = free[i]
    return runs, iteration_tail(low, runs)


def key_hops(hops, p: int, vm: int) -> List[float]:
    """Per key of schedule_plan._Plan (stage j's 2 v m blocks, forwards first), the transfer
    its input arrives by: a forward's over boundary j - 1 (stage 0's: the wrap-around, p - 1),
    a backward's over boundary j (stage p - 1's: the wrap-around); `hops` per boundary
    (lower_comm.p2p_hops). The last entry: the input of a block with none."""
    out: List[float] = []
    for j in range(p):
        out += [hops[j - 1]] * vm
        out += [hops[j]] * vm
    out.append(0.0)
    return out


def grad_buckets(low, i: int, last: Dict[int, Tuple[float, float]]
                 ) -> List[Tuple[float, Tuple[float, float], int, float]]:
    """With `overlap_grad_reduce`: stage i's gradient buckets in the order they are reduced,
    each (ready, (dense, expert) parameters, chunk, offset): a bucket is ready when the weight
    gradients of its last layer are final, `offset` seconds into that chunk's last backward
    (`last`: chunk -> (start, end) of it, StageRun.last_backwards); the embedding's and head's
    with chunk 0's last backward's end. `astral synth` replays them from (chunk, offset)."""
    items = []      # (time, (dense, expert), chunk, offset) per layer, when its gradient is final
    for c in range(low.job.parallel.v):
        start, end = last[c]
        ends = low.template(i, c, "B").layer_ends()
        first = low.chunks[i][c][0]
        for L, off in ends.items():
            items.append((start + off, low.layer_split(first + L), c, off))
        if c == 0:   # embedding / head weights: final with chunk 0's last backward
            key = low.stage_key(i)             # stages that hold alike hold alike parameters
            memo = low.__dict__.setdefault("_memo_layer_params", {})
            own = memo.get(key)
            if own is None:
                own = memo[key] = sum(low.layer_params(L) for first, n in low.chunks[i]
                                      for L in range(first, first + n))
            if low.stage_params(i) > own:
                items.append((end, (low.stage_params(i) - own, 0.0), c, end - start))
    items.sort()
    size = max(BUCKET_PARAMS, 1e6 * low.groups["dp"].n)
    return [(items[k][0], params) + items[k][2:] for k, params in
            bucket_groups([x[1] for x in items], size)]


def iteration_tail(low, runs: List[StageRun]) -> float:
    lay = low.groups["dp"]
    for i, run in enumerate(runs):
        last = run.last_backwards()
        dp_free = 0.0
        if low.synced and low.job.parallel.zero < 3:
            if low.job.overlap_grad_reduce:
                buckets = [(t, params) for t, params, _, _ in grad_buckets(low, i, last)]
            else:
                buckets = [(run.backward_end, params) for _, params in
                           bucket_groups([low.stage_split(i)], max(BUCKET_PARAMS, 1e6 * lay.n))]
            dp_free = run.gather[1]           # an overlapped parameter gather comes first
            mine = low.at(i)             # the stage's lowering: its own groups
            for t, params in buckets:
                start = max(t, dp_free)
                dp_free = start + mine.dp_reduce(params)
                run.dp.append((start, dp_free, params))
        run.finish = max(run.backward_end, dp_free)
    world = comm.layout(low.net, "world", max(2, low.job.parallel.gpus),
                        1) if low.job.parallel.gpus > 1 else None
    sync = max(r.finish for r in runs) + (comm.all_reduce(low.net, world, 8.0) if world else 0.0)
    finish = 0.0
    for i, run in enumerate(runs):
        opt = low.optimizer_time(i)
        run.optimizer = (sync, sync + opt)
        end = sync + opt
        if low.job.parallel.zero in (1, 2) and low.synced and not low.job.overlap_param_gather:
            g = low.at(i).param_gather(low.stage_split(i), low.stage_linear(i))
            run.gather = (end, end + g)
            end += g
        run.finish = end
        finish = max(finish, end)
    return finish
