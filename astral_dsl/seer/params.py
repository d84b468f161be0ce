"""Parameters held per rank, the data-parallel gradient reduction and the optimizer step
(a mixin of lower.Lowering: it reads the job, the layouts, the costs and the chunks); the
per-layer counts are plain functions of the job, which memory.py shares."""
from __future__ import annotations

from typing import Tuple

from astral_dsl.seer import comm


def layer_linear_params(job, L: int) -> float:
    """Parameters of layer L's linear layers (QKV, out-projection, MLP or experts) held by one
    rank: the weights of the GEMMs that run in fp8 with Transformer Engine."""
    m, par = job.model, job.parallel
    h, mats = m.hidden, m.mats
    if m.mtp_repeat(L):          # a shared MTP depth's: the first depth's weights (mtp_params)
        return 0.0
    kind = m.layer_kind(L)
    if kind == "M":
        return m.mamba_params() / par.tp
    attn = m.attention_params() / par.tp if kind in ("T", "*") else 0.0
    if kind == "*":
        return attn
    if m.is_moe(L):
        mlp = m.experts * mats * h * m.moe_ffn / (par.ep * par.etp)
        mlp += m.shared_experts * mats * h * m.shared_width / par.tp
    else:
        mlp = mats * h * m.ffn / par.tp
    return attn + mlp


def by_shape(job, fn):
    """L -> fn(job, L), computed once per shape of layer (model_spec.ModelSpec.shape_key: its
    kind and whether it is MoE), for an fn that reads L through nothing else (the per-layer
    counts here, forecast.layer_flops_per_token): the same values, at a dictionary lookup a
    layer where sums run over every layer (a search prices them for thousands of jobs)."""
    memo: dict = {}
    key = job.model.shape_key

    def of(L: int):
        k = key(L)
        hit = memo.get(k)
        if hit is None:
            hit = memo[k] = fn(job, L)
        return hit
    return of


def layer_expert_params(job, L: int) -> float:
    """Parameters of layer L's routed experts held by one rank (0 in a layer without them).
    Megatron-Core keeps them in buffers of their own, whose gradients are reduced and whose
    optimizer states are sharded over the expert-data-parallel group, not the data-parallel one
    (distributed/distributed_data_parallel.py: `expert_parallel_buffers` over
    `intra_expt_dp_group`; optimizer/__init__.py: the experts' optimizer over the same group;
    0.16.1); PyTorch FSDP2 with EP shards them over the same ranks (torchtitan's
    `dp_shard_mod_ep` mesh). With expert tensor parallelism each holds 1/ETP of its EP rank's
    experts (experts.py: fc1 and fc2 split over the expert-TP group)."""
    m, par = job.model, job.parallel
    if m.layer_kind(L) in ("M", "*") or not m.is_moe(L) or m.mtp_repeat(L):
        return 0.0
    return m.experts * m.mats * m.hidden * m.moe_ffn / (par.ep * par.etp)


def layer_params(job, L: int) -> float:
    """Parameters of layer L held by one rank: its linear layers, the MoE router and the norms
    (4 h)."""
    m = job.model
    if m.mtp_repeat(L):
        return 0.0
    router = m.hidden * m.experts if m.is_moe(L) and not job.gate_free else 0.0
    norms = 4 * m.hidden if m.layer_kind(L) == "T" else 2 * m.hidden
    return layer_linear_params(job, L) + router + norms


def stage_params(job, chunks, stage: int, layer=None) -> float:
    """Parameters held by one rank of `stage` (`chunks`: stages.chunk_layers(job)): its layers'
    (`layer(L)`, layer_params by default), the embedding on the first stage and the output
    layer on the last (a GPT of one stage ties it to the embedding)."""
    par, m = job.parallel, job.model
    layer = layer or (lambda L: layer_params(job, L))
    total = 0.0
    for first, n in chunks[stage]:
        total += sum(c * layer(L) for L, c in m.kinds(first, n))
    if stage == 0:
        total += m.vocab * m.hidden / par.tp
    if stage == par.pp - 1 and (not m.gpt or par.pp > 1):
        total += m.vocab * m.hidden / par.tp
    if stage == par.pp - 1 and m.mtp_layers:
        total += mtp_params(job)
    return total


