"""Per-GPU memory estimate of a job: weights, gradients and optimizer states (with ZeRO
sharding), the activations the pipeline schedule keeps in flight, the logits, and a fixed
allowance for the CUDA context, NCCL buffers and allocator fragmentation.

Activations per layer and token follow Korthikanti et al. 2022 (section 4.1: 34 s b h + 5 a s^2 b
bytes for a GPT layer in 16-bit), generalised to grouped-query attention, SwiGLU and MoE: the
tensors each operator saves for its backward. Sequence parallelism shards the norm and dropout
inputs over TP; selective recomputation drops the attention scores (as does a fused attention);
full recomputation keeps only each layer's input."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from astral_dsl.seer.schedule import order
from astral_dsl.seer.spec import JobSpec, chunk_layers

RESERVED = 3e9     # CUDA context (~0.5 GB), NCCL buffers (~1 GB), workspace and fragmentation


@dataclass(frozen=True)
class MemoryEstimate:
    stage: int                 # the fullest stage
    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    reserved: float

    @property
    def total(self) -> float:
        return (self.weights + self.gradients + self.optimizer + self.activations + self.logits
                + self.reserved)

    def parts(self) -> Tuple[Tuple[str, float], ...]:
        return (("weights", self.weights), ("gradients", self.gradients),
                ("optimizer", self.optimizer), ("activations", self.activations),
                ("logits", self.logits), ("reserved", self.reserved))


def layer_activation_bytes(job: JobSpec, layer: int) -> float:
    """Bytes one rank keeps for one layer and one micro-batch."""
    m, par, E = job.model, job.parallel, job.bytes
    t, tokens = par.tp, job.micro * job.seq / par.cp
    h, q, kv = m.hidden, m.heads * m.head_dim, m.kv_dim
    sp = par.sp and t > 1
    if job.recompute == "full":
        return tokens * h * E / (t if sp else 1)
    mask = 1 if m.gpt else 0
    seq = 2 * E * h + 2 * mask * h + 2 * E * h           # two norm inputs, dropout masks, GEMM inputs
    mats = 1 if m.gpt else 2
    if m.is_moe(layer):
        routed = m.top_k * m.moe_ffn * (mats + 1) * E + 2 * m.top_k * h * E
        shared = m.shared_experts * m.moe_ffn * (mats + 1) * E
        mlp_tp = 0.0
        mlp_local = (routed + shared) * t / max(1, par.ep) / t
    else:
        mlp_tp = m.ffn * (mats + 1) * E
        mlp_local = 0.0
    attn_tp = E * (q + 2 * kv) + E * q + E * q            # Q, K, V, context (out-proj input)
    scores = 0.0
    if job.attention == "unfused" and job.recompute != "selective":
        scores = (2 * E + mask) * m.heads * job.seq / par.cp
    elif job.attention != "unfused":
        attn_tp += 4 * m.heads                            # softmax statistics
    per_token = seq / (t if sp else 1) + (attn_tp + mlp_tp + scores) / t + mlp_local
    return tokens * per_token


def estimate(job: JobSpec, stage_params) -> MemoryEstimate:
    """stage_params(i): parameters held by one rank of stage i (lower.Lowering.stage_params)."""
    par = job.parallel
    n = par.dp * par.cp
    w_b, g_b, o_b = job.bytes, job.grad_bytes, 12.0
    if job.dtype == "fp32":
        w_b, g_b, o_b = 4.0, 4.0, 8.0
    z = par.zero
    chunks = chunk_layers(job)
    m = job.microbatches
    best = None
    for i in range(par.pp):
        params = stage_params(i)
        weights = params * w_b / (n if z >= 3 else 1)
        grads = params * g_b / (n if z >= 2 else 1)
        opt = params * o_b / (n if z >= 1 else 1)
        per_chunk = [sum(layer_activation_bytes(job, L) for L in range(first, first + count))
                     for first, count in chunks[i]]
        acts = _peak_live(par.pp, par.v, m, i, par.schedule, per_chunk)
        if job.recompute == "full" and chunks[i]:      # one layer's full activations, rebuilt
            full = job.with_(recompute="none")
            acts += max((layer_activation_bytes(full, L) for first, count in chunks[i]
                         for L in range(first, first + count)), default=0.0)
        logits = 0.0
        if i == par.pp - 1:
            logits = job.micro * job.seq / par.cp * job.model.vocab / par.tp * (job.bytes + 4)
        est = MemoryEstimate(i, weights, grads, opt, acts, logits, RESERVED)
        if best is None or est.total > best.total:
            best = est
    return best


def _peak_live(p, v, m, stage, schedule, per_chunk) -> float:
    """Largest activation footprint while the schedule runs: a forward of chunk c adds its
    activations, the matching backward frees them."""
    live = peak = 0.0
    for ph, c, _ in order(p, v, m, stage, schedule):
        live += per_chunk[c] if ph == "F" else -per_chunk[c]
        peak = max(peak, live)
    return peak
