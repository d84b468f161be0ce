"""The lowering's dense operators (a mixin of lower.Lowering, whose docstring tells the model):
norms, residual sums, the MLP sub-block (a dense MLP, or the MoE layer of lower_moe.py) and its
backward, the embedding and the head (final norm, logits, cross entropy)."""
from __future__ import annotations

EMBED, HEAD = -1, -2      # the `layer` of embedding and of head operators
ACTIVATION_NAME = {"gelu": "gelu", "swiglu": "swiglu", "relu2": "squared relu"}
# The head's cross-entropy by the job's `cross_entropy`: ((forward bytes per logit as a function
# of the logits' element size, kernels), (backward bytes, kernels)), each kernel at softmax_eff.
# - "native": Megatron-Core's fused cross-entropy (0.16.0 fusions/fused_cross_entropy.py over
#   tensor_parallel/cross_entropy.py, each step torch.compile'd: core/jit.py `jit_fuser`): the
#   logits cast to an fp32 copy with their row maximum (read elem, write 4), the maximum
#   subtracted and exponentiated in place with the row sums (read 4, write 4), the softmax
#   divided in place (read 4, write 4), plus the target logits' gather and the loss; backward,
#   the saved fp32 softmax times the loss gradient in place and cast to the logits' dtype (read 4,
#   write 4 and elem).
# - "te": Transformer Engine's Triton kernels (2.11.0 pytorch/triton/cross_entropy.py, through
#   Megatron-Core's te_parallel_cross_entropy): `online_softmax_kernel` reads the logits for
#   each row's maximum and sum, `cross_entropy_kernel` reads them again and writes the gradient
#   in place (two zero-filled row buffers besides); backward, `element_mul_kernel` scales it by
#   the per-token loss gradient (read elem, write elem: never skipped, the gradient being a
#   tensor of tokens, not the scalar 1 `torch.equal` looks for).
# - None (not stated): Seer's generic count, not derived from a framework's code.
CROSS_ENTROPY = {
    "native": ((lambda elem: elem + 20, 5), (lambda elem: 8 + elem, 2)),
    "te": ((lambda elem: 3 * elem, 4), (lambda elem: 2 * elem, 1)),
    None: ((lambda elem: elem + 8, 4), (lambda elem: elem + 4, 1)),
}


