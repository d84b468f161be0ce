"""The lowering's attention sub-block (a mixin of lower.Lowering, whose docstring tells the
model): the input norm, the QKV projections (one GEMM, separate ones, or multi-head latent
attention's down- and up-projections), RoPE, fused or unfused attention (context
parallelism's ring: lower_ring.py), the output projection and their backward."""
from __future__ import annotations

from astral_dsl.seer.lower_linear import CAST_BYTES
from astral_dsl.seer.template import Op


# Megatron-Core 0.16.1 runs RoPE unfused when YaRN's attention factor (mscale) is not 1, which
# Transformer Engine's fused RoPE does not take (models/common/embeddings/rope_utils.py,
# apply_rotary_pos_emb: "Using unfused implementation"): GPT-OSS's YaRN factor 32 without
# mscale fields gives 0.1 ln 32 + 1 = 1.35 (yarn_rotary_pos_embedding.py). Its
# _apply_rotary_pos_emb_bshd, in bytes per element of the queries and keys (bf16): t * cos 2 + 2,
# _rotate_half's negated half 1 + 1 and its cat 2 + 2, times sin 2 + 2, the sum 2 + 2 + 2, the
# cat with the empty pass-through part 2 + 2: 24 against the fused kernel's 4, in 6 kernels; its
# autograd backward (the gradient times sin 4, the half's negation 2, chunk's cat 4, times cos 4,
# the two gradients summed 6): 20 against 4, in 5 kernels (multi-head latent attention takes its
# own rotary path, with an attention factor of 1 for DeepSeek-V3's mscale = mscale_all_dim)
MCORE_YARN_ROPE = ((24 / 4, 6), (20 / 4, 5))
# Transformer Engine's MXFP8 attention (`attention_precision = fp8`: Megatron-Core's
# fp8_dot_product_attention, passed as the MXFP8BlockScaling recipe's `fp8_dpa`: 0.18.0/0.19.0
# fp8_utils.py get_fp8_recipe), as TE 2.16-2.20.2 run it (pytorch/attention/dot_product_
# attention/backends.py FusedAttnFunc, utils.py): the forward quantises the bf16 queries, keys
# and values, each row-wise and column-wise (MXFP8 blocks along the head and along the
# sequence, for the backward's products too: `used_in_backward`), one cast kernel each
# (mxfp8_quantize_fast_path; CAST_BYTES' 2 read, 2 x (1 + 1/32) written), then permutes and
# swizzles their scales in two batched kernels each way (4 x 2/32 more); the kernel quantises
# the scores and probabilities itself (S and dP quantizers None) and writes the output in bf16
# (no O cast: `bwd_requires_o_fp8` False for MXFP8). The backward quantises the output gradient
# the same way (one cast, four scale kernels) and writes the bf16 gradients of Q, K and V. No
# amax pass: the block scales come with the cast. (bytes per element, kernels), forward and
# backward.
FP8_ATTENTION = ((CAST_BYTES["mxfp8"][1] + 4 * 2 / 32, 3 + 4),
                 (CAST_BYTES["mxfp8"][1] + 4 * 2 / 32, 1 + 4))



