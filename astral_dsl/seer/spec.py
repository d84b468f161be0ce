"""What Seer forecasts, as plain data: the model, the parallel layout, the batch and the runtime
choices of one training job. seer/job.py reads them from a compiled design's `job` instance;
tests and benchmarks may build them directly."""
from __future__ import annotations

from dataclasses import dataclass, replace
import math
from typing import List, Optional, Tuple


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# fp8 training (Transformer Engine, Megatron-LM's --fp8-format) runs on a bf16 base: weights,
# activations and communication stay 16-bit; only the linear layers' GEMMs (and the inputs they
# save for the backward) are fp8 (seer/lower.py, seer/memory.py)
BASE_DTYPE = {"fp8": "bf16"}
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
# a model that states no vocabulary or sequence length (W752: docs/seer.md, "Defaults")
DEFAULT_VOCAB = 32000        # Llama 2's SentencePiece vocabulary (Touvron et al. 2023)
DEFAULT_SEQ = 2048           # GPT-3's context (Brown et al. 2020)
DEFAULT_ORDER = DIMENSIONS        # Megatron-Core's default rank order, fastest first


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    activation: str = "gelu"          # gelu (2 matrices, biases, dropout) | swiglu (3, none)
    experts: int = 0
    top_k: int = 1
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    params: Optional[float] = None

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def gpt(self) -> bool:
        """GPT-style blocks (biases, dropout, GeLU, tied embeddings) vs Llama-style."""
        return self.activation == "gelu"

    def is_moe(self, layer: int) -> bool:
        return self.experts > 0 and layer >= self.dense_layers

    def kinds(self, first: int, n: int) -> Tuple[Tuple[int, int], ...]:
        """The layers first .. first + n - 1 as (a layer, how many are like it): a layer's
        shape depends only on whether it is a mixture-of-experts layer (the first
        `dense_layers` are dense), so a per-layer sum over a stage costs two terms, not one per
        layer (a 5,040-layer model, hundreds of rule candidates)."""
        if not self.experts:
            return ((first, n),) if n > 0 else ()
        split = min(max(self.dense_layers, first), first + n)      # its first MoE layer
        return tuple((L, c) for L, c in ((first, split - first), (split, first + n - split))
                     if c > 0)

    def layer_params(self, layer: int) -> float:
        h = self.hidden
        attn = h * (h + 2 * self.kv_dim) + h * h
        mats = 2 if self.gpt else 3
        if self.is_moe(layer):
            mlp = (self.experts + self.shared_experts) * mats * h * self.moe_ffn + h * self.experts
        else:
            mlp = mats * h * self.ffn
        return attn + mlp + 4 * h


@dataclass(frozen=True)
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
    zero: int = 0                             # 0, 1, 2, 3 (3 = FSDP)
    reshard_after_forward: bool = True        # ZeRO-3: gather the weights again for the backward
    order: Tuple[str, ...] = DEFAULT_ORDER    # rank order of the dimensions, fastest first

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


@dataclass(frozen=True)
class JobSpec:
    name: str
    model: ModelSpec
    parallel: ParallelSpec
    global_batch: int
    micro: Optional[int]                      # None: chosen by the runtime rule (runtime.py)
    seq: int
    recompute: str = "none"                   # none | selective | full
    dtype: str = "bf16"
    gpus: Optional[int] = None                # declared
    attention: str = "flash"                  # flash | unfused (materialised s x s scores)
    grad_dtype: Optional[str] = None          # None: the framework's default for `dtype`
    overlap_grad_reduce: bool = False         # Megatron-LM default: reduce after the backward
    overlap_param_gather: bool = False        # ZeRO: gather the weights during the next forward
    tp_overlap: str = "backward"              # backward | none (TP reductions on the critical path)

    @property
    def bytes(self) -> int:
        """Bytes per weight, activation and communicated element: the dtype's, or for fp8 its
        bf16 base's (BASE_DTYPE)."""
        return DTYPE_BYTES.get(BASE_DTYPE.get(self.dtype, self.dtype), 2)

    @property
    def fp8(self) -> bool:
        return self.dtype == "fp8"

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

    def with_(self, **kw) -> "JobSpec":
        return replace(self, **kw)


def stage_layers(job: JobSpec) -> Tuple[int, ...]:
    """Layers on each pipeline stage: the declared split, else as even as possible."""
    par, layers = job.parallel, job.model.layers
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
    holds the model's (c * pp + i)-th slice, laid out by chunk_split (seer/validate.py rejects a
    number of virtual stages it cannot lay out; here such a split falls back to chunks as even
    as possible, for JobSpecs built by hand)."""
    par = job.parallel
    per_stage = stage_layers(job)
    split = chunk_split(per_stage, par.v)
    if split is None:
        split = tuple(tuple(n // par.v + (1 if c < n % par.v else 0) for c in range(par.v))
                      for n in per_stage)
    first, out = 0, [[None] * par.v for _ in range(par.pp)]
    for c in range(par.v):            # model order: chunk-major
        for i in range(par.pp):
            out[i][c] = (first, split[i][c])
            first += split[i][c]
    return tuple(tuple(row) for row in out)


def divisors(n: int):
    return [d for d in range(1, n + 1) if n % d == 0]


def ceil_div(a, b):
    return -(-a // b) if b else 0


__all__ = ["ModelSpec", "ParallelSpec", "JobSpec", "stage_layers", "chunk_layers", "chunk_split",
           "virtual_stage_options", "divisors", "ceil_div"]
