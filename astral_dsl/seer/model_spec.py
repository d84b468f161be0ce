"""The model Seer forecasts, as plain data (spec.py's JobSpec holds it): its layers and widths,
attention (grouped-query, multi-head latent, sliding-window), MLP or mixture of experts, a hybrid
model's Mamba-2 layers, and the parameters of each layer. seer/job.py reads it from a compiled
design's `model` instance; tests and benchmarks may build it directly."""
from __future__ import annotations

from functools import lru_cache
from typing import Optional, Tuple

from astral_dsl import records


@records.frozen
class ModelSpec:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    activation: str = "gelu"          # gelu (2 matrices, biases, dropout) | swiglu (3) | relu2 (2)
    experts: int = 0
    top_k: int = 1
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    params: Optional[float] = None
    head_size: int = 0                # a head's width when it is not hidden / heads (Qwen3: 128)
    kv_lora: int = 0                  # multi-head latent attention (DeepSeek-V2/V3): the key/value
    q_lora: int = 0                   # and query latent ranks, the rotary part of each query/key
    rope_dim: int = 0                 # head and the value head width (0: as the head)
    v_head: int = 0
    window: int = 0                   # sliding-window attention: tokens each query sees ...
    window_share: float = 0.0         # ... in this share of the layers (GPT-OSS: 128, 50 %)
    shared_ffn: int = 0               # a shared expert's FFN width (0: moe_ffn)
    activation_clamp: float = 0.0     # a gated activation's inputs clamped (0: not; GPT-OSS: 7)
    expert_bias: bool = False         # the experts' linear layers have biases (GPT-OSS)
    yarn_factor: float = 0.0          # YaRN RoPE scaling (0: none; GPT-OSS: 32)
    qk_norm: str = "none"             # none | rms (Qwen3) | l2 (Llama 4): the queries' and
    #                                   keys' norm (lower_attention._qk_norm)
    nope_every: int = 0               # every Nth layer without RoPE nor the qk norm (0: none;
    #                                   Llama 4: 4)
    expert_groups: int = 0            # group-limited routing: the experts in this many groups,
    group_top_k: int = 0              # each token's experts in at most this many of them
    #                                   (DeepSeek-V3's node-limited routing: 8 and 4)
    router_score: str = "softmax"     # softmax | sigmoid (router_kernels.py)
    aux_loss: str = "none"            # none | aux_loss | seq_aux_loss | global_aux_loss
    mtp_layers: int = 0               # multi-token prediction depths trained beside the model
    #                                   (Megatron-Core's mtp_num_layers; DeepSeek-V3: 1), each
    #                                   a layer like the last one, on the last pipeline stage,
    mtp_pattern: str = ""             # or a hybrid model's block of layers (M, *, E, -: its
    #                                   mtp_hybrid_override_pattern; Nemotron 3.5 Lightning: *E)
    mtp_shared: bool = False          # the depths run one set of weights (mtp_use_repeated_layer)
    # a hybrid model (Nemotron-H): Mamba-2 layers, attention-only layers, and the rest MLP (or
    # MoE) layers, in `pattern`'s order (Megatron's hybrid_override_pattern: M, *, - or E per
    # layer) or evenly interleaved; and the Mamba-2 layers' dimensions
    mamba_layers: int = 0
    attention_layers: int = 0
    pattern: str = ""
    mamba_state: int = 128
    mamba_head: int = 64
    mamba_groups: int = 8
    mamba_expand: float = 2.0
    mamba_chunk: int = 256
    mamba_heads_stated: int = 0       # Megatron's mamba_num_heads: the inner width is heads x
    #                                   mamba_head (ssm/mamba_mixer.py), not mamba_expand x hidden

    @property
    def head_dim(self) -> int:
        return self.head_size or self.hidden // self.heads

    @property
    def mla(self) -> bool:
        return self.kv_lora > 0

    @property
    def qk_dim(self) -> int:
        """Width of one query / key head: with MLA its non-rotary and rotary parts."""
        return self.head_dim + (self.rope_dim if self.mla else 0)

    @property
    def v_dim(self) -> int:
        return (self.v_head or self.head_dim) if self.mla else self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def q_width(self) -> int:
        """Query width: heads x query head."""
        return self.heads * self.qk_dim

    @property
    def context_width(self) -> int:
        """The attention output (the out-projection's input): heads x value head."""
        return self.heads * self.v_dim

    @property
    def gpt(self) -> bool:
        """GPT-style blocks (biases, dropout, GeLU, tied embeddings) vs Llama-style."""
        return self.activation == "gelu"

    @property
    def mats(self) -> int:
        """Weight matrices of an MLP: 3 for a gated unit (SwiGLU), else 2."""
        return 3 if self.activation == "swiglu" else 2

    @property
    def clamped(self) -> bool:
        """A gated activation whose inputs are clamped (`activation_clamp`): Megatron-Core
        clamps only the gated path."""
        return bool(self.activation_clamp) and self.mats == 3

    @property
    def shared_width(self) -> int:
        return self.shared_ffn or self.moe_ffn

    def attention_params(self) -> float:
        """Weights of one attention block: QKV and the out-projection, or MLA's down- and
        up-projections (DeepSeek-V3 technical report, section 2.1.1)."""
        h = self.hidden
        if not self.mla:
            return h * (self.q_width + 2 * self.kv_dim) + self.context_width * h
        q = h * self.q_lora + self.q_lora * self.q_width if self.q_lora else h * self.q_width
        kv = h * (self.kv_lora + self.rope_dim) + self.kv_lora * self.heads * (
            self.head_dim + self.v_dim)
        return q + kv + self.context_width * h

    def attended(self, seq: int) -> float:
        """Keys each query attends to on average over the layers, causal masking aside: the
        sequence, or the window in the windowed share of the layers."""
        if self.window and self.window < seq:
            return self.window_share * self.window + (1 - self.window_share) * seq
        return float(seq)

    @property
    def hybrid(self) -> bool:
        return bool(self.pattern) or self.mamba_layers > 0

    @property
    def mamba_inner(self) -> float:
        if self.mamba_heads_stated:
            return float(self.mamba_heads_stated * self.mamba_head)
        return self.mamba_expand * self.hidden

    @property
    def mamba_heads(self) -> float:
        return self.mamba_inner / self.mamba_head

    @property
    def mtp_depth(self) -> int:
        """Layers of one MTP depth: its block's (`mtp_pattern`), else one."""
        return len(self.mtp_pattern) or 1

    @property
    def mtp_block(self) -> int:
        """The MTP layers the last chunk holds after the model's: each depth's block, every
        depth run apart (shared weights or not, a depth's layers run on its own activations)."""
        return self.mtp_layers * self.mtp_depth

    def mtp_repeat(self, layer: int) -> bool:
        """Whether `layer` is an MTP layer of a depth after the first whose weights are the
        first depth's (`mtp_shared`: Megatron-Core's mtp_use_repeated_layer builds one MTP layer
        and runs it mtp_num_layers times): it computes, but holds no parameters of its own."""
        return (self.mtp_shared and self.layers + self.mtp_depth <= layer
                < self.layers + self.mtp_block)

    def layer_kind(self, layer: int) -> str:
        """T: a transformer layer (attention, then MLP or MoE); in a hybrid model M (Mamba-2),
        * (attention), E (MoE) or - (MLP). An MTP layer is its depth's block's, or the model's
        last layer's kind."""
        if not self.hybrid:
            return "T"
        if self.layers <= layer < self.layers + self.mtp_block:
            if self.mtp_pattern:
                return self.mtp_pattern[(layer - self.layers) % self.mtp_depth]
            layer = self.layers - 1
        return hybrid_pattern(self)[layer] if 0 <= layer < self.layers else "-"

    def is_moe(self, layer: int) -> bool:
        if self.hybrid:
            return self.layer_kind(layer) == "E"
        return self.experts > 0 and layer >= self.dense_layers

    def dense_mlp(self, layer: int) -> bool:
        """Whether the layer has a dense MLP (a transformer or MLP-only layer, not MoE)."""
        return self.layer_kind(layer) in ("T", "-") and not self.is_moe(layer)

    def nope(self, layer: int) -> bool:
        """Whether (0-based) `layer` has no rotary embeddings nor query-key norm: NeMo 2.4.0
        llama4_utils.py, is_nope_layer(layer_number) with Megatron's 1-based layer number,
        `layer_number % nope_layer_interval == 0` (Llama4Config: every 4th)."""
        return self.nope_every > 0 and (layer + 1) % self.nope_every == 0

    def shape_key(self, layer: int) -> tuple:
        """(kind, MoE or not), and "shared" for a shared MTP depth's layer (mtp_repeat): its
        parameters are another's."""
        if not (self.pattern or self.mamba_layers):     # not hybrid: layer_kind and is_moe inline
            key = "T", self.experts > 0 and layer >= self.dense_layers
        else:
            key = self.layer_kind(layer), self.is_moe(layer)
        return key + ("shared",) if self.mtp_repeat(layer) else key

    def kinds(self, first: int, n: int) -> Tuple[Tuple[int, int], ...]:
        """The layers first .. first + n - 1 as (a layer, how many are like it): a layer's
        shape depends only on its kind and whether it is a mixture-of-experts layer (the first
        `dense_layers` are dense), so a per-layer sum over a stage costs a few terms, not one
        per layer (a 5,040-layer model, hundreds of rule candidates)."""
        if self.hybrid or (self.mtp_shared and first + n > self.layers + self.mtp_depth):
            found: dict = {}
            for L in range(first, first + n):
                key = self.shape_key(L)
                if key in found:
                    found[key][1] += 1
                else:
                    found[key] = [L, 1]
            return tuple((L, c) for L, c in found.values())
        if not self.experts:
            return ((first, n),) if n > 0 else ()
        split = min(max(self.dense_layers, first), first + n)      # its first MoE layer
        return tuple((L, c) for L, c in ((first, split - first), (split, first + n - split))
                     if c > 0)

    def mamba_params(self) -> float:
        """Weights of one Mamba-2 layer: in- and out-projections, the convolution, A, D, dt bias
        and the gated norm (Dao and Gu 2024)."""
        h, d = self.hidden, self.mamba_inner
        g, n, heads = self.mamba_groups, self.mamba_state, self.mamba_heads
        in_proj = h * (2 * d + 2 * g * n + heads)
        return in_proj + 4 * (d + 2 * g * n) + d * h + 3 * heads + d

    def layer_params(self, layer: int) -> float:
        h, mats = self.hidden, self.mats
        kind = self.layer_kind(layer)
        if kind == "M":
            return self.mamba_params() + h
        if self.is_moe(layer):
            mlp = (self.experts * mats * h * self.moe_ffn + h * self.experts
                   + self.shared_experts * mats * h * self.shared_width)
        else:
            mlp = mats * h * self.ffn
        if kind == "*":
            return self.attention_params() + 2 * h
        if kind in ("E", "-"):
            return mlp + 2 * h
        return self.attention_params() + mlp + 4 * h


@lru_cache(maxsize=64)
def _interleave(layers: int, mamba: int, attention: int, mlp: str) -> str:
    """A hybrid model's layers evenly interleaved when no pattern is given: the attention layers
    spread evenly, Mamba-2 and MLP (MoE) layers alternating around them, Mamba-2 first."""
    out = [""] * layers
    for k in range(attention):
        out[min(layers - 1, int((k + 0.5) * layers / attention))] = "*"
    rest = [i for i in range(layers) if not out[i]]
    for j, i in enumerate(rest):       # `mamba` of the len(rest) slots are M, evenly
        out[i] = "M" if (j * mamba) % len(rest) < mamba else mlp
    return "".join(out)


def hybrid_pattern(m: "ModelSpec") -> str:
    if m.pattern:
        return m.pattern
    return _interleave(m.layers, m.mamba_layers, m.attention_layers, "E" if m.experts else "-")


__all__ = ["ModelSpec"]
