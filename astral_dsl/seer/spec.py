"""What Seer forecasts, as plain data: the model, the parallel layout, the batch and the runtime
choices of one training job. seer/job.py reads them from a compiled design's `job` instance;
tests and benchmarks may build them directly."""
from __future__ import annotations

from functools import lru_cache
import math
from typing import List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.seer.pipeline import schedule_key


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# Low-precision training (Transformer Engine, torchao) runs on a bf16 base: weights, activations
# and communication stay 16-bit; only the linear layers' GEMMs (and the inputs they save for the
# backward) are quantised (seer/lower.py, seer/memory.py): fp8 with per-tensor scales (delayed or
# current scaling) or with row / 128-block scales, MXFP8 (fp8 E4M3 with a shared exponent per
# 32 elements) and NVFP4 (fp4 E2M1 with an fp8 scale per 16 elements), the block-scaled formats
# of Blackwell's tensor cores (Transformer Engine's MXFP8BlockScaling, NVFP4BlockScaling).
QUANTISED = ("fp8", "mxfp8", "nvfp4")
BASE_DTYPE = {q: "bf16" for q in QUANTISED}
# bytes per element of a quantised operand, scales included (MXFP8: one 8-bit scale per 32
# elements; NVFP4: one fp8 scale per 16 elements, 4-bit data)
QUANT_BYTES = {"fp8": 1.0, "mxfp8": 1.0 + 1 / 32, "nvfp4": 0.5 + 1 / 16}
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
# a model that states no vocabulary or sequence length (W752: docs/seer.md, "Defaults")
DEFAULT_VOCAB = 32000        # Llama 2's SentencePiece vocabulary (Touvron et al. 2023)
DEFAULT_SEQ = 2048           # GPT-3's context (Brown et al. 2020)
DEFAULT_ORDER = DIMENSIONS        # Megatron-Core's default rank order, fastest first
# what `recompute = modules` re-runs when it names no `recompute_modules` (the norms and the
# activation functions, the experts' included: Megatron-Core's layernorm and moe_act, PyTorch's
# operator-level checkpointing), and what a PyTorch framework's selective recomputation
# (torchtitan's "selective op") re-runs
DEFAULT_RECOMPUTE_MODULES = ("layernorm", "activation", "moe_act")
# the PyTorch-native frameworks: operator-level selective checkpointing, FSDP2, and
# torch.distributed.pipelining's schedules
PYTORCH_FRAMEWORKS = ("torchtitan", "automodel")


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
    expert_groups: int = 0            # group-limited routing: the experts in this many groups,
    group_top_k: int = 0              # each token's experts in at most this many of them
    #                                   (DeepSeek-V3's node-limited routing: 8 and 4)
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

    def layer_kind(self, layer: int) -> str:
        """T: a transformer layer (attention, then MLP or MoE); in a hybrid model M (Mamba-2),
        * (attention), E (MoE) or - (MLP)."""
        if not self.hybrid:
            return "T"
        return hybrid_pattern(self)[layer] if 0 <= layer < self.layers else "-"

    def is_moe(self, layer: int) -> bool:
        if self.hybrid:
            return self.layer_kind(layer) == "E"
        return self.experts > 0 and layer >= self.dense_layers

    def dense_mlp(self, layer: int) -> bool:
        """Whether the layer has a dense MLP (a transformer or MLP-only layer, not MoE)."""
        return self.layer_kind(layer) in ("T", "-") and not self.is_moe(layer)

    def shape_key(self, layer: int) -> Tuple[str, bool]:
        return self.layer_kind(layer), self.is_moe(layer)

    def kinds(self, first: int, n: int) -> Tuple[Tuple[int, int], ...]:
        """The layers first .. first + n - 1 as (a layer, how many are like it): a layer's
        shape depends only on its kind and whether it is a mixture-of-experts layer (the first
        `dense_layers` are dense), so a per-layer sum over a stage costs a few terms, not one
        per layer (a 5,040-layer model, hundreds of rule candidates)."""
        if self.hybrid:
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


