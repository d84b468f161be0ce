"""One forecast: lower the job, simulate the schedule, account the time.

The rule for runtime parameters a job does not declare (docs/seer.md): the micro-batch (when
`batch.micro` is absent) and the number of virtual stages (when `schedule = interleaved` without
`virtual_stages`) are the combination with the shortest forecast iteration among those whose
per-GPU memory estimate fits the GPU: a tuned run, which is what published runs are. Candidates
are the powers of two dividing B / DP (micro-batch) and the divisors of the smallest stage's
layer count (chunks), interleaving only when the pipeline's micro-batches are a multiple of its
stages (Megatron-LM's requirement)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

from astral_dsl.seer import comm
from astral_dsl.seer.costs import Costs, OperatorTable
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.memory import MemoryEstimate, estimate
from astral_dsl.seer.schedule import StageRun, simulate
from astral_dsl.seer.spec import JobSpec, divisors, stage_layers

STREAMS = ("compute", "tp", "cp", "ep", "pp", "dp")


@dataclass
class Forecast:
    job: JobSpec
    gpu: str
    net: comm.Network
    lowering: Lowering
    runs: List[StageRun]
    iteration_time: float
    memory: MemoryEstimate
    chosen: Tuple[Tuple[str, int], ...] = ()          # runtime parameters picked by the rule
    notes: Tuple[str, ...] = ()
    breakdown: Dict[str, float] = field(default_factory=dict)
    stage: int = 0                                      # the stage the breakdown describes
    placement: str = ""

    @property
    def gpus(self) -> int:
        return self.job.parallel.gpus

    @property
    def tokens_per_s(self) -> float:
        return self.job.global_batch * self.job.seq / self.iteration_time

    def _peak(self) -> float:
        return self.lowering.c.peak * self.gpus * self.iteration_time

    @property
    def mfu(self) -> float:
        return model_flops(self.job) / self._peak()

    @property
    def hfu(self) -> float:
        return hardware_flops(self.job) / self._peak()

    def timeline(self, window=None, level: str = "op"):
        from astral_dsl.seer.timeline import events

        return events(self, window=window, level=level)


def layer_flops_per_token(job: JobSpec, layer: int) -> Tuple[float, float]:
    """(matmul FLOPs, attention FLOPs) of one layer's forward per token; attention counts the
    full s x s scores (Megatron's and PaLM's convention)."""
    m = job.model
    h, q, kv = m.hidden, m.heads * m.head_dim, m.kv_dim
    mats = 2 if m.gpt else 3
    lin = 2 * (h * (q + 2 * kv) + q * h)
    if m.is_moe(layer):
        lin += 2 * mats * h * m.moe_ffn * (m.top_k + m.shared_experts) + 2 * h * m.experts
    else:
        lin += 2 * mats * h * m.ffn
    return lin, 4 * job.seq * q


def model_flops(job: JobSpec) -> float:
    """FLOPs of one iteration without recomputation: 3 x forward (seer.md)."""
    m = job.model
    per_token = sum(sum(layer_flops_per_token(job, L)) for L in range(m.layers))
    per_token += 2 * m.hidden * m.vocab
    return 3 * job.global_batch * job.seq * per_token


def hardware_flops(job: JobSpec) -> float:
    """Model FLOPs plus the recomputed forward FLOPs."""
    extra = 0.0
    for L in range(job.model.layers):
        lin, attn = layer_flops_per_token(job, L)
        if job.recompute == "full":
            extra += lin + attn
        elif job.recompute == "selective" and job.attention == "unfused":
            extra += attn
    return model_flops(job) + job.global_batch * job.seq * extra


def run(job: JobSpec, gpu, net: comm.Network, table: Optional[OperatorTable] = None,
        notes=()) -> Forecast:
    """Forecast `job`; undeclared micro-batch / virtual stages are chosen by the rule above."""
    costs = Costs(gpu, job.dtype, table)
    par = job.parallel
    micros = [job.micro] if job.micro else [
        d for d in divisors(max(1, job.global_batch // par.dp)) if d & (d - 1) == 0]
    if par.schedule == "interleaved" and not par.v:
        vs = [d for d in divisors(min(stage_layers(job.with_(parallel=replace(par, v=1)))))
              if par.pp > 1] or [1]
    else:
        vs = [par.v or 1]
    chosen: List[Tuple[str, int]] = []
    best = None
    fallback = None
    for b in micros:
        for v in vs:
            if v > 1 and len(vs) > 1 and (job.global_batch // (b * par.dp)) % par.pp:
                continue      # Megatron-LM interleaves only when p divides the micro-batches
            cand = job.with_(micro=b, parallel=replace(par, v=v))
            fc = _forecast(cand, gpu, net, costs)
            if fallback is None:
                fallback = fc
            if len(micros) * len(vs) > 1 and fc.memory.total > gpu.memory:
                continue
            if best is None or fc.iteration_time < best.iteration_time * (1 - 1e-9):
                best = fc
    best = best or fallback
    if not job.micro:
        chosen.append(("micro", best.job.micro))
    if len(vs) > 1:
        chosen.append(("virtual_stages", best.job.parallel.v))
    best.chosen = tuple(chosen)
    best.notes = tuple(notes) + tuple(net.notes)
    return best


def _forecast(job: JobSpec, gpu, net, costs) -> Forecast:
    low = Lowering(job, costs, net)
    runs, total = simulate(low, job.microbatches)
    mem = estimate(job, low.stage_params)
    fc = Forecast(job, gpu.name, net, low, runs, total, mem)
    fc.stage, fc.breakdown = _breakdown(fc)
    return fc


def _breakdown(fc: Forecast) -> Tuple[int, Dict[str, float]]:
    """Where the time of one representative rank goes: the stage with the most busy compute.
    The parts add up to the iteration time."""
    low, runs = fc.lowering, fc.runs
    best, best_busy = 0, -1.0
    for i, run in enumerate(runs):
        busy = sum(low.template(i, b.chunk, b.phase).compute for b in run.blocks)
        if busy > best_busy:
            best, best_busy = i, busy
    run = runs[best]
    out = {"compute": 0.0, "tp_comm": 0.0, "cp_comm": 0.0, "ep_comm": 0.0, "pp_comm": 0.0,
           "dp_comm": 0.0, "bubble": 0.0, "optimizer": 0.0}
    for b in run.blocks:
        tpl = low.template(best, b.chunk, b.phase)
        out["compute"] += tpl.compute
        for stream, t in tpl.exposed.items():
            out[f"{stream}_comm"] = out.get(f"{stream}_comm", 0.0) + t
        out["pp_comm"] += b.wait_pp + b.blocked
        out["bubble"] += b.wait - b.wait_pp
    dp_end = max([run.backward_end] + [e for _, e, _ in run.dp])
    out["dp_comm"] += dp_end - run.backward_end
    out["bubble"] += run.optimizer[0] - dp_end
    out["optimizer"] = run.optimizer[1] - run.optimizer[0]
    out["dp_comm"] += run.gather[1] - run.gather[0]
    out["bubble"] += fc.iteration_time - run.end
    return best, out
