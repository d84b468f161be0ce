"""What Seer forecasts, as plain data: the model, the parallel layout, the batch and the runtime
choices of one training job. seer/job.py reads them from a compiled design's `job` instance;
tests and benchmarks may build them directly."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Tuple


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
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
        return DTYPE_BYTES.get(self.dtype, 2)

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


def chunk_layers(job: JobSpec) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """[stage][chunk] -> (first layer, layer count). With v virtual stages, stage i's chunk c
    holds the model's (c * pp + i)-th slice, each stage's layers split evenly over its chunks."""
    par = job.parallel
    per_stage = stage_layers(job)
    slices = []  # model order: chunk-major
    for c in range(par.v):
        for i in range(par.pp):
            n = per_stage[i]
            base, extra = divmod(n, par.v)
            slices.append((i, c, base + (1 if c < extra else 0)))
    first, out = 0, [[None] * par.v for _ in range(par.pp)]
    for i, c, n in slices:
        out[i][c] = (first, n)
        first += n
    return tuple(tuple(row) for row in out)


def divisors(n: int):
    return [d for d in range(1, n + 1) if n % d == 0]


def ceil_div(a, b):
    return -(-a // b) if b else 0


__all__ = ["ModelSpec", "ParallelSpec", "JobSpec", "stage_layers", "chunk_layers", "divisors",
           "ceil_div"]
