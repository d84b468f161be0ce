"""Per-GPU memory estimate of a job, term by term, and its uncertainty.

- Model states per parameter (Rajbhandari et al. 2020, "ZeRO", section 3: 2 + 2 + K bytes with
  K = 12 for mixed-precision Adam, the fp32 master weights, momentum and variance): weights
  (the job's dtype), gradients (`grad_dtype`: Megatron-LM's fp32 main gradients with bf16, 16-bit
  with fp16) and optimizer states, sharded over the N_d data-parallel (x CP) ranks by ZeRO stage:
  1 shards the optimizer states, 2 also the gradients, 3 also the weights; a routed expert's
  over the expert-data-parallel group instead, TP x DP x CP / (EP x ETP) ranks (Megatron-Core's
  expert buffers and optimizer: params.layer_expert_params). With 16-bit gradients
  Megatron-LM's optimizer also holds an fp32 copy of the gradients it steps on, a term of its own
  (4 bytes per parameter, 4/N_d with the distributed optimizer; none with `optimizer_dtype =
  bf16`, Megatron-Core's precision-aware optimizer with bf16 momentum, variance and main
  gradients as DeepSeek-V3's Megatron-Bridge 0.3.1 recipe sets it, 4 bytes less of optimizer
  states: optimizer/optimizer_config.py, exp_avg_dtype, exp_avg_sq_dtype, main_grads_dtype;
  recipes/deepseek/deepseek_v3.py): the float16 optimizer sets
  `main_param.grad = model_param.main_grad.float()` (megatron/core/optimizer/optimizer.py,
  Float16OptimizerWithFloat16Params._copy_model_grads_to_main_grads), which is a copy for fp16
  gradients and the buffer itself for fp32 ones. This gives Megatron-LM's table of bytes per
  parameter (docs/source/api-guide/dist_optimizer.md; d = data-parallel size):

      | parameters, gradients | non-distributed | distributed |
      | fp16, fp16            | 20              | 4 + 16/d    |
      | bf16, fp32            | 18              | 6 + 12/d    |
      | fp32, fp32            | 16              | 8 + 8/d     |

  The ZeRO paper's 16 bytes (2 + 2 + 12) leave the fp32 gradient copy out. ZeRO-3 / FSDP also
  holds gathered weights: the layer in use and the one prefetched, or, without re-sharding after
  the forward, the whole stage's. fp8 (Transformer Engine) keeps the bf16 weights and adds an
  fp8 copy of each linear layer's weight and its transpose (2 bytes per such parameter, cached
  for the iteration's micro-batches), unsharded; with `fp8_head` the output layer's too. With `fp8_params` (Megatron-Core's
  --fp8-param-gather: the model built under Transformer Engine's fp8_model_init, its linear
  weights quantised tensors, Float8Tensor with its transpose or MXFP8Tensor with its row- and
  column-wise data; the high-precision copy is the optimizer's fp32 master, and an MXFP8
  model's gathers go through the gradient buffer, ddp reuse_grad_buf_for_mxfp8_param_ag:
  megatron/core/distributed/distributed_data_parallel_config.py) the quantised copies are the
  linear weights: their 16-bit weights are not held. Megatron-Bridge's fp8, MXFP8 and
  current-scaling precision configs set it (training/mixed_precision.py, 0.2.0-0.6.2:
  `fp8_param_gather = True`), as NeMo 2.0's did (`fp8_params = True`).
- Activations per layer and micro-batch (Korthikanti et al. 2022, section 4 and Table 2: a GPT
  layer keeps s b h (34 + 5 a s / h) bytes in 16-bit, of which 10 s b h outside the tensor-
  parallel regions; TP shards the other 24 s b h and the 5 a s^2 b of the attention scores,
  sequence parallelism the 10 too; selective recomputation drops the scores; full recomputation
  keeps the layer's input, 2 s b h), generalised to grouped-query attention, SwiGLU, MoE and fused
  attention (which keeps its 16-bit output and the fp32 log-sum-exp instead of the scores, the
  output besides the out-projection's quantised copy of it with fp8 linears); times the
  micro-batches the schedule keeps in flight on the stage (Korthikanti section 4.2.3: p on the
  first stage of 1F1B, L (1 + (p - 1)/(p v)) layers' worth with v virtual stages); full
  recomputation adds one layer's full activations while it is rebuilt (with `recompute_layers
  = N` only each chunk's first N layers keep just their input, the others all they save:
  stages.full_recompute); the last stage adds the logits and the fp32 softmax of the
  cross-entropy, or the logits alone with Transformer Engine's (`cross_entropy = te`, which
  writes their gradient into them) (once more per multi-token prediction depth, with the
  depth's inputs: its layer is one more of the last chunk's, stages.chunk_layers).
- Activation offloading (`offload_layers = k`, Megatron-Core's --cpu-offloading-num-layers over
  Transformer Engine's CPU offload context; pipeline parallelism unsupported there): the first k
  layers' saved activations are copied to host memory after their forward and back before their
  backward, so the GPU holds the other layers' and one offloaded layer's at a time (the one
  being copied out or reloaded: TE double-buffers by layer). `offloaded` reports what host
  memory holds; the host's capacity is not checked (Grace: 480 GB per CPU, a DGX H100's 2 TB
  per 8 GPUs: far above what a stage of activations needs).
- Reserved: RESERVED for the CUDA context, cuBLAS workspaces, NCCL's buffers and the caching
  allocator's fragmentation (an assumption, not fitted).

Two peaks, which do not coincide: the forward/backward peak (the resident states, the
activations in flight, the logits, the quantised weight copies) and the optimizer step's (the
resident states and the fp32 gradient copy of 16-bit gradients the step works on: with the
distributed optimizer Megatron-Core casts each rank's bf16 gradient shard to fp32 for the step,
megatron/core/optimizer/distrib_optimizer.py, `_copy_model_grads_to_main_grads`); the estimate
is the larger (`total`, `peak_phase`).

The uncertainty is stated, not hidden: the model states are exact for the framework; the
activations may be off by ACTIVATION_TOLERANCE (tensors the per-tensor count omits: RNG
states, workspaces, the allocator's rounding of blocks) and the reserved part by
RESERVED_TOLERANCE. validate_memory.py turns an estimate over the GPU's memory by less than this
margin into a warning (W750), a clear excess into E757."""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional, Tuple

