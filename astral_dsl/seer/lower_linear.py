"""The lowering's GEMMs and memory-bound kernels (a mixin of lower.Lowering, whose docstring
tells the model): a GEMM, a linear layer's forward (quantised after its cast, after its TP
all-gather) and backward (data and weight gradients, their TP reductions and overlaps),
elementwise kernels, a gated activation's clamps, and the sum of separate layers' data
gradients."""
from __future__ import annotations

from astral_dsl.seer.template import Op

# HBM bytes per element of quantising a 16-bit tensor for a GEMM and for its transpose (the
# weight gradient's operand), (fed by a norm, otherwise), as Transformer Engine runs it (2.8.0 and
# 2.10.0, csrc/extensions/normalization.cpp `layernorm_fwd` / `rmsnorm_fwd`, csrc/quantizer.cpp):
# delayed scaling fuses the cast into the norm that feeds QKV and fc1 (LayerNormLinear, the
# norm's FULLY_FUSED kernel) and otherwise reads 2 and writes both copies; current per-tensor
# scaling and row / 128-block scaling need the tensor's amax first: one more read. The
# block-scaled formats are not fused into the norm (MXFP8 only with NVTE_NORM_FWD_USE_CUDNN,
# NVFP4 never: the norm writes 16 bits and the quantiser reads them): MXFP8 reads 2 and writes
# both copies with an 8-bit scale per 32 elements each (OCP Microscaling Formats MX v1.0: 2 x 1
# + 2 x 1/32; TE's cast kernel writes both in one pass, common/cast/mxfp8/quantize_mxfp8.cuh),
# NVFP4 reads 2 and writes two 4-bit copies with an fp8 scale per 16 elements each (NVIDIA's
# Blackwell documentation: 2 x 0.5 + 2 x 1/16).
CAST_BYTES = {"delayed": (0.0, 4.0), "current": (6.0, 6.0), "rowwise": (6.0, 6.0),
              "blockwise": (6.0, 6.0), "mxfp8": (4.0625, 4.0625), "nvfp4": (3.125, 3.125)}
# On Blackwell (sm 10.x) Transformer Engine's per-tensor fp8 GEMMs take any layout
# (pytorch/utils.py `is_non_tn_fp8_gemm_supported`), so its per-tensor quantisers write the
# row-wise copy alone, which the weight gradient's GEMM reads too (csrc/quantizer.cpp,
# Float8Quantizer and Float8CurrentScalingQuantizer `create_tensor`: `with_transpose =
# columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()`): one byte less written. Current
# scaling's cast of a norm's output takes the amax the norm kernel computed with its 16-bit
# output (normalization.cpp FUSED_NORM_AMAX_FP8, then `quantize_with_amax`: no amax pass), reads
# 2 and writes 1; otherwise the amax pass reads 2, the cast reads 2 and writes 1
# (`quantize_impl`: nvte_compute_amax, nvte_compute_scale_from_amax, nvte_quantize_v2). The
# norm's amax is TE 2.7's (2.7.0 `create_hp_tensor_with_amax`; 2.5.0 and 2.6.0 run an amax pass
# after the norm, 5 bytes): NeMo 25.09 and later; the GB200 rows of 25.04 and 25.07, whose TE is
# not known, are priced so too (2 bytes of the norm-fed elements too few, ~0.2 % of a step).
CAST_BYTES_BLACKWELL = {"delayed": (0.0, 3.0), "current": (3.0, 5.0)}
# Before Blackwell the per-tensor GEMMs take TN alone, so the quantiser writes the transpose too
# (1 + 1), but the norm's amax is the same TE 2.7 fusion: current scaling's norm-fed cast reads
# 2 and writes 2 (the other casts 6, as CAST_BYTES)
CAST_BYTES_NORM_AMAX = {"current": (4.0, 6.0)}

# torch's micro-pipelined TP (async TP) runs its TP GEMM steps on two streams, the current one
# and a backend stream, alternately, "In addition to computation/communication overlapping, the
# strategy allows for computation/computation overlapping, greatly reducing quantization
# inefficiency" (torch 2.6.0 distributed/_symmetric_memory/__init__.py,
# _pipelined_multi_all_gather_and_consume and _pipelined_produce_and_all2all): two steps' GEMMs
# share the GPU at a time, their tiles counted together (costs.Costs.gemm `streams`)
RING_STREAMS = 2


