"""The lowering's mixture-of-experts layer (a mixin of lower.Lowering, whose docstring tells the
model): the router, the routing kernels and the host's pause, permutation, the EP dispatch and
combine all-to-alls, the alltoall dispatcher's sort of the received rows by local expert, the
expert-tensor-parallel all-gather and reduce-scatter, the experts' GEMMs, activation, clamps and
biases, the shared experts and the addition of their output, and their backward, which ends with
the sum of the data gradients of the layer's input (router, dispatch and shared experts: autograd
adds them, lower_linear.py `_dgrad_sum`).

Expert tensor parallelism (ETP > 1, Megatron-Core 0.16.1 token_dispatcher.py,
MoEAlltoAllTokenDispatcher with its `tp_group` the expert-TP group): after the EP all-to-all
each rank all-gathers the tokens (and their routing probabilities) of its expert-TP group
(`dispatch_postprocess`: gather_from_sequence_parallel_region), runs them through its 1/ETP
share of each local expert's FFN columns (experts.py: fc1's output and fc2's input split over
the group), and reduce-scatters the experts' outputs back before the combine all-to-all
(`combine_preprocess`: reduce_scatter_to_sequence_parallel_region); backward, the
reduce-scatter's gradient is an all-gather and the all-gather's a reduce-scatter. A rank's
experts so take ETP times the token copies it routes at 1/ETP of the width: the same GEMM
FLOPs as with ETP 1, in GEMMs of other shapes. Both collectives move ETP x the rank's routed
copies x hidden (the gathered buffer) over the expert-TP group, on the TP stream (blocking, as
the dispatcher runs them)."""
from __future__ import annotations

from astral_dsl.seer.router_kernels import router_kernels
from astral_dsl.seer.template import Op

# Megatron-Core's unfused token permutation (`moe_permute_fusion = False`, its default: 0.14.0
# and 0.16.0 transformer_config.py; NeMo 2.4.0's Llama4Config sets it, its MixtralConfig keeps
# the default; 0.14.0 transformer/moe/moe_utils.py permute / unpermute without `fused`): rows
# moved beyond the fused kernels' (source + routed, MoeOps._permute), as (routed, token)
# coefficients of hidden-wide rows, in UNFUSED_PERMUTE_KERNELS kernels each. unpermute
# multiplies the routed rows by their probabilities (read and write: 2 routed), zeroes its
# output and `scatter_add_`s into it (2 tokens); its backward gathers the output gradient to
# the routed rows and takes the product's gradients (3 routed); permute's backward scatters
# into a zeroed buffer (2 tokens); permute's forward (the routing map's transpose, arange,
# masked_select, index_select) is taken to move the fused kernel's rows (exact for top-1)
MCORE_UNFUSED_PERMUTE = {"unpermute bwd": (3, 0), "permute bwd": (0, 2), "unpermute": (2, 2),
                         "permute": (0, 0)}      # ordered: a name is matched by its ending
UNFUSED_PERMUTE_KERNELS = 4


