"""Parameters held per rank, the data-parallel gradient reduction and the optimizer step
(a mixin of lower.Lowering: it reads the job, the layouts, the costs and the chunks)."""
from __future__ import annotations

from astral_dsl.seer import comm


class ParamsMixin:
    def layer_params(self, L: int) -> float:
        """Parameters of layer L held by one rank."""
        m = self.job.model
        h, q, kv = m.hidden, m.heads * m.head_dim, m.kv_dim
        mats = 2 if m.gpt else 3
        attn = (h * (q + 2 * kv) + q * h) / self.tp
        if m.is_moe(L):
            mlp = m.experts * mats * h * m.moe_ffn / self.ep + h * m.experts
            mlp += m.shared_experts * mats * h * m.moe_ffn / self.tp
        else:
            mlp = mats * h * m.ffn / self.tp
        return attn + mlp + 4 * h

    def stage_params(self, stage: int) -> float:
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
        gradient-norm read and the gradient zeroing (8 bytes)."""
        params = self.stage_params(stage)
        if self.job.parallel.zero >= 1:
            params /= self.groups["dp"].n
        return self.c.stream("optimizer", 38.0 * params, kernels=20)