from astral_dsl import records
from astral_dsl.seer.params import (by_shape, layer_expert_params, layer_linear_params,
                                    layer_params, stage_params as _stage_params)
from astral_dsl.seer.spec import PYTORCH_FRAMEWORKS, JobSpec
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.stages import chunk_layers

GB = 1e9
RESERVED = 3e9                 # ASSUMED: CUDA context ~0.5 GB, NCCL ~1 GB, workspaces and
#                                fragmentation (orders of magnitude, not a measurement)
RESERVED_TOLERANCE = 1.5e9     # assumed: fragmentation alone varies by a GB or two between runs
ACTIVATION_TOLERANCE = 0.10    # assumed: +/- 10 % on the counted activation tensors
ADAM_BYTES = 12.0              # fp32 master weights, momentum, variance (ZeRO's K)
COPIES = 2.0                   # quantised copies of a linear weight: for the GEMM and for its
#                                transpose (Transformer Engine keeps both, rowwise and columnwise)


def may_not_fit(estimate: float, uncertainty: float, capacity: float) -> bool:
    """Whether a memory estimate that fits may not fit by its stated uncertainty: the estimate
    plus the uncertainty over the GPU's `capacity` (any one unit; none stated: False). W750
    tests the estimate alone; `astral forecast` says "may not fit" by this, and `astral search`
    and `astral sweep --job` flag it `may not`."""
    return bool(capacity) and estimate + uncertainty > capacity