def mtp_params(job) -> float:
    """What multi-token prediction adds to the last stage besides its layers (lower_mtp.py):
    each depth's eh_proj (2 h x h, column-parallel) and its three norms (enorm, hnorm,
    final_layernorm), and with pipeline stages the word embedding its input takes (Megatron-Core
    0.16.0 models/gpt/gpt_model.py: the MTP stage holds the embedding). Depths that share their
    weights (`mtp_shared`) hold one set: Megatron-Core 0.18.0 transformer/
    multi_token_prediction.py, MultiTokenPredictionBlock._build_layers builds one
    MultiTokenPredictionLayer (norms, eh_proj and block) under `mtp_use_repeated_layer` and
    `forward` runs `self.layers[0]` for every depth (0.19.0 and 0.19.2 alike); their gradients
    accumulate into it, and the optimizer steps it once."""
    m, par = job.model, job.parallel
    depth = 2 * m.hidden * m.hidden / par.tp + 3 * m.hidden
    held = min(1, m.mtp_layers) if m.mtp_shared else m.mtp_layers
    return held * depth + (m.vocab * m.hidden / par.tp if par.pp > 1 else 0.0)


_COLLECTIVES = {"rs": comm.reduce_scatter, "ag": comm.all_gather, "ar": comm.all_reduce}


