"""The lowering's mixture-of-experts layer (a mixin of lower.Lowering, whose docstring tells the
model): the router, the routing kernels and the host's pause, permutation, the EP dispatch and
combine all-to-alls, the experts' GEMMs, activation, clamps and biases, the shared experts, and
their backward."""
from __future__ import annotations

from astral_dsl.seer.template import Op


class MoeOps:
    """Lowering's MoE operators (attributes: lower.Lowering)."""

    def _expert_bias(self, b, name, elems, local, layer, backward=False):
        """The experts' fc2 biases (`expert_bias`) on `elems` outputs: Megatron-Core 0.16.1
        (transformer/moe/experts.py, TEGroupedMLP._apply_bias) adds each local expert's bias,
        weighted by the routing probabilities, to its rows and concatenates them: a pass that
        reads and writes each element and a concatenation that does the same (4 passes, 2
        kernels per expert and 1); backward, the bias's and the probabilities' gradients each
        read the output's gradient (2 passes, 2 kernels per expert)."""
        if self.job.model.expert_bias:
            passes, kernels = (2, 2 * local) if backward else (4, 2 * local + 1)
            self._ew(b, name, passes * elems * self.elem, layer, kernels=kernels)

    def _moe_sync(self, b, name, layer, pause):
        """The MoE layer's routing kernels (moe_layer_s), and without CUDA graphs its pause
        (`pause`: moe_sync_s, or none; lower's docstring)."""
        b.add(Op(name.replace("token-count sync", "routing"), "overhead", "compute",
                 self.c.cal.moe_layer_s, 0.0, 0.0, "", layer, kernels=0))
        if pause > 0:
            b.add(Op(name, "overhead", "compute", pause, 0.0, 0.0, "", layer, kernels=0))

    def _moe_fwd(self, b, L, pre=""):  # noqa: C901 - one operator per line
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed = self.job.routed(sp_tokens)
        local = max(1, m.experts // self.ep)
        mats = m.mats - 1
        self._gemm(b, pre + "router", sp_tokens, m.experts, m.hidden, L)
        self._moe_sync(b, pre + "moe token-count sync", L, self.moe_sync_fwd_s)
        self._ew(b, pre + "permute", 2 * routed * m.hidden * elem, L, kind="permute")
        self._coll(b, pre + "ep dispatch all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._linear(b, pre + "expert fc1", routed / local, m.moe_ffn * mats, m.hidden, L,
                     batch=local, streams=self.expert_streams, expert=True)
        self._clamp(b, pre + "expert act clamp", routed * m.moe_ffn * mats, L)
        self._ew(b, pre + "expert act", (2 + mats - 1) * routed * m.moe_ffn * elem, L)
        self._linear(b, pre + "expert fc2", routed / local, m.hidden, m.moe_ffn, L, batch=local,
                     streams=self.expert_streams, expert=True)
        self._expert_bias(b, pre + "expert bias", routed * m.hidden, local, L)
        self._coll(b, pre + "ep combine all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, pre + "unpermute", 2 * routed * m.hidden * elem, L, kind="permute")
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear(b, pre + "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L)
            self._ew(b, pre + "shared act", (2 + mats - 1) * sp_tokens * shared_ffn * elem, L)
            self._linear(b, pre + "shared fc2", sp_tokens, m.hidden, shared_ffn, L)

    def _moe_bwd(self, b, L):
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed, local, mats = self.job.routed(sp_tokens), max(1, m.experts // self.ep), m.mats - 1
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear_bwd(b, "shared fc2", sp_tokens, m.hidden, shared_ffn, L, column=False)
            self._ew(b, "shared act bwd", (3 + 2 * (mats - 1)) * sp_tokens * shared_ffn * elem,
                     L)
            self._linear_bwd(b, "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L,
                             column=False)
        self._moe_sync(b, "moe token-count sync bwd", L, self.moe_sync_s)
        self._ew(b, "unpermute bwd", 2 * routed * m.hidden * elem, L, kind="permute")
        self._coll(b, "ep combine all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._expert_bias(b, "expert bias bwd", routed * m.hidden, local, L, backward=True)
        for name, mm, n, k in (("expert fc2", routed / local, m.hidden, m.moe_ffn),
                               ("expert fc1", routed / local, m.moe_ffn * mats, m.hidden)):
            if self.fp8:
                self._ew(b, name + " grad quantise", self.cast[1] * mm * n * local, L)
            self._gemm(b, name + " dgrad", mm, k, n, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=True)
            self._gemm(b, name + " wgrad", k, n, mm, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=True)
            if name == "expert fc2":
                self._ew(b, "expert act bwd", (3 + 2 * (mats - 1)) * routed * m.moe_ffn * elem, L)
                self._clamp(b, "expert act clamp bwd", routed * m.moe_ffn * mats, L, backward=True)
        self._coll(b, "ep dispatch all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, "permute bwd", 2 * routed * m.hidden * elem, L, kind="permute")
        self._gemm(b, "router dgrad", sp_tokens, m.hidden, m.experts, L)