class DenseOps:
    """Lowering's dense operators (attributes: lower.Lowering)."""

    def _fc1_parts(self):
        """The shares of fc1's columns run as separate GEMMs: w1 and w3 of a gated MLP
        (`separate`), else ()."""
        mats = self.job.model.mats - 1
        return (1.0 / mats,) * mats if self.separate and mats > 1 else ()

    def _norm_fwd(self, b, name, L):
        self._ew(b, name, 2 * self.sp_tokens * self.job.model.hidden * self.elem, L, "norm")

    def _residual(self, b, name, L):
        m = self.job.model
        self._ew(b, name, (3 * self.elem + (1 if m.gpt else 0)) * self.sp_tokens * m.hidden, L)

    def _mlp_block_fwd(self, b, L, pre):
        """The MLP sub-block's forward: its norm, the dense MLP or MoE layer, the residual sum.
        Recomputed under torch.compile (JobSpec.compiled_blocks: torchtitan's full activation
        checkpointing of a compiled block), a dense layer's ends at fc2's quantised input: AOT
        Autograd's partitioner builds the backward graph from the saved values to the gradients
        alone (torch 2.6.0 _functorch/partitioners.py, min_cut_rematerialization_partition ->
        _extract_fwd_bwd_modules -> _extract_graph_with_inputs_outputs, "all dead code is
        eliminated"), and no gradient reads fc2's output nor the block's: its GEMM, TP
        reduction and residual sum are not re-run; fc2's weight gradient reads the quantised
        input, saved by torchao's matmul (0.7.0 float8_linear.py
        manual_float8_matmul_with_args_in_float8: save_for_backward(input_fp8, ...)), so its
        cast is. An MoE layer's expert outputs feed its router's gradient: recomputed whole."""
        m, elem, tokens = self.job.model, self.elem, self.tokens
        h = m.hidden
        self._norm_fwd(b, pre + ("post-attn norm" if m.layer_kind(L) == "T" else "input norm"), L)
        if pre and self.job.compiled_blocks and not m.is_moe(L):
            self._dense_mlp_fwd(b, L, pre, tail=False)
            return
        if m.is_moe(L):
            self._moe_fwd(b, L, pre)
        else:
            self._dense_mlp_fwd(b, L, pre)
        self._residual(b, pre + "residual", L)

    def _dense_mlp_fwd(self, b, L, pre, tail=True):
        """A dense MLP from its (normalised) input: fc1 after its TP all-gather, the activation,
        fc2 and its TP reduction (recomputed whole, collectives included, by Megatron-Core's
        `mlp` recompute module: transformer/mlp.py under tensor_parallel.checkpoint); without
        its `tail`, fc2's input cast alone (`_mlp_block_fwd`)."""
        m, elem, tokens, h = self.job.model, self.elem, self.tokens, self.job.model.hidden
        F = m.ffn / self.tp
        self._linear(b, pre + "fc1", tokens, F * (m.mats - 1), h, L, norm_fed=True,
                     gather=pre + "mlp all-gather", parts=self._fc1_parts())
        self._clamp(b, pre + "activation clamp", tokens * F * (m.mats - 1), L)
        self._ew(b, pre + ACTIVATION_NAME[m.activation], m.mats * tokens * F * elem, L,
                 kind=m.activation)
        if not tail:
            self._quantise(b, pre + "fc2", tokens, F, L)
            return
        self._linear(b, pre + "fc2", tokens, h, F, L, chunks=self.ring)
        self._tp_out(b, pre + "mlp", L)

    def _mlp_block_bwd(self, b, L):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        self._residual(b, "residual bwd", L)
        if m.is_moe(L):
            self._moe_bwd(b, L)
        else:
            F = m.ffn / self.tp
            self._linear_bwd(b, "fc2", tokens, h, F, L, column=False,
                             grad_gather="mlp grad all-gather")
            self._ew(b, ACTIVATION_NAME[m.activation] + " bwd", (m.mats + 2) * tokens * F * elem,
                     L, kind=m.activation)
            self._clamp(b, "activation clamp bwd", tokens * F * (m.mats - 1), L, backward=True)
            self._linear_bwd(b, "fc1", tokens, F * (m.mats - 1), h, L, column=True,
                             parts=self._fc1_parts())
        self._ew(b, ("post-attn norm bwd" if m.layer_kind(L) == "T" else "input norm bwd"),
                 3 * sp_tokens * h * elem, L, "norm")

    def _embed_fwd(self, b, pre="", L=EMBED):
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        self._ew(b, pre + "embedding", 2 * tokens * h * elem, L)
        self._tp_out(b, pre + "embedding", L, gemm=False)

    def _embed_bwd(self, b, pre="", L=EMBED):
        """One lookup's backward: PyTorch's dense embedding gradient (torch 2.6.0 aten/src/ATen/
        native/cuda/Embedding.cu, embedding_dense_backward_cuda, both of its paths, and
        EmbeddingBackwardKernel.cu, embedding_backward_cuda_kernel) zero-fills a gradient of
        the whole table (`at::zeros({num_weights, ...})`: its vocab/TP x hidden rows written
        once in the weights' dtype), then sorts the token ids and sums the tokens' gradient
        rows segment by segment into it (3 passes of the tokens' rows). Megatron-Core's
        VocabParallelEmbedding (0.14.0-0.16.0 tensor_parallel/layers.py, forward) looks up with
        F.embedding outside deterministic mode, with `self.weight[masked_input]` in it, whose
        backward (torch tools/autograd/derivatives.yaml `index.Tensor`: index_backward, an
        accumulating index_put into new zeros of the weight's size) zero-fills the table
        alike; torchtitan's and AutoModel's nn.Embedding run F.embedding."""
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        if self.sp:
            self._coll(b, pre + "embedding grad all-gather", "ag", "tp", tokens * h * elem, L)
        self._ew(b, pre + "embedding grad zero-fill", self._table * elem, L)
        self._ew(b, pre + "embedding bwd", 3 * tokens * h * elem, L)

    @property
    def _table(self) -> float:
        """Elements of a rank's embedding table: vocab/TP rows (Megatron-Core's vocab-parallel
        rows; torchtitan's RowwiseParallel `tok_embeddings`) of hidden."""
        return self.job.model.vocab / self.tp * self.job.model.hidden

    def _embed_grad(self, b, lookups: int, tied: bool, L):
        """After a stage's `lookups` embedding backwards (_embed_bwd) of one table, each of a
        whole-table dense gradient: autograd sums the gradients of a tensor used more than once
        before its AccumulateGrad (torch 2.6.0 torch/csrc/autograd/input_buffer.cpp,
        InputBuffer::add: read two, write one), one add per further lookup and one for a tied
        output layer's weight gradient on the stage. Then the framework takes the sum every
        micro-batch: Megatron-Core's DDP backward post-hook (0.14.0-0.16.0 distributed/
        distributed_data_parallel.py, _make_backward_post_hook: `param.main_grad.add_(param.
        grad.data)`, the embedding having no gradient-accumulation fusion: a read of the 16-bit
        gradient and a read-modify-write of the grad_bytes main gradient), Megatron FSDP's copy
        into its main gradient (lower_linear._grad_copy); PyTorch FSDP2 reduce-scatters it (its
        reduce-scatter priced as the layers' gradients': not here) and adds the shard, 1/DP of
        the table in the gradient dtype, into `param.grad` (torch 2.6.0 distributed/fsdp/
        _fully_shard/_fsdp_collectives.py, foreach_reduce: `sharded_param.grad._local_tensor +=
        new_sharded_grad`), or without sharding AccumulateGrad adds the whole table (torch/csrc/
        autograd/functions/accumulate_grad.h: `variable_grad += new_grad`)."""
        if lookups <= 0:
            return
        elem, gb, table = self.elem, self.job.grad_bytes, self._table
        adds = lookups - 1 + (1 if tied else 0)
        if tied and self.job.framework == "megatron":
            # one stage holding the embedding and the output layer: Megatron-Core marks the
            # shared weight `zero_out_wgrad` (0.16.0 models/common/language_module/
            # language_module.py, setup_embeddings_and_output_layer, pipeline size 1), so the
            # output layer's weight gradient, fused into the main gradient, hands autograd a
            # zero-filled dummy of the table (tensor_parallel/layers.py,
            # LinearWithGradAccumulationAndAsyncCommunication.backward: TE's get_dummy_wgrad
            # with zero=True, else torch.zeros) that the embedding's gradient is added to
            self._ew(b, "output weight dummy grad zero-fill", table * elem, L)
        if adds:
            self._ew(b, "embedding grad sum", adds * 3 * table * elem, L, kernels=adds)
        if self.job.framework != "megatron":
            shard = self.job.parallel.dp if self.job.parallel.zero >= 3 else 1
            self._ew(b, "embedding grad accumulate", 3 * gb * table / shard, L)
        elif self.grad_copy:
            self._grad_copy(b, "embedding", table, L)
        else:
            self._ew(b, "embedding grad accumulate", (elem + 2 * gb) * table, L)

    def _head_fwd(self, b, pre=""):
        """The head's forward: the final norm, the logits and the cross-entropy. The logits
        GEMM is Megatron-Core's 16-bit ColumnParallelLinear, or with `fp8_head` (Megatron-Core
        0.18.0 `fp8_output_proj`: models/gpt/gpt_model.py builds the output layer as
        extensions/transformer_engine.py TELMHeadColumnParallelLinear, a TE linear layer run
        under the MXFP8 autocast, `get_fp8_context`) a quantised linear layer as the
        transformer layers' are: its input cast (not fed by a fused norm: the final norm is
        its own module) and the GEMM at the quantised rate; backward, `_head_bwd`."""
        m, elem, tokens = self.job.model, self.elem, self.tokens
        V = m.vocab / self.tp
        self._ew(b, pre + "final norm", 2 * self.sp_tokens * m.hidden * elem, HEAD, "norm")
        if self.sp:
            self._coll(b, pre + "head all-gather", "ag", "tp", tokens * m.hidden * elem, HEAD)
        if self.fp8 and self.job.fp8_head:
            self._linear(b, pre + "logits", tokens, V, m.hidden, HEAD)
        else:
            self._gemm(b, pre + "logits", tokens, V, m.hidden, HEAD)
        nbytes, kernels = CROSS_ENTROPY[self.job.cross_entropy_kernels][0]
        self._ew(b, pre + "cross entropy", tokens * V * nbytes(elem), HEAD, kernels=kernels)
        self._coll(b, pre + "loss all-reduce", "ar", "tp", 8 * tokens, HEAD)

    def _head_bwd(self, b, pre=""):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        V = m.vocab / self.tp
        nbytes, kernels = CROSS_ENTROPY[self.job.cross_entropy_kernels][1]
        self._ew(b, pre + "cross entropy bwd", tokens * V * nbytes(elem), HEAD, kernels=kernels)
        self._linear_bwd(b, pre + "logits", tokens, V, m.hidden, HEAD, column=True,
                         layer_linear=self.job.fp8_head)
        self._ew(b, pre + "final norm bwd", 3 * self.sp_tokens * m.hidden * elem, HEAD, "norm")