class ParamsMixin:
    def layer_params(self, L: int) -> float:
        """Parameters of layer L held by one rank (computed once per layer kind: the
        schedule's gradient buckets and the memory estimate ask for every layer)."""
        key = self.job.model.shape_key(L)
        memo = self.__dict__.setdefault("_memo_layer", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = layer_params(self.job, L)
        return hit

    def layer_split(self, L: int) -> Tuple[float, float]:
        """(dense, routed-expert) parameters of layer L held by one rank."""
        key = self.job.model.shape_key(L)
        memo = self.__dict__.setdefault("_memo_split", {})
        hit = memo.get(key)
        if hit is None:
            expert = layer_expert_params(self.job, L)
            hit = memo[key] = (self.layer_params(L) - expert, expert)
        return hit

    def stage_split(self, stage: int) -> Tuple[float, float]:
        """(dense, routed-expert) parameters of `stage` held by one rank (the embedding and the
        head are dense)."""
        expert = sum(c * self.layer_split(L)[1] for first, n in self.chunks[stage]
                     for L, c in self.job.model.kinds(first, n))
        return self.stage_params(stage) - expert, expert

    @property
    def synced(self) -> bool:
        """Whether some weights are replicated across ranks: their gradients need reducing (the
        dense ones over DP x CP, the experts' over the expert-data-parallel group)."""
        return self.groups["dp"].n > 1 or (self.groups["edp"].n > 1 and self.job.model.experts > 0)

    def weights_coll(self, kind: str, split: Tuple[float, float],
                     per_param: Tuple[float, float]) -> float:
        """A collective (`kind`: rs, ag or ar) over (dense, routed-expert) weights or their
        gradients of `per_param` = (dense, expert) bytes each (gathered_bytes): the dense ones over
        the DP x CP group, the routed experts' over the expert-data-parallel group
        (layer_expert_params), one after the other on the DP stream."""
        # remembered: a stage's buckets repeat its layers' shapes, and stages their buckets
        # (`layouts_key`: the groups, a stage's own where they are not the job's: lower.Lowering.at)
        key = (self.layouts_key, kind, split, per_param)
        memo = self.__dict__.setdefault("_memo_coll", {})
        hit = memo.get(key)
        if hit is None:
            fn = _COLLECTIVES[kind]
            dense, expert = split
            pd, pe = per_param
            hit = memo[key] = (fn(self.net, self.groups["dp"], dense * pd)
                               + fn(self.net, self.groups["edp"], expert * pe))
        return hit

    def gathered_bytes(self, dense: float, linear: float) -> Tuple[float, float]:
        """Bytes per parameter an all-gather of weights moves, (dense, routed-expert), for
        `dense` dense parameters of which `linear` are linear layers' weights: 16-bit, or with
        `fp8_params` and fp8 the linear weights in fp8 (Megatron-Core's fp8 parameter gather
        moves Float8Tensor data: distributed_data_parallel_config.py, fp8_param_gather); an MXFP8
        model gathers 16-bit weights through its gradient buffer (reuse_grad_buf_for_mxfp8_param_ag)
        and quantises after, and an NVFP4 one is priced the same (not checked against a
        source: docs/seer.md, "Memory")."""
        if not (self.job.quantised_params and self.job.dtype == "fp8"):
            return self.elem, self.elem
        q = self.job.quant_bytes
        share = min(1.0, linear / dense) if dense > 0 else 0.0
        return self.elem - (self.elem - q) * share, q

    def dense_linear(self, L: int) -> float:
        """The dense linear parameters of layer L held by one rank (its linear layers' less
        its routed experts'; computed once per layer kind, as layer_params)."""
        key = self.job.model.shape_key(L)
        memo = self.__dict__.setdefault("_memo_linear", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = layer_linear_params(self.job, L) - self.layer_split(L)[1]
        return hit

    def stage_params(self, stage: int) -> float:
        """Parameters held by one rank of `stage` (once per stage key: lower.Lowering.stage_key)."""
        key = self.stage_key(stage)
        memo = self.__dict__.setdefault("_memo_stage", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = self._stage_params(key)      # its key: the first stage alike
        return hit

    def _stage_params(self, stage: int) -> float:
        return stage_params(self.job, self.chunks, stage, self.layer_params)

    def dp_reduce(self, split: Tuple[float, float]) -> float:
        """Gradient reduction of (dense, routed-expert) parameters: reduce-scatter with ZeRO,
        all-reduce without (weights_coll)."""
        return self.weights_coll("rs" if self.job.parallel.zero >= 1 else "ar", split,
                                 (self.job.grad_bytes,) * 2)

    def dp_parts(self, split: Tuple[float, float], gather: bool = False,
                 linear: float = 0.0) -> Tuple[float, float]:
        """dp_reduce's (with `gather`: param_gather's) two collectives, one after the other on
        the DP stream, seconds each: (the dense weights' over DP x CP, the routed experts' over
        the expert-data-parallel group), as a profiler trace shows them apart (Megatron-Core's
        DATA_PARALLEL_GROUP and EXPERT_DATA_PARALLEL_GROUP)."""
        if gather:
            kind, per = "ag", self.gathered_bytes(split[0], linear)
        else:
            kind, per = ("rs" if self.job.parallel.zero >= 1 else "ar"), (self.job.grad_bytes,) * 2
        return (self.weights_coll(kind, (split[0], 0.0), per),
                self.weights_coll(kind, (0.0, split[1]), per))

    def param_gather(self, split: Tuple[float, float], linear: float = 0.0) -> float:
        """The all-gather of updated (dense, routed-expert) weights, `linear` of the dense ones
        linear layers' (gathered_bytes)."""
        return self.weights_coll("ag", split, self.gathered_bytes(split[0], linear))

    def stage_linear(self, stage: int) -> float:
        """The dense linear parameters of `stage` held by one rank."""
        return sum(c * self.dense_linear(L) for first, n in self.chunks[stage]
                   for L, c in self.job.model.kinds(first, n))

    def optimizer_time(self, stage: int) -> float:
        """_optimizer_time, worked out once per stage key (lower.Lowering.stage_key: stages
        that hold alike step alike)."""
        key = self.stage_key(stage)
        memo = self.__dict__.setdefault("_memo_optimizer", {})
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = self._optimizer_time(stage)
        return hit

    def _optimizer_time(self, stage: int) -> float:
        """Mixed-precision Adam, multi-tensor fused: per parameter it reads the fp32 master,
        gradient, m and v and writes master, m, v and the low-precision copy (30 bytes), plus the
        gradient-norm read and the gradient zeroing (8 bytes); with `optimizer_dtype = bf16` m and
        v take 2 bytes each and the gradient is read in bf16 (28 bytes in all). With fp8,
        Transformer Engine casts
        each linear weight once per iteration, in the first micro-batch's forward (Megatron-Core's
        TE modules pass `is_first_microbatch`), at the rate of a cast no norm feeds
        (lower_linear.cast_bytes: with its transpose before Blackwell, current scaling's amax
        pass, MXFP8's two block-scaled copies); its cost is counted here, with the step that
        produced the weights. Per-tensor fp8 parameters are cast by the optimizer on its shard
        instead (fp8_param_cast); MXFP8 parameters are copied out of the gradient buffer
        besides (mxfp8_param_copy)."""
        held = self.stage_split(stage)
        dense, expert = held
        if self.job.parallel.zero >= 1:
            dense /= self.groups["dp"].n
            expert /= self.groups["edp"].n
        nbytes = (28.0 if self.job.optimizer_dtype == "bf16" else 38.0) * (dense + expert)
        if self.job.fp8:     # the next iteration's weight casts (module docstring)
            linear = by_shape(self.job, layer_linear_params)
            quantised = sum(
                linear(L) for first, n in self.chunks[stage] for L in range(first, first + n))
            tensor = self.fp8_param_cast(self.stage_linear(stage), quantised)
            nbytes += self.cast[1] * quantised if tensor is None else tensor
            nbytes += self.mxfp8_param_copy(sum(held), quantised)
        return self.c.stream("optimizer", nbytes, kernels=20)

    def fp8_param_cast(self, dense: float, quantised: float):
        """HBM bytes of the weight casts of per-tensor fp8 parameters (`fp8_params`, delayed or
        current scaling) under Megatron-Core's distributed optimizer, for `quantised` linear
        weights held by the rank, `dense` of them dense; None otherwise (the casts of
        CAST_BYTES on every weight held). The optimizer casts its shard of the fp32 master
        weights into the fp8 parameters (Transformer Engine 2.9.0 pytorch/tensor/utils.py
        `cast_master_weights_to_fp8`: current scaling `tex.compute_amax` on the master, read 4,
        the amaxes all-reduced over the data-parallel group, then `update_quantized`, read 4 and
        write 1: 9 bytes; delayed scaling the cast alone, 5) and the fp8 shards are gathered
        (params.gathered_bytes); before Blackwell the gathered weight's transpose is written
        after the gather (Megatron-Core 0.16.0 fp8_utils.py `post_all_gather_processing`, TE's:
        read 1, write 1 of every weight held), on Blackwell none (the GEMMs take any layout)."""
        job = self.job
        if not (job.quantised_params and job.dtype == "fp8"
                and job.fp8_recipe in ("current", "delayed") and job.parallel.zero < 3):
            return None
        per = 9.0 if job.fp8_recipe == "current" else 5.0
        shard = dense / self.groups["dp"].n + (quantised - dense) / self.groups["edp"].n \
            if job.parallel.zero >= 1 else quantised
        transpose = 0.0 if self.c.gpu.arch == "blackwell" else 2.0 * quantised
        return per * shard + transpose

    def mxfp8_param_copy(self, held: float, quantised: float) -> float:
        """HBM bytes, beyond the weight casts, of Megatron-Core's MXFP8 parameters gathered
        through the gradient buffer (`reuse_grad_buf_for_mxfp8_param_ag`, which Megatron-Bridge's
        MXFP8 precision config sets with `fp8_param_gather`: 0.2.0rc6 training/
        mixed_precision.py:241-242): after each bucket's 16-bit all-gather every parameter is
        copied out of the shared buffer into `param.data` (Megatron-Core 0.14.0 distributed/
        param_and_grad_buffer.py:304-319, 0.16.0 :340-354: an MXFP8Tensor's copy_ is its
        quantize_, Transformer Engine 2.9.0 pytorch/tensor/quantized_tensor.py:469-473, the
        weight cast counted above; a 16-bit parameter's a plain copy, 4 bytes) and the bucket's
        16-bit parameter buffer zeroed for the gradients (2 bytes a parameter), for all `held`
        parameters of the rank, of which `quantised` are MXFP8 linear weights. Nothing for
        another recipe, without the distributed optimizer or under FSDP (zero 3)."""
        job = self.job
        if not (job.quantised_params and job.dtype == "mxfp8" and 1 <= job.parallel.zero < 3):
            return 0.0
        return 2.0 * held + 4.0 * max(0.0, held - quantised)