def cast_bytes(job, arch: str):
    """(norm-fed, other) HBM bytes per element of a quantised job's casts (CAST_BYTES) on GPU
    generation `arch`. Under Megatron FSDP the NeMo and Megatron-Bridge performance recipes run
    cuDNN's norms (NVTE_NORM_FWD_USE_CUDNN = 1: NeMo 2.4.0 scripts/performance/llm/
    pretrain_llama31_405b.py, "Needed to enable CuDNN LN for FSDP overlap"; Megatron-Bridge 0.6.0
    perf_recipes/llama/gb200/llama3.py, the `use_megatron_fsdp` Llama 3 70B recipes), which fuse
    MXFP8's cast into the norm (the scales alone written beyond the norm's output) and leave
    current scaling's unfused (normalization.cpp: no FUSED_NORM_AMAX_FP8 under cuDNN)."""
    key = job.dtype if job.dtype in CAST_BYTES else job.fp8_recipe
    te = job.framework == "megatron"
    by_arch = CAST_BYTES_BLACKWELL if arch == "blackwell" else CAST_BYTES_NORM_AMAX
    fused, other = (by_arch if te else {}).get(key, CAST_BYTES[key])
    if te and job.parallel.zero >= 3 and key in ("mxfp8", "current"):
        fused = 0.0625 if key == "mxfp8" else other
    return fused, other


def stream_kind(name: str, cat: str) -> str:
    """The kind of a memory-bound kernel named `name` of category `cat` (costs.STREAM_RATE): a
    softmax (the cross-entropy, a softmax over the vocabulary on every job's head, and the
    unfused attention's), a dropout, a norm or a plain stream; permutation and rotary
    embeddings are named by their callers."""
    if "softmax" in name or "cross entropy" in name:
        return "softmax"
    return "dropout" if "dropout" in name else "norm" if cat == "norm" else "stream"