@records.frozen(slots=False)
class MemoryEstimate:
    stage: int                 # the fullest stage
    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    reserved: float
    master_grads: float = 0.0  # Megatron-LM's fp32 copy of 16-bit gradients
    fp8_weights: float = 0.0   # Transformer Engine's fp8 copies of the linear weights
    offloaded: float = 0.0     # activations held in host memory instead (not in the GPU's peak)

    @property
    def resident(self) -> float:
        """What is held through the whole iteration: weights, gradient buffers, optimizer
        states and the reserved memory."""
        return self.weights + self.gradients + self.optimizer + self.reserved

    @property
    def activation_peak(self) -> float:
        """The forward/backward peak: the resident states, the activations in flight, the
        logits and the quantised weight copies (module docstring)."""
        return self.resident + self.fp8_weights + self.activations + self.logits

    @property
    def step_peak(self) -> float:
        """The optimizer step's peak: the resident states and the fp32 copy of 16-bit
        gradients the step works on; the activations are freed by then."""
        return self.resident + self.master_grads

    @property
    def peak_phase(self) -> str:
        return "forward/backward" if self.activation_peak >= self.step_peak else "optimizer step"

    @property
    def total(self) -> float:
        """The peak: the larger of the two phases' (they do not coincide)."""
        return max(self.activation_peak, self.step_peak)

    @property
    def uncertainty(self) -> float:
        """Bytes either way (module docstring)."""
        if self.activation_peak < self.step_peak:
            return RESERVED_TOLERANCE
        return ACTIVATION_TOLERANCE * (self.activations + self.logits) + RESERVED_TOLERANCE

    def may_not_fit(self, capacity: float) -> bool:
        """Whether the estimate plus its uncertainty exceeds `capacity` bytes (may_not_fit)."""
        return may_not_fit(self.total, self.uncertainty, capacity)

    @property
    def uncertainty_pct(self) -> float:
        return 100.0 * self.uncertainty / self.total if self.total else 0.0

    def parts(self) -> Tuple[Tuple[str, float], ...]:
        out = [("weights", self.weights)]
        if self.fp8_weights:
            out.append(("fp8_weights", self.fp8_weights))
        out += [("gradients", self.gradients), ("optimizer", self.optimizer)]
        if self.master_grads:
            out.append(("fp32_grads", self.master_grads))
        return tuple(out) + (("activations", self.activations), ("logits", self.logits),
                             ("reserved", self.reserved))


def offload_obstacle(job: JobSpec, host_bw: float) -> Optional[str]:
    """Why activation offloading cannot run for `job` on a GPU whose host link is `host_bw`
    bytes/s, or None: Seer models Megatron-Core's (megatron/core/transformer/
    transformer_config.py refuses it with pipeline parallelism and keeps at least the last
    layer on the GPU), and prices its copies at the host link. "framework", "stages",
    "layers" (one layer: nothing may go) or "host_link"."""
    if job.framework != "megatron":
        return "framework"
    if job.parallel.pp > 1:
        return "stages"
    if job.model.layers < 2:
        return "layers"
    if host_bw <= 0:
        return "host_link"
    return None


