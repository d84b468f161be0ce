"""The weights' all-gather of ZeRO-1/2 with `overlap_param_gather` during the next forward, in
Megatron-Core's buckets (gather_gates: when each chunk's first forward may start and end; _chain:
how the buckets follow each other), and the buckets themselves, which the gradient reduction
after the backward uses too (schedule.iteration_tail)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

BUCKET_PARAMS = 40e6     # Megatron-LM's default DDP bucket (max(40M, 1M x dp) parameters)


def bucket_groups(items, size):
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
    gated = chunk_gates(low, i, run)
    if gated is None:
        return {}
    gates, run.gather = gated
    return gates


def chunk_gates(low, i: int, run) -> Optional[Tuple[Dict[int, Tuple[float, float, float]],
                                                    Tuple[float, float]]]:
    """gather_gates' gates and the gather's (start, end) on the DP stream, from the iteration's
    start, without recording them (`astral synth` replays them); None without the overlap."""
    job = low.job
    if not (job.overlap_param_gather and job.parallel.zero in (1, 2) and low.synced):
        return None
    key = low.stage_key(i)         # stages that hold alike gather alike
    memo = low.__dict__.setdefault("_memo_gates", {})
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _stage_gates(low, i)
    gates, t = hit
    first_forward = {}              # chunk -> position of its first forward in the stage's order
    vm, m = run.v * run.m, run.m
    for k, x in enumerate(run.codes):
        if x < vm and x // m not in first_forward:
            first_forward[x // m] = k
            if len(first_forward) == run.v:
                break
    return {first_forward[c]: gate for c, gate in gates.items()}, (0.0, t)


def _stage_gates(low, i: int) -> Tuple[Dict[int, Tuple[float, float, float]], float]:
    """chunk_gates of stage i by chunk: chunk -> (first ready, last ready, one layer's forward
    time), and when the stage's last gather ends."""
    job, lay = low.job, low.groups["dp"]
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
    # one layer's forward per chunk: the gates' last term, and the chain's compute
    layer_f = [low.template(i, c, "F").duration / max(1, n)
               for c, (_, n) in enumerate(low.chunks[i])]
    # the buckets in forward order, each (first item, gather seconds); a bucket over `size`
    # (one layer larger than a bucket) is Megatron-Core's several buckets, cut at parameters
    pieces, prev = [], -1
    for last, (dense, expert, linear) in bucket_groups(items, size):
        g = mine.param_gather((dense, expert), linear)
        k = max(1, int(-(-(dense + expert) // size)))
        pieces += [(prev + 1, g / k)] * k
        prev = last
    # the host dispatches the next bucket as it passes a module's hook; it keeps pace with the
    # compute only where it waits for the device every layer (an MoE layer's token counts,
    # JobSpec.host_counts), else it runs ahead and the buckets go out back to back (_chain);
    # with virtual stages they go out back to back too (align_param_gather)
    tied = bool(job.model.experts) and job.host_counts
    back_to_back = len(layer_f) > 1 or not tied
    done, t = _chain(pieces, [0.0 if k == 0 and extra > 0 else layer_f[o]
                              for k, o in enumerate(owner)], back_to_back)
    gates = {}
    for c in range(len(layer_f)):
        ks = [k for k, o in enumerate(owner) if o == c]
        if ks:
            gates[c] = (done[ks[0]], done[ks[-1]], layer_f[c])
    return gates, t


def _chain(pieces, compute, back_to_back: bool = False) -> Tuple[List[float], float]:
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
    JobSpec.host_counts). Items (the embedding, then each layer) run `compute` seconds each
    from time 0, each after its buckets arrived; `pieces` are the buckets in forward order,
    (first item, gather seconds).
    `back_to_back`: every bucket dispatched at time 0 and run one after another, each item
    waiting for its own buckets only (the compute not counted): a host that runs ahead, and
    virtual pipeline stages, for which Megatron-Bridge and NeMo set `align_param_gather`
    (training/comm_overlap.py, nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py:
    pipeline and virtual stages > 1) and the schedule dispatches a chunk's buckets all at once
    (Megatron-Core pipeline_parallel/schedules.py, `param_sync_func`; the hooks dispatch
    nothing). Returns per item the time its compute starts (back to back: its buckets'
    arrival), and when the last gather ends."""
    done = [0.0] * len(compute)
    t, nccl, ready = 0.0, 0.0, {}
    for p, (_, g) in enumerate(pieces if back_to_back else pieces[:1]):
        ready[p] = nccl = nccl + g
    if back_to_back:
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
