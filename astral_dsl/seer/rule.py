"""The rule for runtime parameters a job does not state (docs/seer.md, "The rule").

The micro-batch (when `batch.micro` is absent), the number of virtual stages (when
`schedule = interleaved` without `virtual_stages`) and the activation recomputation (when
`recompute = auto`: none, the norms and activation functions (modules), selective with unfused
attention, or full, for a Megatron-LM job where none does not fit also the fewest layers of each
chunk recomputed whole that make it fit (partial_recompute), and, unless `offload_layers` is
stated, each of these that does not fit with the fewest layers' activations offloaded to host
memory that make it fit) are those of a tuned run, which is what
published runs are: the combination with the shortest forecast iteration among those whose
memory estimate fits in the GPU's memory; failing that, the one that needs the least memory.
The estimate, not the estimate plus its uncertainty: a tuned run stops at what really fits, and
the estimate is the best guess of that (its +/- 10 % on activations goes either way); with the
margin added, the rule recomputed more than the published MoE recipes do (examples/
gb200_nvl72.astral's DeepSeek-V3: full recomputation at 54 GB instead of the norms and
activation functions at 180 GB of 186). A choice inside the margin is what `astral search`
flags as "may not fit".

Candidates: the powers of two dividing B / DP (micro-batch); the numbers of chunks that
Megatron-LM's layer options lay out on the stages (stages.chunk_split: each stage's layers split
evenly, the embedding and the loss counted as a layer where that evens them out), interleaving
only when the pipeline's micro-batches are a multiple of its stages (Megatron-LM's
requirement), or with declared virtual stages when the schedule's order can run them
(schedule.runnable); none over the work budget (budget.py: blocks and tokens per
micro-batch).

Pruning: every candidate gets a lower bound of its iteration time from its block durations
alone (no simulation): a stage's compute stream runs all its blocks one after another, cannot
start before micro-batch 0 has gone forward through the stages before it, and stage 0 cannot
finish before the last gradient has come back through them; the optimizer step follows. The
candidates are simulated in the order of their bounds, and the search stops when the next bound
is no shorter than the best iteration simulated: the choice is the one the exhaustive search
makes, at a fraction of the simulations."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import attrs

from astral_dsl import gcpause, records
from astral_dsl.seer import budget
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.schedule import runnable
from astral_dsl.seer.memory import MemoryEstimate, of_job, offload_obstacle
from astral_dsl.seer.spec import JobSpec
from astral_dsl.seer.stages import chunk_layers, stage_layers, virtual_stage_options


@records.define
class Candidate:
    job: JobSpec
    lowering: Lowering
    memory: MemoryEstimate
    bound: float


def candidates(job: JobSpec) -> List[JobSpec]:
    par = job.parallel
    micros = [job.micro] if job.micro else budget.micro_candidates(
        max(1, job.global_batch // par.dp))
    if par.schedule == "interleaved" and not par.v:
        per_stage = stage_layers(job.with_(parallel=attrs.evolve(par, v=1)))
        vs = virtual_stage_options(per_stage) if par.pp > 1 else [1]
    else:
        vs = [par.v or 1]
    recs = [job.recompute]
    if job.recompute == "auto":
        recs = ["none", "selective", "modules", "full"] if job.attention == "unfused" \
            else ["none", "modules", "full"]
    out = []
    runs = job.pipeline_runs
    for b in sorted(micros):
        m = job.global_batch // (b * par.dp)
        if runs > 1 and len(micros) > 1 and m % runs:
            continue          # each of the step's schedule runs takes as many micro-batches
        for v in vs:
            over = budget.blocks(par.pp, v, m) > budget.MAX_BLOCKS or \
                b * job.seq > budget.MAX_TOKENS
            if len(micros) * len(vs) > 1 and over:
                continue
            if v > 1 and (m // runs) % par.pp and (
                    len(vs) > 1 or not (over or runnable(par.pp, v, m, job.schedule_key))):
                continue      # Megatron-LM interleaves only when p divides the micro-batches;
                #               declared chunks: any m the schedule's order can run
            for rec in recs:
                out.append(job.with_(micro=b, parallel=attrs.evolve(par, v=v), recompute=rec,
                                     offload_layers=job.offload_layers or 0))
    return out


def offloading(job: JobSpec, gpu, costs, net) -> Optional[Candidate]:
    """`job` with the fewest offloaded layers that make it fit in the GPU's memory, or None
    where offloading cannot run or does not make it fit: Megatron-LM's offloading needs one
    pipeline stage and leaves the last layer on the GPU (megatron/core/transformer/
    transformer_config.py); the GPU must declare its host link (memory.py, lower.py), and what
    it offloads must fit in the host's memory when the host declares it."""
    if offload_obstacle(job, gpu.host_bw) is not None:
        return None
    tried: Dict[int, Candidate] = {}

    def fits(k: int) -> bool:
        trial = job.with_(offload_layers=k)
        low = Lowering(trial, costs, net)
        tried[k] = Candidate(trial, low, of_job(trial), 0.0)
        return tried[k].memory.total <= gpu.memory

    k = fewest(fits, 1, job.model.layers - 1)   # the activations shrink as more layers go
    if k is None:
        return None
    if gpu.host_memory is not None and tried[k].memory.offloaded > gpu.host_memory:
        return None          # the fewest layers that fit already fill the host's memory
    return tried[k]