def state_bytes_per_param(job: JobSpec, experts: bool = False
                          ) -> Tuple[float, float, float, float]:
    """(weights, gradients, optimizer, fp32 gradient copy) bytes per parameter held by one GPU:
    the ZeRO paper's section 3 terms, and Megatron-LM's fp32 copy of 16-bit gradients (module
    docstring). `experts`: of a routed expert's parameter, sharded over the expert-data-parallel
    group (TP x DP x CP / (EP x ETP) ranks: params.layer_expert_params) instead of DP x CP."""
    par = job.parallel
    n, z = max(1, par.dp * par.cp), par.zero
    if experts:
        n = par.expert_dp
    w_b, g_b, o_b = float(job.bytes), float(job.grad_bytes), ADAM_BYTES
    if job.dtype == "fp32":                  # no master copy: momentum and variance
        w_b, o_b = 4.0, 8.0
    elif z >= 3 and job.framework in PYTORCH_FRAMEWORKS:
        # PyTorch FSDP2 with a bf16 MixedPrecisionPolicy keeps the sharded parameters in fp32
        # (the master copy counted with the optimizer) and makes bf16 ones only when it gathers
        # a layer (stage_estimate): no sharded bf16 copy (torch.distributed.fsdp.fully_shard)
        w_b = 0.0
    bf16_moments = job.optimizer_dtype == "bf16"
    if bf16_moments:                         # momentum and variance in 2 bytes each
        o_b -= 4.0
    master = 4.0 / (n if z >= 1 else 1) if g_b < 4 and not bf16_moments else 0.0  # docstring
    return (w_b / (n if z >= 3 else 1), g_b / (n if z >= 2 else 1),
            o_b / (n if z >= 1 else 1), master)


def in_flight(p: int, v: int, m: int, stage: int, schedule: str) -> int:
    """Forward blocks (one chunk of one micro-batch) whose activations the stage holds at
    once: 1F1B's warm-up plus one; the interleaved schedule's (p - i - 1) 2 + (v - 1) p warm-up
    plus one; GPipe all of them (schedule.order has the orders)."""
    total = m * v
    if schedule == "gpipe":
        return total
    if v == 1:
        return min(p - stage, m)
    if m <= p:
        return total
    return min(total, (p - stage - 1) * 2 + (v - 1) * p + 1)


def estimate(job: JobSpec, stage_params) -> MemoryEstimate:
    """stage_params(i): parameters held by one rank of stage i (lower.Lowering.stage_params).
    The estimate of the fullest stage."""
    best = None
    shared = _Shared.of(job)
    for i in range(job.parallel.pp):
        est = stage_estimate(job, stage_params, i, shared)
        if best is None or est.total > best.total:
            best = est
    return best


@lru_cache(maxsize=32)
def of_job(job: JobSpec) -> MemoryEstimate:
    """estimate() of `job` with the parameters its own stages hold (params.stage_params over
    stages.chunk_layers, what a Lowering's stage_params gives): a forecast asks it twice of the
    same job (validate_memory.memory_check, then rule.choose), and a job spec is frozen, so the
    second is the first's result (~2 of the reference forecast's 10 ms: bench_seer.py). A
    layer's parameters are counted once per shape, as the Lowering counts them."""
    chunks, layer = chunk_layers(job), by_shape(job, layer_params)
    return estimate(job, lambda i: _stage_params(job, chunks, i, layer))


@records.frozen(slots=False)
class _Shared:
    """What the stages of one job share: its chunks, its bytes per parameter, the job its full
    recomputation rebuilds a layer as (`plain`), and per layer shape its expert parameters,
    linear weights and activations (`acts`: (recompute, shape key) -> bytes; every layer of a
    shape holds the same). Made once per estimate, not once per stage."""
    chunks: Tuple[Tuple[Tuple[int, int], ...], ...]
    states: Tuple[Tuple[float, float, float, float], Tuple[float, float, float, float]]
    plain: JobSpec
    expert_of: Callable[[int], float]
    linear_of: Callable[[int], float]
    acts: dict

    @classmethod
    def of(cls, job: JobSpec) -> "_Shared":
        return cls(chunk_layers(job),
                   (state_bytes_per_param(job), state_bytes_per_param(job, experts=True)),
                   job.with_(recompute="none") if job.recompute == "full" else job,
                   by_shape(job, layer_expert_params), by_shape(job, layer_linear_params), {})


