"""Parameters held per rank, the data-parallel gradient reduction and the optimizer step
(a mixin of lower.Lowering: it reads the job, the layouts, the costs and the chunks); the
per-layer counts are plain functions of the job, which memory.py shares."""
from __future__ import annotations

from astral_dsl.seer import comm

FP8_WEIGHT_CAST_BYTES = 4.0    # read the bf16 weight (2), write it in fp8 and its transpose (1 + 1)


def layer_linear_params(job, L: int) -> float:
    """Parameters of layer L's linear layers (QKV, out-projection, MLP or experts) held by one
    rank: the weights of the GEMMs that run in fp8 with Transformer Engine."""
    m, par = job.model, job.parallel
    h, mats = m.hidden, m.mats
    kind = m.layer_kind(L)
    if kind == "M":
        return m.mamba_params() / par.tp
    attn = m.attention_params() / par.tp if kind in ("T", "*") else 0.0
    if kind == "*":
        return attn
    if m.is_moe(L):
        mlp = m.experts * mats * h * m.moe_ffn / par.ep
        mlp += m.shared_experts * mats * h * m.shared_width / par.tp
    else:
        mlp = mats * h * m.ffn / par.tp
    return attn + mlp


def layer_params(job, L: int) -> float:
    """Parameters of layer L held by one rank: its linear layers, the MoE router and the norms
    (4 h)."""
    m = job.model
    router = m.hidden * m.experts if m.is_moe(L) else 0.0
    norms = 4 * m.hidden if m.layer_kind(L) == "T" else 2 * m.hidden
    return layer_linear_params(job, L) + router + norms


class ParamsMixin:
    def layer_params(self, L: int) -> float:
        """Parameters of layer L held by one rank (computed once per layer kind: the
        schedule's gradient buckets and the memory estimate ask for every layer)."""
        key = self.job.model.shape_key(L)
        memo = self.__dict__.setdefault("_memo_layer", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = layer_params(self.job, L)
        return hit

    def stage_params(self, stage: int) -> float:
        memo = self.__dict__.setdefault("_memo_stage", {})
        hit = memo.get(stage)
        if hit is None:
            hit = memo[stage] = self._stage_params(stage)
        return hit

    def _stage_params(self, stage: int) -> float:
        par, m = self.job.parallel, self.job.model
        total = 0.0
        for first, n in self.chunks[stage]:
            total += sum(c * self.layer_params(L) for L, c in m.kinds(first, n))
        if stage == 0:
            total += m.vocab * m.hidden / self.tp
        if stage == par.pp - 1 and (not m.gpt or par.pp > 1):
            total += m.vocab * m.hidden / self.tp
        return total

    def dp_reduce(self, params: float) -> float:
        """Gradient reduction of `params` over the data-parallel (x CP) group."""
        lay = self.groups["dp"]
        nbytes = params * self.job.grad_bytes
        if self.job.parallel.zero >= 1:
            return comm.reduce_scatter(self.net, lay, nbytes)
        return comm.all_reduce(self.net, lay, nbytes)

    def param_gather(self, params: float) -> float:
        return comm.all_gather(self.net, self.groups["dp"], params * self.elem)

    def optimizer_time(self, stage: int) -> float:
        """Mixed-precision Adam, multi-tensor fused: per parameter it reads the fp32 master,
        gradient, m and v and writes master, m, v and the low-precision copy (30 bytes), plus the
        gradient-norm read and the gradient zeroing (8 bytes). With fp8, Transformer Engine casts
        each linear weight to fp8 (and its transpose) once per iteration, in the first
        micro-batch's forward (Megatron-Core's TE modules pass `is_first_microbatch`); its cost
        is counted here, with the step that produced the weights."""
        params = self.stage_params(stage)
        if self.job.parallel.zero >= 1:
            params /= self.groups["dp"].n
        nbytes = 38.0 * params
        if self.job.fp8:     # the next iteration's weight casts (module docstring)
            nbytes += FP8_WEIGHT_CAST_BYTES * sum(
                layer_linear_params(self.job, L) for first, n in self.chunks[stage]
                for L in range(first, first + n))
        return self.c.stream("optimizer", nbytes, kernels=20)
