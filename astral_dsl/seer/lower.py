"""Lowering a job to per-rank operator templates.

One pipeline block is one stage's forward or backward pass of one micro-batch through one model
chunk. Its operators (norms, QKV, attention, out-projection, MLP or MoE router and experts, TP
and EP collectives, recomputation) form a template: a small graph over the rank's streams whose
offsets are computed once and replayed for every block of the schedule (schedule.py). Sizes are
per rank: TP shards heads and FFN columns, sequence parallelism shards norms and dropouts, CP
shards the sequence, EP the experts. Megatron-LM's operator order and overlaps are modelled:
backward TP reduce-scatter / all-reduce of a column-parallel layer's input gradient runs on the
TP stream while the weight gradient is computed; with sequence parallelism the input all-gather
for the weight gradient overlaps the data gradient; with `tp_overlap = full` (Megatron-LM's
--tp-comm-overlap, PyTorch's async TP) every TP collective is split with the GEMM beside it and
overlaps it (under torchtitan those torch's micro-pipelined TP fuses: `gather_fused`,
lower_comm.py; its unfused collectives copy to and from the sequence dimension, `dim_copies`).
With a quantised dtype (fp8, MXFP8, NVFP4) the linear layers' GEMMs run quantised after their
casts (lower_linear.cast_bytes per recipe and GPU), the sequence-parallel all-gathers move the
quantised shards (with current scaling after their amax's TP all-reduce), and with delayed
scaling each chunk's forward ends with the amax all-reduce (docs/seer.md, "Low precision").
With `recompute_layers` only each chunk's first layers are recomputed. Multi-head latent attention
(DeepSeek-V3) projects queries and keys through their latent ranks; sliding-window layers attend
to their window. Without CUDA graphs an MoE layer's forward waits for the host to read its token
counts (none when padded to capacity) and loses moe_sync_s there (fitted); with token
dropping its experts take JobSpec.routed's copies. Every block takes at least the host's time
to issue its layers (host_layer_s, fitted; template.py); an MoE layer's routing kernels cost
moe_layer_s (fitted) beyond what bytes and FLOPs price.

The operators are built by concern in mixins of Lowering: lower_dense.py, lower_attention.py,
lower_ring.py, lower_moe.py, lower_mamba.py, lower_linear.py, lower_comm.py and lower_offload.py.
"""
from __future__ import annotations

import copy
from functools import cached_property
from typing import Dict, Optional, Tuple

from astral_dsl.seer import comm
from astral_dsl.seer.comm_groups import groups, stage_groups
from astral_dsl.seer.costs import GEMM_STREAMS, Costs
from astral_dsl.seer.lower_attention import AttentionOps
from astral_dsl.seer.lower_comm import CommOps
from astral_dsl.seer.lower_dense import EMBED, HEAD, DenseOps
from astral_dsl.seer.lower_linear import LinearOps, cast_bytes
from astral_dsl.seer.lower_mamba import MambaOps
from astral_dsl.seer.lower_mtp import MtpOps
from astral_dsl.seer.lower_moe import MoeOps
from astral_dsl.seer.lower_offload import OffloadOps, offload_shape, reload_of
from astral_dsl.seer.lower_ring import RingOps
from astral_dsl.seer.params import ParamsMixin
from astral_dsl.seer.spec import JobSpec
from astral_dsl.seer.stages import chunk_layers
from astral_dsl.seer.template import Template, Builder



