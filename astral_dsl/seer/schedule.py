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
from astral_dsl.seer.pipeline import decode
# the dependency structure (walk.py, rule.py and the tests import these names from here)
from astral_dsl.seer.schedule_plan import CACHE_BLOCKS, HELD, LOCAL, _Plan, _Steps, plan_of, \
    runnable

BUCKET_PARAMS = 40e6     # Megatron-LM's default DDP bucket (max(40M, 1M x dp) parameters)


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
        out = {}
        vm = self.v * self.m
        for k in range(len(self.codes) - 1, -1, -1):
            x = self.codes[k]
            c = (x - vm) // self.m
            if x >= vm and c not in out:
                out[c] = (self.start[k], self.end[k])
                if len(out) == self.v:
                    break
        return out


def simulate(low, m: int) -> Tuple[List[StageRun], float]:
    """Run the schedule with the lowering's block templates; returns per-stage runs and the
    iteration time. (Megatron-LM's interleaved schedule needs m to be a multiple of p; for other
    m its batched exchanges could wait on each other, and each send goes out on its own.)"""
    par = low.job.parallel
    overlap = low.job.pp_overlap and par.v > 1
    return _run(low, m, *plan_of(par.pp, par.v, m, low.job.schedule_key, overlap),
                overlap=overlap)


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
    table = [low.template(i, c, ph).duration for i in range(p) for ph in ("F", "B")
             for c in range(v)]
    durs = [table[k] for k in steps.slot]      # in the order of the sequence
    n = len(durs)
    runs = [StageRun(codes=list(seq), remote=list(plan.remote[b:b + len(seq)]), v=v, m=m,
                     hops=(hops[i - 1], hops[i]))
            for i, (seq, b) in enumerate(zip(plan.codes, plan.base))]
    hop_in = key_hops(hops, p, v * m)
    gates = {}
    for i, run in enumerate(runs):
        gates.update({plan.base[i] + k: gate for k, gate in gather_gates(low, i, run).items()})
    starts, ends = [0.0] * n, [0.0] * n
    arrive = [0.0] * (2 * p * v * m + 1)      # the last: the input of a block with none (-1)
    blocked: Dict[int, float] = {}
    gated: Dict[int, Tuple[float, float]] = {}
    sends: List[List[Tuple[float, float, int]]] = [[] for _ in range(p)]
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
            gated[g] = (wait_dp, stretch)
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
            sends[i].append((s, a, d))
            arrive[d] = a
            if overlap:
                a = t_pp                    # the previous send's arrival
            if a > end:
                blocked[g] = a - end
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
            sends[i].append((s, a, d))
            arrive[d] = a
            if a > t_free:
                blocked[g] = waited = waited + a - t_free
                t_free = a
        free[i], pp_free[i] = t_free, t_pp
    for i, run in enumerate(runs):
        b, k = plan.base[i], len(plan.codes[i])
        run.start, run.end, run.sends = starts[b:b + k], ends[b:b + k], sends[i]
        run.backward_end = free[i]
    stage, local = plan.stage, steps.local
    for where, per_stage in ((blocked, "blocked"), (gated, "gated")):
        into = [getattr(run, per_stage) for run in runs]
        for g, x in where.items():
            into[stage[g]][local[g]] = x
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


def _buckets(items, size):
    """(index of the last item, summed item) of each bucket of consecutive items, each item a
    (dense, expert) pair of parameters (ParamsMixin.layer_split), or a (dense, expert, dense
    linear) triple; a bucket closes at `size` dense and expert parameters."""
    out, acc = [], None
    for k, item in enumerate(items):
        acc = item if acc is None else tuple(a + x for a, x in zip(acc, item))
        if acc[0] + acc[1] >= size:
            out.append((k, acc))
            acc = None
    if acc is not None and acc[0] + acc[1] > 0:
        out.append((len(items) - 1, acc))
    return out