class MoeOps:
    """Lowering's MoE operators (attributes: lower.Lowering)."""

    def _expert_bias(self, b, name, elems, local, layer, backward=False):
        """The experts' fc2 biases (`expert_bias`) on `elems` outputs: Megatron-Core 0.16.1
        (transformer/moe/experts.py, TEGroupedMLP._apply_bias: `torch.cat([t + b * p for t, b,
        p in zip(torch.split(out, tokens_per_expert), biases, torch.split(probs, ...))])`, eager,
        16-bit probabilities): per local expert the broadcast product `b * p` is written (1 pass)
        and added to the expert's rows (read both, write: 3), then the concatenation reads and
        writes each element (2): 6 passes, 2 kernels per expert and 1. Backward (autograd): the
        addition hands the gradient on; the product's two broadcast operands each get
        `grad * other` written and summed back to their shape (read, write, read: 3 passes each,
        2 kernels each per expert), and `torch.split`'s backward concatenates the experts' row
        gradients (2 passes) and their probabilities' (per row: bytes left out): 8 passes,
        4 kernels per expert and 2."""
        if self.job.model.expert_bias:
            passes, kernels = (8, 4 * local + 2) if backward else (6, 2 * local + 1)
            self._ew(b, name, passes * elems * self.elem, layer, kernels=kernels)

    def _shared_add(self, b, name, sp_tokens, L):
        """The shared experts' output added to the routed experts' combined output: Megatron-Core
        0.16.0 transformer/moe/moe_layer.py, MoELayer.postprocess (`output = output +
        shared_expert_output`; with `moe_shared_expert_overlap` the dispatcher's
        combine_postprocess adds it alike, token_dispatcher.py): an eager addition reading two
        [tokens, hidden] tensors and writing one (3 passes). Its backward hands the gradient to
        both without a kernel. Outside Megatron-Core nothing is counted (torchtitan's
        scatter-add of the routed rows into the shared output is its unpermutation)."""
        if self.job.framework == "megatron":
            self._ew(b, name, 3 * sp_tokens * self.job.model.hidden * self.elem, L)

    def _gate(self, b, pre, sp_tokens, L):
        """The router's GEMM, or a weightless gate's kernels (`gate_free`: NeMo AutoModel's
        FakeBalancedGate, nemo_automodel 0.1.0 / 0.2.0 components/moe/layers.py): ones / k in
        fp32 (2 kernels, 4 + 8 bytes an entry), arange and its remainder in int64 (2 kernels,
        8 + 16 bytes), the weights cast to bf16 (`type_as`, 1 kernel, 4 + 2 bytes): 42 bytes
        for each of the tokens x k entries, in 5 kernels; no backward."""
        m = self.job.model
        if self.job.gate_free:
            self._ew(b, pre + "fake gate", 42 * sp_tokens * m.top_k, L, kernels=5)
        else:
            self._gemm(b, pre + "router", sp_tokens, m.experts, m.hidden, L)

    def _router_ops(self, b, name, sp_tokens, layer, backward=False):
        """The router's kernels after its GEMM on the rank's `sp_tokens` (router_kernels.py:
        Megatron-Core's PyTorch path, or Transformer Engine's fused one with `router_fusion`),
        on tokens x experts fp32 tensors. Megatron-Core only: the other frameworks' gates are
        not counted, and a weightless gate (`gate_free`) has none."""
        job = self.job
        if job.framework != "megatron" or job.gate_free:
            return
        kernels, passes = router_kernels(job.model.router_score, job.model.aux_loss,
                                         job.router_fusion, backward)
        self._ew(b, name, passes * sp_tokens * job.model.experts * 4, layer, kernels=kernels)

    def _moe_sync(self, b, name, layer, pause):
        """The MoE layer's routing kernels (moe_layer_s), and without CUDA graphs its pause
        (`pause`: moe_sync_s, or none; lower's docstring)."""
        b.add(Op(name.replace("token-count sync", "routing"), "overhead", "compute",
                 self.c.cal.moe_layer_s, 0.0, 0.0, "", layer, kernels=0))
        if pause > 0:
            b.add(Op(name, "overhead", "compute", pause, 0.0, 0.0, "", layer, kernels=0))

    def _local_sort(self, b, name, routed, local, L):
        """Megatron-Core's alltoall dispatcher with more than one local expert: after the
        dispatch all-to-all (and the expert-TP all-gather) it sorts the received rows from
        (source rank, local expert) to (local expert, source rank) order, and before the
        combine it restores that order (0.16.0 transformer/moe/token_dispatcher.py,
        MoEAlltoAllTokenDispatcher.dispatch_postprocess "Permutation 2" and combine_preprocess
        "Unpermutation 2": sort_chunks_by_idxs, Transformer Engine's fused_sort_chunks_by_index;
        padded to capacity a transpose(...).contiguous() copy); each reads and writes the ETP x
        `routed` rows (the routing probabilities sorted beside them, one element a row, not
        counted), and its backward is the inverse sort. The flex dispatcher's kernels deliver
        the rows by expert (its one permutation is `permute`)."""
        job = self.job
        if job.moe_dispatcher == "alltoall" and local > 1 and job.framework == "megatron":
            self._ew(b, name, 2 * job.parallel.etp * routed * job.model.hidden * self.elem, L,
                     kind="permute")

    def _permute(self, b, name, sp_tokens, routed, L):
        """A permutation or unpermutation of the rank's MoE rows (forward or backward). Under
        Megatron-Core its permute is Transformer Engine's fused one (the recipes'
        `moe_permute_fusion`; 0.16.0 moe_utils.py permute / unpermute, `fused_permute` and
        `fused_unpermute`, TE 2.11 pytorch/permutation.py _moe_permute_mask_map and
        _moe_unpermute_mask_map): common/triton/permutation.py's _permute_kernel loads each
        source row once and stores it once per routed copy, its _unpermute_kernel loads every
        routed copy and stores one row per token (the probabilities' multiply in registers),
        and each one's backward is the other: (source rows + routed copies) x hidden elements
        each way. The alltoall dispatcher permutes the rank's own tokens before its all-to-all
        and unpermutes them after (token_dispatcher.py, dispatch_preprocess "Permutation 1",
        combine_postprocess); the flex dispatcher permutes the rows its dispatch delivered,
        each token once to each rank holding one of its experts (_DeepepManager.
        get_permuted_hidden_states_by_experts, after the dispatch; HybridEP's
        dispatch_with_permute is taken to move the same rows), sp_tokens x the expected such
        ranks (ep_hit). Outside Megatron-Core the rows are gathered and scattered by copy,
        2 x `routed` rows. The probabilities (one element a row) are not counted. Without
        `permute_fusion`, Megatron-Core's unfused path beyond that (MCORE_UNFUSED_PERMUTE)."""
        job, m = self.job, self.job.model
        rows = 2 * routed
        if job.framework == "megatron":
            source = sp_tokens if job.moe_dispatcher == "alltoall" else \
                sp_tokens * self.ep_hit()[0]
            rows = source + routed
        self._ew(b, name, rows * m.hidden * self.elem, L, kind="permute")
        if job.framework == "megatron" and not job.permute_fusion:
            step = next(s for s in MCORE_UNFUSED_PERMUTE if name.endswith(s))
            per_routed, per_token = MCORE_UNFUSED_PERMUTE[step]
            self._ew(b, name + " unfused", (per_routed * routed + per_token * sp_tokens) *
                     m.hidden * self.elem, L, kind="permute", kernels=UNFUSED_PERMUTE_KERNELS)

    def _etp(self, b, name, kind, routed, L):
        """An expert-tensor-parallel all-gather ("ag") or reduce-scatter ("rs") of the
        gathered buffer of `routed` copies (module docstring); nothing with ETP 1."""
        etp = self.job.parallel.etp
        if etp > 1:
            self._coll(b, name, kind, "etp", etp * routed * self.job.model.hidden * self.elem,
                       L, stream="tp")

    def _moe_fwd(self, b, L, pre=""):  # noqa: C901 - one operator per line
        m, elem, etp = self.job.model, self.elem, self.job.parallel.etp
        sp_tokens = self.tokens / self.tp
        routed = self.job.routed(sp_tokens)
        local = max(1, m.experts // self.ep)
        mats, ffn, rows = m.mats - 1, m.moe_ffn / etp, routed * etp / local
        self._gate(b, pre, sp_tokens, L)
        self._router_ops(b, pre + "router scores and top-k", sp_tokens, L)
        self._moe_sync(b, pre + "moe token-count sync", L, self.moe_sync_fwd_s)
        self._permute(b, pre + "permute", sp_tokens, routed, L)
        self._coll(b, pre + "ep dispatch all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._etp(b, pre + "etp all-gather", "ag", routed, L)
        self._local_sort(b, pre + "sort by local expert", routed, local, L)
        self._linear(b, pre + "expert fc1", rows, ffn * mats, m.hidden, L,
                     batch=local, streams=self.expert_streams, expert=self.expert_grouped)
        self._clamp(b, pre + "expert act clamp", routed * m.moe_ffn * mats, L)
        self._ew(b, pre + "expert act", (2 + mats - 1) * routed * m.moe_ffn * elem, L)
        self._linear(b, pre + "expert fc2", rows, m.hidden, ffn, L, batch=local,
                     streams=self.expert_streams, expert=self.expert_grouped)
        self._expert_bias(b, pre + "expert bias", routed * m.hidden, local, L)
        self._local_sort(b, pre + "unsort by local expert", routed, local, L)
        self._etp(b, pre + "etp reduce-scatter", "rs", routed, L)
        self._coll(b, pre + "ep combine all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._permute(b, pre + "unpermute", sp_tokens, routed, L)
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear(b, pre + "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L)
            self._ew(b, pre + "shared act", (2 + mats - 1) * sp_tokens * shared_ffn * elem, L)
            self._linear(b, pre + "shared fc2", sp_tokens, m.hidden, shared_ffn, L)
            self._shared_add(b, pre + "shared output add", sp_tokens, L)

    def _moe_bwd(self, b, L):
        """The MoE layer's backward; its input's three data gradients (the router's, the
        dispatch's and the shared experts'; two without them) summed at the end: Megatron-Core
        0.16.0 moe_layer.py MoELayer.forward hands the same hidden_states to
        shared_experts_compute, route (the router's gating GEMM) and preprocess (the dispatch),
        and autograd adds the gradients it gets from each."""
        m, elem, etp = self.job.model, self.elem, self.job.parallel.etp
        sp_tokens = self.tokens / self.tp
        routed, local, mats = self.job.routed(sp_tokens), max(1, m.experts // self.ep), m.mats - 1
        ffn, rows = m.moe_ffn / etp, routed * etp / local
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear_bwd(b, "shared fc2", sp_tokens, m.hidden, shared_ffn, L, column=False)
            self._ew(b, "shared act bwd", (3 + 2 * (mats - 1)) * sp_tokens * shared_ffn * elem,
                     L)
            self._linear_bwd(b, "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L,
                             column=False)
        self._moe_sync(b, "moe token-count sync bwd", L, 0.0)   # no pause (lower.py, moe_sync_s)
        self._permute(b, "unpermute bwd", sp_tokens, routed, L)
        self._coll(b, "ep combine all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._etp(b, "etp reduce-scatter bwd", "ag", routed, L)
        self._local_sort(b, "unsort by local expert bwd", routed, local, L)
        self._expert_bias(b, "expert bias bwd", routed * m.hidden, local, L, backward=True)
        for name, mm, n, k in (("expert fc2", rows, m.hidden, ffn),
                               ("expert fc1", rows, ffn * mats, m.hidden)):
            if self.fp8:
                self._ew(b, name + " grad quantise", self.cast[1] * mm * n * local, L,
                         kernels=self.split_kernels(local, self.expert_streams))
            self._gemm(b, name + " dgrad", mm, k, n, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=self.expert_grouped)
            self._gemm(b, name + " wgrad", k, n, mm, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=self.expert_grouped)
            self._grad_copy(b, name, k * n * local, L)
            if name == "expert fc2":
                self._ew(b, "expert act bwd", (3 + 2 * (mats - 1)) * routed * m.moe_ffn * elem, L)
                self._clamp(b, "expert act clamp bwd", routed * m.moe_ffn * mats, L, backward=True)
        self._local_sort(b, "sort by local expert bwd", routed, local, L)
        self._etp(b, "etp all-gather bwd", "rs", routed, L)
        self._coll(b, "ep dispatch all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._permute(b, "permute bwd", sp_tokens, routed, L)
        self._router_ops(b, "router scores and top-k bwd", sp_tokens, L, backward=True)
        gate = 0 if self.job.gate_free else 1
        if gate:
            self._gemm(b, "router dgrad", sp_tokens, m.hidden, m.experts, L)
        self._dgrad_sum(b, "moe input", sp_tokens * m.hidden,
                        gate + 1 + (1 if m.shared_experts else 0), L)