@records.frozen
class ParallelSpec:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    sp: bool = False
    v: int = 1                                # virtual stages (model chunks) per device
    schedule: str = "1f1b"                    # 1f1b | interleaved | gpipe
    stages: Optional[Tuple[int, ...]] = None  # layers per pipeline stage (uneven split)
    layout: Optional[Tuple[int, ...]] = None  # layers per virtual stage, in model order
    zero: int = 0                             # 0, 1, 2, 3 (3 = FSDP)
    reshard_after_forward: bool = True        # ZeRO-3: gather the weights again for the backward
    order: Tuple[str, ...] = DEFAULT_ORDER    # rank order of the dimensions, fastest first

    @property
    def expert_dp(self) -> int:
        """Ranks holding the same routed experts (Megatron-Core's expert-data-parallel group,
        expert tensor parallelism 1): TP x DP x CP / EP."""
        return max(1, self.tp * self.dp * self.cp // max(1, self.ep))

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


@records.frozen
class JobSpec:
    name: str
    model: ModelSpec
    parallel: ParallelSpec
    global_batch: int
    micro: Optional[int]                      # None: chosen by the runtime rule (runtime.py)
    seq: int
    recompute: str = "none"                   # none | selective | full | auto (the rule's)
    dtype: str = "bf16"
    gpus: Optional[int] = None                # declared
    attention: str = "flash"                  # flash | unfused (materialised s x s scores)
    grad_dtype: Optional[str] = None          # None: the framework's default for `dtype`
    optimizer_dtype: str = "fp32"             # Adam's moments and the step's gradients (memory.py)
    overlap_grad_reduce: bool = False         # Megatron-LM default: reduce after the backward
    overlap_param_gather: bool = False        # ZeRO: gather the weights during the next forward
    tp_overlap: str = "backward"              # backward | none | full (docs/seer.md)
    fp8_recipe: str = "delayed"               # delayed | current | rowwise | blockwise
    framework: str = "megatron"               # megatron | torchtitan | automodel
    cuda_graphs: bool = False                 # the step's kernels replayed from CUDA graphs
    moe_dispatcher: str = "alltoall"          # alltoall | deepep | hybridep
    moe_routing: str = "topk"                 # topk | round_robin (routing.py)
    capacity_factor: Optional[float] = None   # MoE token dropping at this capacity; None:
    #                                           dropless
    pad_to_capacity: bool = False             # experts' inputs padded to their capacity
    ep_overlap: bool = False                  # EP all-to-all overlapped across micro-batches
    pp_overlap: bool = False                  # interleaved: each send overlapped with the next
    #                                           block (Megatron-Core's overlap_p2p_comm)
    torch_compile: bool = False               # a PyTorch framework's step compiled (fused)
    fp8_params: bool = False                  # quantised linear weights, no 16-bit copy
    #                                           (memory.py; params.param_gather)
    offload_layers: Optional[int] = 0         # layers whose activations go to host memory
    #                                           (memory.py); None: the rule's (recompute = auto)
    recompute_modules: Optional[Tuple[str, ...]] = None   # recompute = modules: which (None:
    #                                           DEFAULT_RECOMPUTE_MODULES; model/kinds.py)
    pipeline_runs: int = 1                    # the schedule's runs a step (pipeline.py)
    recompute_layers: Optional[int] = None    # recompute = full: the first N layers of each
    #                                           model chunk (Megatron-LM's block method); None:
    #                                           every layer (full_recompute)

    @property
    def bytes(self) -> int:
        """Bytes per weight, activation and communicated element: the dtype's, or for a
        quantised dtype its bf16 base's (BASE_DTYPE)."""
        return DTYPE_BYTES.get(BASE_DTYPE.get(self.dtype, self.dtype), 2)

    @property
    def fp8(self) -> bool:
        """The linear layers' GEMMs run quantised (fp8, MXFP8 or NVFP4)."""
        return self.dtype in QUANTISED

    @property
    def quantised_params(self) -> bool:
        """`fp8_params` in effect: a quantised dtype under Megatron-Core, whose fp8 parameters
        replace the 16-bit linear weights (memory.py). torchao's float8 all-gather (torchtitan)
        keeps 16-bit weights and is not this."""
        return self.fp8_params and self.fp8 and self.framework == "megatron"

    @property
    def gemm_precision(self) -> str:
        """The precision family of the linear layers' GEMMs, each with its own fitted
        efficiency (seer/calibration): bf16 (or fp16 / fp32 as declared), fp8 with per-tensor
        scales, fp8 with row or block scales, mxfp8, nvfp4."""
        if self.dtype == "fp8":
            return "fp8_block" if self.fp8_recipe in ("rowwise", "blockwise") else "fp8"
        return self.dtype

    @property
    def quant_bytes(self) -> float:
        return QUANT_BYTES.get(self.dtype, float(self.bytes))

    @property
    def recomputed(self) -> frozenset:
        """The modules operator-level recomputation re-runs in the backward (memory.py keeps
        their outputs out, lower.py re-runs them): `recompute = modules` (its
        `recompute_modules`, else DEFAULT_RECOMPUTE_MODULES) or a PyTorch framework's
        `selective`; empty otherwise."""
        if self.recompute == "modules":
            return frozenset(DEFAULT_RECOMPUTE_MODULES if self.recompute_modules is None
                             else self.recompute_modules)
        if self.recompute == "selective" and self.framework in PYTORCH_FRAMEWORKS:
            return frozenset(DEFAULT_RECOMPUTE_MODULES)
        return frozenset()

    @property
    def every_second_mm(self) -> bool:
        """torchtitan's selective per-op recomputation, which besides the cheap operators
        recomputes every second matmul of a block (lower.Lowering._every_second_mm; memory.py
        keeps their outputs out)."""
        return self.recompute == "selective" and self.framework == "torchtitan"

    @property
    def gradient_dtype(self) -> str:
        """The gradient buffer and reduction precision: declared, else Megatron-LM's default
        for the dtype: fp32 main gradients with bf16 (`accumulate_allreduce_grads_in_fp32` is
        forced on) and fp8 (on a bf16 base), 16-bit buffers with fp16, fp32 with fp32
        (megatron/training/arguments.py)."""
        if self.grad_dtype:
            return self.grad_dtype
        return "fp16" if self.dtype == "fp16" else "fp32"

    @property
    def grad_bytes(self) -> int:
        return DTYPE_BYTES[self.gradient_dtype]

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline per iteration (m = B / (b d))."""
        return max(1, self.global_batch // (self.micro * self.parallel.dp))

    @property
    def run_microbatches(self) -> int:
        """Micro-batches of one run of the schedule (`pipeline_runs`: pipeline.py)."""
        return max(1, self.microbatches // self.pipeline_runs)

    @property
    def schedule_key(self) -> str:
        """The pipeline schedule as the simulation runs it: `schedule`, or that many runs of it
        a step with `pipeline_runs` > 1 (pipeline.schedule_key)."""
        return schedule_key(self.parallel.schedule, self.pipeline_runs)

    @property
    def padded(self) -> bool:
        """An MoE job whose experts' inputs are padded to their capacity (`pad_to_capacity`
        with a `capacity_factor`)."""
        return bool(self.model.experts and self.pad_to_capacity and self.capacity_factor)

    @property
    def host_counts(self) -> bool:
        """The host waits for each MoE layer's token counts (a device-to-host copy before the
        all-to-all or the grouped GEMMs that need them), unless the step is replayed from CUDA
        graphs (sync-free dispatch) or the experts' inputs are padded to their capacity, whose
        sizes are known ahead (Megatron-Core 0.16, token_dispatcher.py: drop_and_pad sets no
        sync point)."""
        return not self.cuda_graphs and not self.padded

    def routed(self, tokens: float) -> float:
        """The token copies a rank sends to the experts for its `tokens` routed tokens: top_k
        of each when dropless; with a capacity factor each expert takes at most that factor
        times its even share, which Seer's balanced routing never exceeds at a factor of 1 or
        more (below 1, the rest is dropped); padded to capacity, every expert takes exactly
        ceil(tokens x top_k / experts x factor) (Megatron-Core's get_capacity, moe_utils.py)."""
        m = self.model
        copies = tokens * m.top_k
        factor = self.capacity_factor
        if factor is None or not m.experts:
            return copies
        if self.pad_to_capacity:
            return math.ceil(copies / m.experts * factor) * m.experts
        return copies * min(1.0, factor)

    def with_(self, **kw) -> "JobSpec":
        return attrs.evolve(self, **kw)


def derived_layout(layers: int, pp: int, v: int = 1) -> Optional[Tuple[int, ...]]:
    """Layers of each virtual stage (model order; per stage when v = 1) as the frameworks lay
    out a model that pp x v does not divide: the embedding and the loss counted as a layer each
    on the first and the last (Megatron-Core's --account-for-embedding/loss-in-pipeline-split,
    the layout an explicit --pipeline-model-parallel-layout gives, torchtitan's split), what is
    left over spread over the first virtual stages: Llama 3's 126 layers on 16 stages are 7, 8,
    ..., 8, 7. None when pp x v divides the layers (an even split) or the layers are too few."""
    n = pp * max(1, v)
    if pp <= 1 or layers % n == 0:
        return None
    base, extra = divmod(layers + 2, n)
    per = [base + (1 if i < extra else 0) for i in range(n)]
    per[0] -= 1
    per[-1] -= 1
    return tuple(per) if min(per) >= 0 and sum(per) == layers else None


def _layout(par: "ParallelSpec", layers: int) -> Optional[Tuple[int, ...]]:
    """The per-virtual-stage layout: declared, or derived when nothing is declared."""
    v = par.v or 1
    if par.layout and len(par.layout) == par.pp * v:
        return par.layout
    if not par.stages:
        return derived_layout(layers, par.pp, v)
    return None


def stage_layers(job: JobSpec) -> Tuple[int, ...]:
    """Layers on each pipeline stage: the declared layout's or split, else the frameworks'
    (derived_layout), else even."""
    par, layers = job.parallel, job.model.layers
    v = par.v or 1
    layout = _layout(par, layers)
    if layout:
        return tuple(sum(layout[c * par.pp + i] for c in range(v)) for i in range(par.pp))
    if par.stages and len(par.stages) == par.pp:
        return tuple(par.stages)
    base, extra = divmod(layers, par.pp)
    return tuple(base + (1 if i < extra else 0) for i in range(par.pp))


def chunk_split(per_stage: Tuple[int, ...], v: int) -> Optional[Tuple[Tuple[int, ...], ...]]:
    """[stage][chunk] -> layers, for `v` virtual stages, as Megatron-LM's layer options lay them
    out, or None when none of them gives `v` chunks. Megatron-LM splits each pipeline rank's
    layers evenly over its model chunks (megatron/core/transformer/transformer_block.py,
    get_num_layers_to_build: `num_layers_per_pipeline_rank % vp_size == 0`, also for the ranks of
    --num-layers-in-first/last-pipeline-stage); with --account-for-embedding-in-pipeline-split
    (--account-for-loss-in-pipeline-split) the embedding (the loss) counts as a layer, every rank
    holding the same number of them, and the first chunk of stage 0 (the last chunk of the last
    stage) builds one layer fewer, down to none. Uneven chunks such as 8 layers in 7 chunks need
    an explicit --pipeline-model-parallel-layout, which a job does not state."""
    p = len(per_stage)
    if v == 1:
        return tuple((n,) for n in per_stage)
    if v < 1 or p < 2:
        return None
    if all(n % v == 0 and n >= v for n in per_stage):
        return tuple((n // v,) * v for n in per_stage)
    for embed, loss in ((1, 1), (1, 0), (0, 1)):
        units = {n + (embed if i == 0 else 0) + (loss if i == p - 1 else 0)
                 for i, n in enumerate(per_stage)}
        if len(units) == 1 and next(iter(units)) % v == 0:
            k = next(iter(units)) // v
            rows = [[k] * v for _ in range(p)]
            rows[0][0] -= embed
            rows[-1][-1] -= loss
            return tuple(tuple(r) for r in rows)
    return None


def virtual_stage_options(per_stage: Tuple[int, ...]) -> List[int]:
    """The numbers of virtual stages chunk_split can lay out on these stages."""
    opts = set(divisors(math.gcd(*per_stage))) if per_stage else {1}
    p = len(per_stage)
    for embed, loss in ((1, 1), (1, 0), (0, 1)):
        units = {n + (embed if i == 0 else 0) + (loss if i == p - 1 else 0)
                 for i, n in enumerate(per_stage)}
        if len(units) == 1:
            opts |= set(divisors(next(iter(units))))
    return sorted(v for v in opts if chunk_split(per_stage, v) is not None)


def chunk_layers(job: JobSpec) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """[stage][chunk] -> (first layer, layer count). With v virtual stages, stage i's chunk c
    holds the model's (c * pp + i)-th slice, laid out by chunk_split (seer/validate_layout.py
    rejects a number of virtual stages it cannot lay out; here such a split falls back to chunks
    as even as possible, for JobSpecs built by hand)."""
    par = job.parallel
    layout = _layout(par, job.model.layers)
    if layout:                              # declared (Megatron-Core's explicit layout) or derived
        split = tuple(tuple(layout[c * par.pp + i] for c in range(par.v))
                      for i in range(par.pp))
    else:
        split = chunk_split(stage_layers(job), par.v)
    if split is None:
        per_stage = stage_layers(job)
        split = tuple(tuple(n // par.v + (1 if c < n % par.v else 0) for c in range(par.v))
                      for n in per_stage)
    first, out = 0, [[None] * par.v for _ in range(par.pp)]
    for c in range(par.v):            # model order: chunk-major
        for i in range(par.pp):
            out[i][c] = (first, split[i][c])
            first += split[i][c]
    return tuple(tuple(row) for row in out)


def full_recompute(job: JobSpec) -> Tuple[int, ...]:
    """The layers a job recomputes whole in its backward: none unless `recompute = full`; then
    every layer, or with `recompute_layers = N` the first N of each model chunk (Megatron-LM's
    `--recompute-granularity full --recompute-method block --recompute-num-layers N`: the
    first N layers of each pipeline stage's chunk checkpointed, the others keeping all their
    activations; megatron/core/transformer/transformer_block.py `_checkpointed_forward`)."""
    if job.recompute != "full":
        return ()
    n = job.recompute_layers
    if n is None:
        return tuple(range(job.model.layers))
    return tuple(sorted(L for row in chunk_layers(job) for first, count in row
                        for L in range(first, first + min(n, count))))


def divisors(n: int):
    return [d for d in range(1, n + 1) if n % d == 0]


def ceil_div(a, b):
    return -(-a // b) if b else 0


__all__ = ["ModelSpec", "ParallelSpec", "JobSpec", "stage_layers", "chunk_layers", "chunk_split",
           "virtual_stage_options", "divisors", "ceil_div"]