class Lowering(AttentionOps, RingOps, DenseOps, MoeOps, MambaOps, MtpOps, LinearOps, CommOps,
               OffloadOps, ParamsMixin):
    """The job's block templates and the quantities they are built from.

    Attributes, per rank and per micro-batch:

    | name          | meaning                                                                |
    |---------------|------------------------------------------------------------------------|
    | tp, cp, ep    | tensor-, context- and expert-parallel degrees                          |
    | groups        | comm.Layout of each communication group (tp, cp, dp, pp, ep)           |
    | elem          | bytes per activation / weight element (the job's dtype; fp8: bf16, 2)  |
    | fp8           | the linear layers' GEMMs run in fp8 (Transformer Engine, `dtype = fp8`)|
    | tokens        | tokens a rank processes: micro-batch x sequence / cp                   |
    | sp            | sequence parallelism is in effect (sp declared and tp > 1)             |
    | sp_tokens     | tokens in the sequence-parallel region (norms, dropouts): tokens / tp  |
    | heads         | attention heads per rank; kv_heads: key/value heads per rank           |
    | head_dim      | hidden / heads                                                         |
    | chunks        | [stage][chunk] -> (first layer, layer count)                           |

    Local names in the operator builders: `h` hidden size, `q` and `kv` the query and key/value
    widths per rank, `F` FFN width per rank, `shared_ffn` the shared experts' FFN width, `V`
    vocabulary per rank, `S` attention-score elements, `m_, n, k` a GEMM's [m, k] x [k, n]
    shape, `L` the layer index, `b` the Builder."""

    def __init__(self, job: JobSpec, costs: Costs, net: comm.Network):
        self.job, self.c, self.net = job, costs, net
        par, m = job.parallel, job.model
        self.tp, self.cp, self.ep = par.tp, par.cp, par.ep
        self.groups = groups(job, net)        # the job's slowest; a stage's: at(stage)
        # per stage, its own groups (comm_groups.stage_groups); `_views`: a Lowering per
        # distinct set of them (the job's: this one), whose templates share `_cache`
        self.stage_groups = stage_groups(job, net, self.groups)
        self.layouts_key: Optional[int] = None
        self._views: Dict[int, "Lowering"] = {}
        # a view's: the lowering it was made from (this one refers to no other, not to itself:
        # a lowering without views is freed as its last reference goes, not by the collector)
        self._root: Optional["Lowering"] = None
        self.elem = job.bytes
        self.fp8 = job.fp8
        self.tokens = job.micro * job.seq / par.cp
        self.sp = par.sp and par.tp > 1
        self.sp_tokens = self.tokens / par.tp if self.sp else self.tokens
        self.heads = max(1, m.heads // par.tp)
        self.kv_heads = max(1, m.kv_heads // par.tp)
        self.head_dim = m.head_dim
        self.chunks = chunk_layers(job)
        self.cast = cast_bytes(job, costs.gpu.arch)
        self.swizzle = job.scale_swizzle and job.dtype in ("mxfp8", "nvfp4") and \
            job.framework == "megatron"
        self.cs_amax = (self.fp8 and self.sp and job.dtype == "fp8"
                        and job.fp8_recipe == "current" and job.framework == "megatron")
        # torchtitan's Llama runs wq, wk, wv and w1, w3 as separate nn.Linear layers on the same
        # input (torchtitan 0.1.0 models/llama3/model/model.py, Attention and FeedForward), where
        # Megatron-Core fuses each group into one GEMM (linear_qkv, linear_fc1)
        self.separate = job.framework == "torchtitan"
        # torchtitan's async TP (torch.compile's micro-pipelined TP: torch 2.7 distributed/
        # _symmetric_memory/__init__.py, _fused_all_gather_matmul_impl and
        # _fused_matmul_reduce_scatter_impl) runs a GEMM beside its all-gather or reduce-scatter
        # as TP GEMMs of 1/TP of its rows, one per step of the exchange
        self.ring = self.tp if (self.tp_full and self.sp and job.framework == "torchtitan") else 1
        # a quantised job's TP all-gathers move quantised data (_tp_gather), except with
        # torchao's rowwise fp8: torchtitan's float8 TP (Float8ColwiseParallel) is tensorwise
        # only (`enable_float8_tensorwise_tp`), so rowwise gathers bf16 and casts after
        self.ag_quantised = self.fp8 and not (job.dtype == "fp8" and job.fp8_recipe == "rowwise")
        self.ag_bytes = job.quant_bytes if self.ag_quantised else self.elem
        # which TP collectives torch's micro-pipelined TP fuses with a GEMM (torch 2.6.0 / 2.8.0
        # _inductor/fx_passes/micro_pipeline_tp.py): an all-gather only with the matmuls that
        # read the gathered tensor itself (`_find_consumer_matmuls`), which a quantised layer's
        # gathered bf16 does not (rowwise: torchao casts it row by row after the gather), so
        # there it stays a plain all-gather (`gather_fused`); a reduce-scatter only of one
        # matmul's output (`fuse_matmul_reduce_scatter`: `_find_producer_matmul`, one user),
        # not of separate layers' summed data gradients (lower_linear.py, _linear_bwd).
        # Megatron-LM's userbuffers (ring 1) split every one
        self.gather_fused = self.ring == 1 or self.ag_quantised or not self.fp8
        # torchtitan's sequence-parallel collectives (DTensor's, its plan's Shard(1)) gather and
        # scatter the sequence dimension, dim 1 of [batch, sequence, hidden]: torch's
        # functional collectives move it to dim 0 and back with a copy (_dim_copy)
        self.dim_copies = self.sp and job.framework == "torchtitan"
        cal = costs.cal
        self.host_layer_s = 0.0 if job.cuda_graphs else cal.host_layer_s
        # an MoE layer's pause (moe_sync_s): the forward's wait for the host to read the token
        # counts, which padded token dropping and CUDA graphs have not; the backward waits on
        # nothing from the host (Megatron-Core 0.16.0 transformer/moe/token_dispatcher.py: the
        # counts' device-to-host copy is in the forward's dispatch_preprocess, the all-to-all's
        # backward reuses the split sizes the forward kept; Transformer Engine 2.11
        # pytorch/permutation.py's backward functions read no count back: docs/seer.md, stop 62)
        self.moe_sync_s = 0.0 if job.cuda_graphs else cal.moe_sync_s
        self.moe_sync_fwd_s = self.moe_sync_s if job.host_counts else 0.0
        # Megatron-LM's expert GEMMs (a batch of local experts) run one per expert on TE's
        # streams when the host has the token counts, i.e. without CUDA graphs (GEMM_STREAMS);
        # otherwise, and in the PyTorch frameworks (torchtitan's torch._grouped_mm, AutoModel's
        # grouped GEMM), as one grouped kernel. Without a grouped GEMM (`grouped_gemm = false`:
        # Megatron-Core's SequentialMLP, experts.py) each expert's Transformer Engine linear
        # layers run on its own rows, one expert after another on the compute stream: plain
        # GEMMs, at the dense tile-wave half point (`expert_grouped` False)
        self.expert_grouped = job.grouped_gemm
        # Megatron FSDP's weight gradients copied into the main gradient (lower_linear.py)
        self.grad_copy = job.framework == "megatron" and job.parallel.zero >= 3
        self.expert_streams = (GEMM_STREAMS if job.framework == "megatron" and
                               not job.cuda_graphs else None) if job.grouped_gemm else 1
        self._cache: Dict[tuple, Template] = {}      # by shape (chunks of one shape share it)
        self._at: Dict[tuple, Template] = {}         # by (stage, chunk, phase)
        self._alike: Dict[tuple, Template] = {}      # by (stage_key, chunk, phase)

    # ---- one transformer layer (its operators: lower_attention.py, lower_ring.py,
    # lower_dense.py, lower_moe.py, lower_mamba.py, lower_linear.py, lower_comm.py) -----
    def _layer_fwd(self, b, L, pre=""):
        """One layer's forward: attention and MLP (or MoE) sub-blocks, or, in a hybrid model,
        the one its kind says (model_spec.ModelSpec.layer_kind: Mamba-2, attention, MoE or MLP)."""
        kind = self.job.model.layer_kind(L)
        if kind == "M":
            self._mamba_fwd(b, L, pre)
            return
        if kind in ("T", "*"):
            self._attn_block_fwd(b, L, pre)
        if kind != "*":
            self._mlp_block_fwd(b, L, pre)

    def _layer_bwd(self, b, L, whole: bool = True):
        """A layer's backward, after its recomputation; `whole`: a `recompute = full` job
        recomputes this layer (stages.full_recompute), otherwise it recomputes nothing."""
        m, elem, tokens = self.job.model, self.elem, self.tokens
        kind = m.layer_kind(L)
        rec = self.job.recompute
        if rec == "full" and not whole:
            rec = "none"
        mark = len(b.ops)
        if rec == "full":
            self._layer_fwd(b, L, pre="recompute ")
        elif rec == "selective" and self.job.attention == "unfused" and kind in ("T", "*"):
            self._attention_fwd(b, L, pre="recompute ")
        elif rec != "full" and self.job.recomputed:
            # operator-level (PyTorch's; Megatron-Core's recompute modules): the norms, the
            # activation functions, the experts' included (their outputs, the fc2 inputs, are
            # not kept: memory.py), MLA's up-projections (and their RoPE)
            redo = self.job.recomputed
            if "layernorm" in redo:
                for name in ("input norm", "post-attn norm")[:2 if kind == "T" else 1]:
                    self._norm_fwd(b, "recompute " + name, L)
            if "mla_up_proj" in redo and m.mla and kind in ("T", "*"):
                self._mla_up(b, L, "recompute ")
            if m.dense_mlp(L) and "mlp" in redo:
                self._dense_mlp_fwd(b, L, "recompute ")
            elif m.dense_mlp(L) and "activation" in redo:
                F = m.ffn / self.tp
                self._clamp(b, "recompute activation clamp", tokens * F * (m.mats - 1), L)
                self._ew(b, "recompute activation", m.mats * tokens * F * elem, L)
            elif kind in ("T", "E") and m.is_moe(L) and "moe_act" in redo:
                routed = self.job.routed(tokens / self.tp)
                self._clamp(b, "recompute expert act clamp", routed * m.moe_ffn * (m.mats - 1), L)
                width = m.shared_experts * m.shared_width * tokens / self.tp + routed * m.moe_ffn
                self._ew(b, "recompute expert activation", m.mats * width * elem, L)
            if self.job.every_second_mm:
                self._every_second_mm(b, L, kind)
        for op in b.ops[mark:]:
            if op.stream == "compute":
                op.cat = "recompute" if op.cat != "overhead" else op.cat
        if kind == "M":
            self._mamba_bwd(b, L)
            return
        if kind != "*":
            self._mlp_block_bwd(b, L)
        if kind in ("T", "*"):
            self._attn_block_bwd(b, L)

    def _every_second_mm(self, b, L, kind):
        """torchtitan's selective per-op recomputation (torchtitan 0.1.0, models/llama3/infra/
        parallelize.py, `_apply_ac_to_transformer_block`): `_save_list` keeps the outputs of
        aten.mm, attention, the reduce-scatter and max "except every second mm", counted per
        block in call order, and recomputes everything else. Of a Llama block's linear layers
        (wq, wk, wv, wo, w1, w3, w2) the second, fourth and sixth are not kept; the backward
        needs wk's output (RoPE's, for attention's backward, recomputed with it) and w3's (the
        gated activation's), and wo's when the residual sum after it (the MLP norm's input) is
        recomputed from it: without TP; with TP the reduce-scatter after it, kept, feeds the
        sum instead. A non-gated MLP's sixth (w2) feeds only the block's output. Each
        recomputed GEMM is cast again when quantised; its input's TP all-gather, not kept,
        replaces the one its weight gradient would make. Not modelled: MLA's projections and an
        MoE layer's (its router's and shared experts' matmuls count, its grouped GEMMs do not),
        whose order differs: their attention block is counted as a Llama block's."""
        m, tokens, h = self.job.model, self.tokens, self.job.model.hidden
        if kind in ("T", "*") and not m.mla:
            self._linear(b, "recompute k proj", tokens, self.kv_heads * m.head_dim, h, L,
                         norm_fed=True)
            if self._rotary:
                self._rope(b, L, "recompute ")
            if self.tp == 1:
                self._linear(b, "recompute out proj", tokens, h, self.heads * m.v_dim, L)
        if m.dense_mlp(L) and m.mats == 3:
            self._linear(b, "recompute fc1 (w3)", tokens, m.ffn / self.tp, h, L, norm_fed=True)

    # ---- blocks --------------------------------------------------------------------------------
    def template(self, stage: int, chunk: int, phase: str) -> Template:
        at = (stage, chunk, phase)
        hit = self._at.get(at)
        if hit is None:         # stages of one key (stage_key) share their chunks' templates
            alike = (self.stage_key(stage), chunk, phase)
            hit = self._alike.get(alike)
            if hit is None:
                hit = self._alike[alike] = self.at(stage)._template(stage, chunk, phase)
            self._at[at] = hit
        return hit

    def at(self, stage: int) -> "Lowering":
        """The lowering of pipeline stage `stage`: its collectives on its own groups
        (comm_groups.stage_groups); this one where they are the job's. Made once per distinct
        set of groups (stages that sit alike share it), its templates in the shared cache,
        keyed by the set's."""
        if self.layouts_key is not None:
            return self._root.at(stage)
        lays = self.stage_groups[min(stage, len(self.stage_groups) - 1)]
        if lays is self.groups:
            return self
        key = id(lays)
        view = self._views.get(key)
        if view is None:
            view = copy.copy(self)
            view.groups, view.layouts_key, view._root = lays, len(self._views), self
            view.__dict__.pop("_hops", None)     # the job's transfers: this one's p2p_hops
            self._views[key] = view
        return view

    def stage_key(self, stage: int) -> int:
        """The first stage that holds as `stage` does: the same groups, the same shapes of its
        chunks' layers, the embedding or the head alike, the same offloaded layers (what its
        parameters and templates depend on). Stages of one key share their templates
        (`template`); param_gather.gather_gates and the optimizer step work once per key."""
        return self._stage_keys[stage]

    @cached_property
    def _stage_keys(self) -> Tuple[int, ...]:
        par, shapes = self.job.parallel, self._shapes
        first: Dict[tuple, int] = {}
        return tuple(first.setdefault((self.at(i).layouts_key,
                                       tuple(shapes[f:f + n] for f, n in self.chunks[i]),
                                       i == 0, i == par.pp - 1, self.offloaded(i)), i)
                     for i in range(par.pp))

    def stage_lowerings(self) -> tuple:
        """One lowering per distinct set of stage groups (`at`), in the order of the stages (`at`
        is asked once per set, not once per stage: a search asks this of thousands of jobs)."""
        seen: Dict[int, "Lowering"] = {}
        for i, lays in enumerate(self.stage_groups):
            if id(lays) not in seen:
                seen[id(lays)] = self.at(i)
        return tuple(seen.values())

    def _template(self, stage: int, chunk: int, phase: str) -> Template:
        first, n = self.chunks[stage][chunk]
        par = self.job.parallel
        embed = stage == 0 and chunk == 0
        head = stage == par.pp - 1 and chunk == par.v - 1
        offloaded = self.offloaded(stage)
        key = (phase, self._shapes[first:first + n], embed, head,
               tuple(sorted(L - first for L in offloaded)) if offloaded else (), self.layouts_key)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        b = Builder()
        layers = range(first, first + n)
        fsdp = self.job.parallel.zero >= 3 and self.synced
        gathers = {}
        # ZeRO-3 / FSDP: every layer's weights are all-gathered ahead of use, in the backward
        # again unless they were kept after the forward (reshard_after_forward = false)
        if fsdp and (phase == "F" or self.job.parallel.reshard_after_forward):
            for L in (layers if phase == "F" else reversed(layers)):
                gathers[L] = self._weights_op(b, "param all-gather", "ag", L, self.gathered_bytes(
                    self.layer_split(L)[0], self.dense_linear(L)))
        own = range(len(b.ops))       # the gathers: one per layer, in the pass's order
        # a run of layers of one shape: built twice, then copied (Builder.each); each layer
        # alike but for its activations' copies and (recompute_layers) whether it is recomputed;
        # its weights' gather is its own (`own`: each layer waits for the next gather)
        whole = self.job.recompute_layers if self.job.recompute == "full" else None
        shape = self.layer_shape
        if whole is not None:
            shape = lambda L, key=shape: (key(L), L - first < whole)   # noqa: E731
        if offloaded:
            shape = offload_shape(shape, offloaded, phase, first, n)
        if phase == "F":
            if embed:
                self._embed_fwd(b)

            def forward(L):
                b.wait_for(gathers.get(L))
                self._layer_fwd(b, L)
                if L in offloaded:
                    self._offload(b, "activation offload", "offload_out", L)
            b.each(layers, forward, shape, own)
            if n:
                self._amax_reduce(b, b.fp8_gemms, first + n - 1)
            if head:
                self._head_fwd(b)
                self._mtp_fwd(b)
        else:
            if head:
                self._mtp_bwd(b)
                self._head_bwd(b)

            def backward(L):
                # each offloaded layer's activations come back while the layer after it in
                # the model runs its backward (Transformer Engine prefetches one layer ahead)
                for nxt in ([L] if L == first + n - 1 else []) + ([L - 1] if L > first else []):
                    if nxt in offloaded:
                        self._offload(b, "activation reload", "offload_in", nxt)
                b.wait_for(gathers.get(L), reload_of(b.ops, L) if L in offloaded else None)
                self._layer_bwd(b, L, whole is None or L - first < whole)
                if fsdp:
                    self._weights_op(b, "grad reduce-scatter", "rs", L, (self.job.grad_bytes,) * 2)
            b.each(reversed(layers), backward, shape, own)
            if embed:
                self._embed_bwd(b)
            m = self.job.model
            self._embed_grad(b, (1 if embed else 0) + (m.mtp_layers if head else 0),
                             m.gpt and embed and head, EMBED if embed else HEAD)
        for op in b.ops:          # layers counted from the chunk's first: templates are shared
            if op.layer >= 0:
                op.layer -= first
        # the host issues each layer's pass (the embedding and the head count as one, and an
        # MTP depth's embedding, projection and head as one more: its layer is among the n)
        redone = (n if whole is None else min(n, whole)) if self.job.recompute == "full" else 0
        tpl = Template(b.ops, self.host_layer_s * (n + (1 if embed or head else 0)
                                                   + (self.job.model.mtp_layers if head else 0)
                                                   + (redone if phase == "B" else 0)))
        self._cache[key] = tpl
        return tpl

    @cached_property
    def _shapes(self) -> tuple:
        """The shape key (model_spec.ModelSpec.shape_key) of each layer of the chunks: a
        template's key slices it (each stage's every chunk asks for one, in both passes)."""
        end = max((first + n for row in self.chunks for first, n in row), default=0)
        return tuple(map(self.layer_shape, range(end)))

    def layer_shape(self, L: int):
        """A layer's shape key (model_spec.ModelSpec.shape_key), and with `nope_every` whether
        it is a NoPE layer (no RoPE nor query-key norm: lower_attention._rope)."""
        key = self.job.model.shape_key(L)
        return (key, self.job.model.nope(L)) if self.job.model.nope_every else key