def gather_gates(low, i: int, run) -> Dict[int, Tuple[float, float, float]]:
    """With ZeRO-1/2 and `overlap_param_gather` (Megatron-LM's --overlap-param-gather), the
    weights the last step updated are all-gathered in buckets during this iteration's forward,
    in forward order, one bucket ahead of the layer that needs it where the host keeps pace
    with the compute, back to back where it runs ahead (_chain); a chunk's first
    forward waits for the bucket holding its first layer and ends no earlier than one layer
    after its last layer's buckets have let that layer start. Returns the position of
    each chunk's first forward -> (first ready, last ready, one layer's forward time) and records
    the gather on the DP stream."""
    job, lay = low.job, low.groups["dp"]
    if not (job.overlap_param_gather and job.parallel.zero in (1, 2) and low.synced):
        return {}
    items, owner = [], []            # forward order: embedding, chunk 0 layers, chunk 1 ...
    own = 0.0
    for c, (first, n) in enumerate(low.chunks[i]):
        for L in range(first, first + n):
            items.append(low.layer_split(L) + (low.dense_linear(L),))
            owner.append(c)
            own += items[-1][0] + items[-1][1]
    extra = low.stage_params(i) - own       # embedding / head
    if extra > 0:
        items.insert(0, (extra, 0.0, 0.0))
        owner.insert(0, 0)
    mine = low.at(i)                   # the stage's lowering: its own groups
    size = max(BUCKET_PARAMS, 1e6 * lay.n)
    layer_f = {c: low.template(i, c, "F").duration / max(1, low.chunks[i][c][1])
               for c in range(len(low.chunks[i]))}
    # the buckets in forward order, each (first item, gather seconds); a bucket over `size`
    # (one layer larger than a bucket) is Megatron-Core's several buckets, cut at parameters
    pieces, prev = [], -1
    for last, (dense, expert, linear) in _buckets(items, size):
        g = mine.param_gather((dense, expert), linear)
        k = max(1, int(-(-(dense + expert) // size)))
        pieces += [(prev + 1, g / k)] * k
        prev = last
    # the host dispatches the next bucket as it passes a module's hook; it keeps pace with the
    # compute only where it waits for the device every layer (an MoE layer's token counts,
    # JobSpec.host_counts), else it runs ahead and the buckets go out back to back (_chain)
    tied = bool(job.model.experts) and job.host_counts
    done, t = _chain(pieces, [layer_f[o] if k or extra <= 0 else 0.0
                              for k, o in enumerate(owner)],
                     aligned=len(low.chunks[i]) > 1 or not tied)
    run.gather = (0.0, t)
    gates = {}
    for c in range(len(low.chunks[i])):
        ks = [k for k, o in enumerate(owner) if o == c]
        if ks:
            n = max(1, low.chunks[i][c][1])
            gates[c] = (done[ks[0]], done[ks[-1]], low.template(i, c, "F").duration / n)
    first_forward = {}              # chunk -> position of its first forward in the stage's order
    vm, m = run.v * run.m, run.m
    for k, x in enumerate(run.codes):
        if x < vm and x // m not in first_forward:
            first_forward[x // m] = k
            if len(first_forward) == run.v:
                break
    return {first_forward[c]: gate for c, gate in gates.items()}


def _chain(pieces, compute, aligned: bool = False) -> Tuple[List[float], float]:
    """Megatron-Core's overlapped parameter gather (0.15.0 distributed/param_and_grad_buffer.py
    `finish_param_sync`, called by the forward pre-hook of every module for each of its
    parameters, distributed_data_parallel.py `_make_forward_pre_hook`): a bucket's all-gather
    is dispatched when the previous bucket's is waited for, so one is in flight ahead of the
    compute; a module whose parameters span several buckets waits for each in turn. That
    holds where the host keeps pace with the compute: the hook dispatches on the host, and
    waiting for a bucket blocks the compute stream, not the host (PyTorch's torch.distributed
    documentation, "Synchronous and asynchronous collective operations": a CUDA collective's
    wait() "will block the currently active CUDA stream ... but will not block the CPU"; unless
    TORCH_NCCL_BLOCKING_WAIT is set, which the recipes do not set), so a host that
    runs ahead of the device dispatches every bucket early and NCCL's stream runs them back to
    back; it keeps pace where it waits for the device each layer (dropless MoE's token counts,
    JobSpec.host_counts), as `aligned` does not. Items
    (the embedding, then each layer) run `compute` seconds each from time 0, each after its
    buckets arrived; `pieces` are the buckets in forward order, (first item, gather seconds).
    `aligned`: with virtual pipeline stages Megatron-Bridge and NeMo set `align_param_gather`
    (training/comm_overlap.py, nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py:
    pipeline and virtual stages > 1), and the schedule dispatches a chunk's buckets all at once
    (Megatron-Core pipeline_parallel/schedules.py, `param_sync_func`; the hooks dispatch
    nothing): back to back from time 0, each item waiting for its bucket only (so too a host
    that runs ahead). Returns per item
    the time its compute starts (aligned: its bucket's arrival), and when the last gather
    ends."""
    done = [0.0] * len(compute)
    t, nccl, ready = 0.0, 0.0, {}
    for p, (_, g) in enumerate(pieces if aligned else pieces[:1]):
        ready[p] = nccl = nccl + g
    if aligned:
        compute = [0.0] * len(compute)
    p = 0
    for k in range(len(compute)):
        while p < len(pieces) and pieces[p][0] == k:
            if p not in ready:
                ready[p] = nccl = max(t, nccl) + pieces[p][1]
            t = max(t, ready[p])
            if p + 1 < len(pieces) and p + 1 not in ready:
                ready[p + 1] = nccl = max(t, nccl) + pieces[p + 1][1]
            p += 1
        done[k] = t
        t += compute[k]
    return done, nccl


def iteration_tail(low, runs: List[StageRun]) -> float:
    v = low.job.parallel.v
    lay = low.groups["dp"]
    for i, run in enumerate(runs):
        last = run.last_backwards()
        dp_free = 0.0
        if low.synced and low.job.parallel.zero < 3:
            ready_list = []      # (time, (dense, expert)) per layer, when its gradient is final
            for c in range(v):
                start, end = last[c]
                ends = low.template(i, c, "B").layer_ends()
                first = low.chunks[i][c][0]
                for L, off in ends.items():
                    ready_list.append((start + off, low.layer_split(first + L)))
                if c == 0:   # embedding / head weights: final with chunk 0's last backward
                    own = sum(low.layer_params(L) for first, n in low.chunks[i]
                              for L in range(first, first + n))
                    if low.stage_params(i) > own:
                        ready_list.append((end, (low.stage_params(i) - own, 0.0)))
            ready_list.sort()
            if not low.job.overlap_grad_reduce:
                ready_list = [(run.backward_end, low.stage_split(i))]
            dp_free = run.gather[1]           # an overlapped parameter gather comes first
            buckets = [(ready_list[k][0], params) for k, params in
                       _buckets([x for _, x in ready_list], max(BUCKET_PARAMS, 1e6 * lay.n))]
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
