"""What Seer forecasts, as plain data: the model (model_spec.py), the parallel layout, the batch
and the runtime choices of one training job; the layers of each pipeline stage and chunk are
stages.py's. seer/job.py reads them from a compiled design's `job` instance; tests and
benchmarks may build them directly."""
from __future__ import annotations

import math
from typing import Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses import rank_order
from astral_dsl.seer.model_spec import ModelSpec
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
    etp: int = 1                              # expert tensor parallelism: each routed expert's
    #                                           GEMMs split over this many ranks (lower_moe.py)
    etp_stated: bool = False                  # `etp` written in the job (forecast._etp_note)

    @property
    def expert_dp(self) -> int:
        """Ranks holding the same shard of the same routed experts (Megatron-Core's
        expert-data-parallel group): TP x DP x CP / (ETP x EP) (analyses/rank_order.py)."""
        return rank_order.expert_dp(self.tp, self.dp, self.cp, self.ep, self.etp)

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
    grouped_gemm: bool = True                 # local experts as one grouped GEMM; False:
    #                                           one expert after another (SequentialMLP)
    router_fusion: bool = False               # MoE router kernels fused (router_kernels.py)
    permute_fusion: bool = True               # MoE token permutation fused (TE); False:
    #                                           Megatron-Core's unfused path (lower_moe.py)
    rope_fusion: bool = True                  # RoPE fused (TE); False: Megatron-Core's
    #                                           unfused RoPE (lower_attention.py)
    yarn_rope_fusion: bool = False            # `rope_fusion` stated true: TE's fused RoPE
    #                                           under YaRN too (Megatron-Core before 0.16)
    cross_entropy: Optional[str] = None       # te | native | None (lower_dense.CROSS_ENTROPY)
    attention_precision: str = "bf16"         # bf16 | fp8: TE's MXFP8 attention with an MXFP8
    #                                           dtype under Megatron-Core (fp8_attention)
    head_precision: str = "bf16"              # bf16 | fp8: the output layer (logits) as TE's
    #                                           MXFP8 linear under Megatron-Core (fp8_head)
    scale_swizzle: bool = False               # block scales swizzled before each MXFP8 /
    #                                           NVFP4 GEMM (lower_linear.LinearOps._gemm)
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
    batch_stated: bool = True                 # `global_batch` written in the job; False: the
    #                                           framework's default, micro x dp (forecast's note)
    dp_stated: bool = True                    # `dp` written in the job; False with no `gpus`:
    #                                           dp 1, tp x pp x cp GPUs (forecast's note)

    @property
    def fp8_attention(self) -> bool:
        """Whether fused attention runs as Transformer Engine's MXFP8 attention: `attention_
        precision = fp8` with `dtype = mxfp8` under Megatron-Core and fused attention, which
        alone Seer prices it for (W751 otherwise; lower_attention.FP8_ATTENTION)."""
        return (self.attention_precision == "fp8" and self.dtype == "mxfp8"
                and self.framework == "megatron" and self.attention == "flash")

    @property
    def fp8_head(self) -> bool:
        """Whether the output layer's GEMMs (the logits, their data and weight gradients) run
        quantised: `head_precision = fp8` with `dtype = mxfp8` under Megatron-Core, which alone
        has the switch (Megatron-Core 0.18.0 `fp8_output_proj`, which its config check refuses
        for any recipe but MXFP8; W751 otherwise; lower_dense.DenseOps._head_fwd)."""
        return (self.head_precision == "fp8" and self.dtype == "mxfp8"
                and self.framework == "megatron")

    @property
    def cross_entropy_kernels(self) -> Optional[str]:
        """The cross-entropy kernels priced: `cross_entropy` under Megatron-Core, which alone
        has the switch (W751 otherwise), else None (lower_dense.CROSS_ENTROPY)."""
        return self.cross_entropy if self.framework == "megatron" else None

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
    def compiled_blocks(self) -> bool:
        """torchtitan's blocks torch.compile'd: their full recomputation re-runs only what the
        backward reads, not a dense layer's fc2, its TP reduction nor its last residual sum
        (AOT Autograd's partitioner: lower_dense.py `_mlp_block_fwd`; forecast.hardware_flops),
        and a collective traced in them is waited for at once (Inductor: lower_attention.py
        `_cp_attention`)."""
        return self.framework == "torchtitan" and self.torch_compile

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
    def ep_overlap_share(self) -> float:
        """The share of a rank's forward and backward passes whose expert all-to-all
        `ep_overlap` can hide: ep_overlap_share(pp, v, run micro-batches), 0 without it."""
        if not self.ep_overlap:
            return 0.0
        return ep_overlap_share(self.parallel.pp, self.parallel.v, self.run_microbatches)

    @property
    def schedule_key(self) -> str:
        """The pipeline schedule as the simulation runs it: `schedule`, or that many runs of it
        a step with `pipeline_runs` > 1 (pipeline.schedule_key)."""
        return schedule_key(self.parallel.schedule, self.pipeline_runs)

    @property
    def gate_free(self) -> bool:
        """An MoE job whose gate has no weights: NeMo AutoModel's FakeBalancedGate (`moe_routing
        = round_robin`; nemo_automodel 0.1.0 and 0.2.0 components/moe/layers.py) computes the
        indices as arange(tokens x k) % experts and the weights as ones / k, with no router
        matrix, scores or top-k, and nothing that the backward differentiates."""
        return bool(self.model.experts) and self.moe_routing == "round_robin"

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


__all__ = ["ParallelSpec", "JobSpec"]


def ep_overlap_share(pp: int, v: int, m: int) -> float:
    """The share of a rank's m x v forward (and as many backward) passes that Megatron-Core's
    combined 1F1B schedule (`overlap_moe_expert_parallel_comm`) runs beside another
    micro-batch's pass, the one whose computation hides their expert all-to-all.
    Megatron-Core 0.16.1: without a pipeline (pipeline_parallel/combined_1f1b.py,
    combined_1f1b_schedule_for_no_pipelining) the first micro-batch's forward and the last one's
    backward run alone, the other m - 1 of each are paired: (m - 1) / m. With pipeline stages
    it needs virtual stages (transformer_config.py __post_init__ asserts
    virtual_pipeline_model_parallel_size with pp > 1): 0 with v = 1. Interleaved, only the
    steady 1F1B phase pairs passes (schedules.py get_pp_rank_microbatches): rank r runs
    2 (pp - r - 1) + (v - 1) g + 1 forwards alone in the warm-up (g the micro-batch group per
    virtual stage, pp by default; the + 1 is the overlap's extra warm-up micro-batch) and as
    many backwards alone in the cool-down; Seer's stages share one template, so the warm-up
    is the ranks' mean, (pp - 1) + (v - 1) pp + 1, of m v."""
    if pp <= 1:
        return (m - 1) / m if m > 1 else 0.0
    if v <= 1:
        return 0.0
    total = m * v
    warmup = min(total, (pp - 1) + (v - 1) * pp + 1)
    return (total - warmup) / total