class LinearOps:
    """Lowering's GEMM and elementwise operators (attributes: lower.Lowering)."""

    def _gemm(self, b, name, m, n, k, layer, batch=1.0, cat="gemm", join=True, extra=(),
              fp8=False, streams=None, expert=False, parts=(), inner=False, chunks=1):
        """A GEMM [m, k] x [k, n]; `parts`: run as separate GEMMs over these shares of its
        output columns n, or (`inner`) of its inner dimension k, each writing the whole output
        (the caller sums them: `_linear_bwd`); `chunks`: each run as that many GEMMs of
        1/chunks of its rows (`ring`), RING_STREAMS at a time."""
        if fp8 and self.swizzle:
            self._swizzle(b, name, m, n, k, layer, batch)
        t = f = nb = 0.0
        if chunks > 1:
            batch, streams = batch * chunks, RING_STREAMS
        for p in parts or (1.0,):
            dims = (m / chunks, n, k * p) if inner else (m / chunks, n * p, k)
            tp, fp, bp = self.c.gemm(name.split(" ")[0], *dims, batch, fp8, streams, expert)
            t, f, nb = t + tp, f + fp, nb + bp
        shape = f"{int(m)}x{int(n)}x{int(k)}"
        if self.c.table is not None:          # the operator as the trace shows it, whole
            whole = self.c.measured(name, shape, fp8)
            t = t if whole is None else whole
        return b.add(Op(name, cat, "compute", t, f, nb, "", layer, shape=shape),
                     join=join, extra=extra)

    def _swizzle(self, b, name, m, n, k, layer, batch):
        """The swizzle of a block-scaled GEMM's operands' scales into cuBLAS's layout, before
        it (`scale_swizzle`): Transformer Engine 2.11.0 csrc/extensions/gemm.cpp:242-245 calls
        `swizzle_scaling_factors` on both operands of every MXFP8 / NVFP4 GEMM (util.cpp:12-80:
        one `nvte_swizzle_scaling_factors` kernel each, reading the operand's scales and writing
        them anew; a grouped GEMM's operands by one multi-tensor kernel each, gemm.cpp:503-506),
        the scales its quantisers wrote in their compact layout (2.5.0, 2.9.0 and 2.11.0 have
        no swizzled-scale option; 2.16.0's MXFP8Tensor carries `with_gemm_swizzled_scales`).
        Bytes: an [m, k] x [k, n] GEMM's operands hold (m k + k n) / B scales (B = 32 elements
        a scale in MXFP8, 16 in NVFP4), each read and written once."""
        block = 32 if self.job.dtype == "mxfp8" else 16
        self._ew(b, name + " swizzle", 2 * (m * k + k * n) * batch / block, layer, kernels=2,
                 kind="stream")

    def _linear(self, b, name, m, n, k, layer, batch=1.0, norm_fed=False, gather=None,
                streams=None, expert=False, parts=(), chunks=1):
        """The forward GEMM of a transformer layer's linear layer: quantised for a quantised
        job, after the cast of its input (cast_bytes per element, by recipe and GPU: for the
        layers a norm feeds, `norm_fed`, TE's LayerNormLinear, QKV and fc1, whose input is the
        norm's output, the rank's sequence-parallel shard, delayed scaling's cast fused into the
        norm and current scaling's amax taken from it). `gather`: the name of the TP all-gather
        of its `k`-wide input (with SP), after the cast: Transformer Engine quantises the rank's
        shard and gathers the quantised data (module/layernorm_linear.py,
        `gather_along_first_dim(..., quantizer=input_quantizer)`); blocking, or split with the GEMM (`tp_overlap = full`).
        `parts`: the layer is separate linear layers sharing the input (`separate`), whose
        casts torch.compile computes once (common subexpressions). `chunks`: a row-parallel
        layer's GEMM split with its reduce-scatter (`ring`); one fed by an all-gather it is split
        with (_tp_gather) is split with it."""
        self._quantise(b, name, m, k, layer, batch, norm_fed, streams)
        if self.fp8 and gather is not None:
            self._amax_tp(b, name, layer)
        op = self._tp_gather(b, gather, layer, k) if gather is not None else None
        b.fp8_gemms += 1 if self.fp8 else 0
        if op is not None:            # split with its all-gather
            chunks = self.ring
        g = self._gemm(b, name, m, n, k, layer, batch=batch, fp8=self.fp8, streams=streams,
                       expert=expert, parts=parts, chunks=chunks)
        if op is not None:
            self._overlap(b, op, g)
            b.pending.append(op)
        return g

    def _quantise(self, b, name, m, k, layer, batch=1.0, norm_fed=False, streams=None):
        """The cast of a quantised linear layer's [m, k] input before its GEMM (`_linear`);
        nothing for a 16-bit job."""
        extra = self.cast[0 if norm_fed else 1] if self.fp8 else 0
        if extra:
            rows = self.sp_tokens if norm_fed and self.ag_quantised else m
            self._ew(b, name + " quantise", extra * rows * k * batch, layer,
                     kernels=self.split_kernels(batch, streams))

    def _amax_tp(self, b, name, layer):
        """Current scaling's amax of a sequence-parallel layer's gathered operand (a
        column-parallel layer's input, a row-parallel one's output gradient), all-reduced (max,
        one fp32) over the TP group before its scale is computed, the stream waiting for it
        (Transformer Engine 2.10.0 module/layernorm_linear.py and linear.py
        `_customize_quantizers_float8_current_scaling`: `with_amax_reduction` with the TP group
        under sequence parallelism; csrc/quantizer.cpp Float8CurrentScalingQuantizer
        `quantize_impl`: `allreduce(...)->wait()`)."""
        if self.cs_amax:
            self._coll(b, name + " amax all-reduce", "ar", "tp", 4.0, layer)

    def _dgrad_sum(self, b, name, elems, parts, layer, join=True):
        """The sum of `parts` data gradients of `elems` elements each (separate linear layers
        sharing an input): one kernel reading them all when compiled (Inductor fuses the
        additions), parts - 1 additions of two when eager; nothing for one part."""
        if parts <= 1:
            return
        eager = not self.job.torch_compile
        self._ew(b, name + " dgrad sum",
                 (3 * (parts - 1) if eager else parts + 1) * elems * self.elem, layer,
                 kernels=parts - 1 if eager else 1, kind="stream", join=join)

    @staticmethod
    def split_kernels(batch, streams) -> int:
        """The quantise kernels of a batch of `batch` experts' inputs (or output gradients) on
        the per-expert path (`streams` above 1: costs.GEMM_STREAMS): Transformer Engine's
        GroupedLinear quantises them with `tex.split_quantize` (TE 2.11 module/grouped_linear.py),
        whose C++ (csrc/extensions/cast.cpp, split_quantize -> multi_tensor_quantize_impl:
        "Currently only have fused kernel for FP8 delayed scaling") runs each split's quantizer
        in turn: one kernel an expert, taken for every recipe (docs/seer.md, stop 62: delayed
        scaling's fused kernel and current scaling's three a split measured worse). One
        kernel otherwise (the grouped GEMM's path)."""
        return int(batch) if streams is not None and streams > 1 else 1

    def _ew(self, b, name, nbytes, layer, cat="elementwise", kernels=1, kind=None, join=True):
        kind = kind or stream_kind(name, cat)
        b.add(Op(name, cat, "compute", self.c.stream(name, nbytes, kernels, kind), 0.0, nbytes, "",
                 layer, kernels=kernels), join=join)

    def _clamp(self, b, name, elems, layer, backward=False):
        """A gated activation's clamped inputs (`activation_clamp`), `elems` fc1 outputs:
        Megatron-Core 0.16.1 (fusions/fused_bias_geglu.py, weighted_bias_quick_geglu_impl;
        transformer/mlp.py) splits fc1's output with `chunk`, clamps the gate half from above
        (`clamp(min=None, max=v)`) and the linear half from both sides, and concatenates them
        before the fused activation, eager: two clamps and the concatenation each read and write
        their elements (4 passes, 3 kernels). Backward, autograd's `clamp_backward` (PyTorch
        FunctionsManual.cpp) is `where(mask, grad, 0)`: the one-sided mask `x <= v` (read x,
        write a 1-byte mask: 1.5 passes of 2-byte elements) and `where` (read mask and grad,
        write: 2.5): 4 passes of its half; the two-sided mask `(x >= -v).logical_and_(x <= v)`
        (1.5 + 1.5 + 1.5) and `where` (2.5): 7 of its half; then `chunk`'s backward (autograd's
        split backward) concatenates the halves' gradients (2 passes): (4 + 7) / 2 + 2 = 7.5
        passes of all elements, 2 + 4 + 1 = 7 kernels (counted with torch 2.13's profiler)."""
        if self.job.model.clamped:
            halves, kernels = (15, 7) if backward else (8, 3)     # passes x 2
            self._ew(b, name, halves * elems * self.elem / 2, layer, kernels=kernels)

    def _linear_bwd(self, b, name, m_, n, k, L, column: bool, layer_linear: bool = True,
                    grad_gather=None, parts=()):
        """Backward of y[m,n] = x[m,k] w[k,n]: dgrad and wgrad; for a column-parallel layer the
        input-gradient reduction (and, with SP, the input re-gather) overlap the GEMMs
        (`tp_overlap = backward` or `full`: Megatron-LM's asynchronous TP all-reduce), or follow
        them on the critical path (`tp_overlap = none`: the reduction of the autograd function
        that copies the input to the TP region, after the layer's whole backward). A transformer
        layer's linear layer (`layer_linear`) of a quantised job casts its output gradient with
        its transpose (the recipe's unfused cast) and runs both GEMMs quantised (Transformer
        Engine's default recipes: quantised data and weight gradients); the logits layer stays
        in bf16. `grad_gather`: the name of the SP all-gather of a row-parallel layer's output
        gradient, after its cast (of the rank's shard: TE quantises before it gathers,
        module/linear.py), blocking or split with the data-gradient GEMM (`tp_overlap =
        full`). A quantised layer's gathers move quantised data (ag_bytes). `parts`: separate
        linear layers sharing the input (`separate`): their data gradients are summed (one
        fused kernel when compiled, pairwise adds when eager). A column-parallel layer's
        re-gathered input and reduced input gradient are `k` elements a token (the hidden size,
        or MLA's latent for its up-projections)."""
        elem, tokens = self.elem, self.tokens
        tp = column and self.tp > 1
        fp8 = self.fp8 and layer_linear
        gathered = (self.ag_bytes if fp8 else elem) * tokens * k
        if fp8:
            rows = self.sp_tokens if grad_gather is not None and self.ag_quantised else m_
            self._ew(b, name + " grad quantise", self.cast[1] * rows * n, L)
            if grad_gather is not None:
                self._amax_tp(b, name + " grad", L)
        grad_op = self._tp_gather(b, grad_gather, L, n) if grad_gather is not None else None
        # which of a column-parallel layer's collectives overlap its GEMMs: none (`tp_overlap =
        # none`), both (Megatron-LM's), or under torch's micro-pipelined TP (`ring`) those it
        # fuses (lower.py, `gather_fused`): the input re-gather where its GEMMs read it
        # unquantised or gathered quantised, the input-gradient reduce-scatter where it is one
        # GEMM's output, not the sum of separate layers' (`parts`); the rest as with `none`
        overlap = tp and self.job.tp_overlap != "none"
        ring = overlap and self.ring > 1
        gather_ovl = overlap and (self.gather_fused or not fp8)
        red_ovl = overlap and not (ring and parts)
        kind = ("rs", " grad reduce-scatter") if self.sp else ("ar", " grad all-reduce")
        cast = fp8 and not self.ag_quantised      # a cast reads the re-gathered input
        if tp and not (gather_ovl or red_ovl):
            if self.sp:
                self._coll(b, name + " input all-gather", "ag", "tp", gathered, L)
                self._dim_copy(b, name + " input all-gather", gathered, L, fused=cast)
            self._gemm(b, name + " dgrad", m_, k, n, L, fp8=fp8, parts=parts, inner=True)
            self._dgrad_sum(b, name, m_ * k, len(parts), L)
            self._gemm(b, name + " wgrad", k, n, m_, L, fp8=fp8, parts=parts)
            self._grad_copy(b, name, k * n, L)
            self._dim_copy(b, name + kind[1], tokens * k * elem, L, fused=bool(parts))
            self._coll(b, name + kind[1], kind[0], "tp", tokens * k * elem, L)
            return
        gather = None
        if tp and self.sp:
            gather = self._coll(b, name + " input all-gather", "ag", "tp", gathered, L,
                                chain=not gather_ovl)
            if gather_ovl:
                b.pending.remove(gather)
            else:
                self._dim_copy(b, name + " input all-gather", gathered, L, fused=cast)
                gather = None
        d = self._gemm(b, name + " dgrad", m_, k, n, L, join=False, fp8=fp8, parts=parts,
                       inner=True, chunks=self.ring if red_ovl or grad_op is not None else 1)
        self._dgrad_sum(b, name, m_ * k, len(parts), L, join=False)
        if grad_op is not None:
            self._overlap(b, grad_op, d)
            b.pending.append(grad_op)
        red = None
        if red_ovl:
            red = self._coll(b, name + kind[1], kind[0], "tp", tokens * k * elem, L, chain=False)
        w = self._gemm(b, name + " wgrad", k, n, m_, L, join=False,
                       extra=(gather,) if gather is not None else (), fp8=fp8, parts=parts)
        if self.groups["tp"].hosts <= 1:   # NVLink collectives take SMs and HBM from the GEMMs
            overlapped = sum(b.ops[i].dur for i in (gather, red) if i is not None)
            b.ops[w].dur += self.c.cal.interfere * overlapped
        self._grad_copy(b, name, k * n, L)
        if red is not None and self.sp:
            self._ring_sum(b, name + " grad reduce-scatter sum", L)
        if tp and not red_ovl:
            self._dim_copy(b, name + kind[1], tokens * k * elem, L, fused=bool(parts))
            self._coll(b, name + kind[1], kind[0], "tp", tokens * k * elem, L)

    def _grad_copy(self, b, name, params, layer):
        """Megatron FSDP's copy of a weight gradient into its main-gradient buffer, `params`
        elements: Megatron-Bridge (0.3.0 training/config.py: "Gradient accumulation fusion is
        not supported with Megatron FSDP") and NeMo 2.x's performance scripts (nemo_toolkit
        2.4.0 scripts/performance/helpers.py, set_mcore_fsdp_configs) turn Transformer Engine's
        gradient accumulation fusion off, so the weight-gradient GEMM writes `param.grad` and
        Megatron-Core's FSDP hook copies it into the main gradient (0.13.0 distributed/
        custom_fsdp/fully_sharded_data_parallel.py, `param.main_grad.copy_(param.grad)` with
        optim_grads_params): a read of the 16-bit gradient and a write in grad_bytes, after the
        GEMM. Nothing otherwise (the fused GEMM accumulates into the main gradient; PyTorch
        FSDP2 reduce-scatters `param.grad` itself)."""
        if self.grad_copy:
            self._ew(b, name + " grad copy", (self.elem + self.job.grad_bytes) * params, layer,
                     join=False)