def stage_estimate(job: JobSpec, stage_params, i: int,
                   shared: Optional[_Shared] = None) -> MemoryEstimate:
    """The estimate of one GPU of stage i. `shared`: what the stages of the job share (_Shared,
    made here when not given)."""
    shared = _Shared.of(job) if shared is None else shared
    memo, shape_key = shared.acts, job.model.shape_key

    def acts_of(j: JobSpec, L: int) -> float:
        key = (j.recompute, shape_key(L))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = layer_activation_bytes(j, L)
        return hit

    par = job.parallel
    chunks = shared.chunks[i]
    params = stage_params(i)
    expert_of = shared.expert_of
    expert = sum(expert_of(L) for first, count in chunks for L in range(first, first + count))
    dense = params - expert
    states = [dense * d + expert * e for d, e in zip(*shared.states)]
    weights = states[0]
    if par.zero >= 3 and par.dp * par.cp > 1:
        layers = sum(count for _, count in chunks)
        full = job.bytes * params / max(1, layers)     # one layer, gathered
        weights += job.bytes * params if not par.reshard_after_forward else 2 * full
    kinds = [job.model.kinds(first, count) for first, count in chunks]
    partial = job.recompute == "full" and job.recompute_layers is not None
    plain = shared.plain

    def held_by(L: int, first: int) -> float:   # the first `recompute_layers` of a chunk: full
        return acts_of(job if not partial or L - first < job.recompute_layers else plain, L)

    if partial:
        per_chunk = max((sum(held_by(L, first) for L in range(first, first + count))
                         for first, count in chunks), default=0.0)
    else:
        per_chunk = max((sum(c * acts_of(job, L) for L, c in chunk)
                         for chunk in kinds), default=0.0)
    held = in_flight(par.pp, par.v, job.run_microbatches, i, par.schedule)
    acts = per_chunk * held
    offloaded = 0.0
    if job.offload_layers and chunks:
        # the first `offload_layers` layers' activations wait in host memory; one of them is on
        # the GPU at a time, being copied out or reloaded (module docstring)
        moved = [held_by(L, first) for first, count in chunks
                 for L in range(first, first + count)][:job.offload_layers]
        offloaded = sum(moved) * held
        acts += max(moved) - offloaded
    if job.recompute == "full" and chunks and job.recompute_layers != 0:
        # one layer's full activations, rebuilt
        acts += max((acts_of(plain, L) for chunk in kinds for L, _ in chunk), default=0.0)
    logits = 0.0
    if i == par.pp - 1:
        # the logits and their fp32 softmax, once more for each MTP depth, whose embedding,
        # normalised inputs, concatenation (eh_proj's input) and final norm's input it keeps
        # (5 h a token: lower_mtp.py; its transformer layer is among the chunk's layers);
        # Transformer Engine's cross-entropy keeps the logits alone, its gradient written into
        # them (lower_dense.CROSS_ENTROPY)
        m, tokens = job.model, job.micro * job.seq / par.cp
        kept = job.bytes if job.cross_entropy_kernels == "te" else job.bytes + 4
        logits = tokens * m.vocab / par.tp * kept * (1 + m.mtp_layers)
        logits += m.mtp_layers * tokens * 5 * m.hidden * job.bytes
    fp8_copies = 0.0
    if job.fp8:
        linear_of = shared.linear_of
        linear = [linear_of(L) for first, count in chunks for L in range(first, first + count)]
        if job.fp8_head and i == par.pp - 1:
            # the output layer built as Transformer Engine's linear layer (`fp8_head`: Megatron-
            # Core 0.18.0 TELMHeadColumnParallelLinear), its weight quantised as the layers' are
            linear.append(job.model.vocab / par.tp * job.model.hidden)
        if job.quantised_params and params > 0:
            # the linear weights held in their quantised copies only (module docstring): their
            # 16-bit share of the weights (sharded or gathered alike) is not held
            weights *= 1.0 - min(1.0, sum(linear) / params)
        if par.zero >= 3 and par.dp * par.cp > 1:      # gathered a layer at a time
            linear = sorted(linear)[-2:]
        fp8_copies = COPIES * job.quant_bytes * sum(linear)   # the format's bytes, scales included
    return MemoryEstimate(i, weights, states[1], states[2], acts, logits, RESERVED,
                          states[3], fp8_copies, offloaded)