class AttentionOps:
    """Lowering's attention operators (attributes: lower.Lowering)."""

    def _flash(self, b, name, L, backward: bool):
        """Fused attention of a rank's heads (_flash_args), one operator."""
        b.add(Op(*self._flash_args(name, L, backward)))

    def _flash_args(self, name, L, backward: bool, steps: int = 1) -> tuple:
        """Fused attention of a rank's heads: the FLOPs of the score and context products over
        the keys each query sees (causal: half the sequence on average; a window: the window),
        priced by part, full and windowed, at the efficiency of its key length. `steps` > 1:
        one of the context-parallel ring's steps (_cp_attention), a 1/steps share of the FLOPs
        and bytes on at most s / steps keys."""
        m, s = self.job.model, self.job.seq
        parts = [(1.0, s / 2, s / steps)]
        if m.window and m.window < s:
            parts = [(1 - m.window_share, s / 2, s / steps),
                     (m.window_share, m.window, min(m.window, s / steps))]
        return self._flash_priced(name, L, backward, s / self.cp, steps, parts, steps)

    def _flash_priced(self, name, L, backward: bool, rows: float, share: float, parts,
                      io_share: float) -> tuple:
        """The operator's arguments of fused attention of `rows` query rows of the rank's heads,
        1 / `share` of their FLOPs and 1 / `io_share` of the rank's query, key, value and output
        bytes, over `parts`: (share of the FLOPs, keys a query sees on average, the key length
        its efficiency is priced at)."""
        m, elem, bsz = self.job.model, self.elem, self.job.micro
        per_key = 2 * bsz * self.heads * rows * (m.qk_dim + m.v_dim) * (2.5 if backward else 1)
        per_key /= share
        heads_io = 2 * self.heads * m.qk_dim + self.kv_heads * (m.qk_dim + m.v_dim)
        nb = (2 if backward else 1) * elem * self.tokens * heads_io / io_share
        flops = t = 0.0
        for part, mean_keys, keys in parts:
            if part <= 0:
                continue
            f = part * per_key * mean_keys
            flops += f
            t += self.c.flash("flash_bwd" if backward else "flash_fwd", f, part * nb, backward,
                              m.head_dim, keys, fp8=self.job.fp8_attention)
        if self.c.table is not None:          # the operator as the trace shows it, whole
            whole = self.c.measured(name, f"flops{int(flops)}")
            t = t if whole is None else whole
        return name, "attention", "compute", t, flops, nb, "", L

    @property
    def _rotary(self) -> bool:
        """Whether the attention layers apply rotary embeddings: not a GPT-style `gelu` model's
        (learned positions), nor a hybrid model's under Megatron-Core, whose MambaModel defaults
        to `position_embedding_type = 'none'` (models/mamba/mamba_model.py:76, 0.16.1), as
        Megatron-Bridge's MambaModelProvider does (models/mamba/mamba_provider.py:151, 0.4.2)
        and its Nemotron-H bridge sets (models/nemotronh/nemotron_h_bridge.py:272, 0.6.0:
        "Mamba doesn't use position embeddings")."""
        m = self.job.model
        return not (m.gpt or (m.hybrid and self.job.framework == "megatron"))

    def _rope(self, b, L, pre, backward=False):
        """Rotary position embeddings on the queries and keys (their rotary part with MLA):
        read and write once (Transformer Engine's fused RoPE; costs.EAGER when eager), or
        Megatron-Core's unfused RoPE for YaRN or without `rope_fusion` (MCORE_YARN_ROPE); after
        the query-key norm (_qk_norm). A NoPE layer (`nope_every`) has neither. YaRN with
        `rope_fusion` stated true (`yarn_rope_fusion`) takes the fused kernel: Megatron-Core
        before 0.16 does whenever `apply_rope_fusion` is set, its attention factor unapplied
        (0.15.0 models/common/embeddings/rope_utils.py, apply_rotary_pos_emb, lines 268-286)."""
        m = self.job.model
        if m.nope(L):
            return
        width = ((self.heads + 1) * m.rope_dim if m.mla
                 else (self.heads + self.kv_heads) * m.head_dim)
        name = pre + ("rope bwd" if backward else "rope")
        nbytes = 2 * self.tokens * width * self.elem
        self._qk_norm(b, L, name, nbytes, backward)
        yarn = m.yarn_factor > 1 and not self.job.yarn_rope_fusion
        if (yarn or not self.job.rope_fusion) and not m.mla and \
                self.job.framework == "megatron":
            ratio, kernels = MCORE_YARN_ROPE[1 if backward else 0]
            self._ew(b, name, ratio * nbytes, L, kernels=kernels)
        else:
            self._ew(b, name, nbytes, L, kind="rope")

    def _qk_norm(self, b, L, rope, nbytes, backward):
        """The query-key norm (`qk_norm`) of a Megatron-Core layer, on the `nbytes` of queries
        and keys its RoPE (`rope`, the operator's name) reads and writes: Qwen3's RMSNorm
        (Megatron-Bridge 0.6.2 models/qwen/qwen3_moe_bridge.py and NeMo 2.4.0
        collections/llm/gpt/model/qwen3.py: `qk_layernorm = True`, Transformer Engine's RMSNorm
        as q_layernorm and k_layernorm) or Llama 4's L2 norm (NeMo 2.4.0 Llama4Config
        `qk_l2_norm = True`: Megatron-Core 0.14.0 transformer/torch_norm.py L2Norm, jit-fused),
        each a read and a write forward and 1.5 times that backward (the input and the output
        gradient read, the input gradient written), one kernel for the queries and one for the
        keys. Other frameworks' norm kernels are not read (docs/seer.md, stop 62): none."""
        norm = self.job.model.qk_norm
        if norm == "none" or self.job.framework != "megatron":
            return
        label = "qk norm" if norm == "rms" else "qk l2 norm"
        self._ew(b, rope.replace("rope", label), (1.5 if backward else 1.0) * nbytes, L,
                 kernels=2)

    def _fp8_attention_cast(self, b, L, pre, backward: bool):
        """MXFP8 attention's casts (FP8_ATTENTION): the forward's of the rank's queries, keys
        and values, the backward's of its output gradient."""
        if not self.job.fp8_attention:
            return
        m = self.job.model
        width = (self.heads * m.v_dim if backward
                 else self.heads * m.qk_dim + self.kv_heads * (m.qk_dim + m.v_dim))
        per, kernels = FP8_ATTENTION[1 if backward else 0]
        self._ew(b, pre + ("attn dO quantize" if backward else "attn qkv quantize"),
                 per * self.tokens * width, L, kernels=kernels)

    def _attention_fwd(self, b, L, pre=""):
        m, elem = self.job.model, self.elem
        s, bsz = self.job.seq, self.job.micro
        rows = s / self.cp
        if self.job.attention == "unfused":
            S = bsz * self.heads * rows * s
            self._gemm(b, pre + "attn scores", rows, s, m.qk_dim, L, batch=bsz * self.heads,
                       cat="attention")
            self._ew(b, pre + "softmax", 2 * S * elem, L)
            if m.gpt:
                self._ew(b, pre + "attn dropout", (2 * elem + 1) * S, L)
            self._gemm(b, pre + "attn context", rows, m.v_dim, s, L, batch=bsz * self.heads,
                       cat="attention")
            return
        self._fp8_attention_cast(b, L, pre, backward=False)
        if self.cp > 1:
            kv = bsz * rows * self._ring_kv_heads() * (m.qk_dim + m.v_dim) * elem
            self._cp_attention(b, pre + "flash attention", pre + "cp ring", kv, L, False)
            return
        self._flash(b, pre + "flash attention", L, backward=False)

    def _qkv_fwd(self, b, L, pre, gather):
        """The query, key and value projections: one QKV GEMM, or multi-head latent attention
        (DeepSeek-V3 technical report, section 2.1.1) as Megatron-Core 0.16.1 builds it with
        Transformer Engine (models/gpt/gpt_layer_specs.py, the MLA layer spec): the input norm
        apart (TENorm), the down-projections `backend.linear()` (TELinear, parallel mode
        "duplicated": weights replicated over TP, run on the rank's s / TP sequence-parallel
        shard, their input cast unfused, no gather), the rotary key part of the key/value
        latent gathered over TP under SP (bf16, rope_dim wide: transformer/
        multi_latent_attention.py, get_query_key_value_tensors,
        gather_from_sequence_parallel_region(k_pos_emb)), then the up-projections (_mla_up)."""
        m, h = self.job.model, self.job.model.hidden
        if not m.mla:
            q, kv = self.heads * m.qk_dim, self.kv_heads * m.head_dim
            self._linear(b, pre + "qkv", self.tokens, q + 2 * kv, h, L, norm_fed=True,
                         gather=gather, parts=self._qkv_parts(q, kv))
            return
        if m.q_lora:
            self._linear(b, pre + "q down", self.sp_tokens, m.q_lora, h, L)
        else:     # the query projection from the hidden state: column-parallel, norm-fed
            self._linear(b, pre + "q", self.tokens, self.heads * m.qk_dim, h, L, norm_fed=True,
                         gather=gather)
        self._linear(b, pre + "kv down", self.sp_tokens, m.kv_lora + m.rope_dim, h, L)
        if self.sp:
            self._coll(b, pre + "k pos all-gather", "ag", "tp",
                       self.tokens * m.rope_dim * self.elem, L)
        self._mla_up(b, L, pre)

    def _qkv_parts(self, q, kv):
        """The shares of the QKV GEMM's columns run as separate GEMMs (`separate`), else ()."""
        return (q / (q + 2 * kv), kv / (q + 2 * kv), kv / (q + 2 * kv)) if self.separate else ()

    def _mla_up(self, b, L, pre):
        """MLA's up-projections from the query and key/value latents, each a Transformer Engine
        LayerNormLinear (TELayerNormColumnParallelLinear with `qk_layernorm`, gpt_layer_specs.py,
        0.16.1): the latent's norm on the rank's sequence shard, the norm-fed cast, under SP
        the all-gather of the normalised latent (q_lora or kv_lora wide), the column-parallel
        GEMM. Recomputed whole in the backward with Megatron-Core's `mla_up_proj` module
        (multi_latent_attention.py, qkv_up_proj_and_rope_apply under CheckpointWithoutOutput)."""
        m, tokens, sp_tokens = self.job.model, self.tokens, self.sp_tokens
        ups = [("q", self.heads * m.qk_dim, m.q_lora)] if m.q_lora else []
        for which, n, lora in ups + [("kv", self.heads * (m.head_dim + m.v_dim), m.kv_lora)]:
            self._ew(b, pre + which + " norm", 2 * sp_tokens * lora * self.elem, L, "norm")
            self._linear(b, pre + which + " up", tokens, n, lora, L, norm_fed=True,
                         gather=pre + which + " up all-gather")

    def _qkv_bwd(self, b, L):
        """The backward of _qkv_fwd: each up-projection column-parallel over its latent (the
        latent re-gathered, its gradient reduce-scattered, q_lora or kv_lora wide), its
        latent norm's backward on the shard, the rotary key part's gradient reduce-scattered,
        the down-projections on the shard with no TP collective. Their replicated weights'
        gradients are summed over TP once a step (Megatron-Core 0.16.1 distributed/
        finalize_model_grads.py, _allreduce_non_tensor_model_parallel_grads: the parameters
        TELinear marks `sequence_parallel`, extensions/transformer_engine.py), as the norms'
        weights are: not priced (Seer prices no per-step TP reduction of the norms either)."""
        m, tokens, sp_tokens, h = self.job.model, self.tokens, self.sp_tokens, self.job.model.hidden
        if not m.mla:
            q, kv = self.heads * m.qk_dim, self.kv_heads * m.head_dim
            self._linear_bwd(b, "qkv", tokens, q + 2 * kv, h, L, column=True,
                             parts=self._qkv_parts(q, kv))
            return
        self._linear_bwd(b, "kv up", tokens, self.heads * (m.head_dim + m.v_dim), m.kv_lora, L,
                         column=True)
        self._ew(b, "kv norm bwd", 3 * sp_tokens * m.kv_lora * self.elem, L, "norm")
        if self.sp:
            self._coll(b, "k pos grad reduce-scatter", "rs", "tp",
                       tokens * m.rope_dim * self.elem, L)
        self._linear_bwd(b, "kv down", sp_tokens, m.kv_lora + m.rope_dim, h, L, column=False)
        if m.q_lora:
            self._linear_bwd(b, "q up", tokens, self.heads * m.qk_dim, m.q_lora, L,
                             column=True)
            self._ew(b, "q norm bwd", 3 * sp_tokens * m.q_lora * self.elem, L, "norm")
            self._linear_bwd(b, "q down", sp_tokens, m.q_lora, h, L, column=False)
        else:
            self._linear_bwd(b, "q", tokens, self.heads * m.qk_dim, h, L, column=True)

    def _attn_block_fwd(self, b, L, pre):
        m, tokens = self.job.model, self.tokens
        self._norm_fwd(b, pre + "input norm", L)
        self._qkv_fwd(b, L, pre, pre + "attn all-gather")
        if self._rotary:
            self._rope(b, L, pre)
        self._attention_fwd(b, L, pre)
        self._linear(b, pre + "out proj", tokens, m.hidden, self.heads * m.v_dim, L,
                     chunks=self.ring)
        self._tp_out(b, pre + "attn", L)
        self._residual(b, pre + "residual", L)

    def _attn_block_bwd(self, b, L):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        self._residual(b, "residual bwd", L)
        self._linear_bwd(b, "out proj", tokens, h, self.heads * m.v_dim, L, column=False,
                         grad_gather="attn grad all-gather")
        self._attention_bwd(b, L)
        if self._rotary:
            self._rope(b, L, "", backward=True)
        self._qkv_bwd(b, L)
        self._ew(b, "input norm bwd", 3 * sp_tokens * h * elem, L, "norm")

    def _attention_bwd(self, b, L):
        m, elem, s, bsz = self.job.model, self.elem, self.job.seq, self.job.micro
        rows = s / self.cp
        if self.job.attention == "unfused":
            S, nb = bsz * self.heads * rows * s, bsz * self.heads
            dq, dv = m.qk_dim, m.v_dim
            self._gemm(b, "attn context dgrad", rows, s, dv, L, batch=nb, cat="attention")
            self._gemm(b, "attn context wgrad", s, dv, rows, L, batch=nb, cat="attention")
            if m.gpt:
                self._ew(b, "attn dropout bwd", (2 * elem + 1) * S, L)
            self._ew(b, "softmax bwd", 3 * S * elem, L)
            self._gemm(b, "attn scores dgrad", rows, dq, s, L, batch=nb, cat="attention")
            self._gemm(b, "attn scores wgrad", s, dq, rows, L, batch=nb, cat="attention")
            return
        self._fp8_attention_cast(b, L, "", backward=True)
        if self.cp > 1:
            kv = 2 * bsz * rows * self._ring_kv_heads() * (m.qk_dim + m.v_dim) * elem
            self._cp_attention(b, "flash attention bwd", "cp ring bwd", kv, L, True)
            return
        self._flash(b, "flash attention bwd", L, backward=True)