def fewest(fits: Callable[[int], bool], lo: int, hi: int) -> Optional[int]:
    """The least k in lo .. hi with fits(k), for a test that holds from some k on (a bisection),
    or None when fits(hi) does not hold."""
    if hi < lo or not fits(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


# the frameworks whose jobs can recompute some layers of a chunk and not others: Megatron-LM's
# block method; NeMo AutoModel checkpoints every layer or none (`activation_checkpointing`),
# and torchtitan's layer-selective checkpointing takes every k-th layer, not any count
PARTIAL_FRAMEWORKS = ("megatron",)


def partial_recompute(job: JobSpec, gpu, costs, net) -> Optional[Candidate]:
    """`job` (recomputing nothing) with the fewest layers of each model chunk recomputed whole
    that make it fit in the GPU's memory (Megatron-LM's block method: `recompute = full` with
    `recompute_layers`, stages.full_recompute), or None where even all but one do not fit (full
    recomputation of every layer is a candidate of its own), or of a framework that cannot
    (PARTIAL_FRAMEWORKS)."""
    if job.framework not in PARTIAL_FRAMEWORKS:
        return None
    most = max((count for row in chunk_layers(job) for _, count in row), default=0) - 1
    tried: Dict[int, Candidate] = {}

    def fits(n: int) -> bool:
        trial = job.with_(recompute="full", recompute_layers=n)
        low = Lowering(trial, costs, net)
        tried[n] = Candidate(trial, low, of_job(trial), 0.0)
        return tried[n].memory.total <= gpu.memory

    n = fewest(fits, 1, most)      # the activations shrink as more layers are recomputed
    return None if n is None else tried[n]


def lower_bound(low: Lowering) -> float:
    """A time the iteration cannot beat (module docstring)."""
    par, m = low.job.parallel, low.job.microbatches
    p, v = par.pp, par.v
    fwd = [low.template(i, 0, "F").duration for i in range(p)]
    bwd = [low.template(i, 0, "B").duration for i in range(p)]
    best, fill, drain = 0.0, 0.0, 0.0
    for i in range(p):
        busy = m * sum(low.template(i, c, ph).duration for c in range(v) for ph in ("F", "B"))
        best = max(best, fill + busy + drain)
        fill += fwd[i]
        drain += bwd[i]
    return best + min(low.optimizer_time(i) for i in range(p))


# one forecast with the collector paused (gcpause.py): its candidates' operator templates and
# block times are hundreds of thousands of objects (a few hundred of them cyclic garbage, left
# to the next pass) that each young pass walked, and the middle ones again; `astral runs` on
# modern.csv 4.0 -> 3.4 s of CPU
@gcpause.pausing
def choose(job: JobSpec, gpu, net, costs, simulate: Callable[[Candidate], object]):
    """The forecast of the rule's choice (module docstring); `simulate(candidate)` returns a
    Forecast with `iteration_time`."""
    cands: List[Candidate] = []
    for cand in candidates(job):
        low = Lowering(cand, costs, net)
        cands.append(Candidate(cand, low, of_job(cand), 0.0))
    if len(cands) == 1:
        return simulate(cands[0])
    cap = gpu.memory or float("inf")
    if job.recompute == "auto" and job.recompute_layers is None and gpu.memory:
        more = (partial_recompute(c.job, gpu, costs, net) for c in cands
                if c.job.recompute == "none" and c.memory.total > cap)
        cands += [c for c in more if c is not None]
    if job.offload_layers is None and gpu.memory:
        more = (offloading(c.job, gpu, costs, net) for c in cands if c.memory.total > cap)
        cands += [c for c in more if c is not None]
    pool = [c for c in cands if c.memory.total <= cap]
    if not pool:
        return simulate(min(cands, key=lambda c: (c.memory.total, c.job.micro)))
    for c in pool:
        c.bound = lower_bound(c.lowering)
    pool.sort(key=lambda c: (c.bound, c.job.micro, c.job.parallel.v, c.job.recompute,
                             c.job.recompute_layers or 0, c.job.offload_layers))
    best: Optional[Tuple[float, object]] = None
    for c in pool:
        if best is not None and c.bound >= best[0]:
            break
        fc = simulate(c)
        if best is None or fc.iteration_time < best[0] * (1 - 1e-9):
            best = (fc.iteration_time, fc)
    return best[1]
