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
overlaps it. With a quantised dtype (fp8, MXFP8, NVFP4) the linear layers' GEMMs run quantised
after their casts (CAST_BYTES per recipe), the sequence-parallel all-gathers move the quantised
shards, and with delayed scaling each chunk's forward ends with the amax all-reduce
(docs/seer.md, "Low precision"). With `recompute_layers` only each chunk's first layers are
recomputed. Multi-head latent attention
(DeepSeek-V3) projects queries and keys through their latent ranks; sliding-window layers attend
to their window. Without CUDA graphs an MoE layer's forward waits for the host to read its token
counts (none when padded to capacity) and both its passes lose moe_sync_s (fitted); with token
dropping its experts take JobSpec.routed's copies. Every block takes at least the host's time
to issue its layers (host_layer_s, fitted; template.py); an MoE layer's routing kernels cost
moe_layer_s (fitted) beyond what bytes and FLOPs price.
"""
from __future__ import annotations

from typing import Dict

from astral_dsl.seer import comm, routing
from astral_dsl.seer.costs import GEMM_STREAMS, Costs
from astral_dsl.seer.memory import layer_activation_bytes
from astral_dsl.seer.params import ParamsMixin
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec, chunk_layers
from astral_dsl.seer.template import Op, Template, Builder


EMBED, HEAD = -1, -2      # the `layer` of embedding and of head operators
ACTIVATION_NAME = {"gelu": "gelu", "swiglu": "swiglu", "relu2": "squared relu"}
# HBM bytes per element of quantising a 16-bit tensor for a GEMM and for its transpose (the
# weight gradient's operand), (fed by a norm, otherwise): delayed scaling and the block-scaled
# formats fuse the cast into the norm that feeds QKV and fc1 (Transformer Engine's
# LayerNormLinear) and otherwise read 2 and write both copies; current per-tensor scaling and
# row / 128-block scaling need the tensor's amax first: one more read, and no fusion.
CAST_BYTES = {"delayed": (0.0, 4.0), "current": (6.0, 6.0), "rowwise": (6.0, 6.0),
              "blockwise": (6.0, 6.0), "mxfp8": (0.1, 4.1), "nvfp4": (0.2, 3.2)}

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


def groups(job: JobSpec, net: comm.Network) -> Dict[str, comm.Layout]:
    """The layout of each communication group of a rank in the job's rank order. The gradient
    group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of neighbouring
    stages; "ep" and "edp" (the expert-data-parallel group, over which the routed experts'
    gradients are reduced: params.layer_expert_params) come from the expert numbering. A group
    whose neighbours sit at different GPU indices of their hosts crosses rails (p2p and
    all-to-all; NCCL's rings and trees are built rail by rail)."""
    par, g = job.parallel, max(1, net.gpus_per_host)
    dense, expert = RankOrder(par), RankOrder(par, experts=True)

    def lay(kind, order, dims, n=None, cross=False):
        shape = order.shape(dims, g)
        if n is not None and shape.n > 1:      # a pair of neighbours along the dimension
            span = (shape.stride * (n - 1)) // g + 1
            per_host = n if span == 1 else 1
            return comm.layout(net, kind, n, shape.stride, span, cross and shape.stride % g != 0,
                               per_host)
        return comm.layout(net, kind, shape.n, shape.stride, shape.span_hosts,
                           cross and shape.stride % g != 0, shape.per_host)

    return {"tp": lay("tp", dense, ("tp",)), "cp": lay("cp", dense, ("cp",), cross=True),
            "dp": lay("dp", dense, ("dp", "cp")),
            "pp": lay("pp", dense, ("pp",), n=2, cross=True),
            "ep": lay("ep", expert, ("ep",), cross=True),
            "edp": lay("edp", expert, ("dp",)),
            "amax": lay("amax", dense, ("tp", "cp", "dp"))}


def used_groups(job: JobSpec) -> frozenset:
    """The kinds of group of `groups` the job communicates over: the expert groups ("ep",
    "edp") only with experts, the amax group only under fp8 delayed scaling (`_amax_reduce`)."""
    kinds = {"tp", "cp", "dp", "pp"}
    if job.model.experts:
        kinds |= {"ep", "edp"}
    if job.dtype == "fp8" and job.fp8_recipe == "delayed":
        kinds.add("amax")
    return frozenset(kinds)


class Lowering(ParamsMixin):
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
        self.groups = groups(job, net)
        self.elem = job.bytes
        self.fp8 = job.fp8
        self.tokens = job.micro * job.seq / par.cp
        self.sp = par.sp and par.tp > 1
        self.sp_tokens = self.tokens / par.tp if self.sp else self.tokens
        self.heads = max(1, m.heads // par.tp)
        self.kv_heads = max(1, m.kv_heads // par.tp)
        self.head_dim = m.head_dim
        self.chunks = chunk_layers(job)
        self.cast = CAST_BYTES[job.dtype if job.dtype in CAST_BYTES else job.fp8_recipe]
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
        cal = costs.cal
        self.host_layer_s = 0.0 if job.cuda_graphs else cal.host_layer_s
        # an MoE layer's pause (moe_sync_s): in the forward the host's wait for the token
        # counts, which padded token dropping has not; the backward's (no such wait in
        # Megatron-Core, but the fit finds as much lost there) only CUDA graphs remove
        self.moe_sync_s = 0.0 if job.cuda_graphs else cal.moe_sync_s
        self.moe_sync_fwd_s = self.moe_sync_s if job.host_counts else 0.0
        # Megatron-LM's expert GEMMs (a batch of local experts) run one per expert on TE's
        # streams when the host has the token counts, i.e. without CUDA graphs (GEMM_STREAMS);
        # otherwise, and in the PyTorch frameworks (torchtitan's torch._grouped_mm, AutoModel's
        # grouped GEMM), as one grouped kernel
        self.expert_streams = GEMM_STREAMS if job.framework == "megatron" and \
            not job.cuda_graphs else None
        self._cache: Dict[tuple, Template] = {}      # by shape (chunks of one shape share it)
        self._at: Dict[tuple, Template] = {}         # by (stage, chunk, phase)

    # ---- collectives -------------------------------------------------------------------------
    def _coll(self, b: Builder, name, kind, group, nbytes, layer, chain=True):
        """A collective on the group's stream: blocking (chain) or a side op (chain=False)."""
        lay = self.groups[group]
        if lay.n <= 1 or nbytes <= 0:
            return None
        if kind == "a2a":
            if self.job.moe_dispatcher == "alltoall":
                t = comm.all_to_all(self.net, lay, nbytes, self.a2a_eff)
            else:           # nbytes: the top-k copies of the rank's tokens
                m = self.job.model
                k = max(1, m.top_k)
                hit = routing.spread(self.job.moe_routing, m.experts, k, m.expert_groups,
                                     m.group_top_k, lay.n, lay.hosts)
                t = comm.dispatch(self.net, lay, nbytes / k, hit, self.a2a_eff)
            hidden = self.c.cal.ep_hidden * t if self.job.ep_overlap else 0.0
            if hidden > 0:     # the share another micro-batch's computation hides
                side = b.add(Op(name + " (overlapped)", "comm", group, hidden, 0.0, 0.0, group,
                                layer, kernels=0), chain=False)
                b.pending.remove(side)
                t -= hidden
        else:
            t = {"ar": comm.all_reduce, "rs": comm.reduce_scatter,
                 "ag": comm.all_gather}[kind](self.net, lay, nbytes)
        return b.add(Op(name, "comm", group, t, 0.0, nbytes, group, layer), chain)

    def _weights_op(self, b: Builder, name, kind, L, per_param) -> int:
        """ZeRO-3's collective over layer L's weights (or gradients), a side op on the DP
        stream: the dense ones over DP x CP, the experts' over the expert-data-parallel group
        (ParamsMixin.weights_coll), `per_param` (dense, expert) bytes."""
        split = self.layer_split(L)
        op = b.add(Op(name, "comm", "dp", self.weights_coll(kind, split, per_param), 0.0,
                      split[0] * per_param[0] + split[1] * per_param[1], "dp", L), chain=False)
        b.pending.remove(op)
        return op

    @property
    def a2a_eff(self) -> float:
        cal = self.c.cal
        return cal.a2a_eff if self.job.moe_dispatcher == "alltoall" else cal.a2a_eff_fused

    @property
    def tp_full(self) -> bool:
        return self.job.tp_overlap == "full" and self.tp > 1

    def _tp_out(self, b, name, layer):
        """After a row-parallel layer: reduce-scatter (SP) or all-reduce; with `tp_overlap =
        full` split with the GEMM before it and overlapping it (_overlap)."""
        op = self._coll(b, name + (" reduce-scatter" if self.sp else " all-reduce"),
                        "rs" if self.sp else "ar", "tp",
                        self.tokens * self.job.model.hidden * self.elem, layer,
                        chain=not self.tp_full)
        if op is not None and self.tp_full:
            self._overlap(b, op, b.tail)

    def _overlap(self, b, comm_op: int, gemm: int):
        """A TP collective split with GEMM `gemm` (userbuffers / async TP): it starts with the
        GEMM, the next operator waits for both, and the GEMM loses `interfere` of its time to
        it when it runs on NVLink."""
        ops = b.ops
        ops[comm_op].deps = ops[gemm].deps
        if self.groups["tp"].hosts <= 1:
            ops[gemm].dur += self.c.cal.interfere * ops[comm_op].dur

    def _gemm(self, b, name, m, n, k, layer, batch=1.0, cat="gemm", join=True, extra=(),
              fp8=False, streams=None, expert=False, parts=(), inner=False, chunks=1):
        """A GEMM [m, k] x [k, n]; `parts`: run as separate GEMMs over these shares of its
        output columns n, or (`inner`) of its inner dimension k, each writing the whole output
        (the caller sums them: `_linear_bwd`); `chunks`: each run as that many GEMMs of
        1/chunks of its rows, one after another (`ring`)."""
        t = f = nb = 0.0
        for p in parts or (1.0,):
            dims = (m / chunks, n, k * p) if inner else (m / chunks, n * p, k)
            tp, fp, bp = self.c.gemm(name.split(" ")[0], *dims, batch, fp8, streams, expert)
            t, f, nb = t + chunks * tp, f + chunks * fp, nb + chunks * bp
        shape = f"{int(m)}x{int(n)}x{int(k)}"
        return b.add(Op(name, cat, "compute", t, f, nb, "", layer, shape=shape),
                     join=join, extra=extra)

    def _linear(self, b, name, m, n, k, layer, batch=1.0, norm_fed=False, gather=None,
                streams=None, expert=False, parts=(), chunks=1):
        """The forward GEMM of a transformer layer's linear layer: quantised for a quantised
        job, after the cast of its input with the transpose its weight gradient needs
        (CAST_BYTES per element, by recipe: fused into the norm for the layers a norm feeds,
        `norm_fed`: TE's LayerNormLinear, QKV and fc1, whose input is the norm's output: the
        rank's sequence-parallel shard). `gather`: the name of the TP all-gather of its input
        (with SP), after the cast: Transformer Engine quantises the rank's shard and gathers
        the quantised data (module/layernorm_linear.py, `gather_along_first_dim(...,
        quantizer=input_quantizer)`); blocking, or split with the GEMM (`tp_overlap = full`).
        `parts`: the layer is separate linear layers sharing the input (`separate`), whose
        casts torch.compile computes once (common subexpressions). `chunks`: a row-parallel
        layer's GEMM split with its reduce-scatter (`ring`); one fed by an all-gather is split
        with it."""
        if self.fp8:
            extra = self.cast[0 if norm_fed else 1]
            if extra:
                rows = self.sp_tokens if norm_fed and self.ag_quantised else m
                self._ew(b, name + " quantise", extra * rows * k * batch, layer)
        op = self._tp_gather(b, gather, layer) if gather is not None else None
        b.fp8_gemms += 1 if self.fp8 else 0
        if gather is not None:
            chunks = self.ring
        g = self._gemm(b, name, m, n, k, layer, batch=batch, fp8=self.fp8, streams=streams,
                       expert=expert, parts=parts, chunks=chunks)
        if op is not None:
            self._overlap(b, op, g)
            b.pending.append(op)
        return g

    def _tp_gather(self, b, name, layer):
        """With SP, the TP all-gather of a layer's input (or of a row-parallel layer's output
        gradient): blocking, or (tp_overlap = full) a side operator the GEMM beside it overlaps
        (returned; None otherwise). A quantised job's layers gather quantised data
        (ag_bytes)."""
        if not self.sp:
            return None
        op = self._coll(b, name, "ag", "tp", self.tokens * self.job.model.hidden * self.ag_bytes,
                        layer, chain=not self.tp_full)
        if op is None or not self.tp_full:
            return None
        b.pending.remove(op)          # joined after the GEMM it overlaps
        return op

    def _amax_reduce(self, b, gemms: int, layer: int):
        """fp8 delayed scaling: at the end of a chunk's forward Transformer Engine all-reduces
        (max) the amaxes of its fp8 tensors (input and weight of each GEMM, 4 bytes each) over
        the amax group, TP x CP x DP (Megatron-Core's amax reduction group), on the compute
        stream's critical path; counted with the DP communication."""
        lay = self.groups["amax"]
        if not self.fp8 or gemms <= 0 or lay.n <= 1 or self.job.dtype != "fp8" \
                or self.job.fp8_recipe != "delayed":
            return
        nbytes = 8.0 * gemms
        b.add(Op("fp8 amax all-reduce", "comm", "dp", comm.all_reduce(self.net, lay, nbytes),
                 0.0, nbytes, "amax", layer))

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

    def _ew(self, b, name, nbytes, layer, cat="elementwise", kernels=1, kind=None, join=True):
        kind = kind or ("softmax" if "softmax" in name or "cross entropy" in name else
                        "dropout" if "dropout" in name else "norm" if cat == "norm" else "stream")
        b.add(Op(name, cat, "compute", self.c.stream(name, nbytes, kernels, kind), 0.0, nbytes, "",
                 layer, kernels=kernels), join=join)

    def _clamp(self, b, name, elems, layer, backward=False):
        """A gated activation's clamped inputs (`activation_clamp`), `elems` fc1 outputs:
        Megatron-Core 0.16.1 (fusions/fused_bias_geglu.py, weighted_bias_quick_geglu_impl;
        transformer/mlp.py) clamps each half of fc1's output and concatenates them before the
        fused activation: two clamps and the concatenation each read and write their elements
        (4 passes, 3 kernels); backward, each clamp's gradient reads the gradient and its input
        and writes (3 passes, 2 kernels; the concatenation's is a view)."""
        if self.job.model.clamped:
            passes, kernels = (3, 2) if backward else (4, 3)
            self._ew(b, name, passes * elems * self.elem, layer, kernels=kernels)

    def _expert_bias(self, b, name, elems, local, layer, backward=False):
        """The experts' fc2 biases (`expert_bias`) on `elems` outputs: Megatron-Core 0.16.1
        (transformer/moe/experts.py, TEGroupedMLP._apply_bias) adds each local expert's bias,
        weighted by the routing probabilities, to its rows and concatenates them: a pass that
        reads and writes each element and a concatenation that does the same (4 passes, 2
        kernels per expert and 1); backward, the bias's and the probabilities' gradients each
        read the output's gradient (2 passes, 2 kernels per expert)."""
        if self.job.model.expert_bias:
            passes, kernels = (2, 2 * local) if backward else (4, 2 * local + 1)
            self._ew(b, name, passes * elems * self.elem, layer, kernels=kernels)

    def _moe_sync(self, b, name, layer, pause):
        """The MoE layer's routing kernels (moe_layer_s), and without CUDA graphs its pause
        (`pause`: moe_sync_s, or none; lower's docstring)."""
        b.add(Op(name.replace("token-count sync", "routing"), "overhead", "compute",
                 self.c.cal.moe_layer_s, 0.0, 0.0, "", layer, kernels=0))
        if pause > 0:
            b.add(Op(name, "overhead", "compute", pause, 0.0, 0.0, "", layer, kernels=0))

    # ---- one transformer layer -----------------------------------------------------------------
    def _flash(self, b, name, L, backward: bool):
        """Fused attention of a rank's heads: the FLOPs of the score and context products over
        the keys each query sees (causal: half the sequence on average; a window: the window),
        priced by part, full and windowed, at the efficiency of its key length."""
        m, elem, bsz = self.job.model, self.elem, self.job.micro
        s, rows = self.job.seq, self.job.seq / self.cp
        per_key = 2 * bsz * self.heads * rows * (m.qk_dim + m.v_dim) * (2.5 if backward else 1)
        parts = [(1.0, s / 2, s)]
        if m.window and m.window < s:
            parts = [(1 - m.window_share, s / 2, s), (m.window_share, m.window, m.window)]
        heads_io = 2 * self.heads * m.qk_dim + self.kv_heads * (m.qk_dim + m.v_dim)
        nb = (2 if backward else 1) * elem * self.tokens * heads_io
        flops = t = 0.0
        for share, mean_keys, keys in parts:
            if share <= 0:
                continue
            f = share * per_key * mean_keys
            flops += f
            t += self.c.flash("flash_bwd" if backward else "flash_fwd", f, share * nb, backward,
                              m.head_dim, keys)
        b.add(Op(name, "attention", "compute", t, flops, nb, "", L))

    def _rope(self, b, L, pre, backward=False):
        """Rotary position embeddings on the queries and keys (their rotary part with MLA):
        read and write once (Transformer Engine's fused RoPE; costs.EAGER when eager), or
        Megatron-Core's unfused RoPE for YaRN (MCORE_YARN_ROPE)."""
        m = self.job.model
        width = ((self.heads + 1) * m.rope_dim if m.mla
                 else (self.heads + self.kv_heads) * m.head_dim)
        name = pre + ("rope bwd" if backward else "rope")
        nbytes = 2 * self.tokens * width * self.elem
        if m.yarn_factor > 1 and not m.mla and self.job.framework == "megatron":
            ratio, kernels = MCORE_YARN_ROPE[1 if backward else 0]
            self._ew(b, name, ratio * nbytes, L, kernels=kernels)
        else:
            self._ew(b, name, nbytes, L, kind="rope")

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
        if self.cp > 1:
            kv = bsz * rows * self.kv_heads * (m.qk_dim + m.v_dim) * elem
            ring = (self.cp - 1) * comm.p2p(self.net, self.groups["cp"], kv)
            b.add(Op(pre + "cp ring", "comm", "cp", ring,
                     0.0, kv * (self.cp - 1), "cp", L), chain=False)
        self._flash(b, pre + "flash attention", L, backward=False)

    def _qkv_fwd(self, b, L, pre, gather):
        """The query, key and value projections: one QKV GEMM, or MLA's down-projections (fed by
        the norm, replicated over TP), latent norms and up-projections (DeepSeek-V3 technical
        report, section 2.1.1)."""
        m, tokens, h = self.job.model, self.tokens, self.job.model.hidden
        if not m.mla:
            q, kv = self.heads * m.qk_dim, self.kv_heads * m.head_dim
            self._linear(b, pre + "qkv", tokens, q + 2 * kv, h, L, norm_fed=True, gather=gather,
                         parts=self._qkv_parts(q, kv))
            return
        if m.q_lora:
            self._linear(b, pre + "q down", tokens, m.q_lora, h, L, norm_fed=True, gather=gather)
            gather = None
            self._ew(b, pre + "q norm", 2 * tokens * m.q_lora * self.elem, L, "norm")
            self._mla_up(b, L, pre, "q")
        else:
            self._linear(b, pre + "q", tokens, self.heads * m.qk_dim, h, L, norm_fed=True,
                         gather=gather)
            gather = None
        self._linear(b, pre + "kv down", tokens, m.kv_lora + m.rope_dim, h, L, norm_fed=True,
                     gather=gather)
        self._ew(b, pre + "kv norm", 2 * tokens * m.kv_lora * self.elem, L, "norm")
        self._mla_up(b, L, pre, "kv")

    def _qkv_parts(self, q, kv):
        """The shares of the QKV GEMM's columns run as separate GEMMs (`separate`), else ()."""
        return (q / (q + 2 * kv), kv / (q + 2 * kv), kv / (q + 2 * kv)) if self.separate else ()

    def _fc1_parts(self):
        """The shares of fc1's columns run as separate GEMMs: w1 and w3 of a gated MLP
        (`separate`), else ()."""
        mats = self.job.model.mats - 1
        return (1.0 / mats,) * mats if self.separate and mats > 1 else ()

    def _mla_up(self, b, L, pre, which=("q", "kv")):
        """MLA's up-projections from the query and key/value latents (both recomputed in the
        backward with Megatron-Core's `mla_up_proj` module)."""
        m, tokens = self.job.model, self.tokens
        if m.q_lora and "q" in which:
            self._linear(b, pre + "q up", tokens, self.heads * m.qk_dim, m.q_lora, L)
        if "kv" in which:
            self._linear(b, pre + "kv up", tokens, self.heads * (m.head_dim + m.v_dim),
                         m.kv_lora, L)

    def _qkv_bwd(self, b, L):
        m, tokens, h = self.job.model, self.tokens, self.job.model.hidden
        if not m.mla:
            q, kv = self.heads * m.qk_dim, self.kv_heads * m.head_dim
            self._linear_bwd(b, "qkv", tokens, q + 2 * kv, h, L, column=True,
                             parts=self._qkv_parts(q, kv))
            return
        self._linear_bwd(b, "kv up", tokens, self.heads * (m.head_dim + m.v_dim), m.kv_lora, L,
                         column=False)
        self._ew(b, "kv norm bwd", 3 * tokens * m.kv_lora * self.elem, L, "norm")
        self._linear_bwd(b, "kv down", tokens, m.kv_lora + m.rope_dim, h, L, column=False)
        if m.q_lora:
            self._linear_bwd(b, "q up", tokens, self.heads * m.qk_dim, m.q_lora, L, column=False)
            self._ew(b, "q norm bwd", 3 * tokens * m.q_lora * self.elem, L, "norm")
            self._linear_bwd(b, "q down", tokens, m.q_lora, h, L, column=True)
        else:
            self._linear_bwd(b, "q", tokens, self.heads * m.qk_dim, h, L, column=True)

    def _moe_fwd(self, b, L, pre=""):  # noqa: C901 - one operator per line
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed = self.job.routed(sp_tokens)
        local = max(1, m.experts // self.ep)
        mats = m.mats - 1
        self._gemm(b, pre + "router", sp_tokens, m.experts, m.hidden, L)
        self._moe_sync(b, pre + "moe token-count sync", L, self.moe_sync_fwd_s)
        self._ew(b, pre + "permute", 2 * routed * m.hidden * elem, L, kind="permute")
        self._coll(b, pre + "ep dispatch all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._linear(b, pre + "expert fc1", routed / local, m.moe_ffn * mats, m.hidden, L,
                     batch=local, streams=self.expert_streams, expert=True)
        self._clamp(b, pre + "expert act clamp", routed * m.moe_ffn * mats, L)
        self._ew(b, pre + "expert act", (2 + mats - 1) * routed * m.moe_ffn * elem, L)
        self._linear(b, pre + "expert fc2", routed / local, m.hidden, m.moe_ffn, L, batch=local,
                     streams=self.expert_streams, expert=True)
        self._expert_bias(b, pre + "expert bias", routed * m.hidden, local, L)
        self._coll(b, pre + "ep combine all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, pre + "unpermute", 2 * routed * m.hidden * elem, L, kind="permute")
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear(b, pre + "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L)
            self._ew(b, pre + "shared act", (2 + mats - 1) * sp_tokens * shared_ffn * elem, L)
            self._linear(b, pre + "shared fc2", sp_tokens, m.hidden, shared_ffn, L)

    def _layer_fwd(self, b, L, pre=""):
        """One layer's forward: attention and MLP (or MoE) sub-blocks, or, in a hybrid model,
        the one its kind says (spec.ModelSpec.layer_kind: Mamba-2, attention, MoE or MLP)."""
        kind = self.job.model.layer_kind(L)
        if kind == "M":
            self._mamba_fwd(b, L, pre)
            return
        if kind in ("T", "*"):
            self._attn_block_fwd(b, L, pre)
        if kind != "*":
            self._mlp_block_fwd(b, L, pre)

    def _norm_fwd(self, b, name, L):
        self._ew(b, name, 2 * self.sp_tokens * self.job.model.hidden * self.elem, L, "norm")

    def _residual(self, b, name, L):
        m = self.job.model
        self._ew(b, name, (3 * self.elem + (1 if m.gpt else 0)) * self.sp_tokens * m.hidden, L)

    def _attn_block_fwd(self, b, L, pre):
        m, tokens = self.job.model, self.tokens
        self._norm_fwd(b, pre + "input norm", L)
        self._qkv_fwd(b, L, pre, pre + "attn all-gather")
        if not m.gpt:
            self._rope(b, L, pre)
        self._attention_fwd(b, L, pre)
        self._linear(b, pre + "out proj", tokens, m.hidden, self.heads * m.v_dim, L,
                     chunks=self.ring)
        self._tp_out(b, pre + "attn", L)
        self._residual(b, pre + "residual", L)

    def _mlp_block_fwd(self, b, L, pre):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        h = m.hidden
        self._norm_fwd(b, pre + ("post-attn norm" if m.layer_kind(L) == "T" else "input norm"), L)
        if m.is_moe(L):
            self._moe_fwd(b, L, pre)
        else:
            self._dense_mlp_fwd(b, L, pre)
        self._residual(b, pre + "residual", L)

    def _dense_mlp_fwd(self, b, L, pre):
        """A dense MLP from its (normalised) input: fc1 after its TP all-gather, the activation,
        fc2 and its TP reduction (recomputed whole, collectives included, by Megatron-Core's
        `mlp` recompute module: transformer/mlp.py under tensor_parallel.checkpoint)."""
        m, elem, tokens, h = self.job.model, self.elem, self.tokens, self.job.model.hidden
        F = m.ffn / self.tp
        self._linear(b, pre + "fc1", tokens, F * (m.mats - 1), h, L, norm_fed=True,
                     gather=pre + "mlp all-gather", parts=self._fc1_parts())
        self._clamp(b, pre + "activation clamp", tokens * F * (m.mats - 1), L)
        self._ew(b, pre + ACTIVATION_NAME[m.activation], m.mats * tokens * F * elem, L,
                 kind=m.activation)
        self._linear(b, pre + "fc2", tokens, h, F, L, chunks=self.ring)
        self._tp_out(b, pre + "mlp", L)

    def _mamba_dims(self):
        """Per rank: (d_inner, heads, groups, in_proj width, conv channels) of a Mamba-2 layer
        (Dao and Gu 2024, "Transformers are SSMs", section 7: the in-projection makes z, x, B, C
        and dt; a depthwise convolution runs over x, B and C); TP shards heads and groups."""
        m, tp = self.job.model, self.tp
        d_inner = m.mamba_inner / tp
        heads = max(1.0, m.mamba_heads / tp)
        groups = max(1.0, m.mamba_groups / tp)
        conv = d_inner + 2 * groups * m.mamba_state
        return d_inner, heads, groups, 2 * d_inner + 2 * groups * m.mamba_state + heads, conv

    def _ssd_flops(self, backward: bool) -> float:
        """The chunked state-space scan (SSD, Dao and Gu 2024, section 6) of a rank's tokens:
        per token and head, the intra-chunk products over the chunk (Q x (N + P) multiply-adds
        per head and group) and the state updates and reads (2 N P)."""
        m = self.job.model
        d_inner, heads, groups, _, _ = self._mamba_dims()
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        per_token = 2 * (heads * (Q * P + 2 * N * P) + groups * Q * N)
        return self.tokens * per_token * (2.0 if backward else 1.0)

    def _ssd_bytes(self, backward: bool) -> float:
        """HBM bytes of the chunked scan's Triton kernels over a rank's tokens (mamba_ssm 2.2.4,
        ops/triton/ssd_combined.py, which Megatron-Core's Mamba layer calls through
        mamba_split_conv1d_scan_combined), per token, e the activations' bytes, d the inner
        width, G N the groups' B or C width, h P N / Q a chunk's states per token, G Q the
        chunk products C B^T per token:
        forward (chunk_cumsum, chunk_state, state_passing, bmm_chunk, chunk_scan): x read twice,
        z once, the output and the ungated output written, 5 e d; B and C read twice each,
        4 e G N; the states written in fp32, read and written again at e, read at e,
        (8 + 2 e) h P N / Q; C B^T written and read in fp32, 8 G Q; dt and its cumulative sum
        (e + 8) h;
        backward (_mamba_chunk_scan_combined_bwd: the states and C B^T recomputed, then the dz,
        dstates, state-passing, dx, dB, dC and dCB kernels and two bmm backwards): 15 e d,
        15 e G N, (24 + 5 e) h P N / Q, 20 G Q, 2 (e + 8) h."""
        m, e = self.job.model, self.elem
        d, heads, groups, _, _ = self._mamba_dims()
        Q, N, P = m.mamba_chunk, m.mamba_state, m.mamba_head
        states, gn, cb = heads * P * N / Q, groups * N, groups * Q
        if backward:
            per = 15 * e * d + 15 * e * gn + (24 + 5 * e) * states + 20 * cb + 2 * (e + 8) * heads
        else:
            per = 5 * e * d + 4 * e * gn + (8 + 2 * e) * states + 8 * cb + (e + 8) * heads
        return self.tokens * per

    def _mamba_fwd(self, b, L, pre):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._norm_fwd(b, pre + "input norm", L)
        self._linear(b, pre + "mamba in proj", tokens, width, m.hidden, L, norm_fed=True,
                     gather=pre + "mamba all-gather")
        self._ew(b, pre + "mamba conv1d", 2 * tokens * conv * elem, L)
        flops = self._ssd_flops(False)
        nb = self._ssd_bytes(False)
        b.add(Op(pre + "ssd scan", "attention", "compute",
                 self.c.flash("ssd_fwd", flops, nb, False, m.mamba_head, m.mamba_chunk),
                 flops, nb, "", L))
        self._ew(b, pre + "mamba gated norm", 3 * tokens * d_inner * elem, L, "norm")
        self._linear(b, pre + "mamba out proj", tokens, m.hidden, d_inner, L)
        self._tp_out(b, pre + "mamba", L)
        self._residual(b, pre + "residual", L)

    def _mamba_bwd(self, b, L):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        d_inner, heads, groups, width, conv = self._mamba_dims()
        self._residual(b, "residual bwd", L)
        self._linear_bwd(b, "mamba out proj", tokens, m.hidden, d_inner, L, column=False,
                         grad_gather="mamba grad all-gather")
        self._ew(b, "mamba gated norm bwd", 5 * tokens * d_inner * elem, L, "norm")
        flops = self._ssd_flops(True)
        nb = self._ssd_bytes(True)
        b.add(Op("ssd scan bwd", "attention", "compute",
                 self.c.flash("ssd_bwd", flops, nb, True, m.mamba_head, m.mamba_chunk),
                 flops, nb, "", L))
        # the convolution recomputed (mamba_split_conv1d_scan_combined saves its input only:
        # read and write) before its backward (read the input and the gradient, write one)
        self._ew(b, "mamba conv1d bwd", 5 * tokens * conv * elem, L)
        self._linear_bwd(b, "mamba in proj", tokens, width, m.hidden, L, column=True)
        self._ew(b, "input norm bwd", 3 * self.sp_tokens * m.hidden * elem, L, "norm")

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
        fused kernel when compiled, pairwise adds when eager)."""
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        tp = column and self.tp > 1
        fp8 = self.fp8 and layer_linear
        gathered = (self.ag_bytes if fp8 else elem) * tokens * h
        if fp8:
            rows = self.sp_tokens if grad_gather is not None and self.ag_quantised else m_
            self._ew(b, name + " grad quantise", self.cast[1] * rows * n, L)
        grad_op = self._tp_gather(b, grad_gather, L) if grad_gather is not None else None
        if tp and self.job.tp_overlap == "none":
            kind = ("rs", " grad reduce-scatter") if self.sp else ("ar", " grad all-reduce")
            if self.sp:
                self._coll(b, name + " input all-gather", "ag", "tp", gathered, L)
            self._gemm(b, name + " dgrad", m_, k, n, L, fp8=fp8, parts=parts, inner=True)
            self._dgrad_sum(b, name, m_ * k, len(parts), L)
            self._gemm(b, name + " wgrad", k, n, m_, L, fp8=fp8, parts=parts)
            self._coll(b, name + kind[1], kind[0], "tp", tokens * h * elem, L)
            return
        gather = None
        if tp and self.sp:
            gather = self._coll(b, name + " input all-gather", "ag", "tp", gathered, L,
                                chain=False)
            b.pending.remove(gather)
        d = self._gemm(b, name + " dgrad", m_, k, n, L, join=False, fp8=fp8, parts=parts,
                       inner=True, chunks=self.ring if tp or grad_gather is not None else 1)
        self._dgrad_sum(b, name, m_ * k, len(parts), L, join=False)
        if grad_op is not None:
            self._overlap(b, grad_op, d)
            b.pending.append(grad_op)
        red = None
        if tp:
            red = self._coll(b, name + (" grad reduce-scatter" if self.sp else " grad all-reduce"),
                             "rs" if self.sp else "ar", "tp", tokens * h * elem, L, chain=False)
        w = self._gemm(b, name + " wgrad", k, n, m_, L, join=False,
                       extra=(gather,) if gather is not None else (), fp8=fp8, parts=parts)
        if self.groups["tp"].hosts <= 1:   # NVLink collectives take SMs and HBM from the GEMMs
            overlapped = sum(b.ops[i].dur for i in (gather, red) if i is not None)
            b.ops[w].dur += self.c.cal.interfere * overlapped

    def _layer_bwd(self, b, L, whole: bool = True):
        """A layer's backward, after its recomputation; `whole`: a `recompute = full` job
        recomputes this layer (spec.full_recompute), otherwise it recomputes nothing."""
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
            if not m.gpt:
                self._rope(b, L, "recompute ")
            if self.tp == 1:
                self._linear(b, "recompute out proj", tokens, h, self.heads * m.v_dim, L)
        if m.dense_mlp(L) and m.mats == 3:
            self._linear(b, "recompute fc1 (w3)", tokens, m.ffn / self.tp, h, L, norm_fed=True)

    def _mlp_block_bwd(self, b, L):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        self._residual(b, "residual bwd", L)
        if m.is_moe(L):
            self._moe_bwd(b, L)
        else:
            F = m.ffn / self.tp
            self._linear_bwd(b, "fc2", tokens, h, F, L, column=False,
                             grad_gather="mlp grad all-gather")
            self._ew(b, ACTIVATION_NAME[m.activation] + " bwd", (m.mats + 2) * tokens * F * elem,
                     L, kind=m.activation)
            self._clamp(b, "activation clamp bwd", tokens * F * (m.mats - 1), L, backward=True)
            self._linear_bwd(b, "fc1", tokens, F * (m.mats - 1), h, L, column=True,
                             parts=self._fc1_parts())
        self._ew(b, ("post-attn norm bwd" if m.layer_kind(L) == "T" else "input norm bwd"),
                 3 * sp_tokens * h * elem, L, "norm")

    def _attn_block_bwd(self, b, L):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        self._residual(b, "residual bwd", L)
        self._linear_bwd(b, "out proj", tokens, h, self.heads * m.v_dim, L, column=False,
                         grad_gather="attn grad all-gather")
        self._attention_bwd(b, L)
        if not m.gpt:
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
        if self.cp > 1:
            kv = 2 * bsz * rows * self.kv_heads * (m.qk_dim + m.v_dim) * elem
            ring = (self.cp - 1) * comm.p2p(self.net, self.groups["cp"], kv)
            b.add(Op("cp ring bwd", "comm", "cp", ring,
                     0.0, kv * (self.cp - 1), "cp", L), chain=False)
        self._flash(b, "flash attention bwd", L, backward=True)

    def _moe_bwd(self, b, L):
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed, local, mats = self.job.routed(sp_tokens), max(1, m.experts // self.ep), m.mats - 1
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.shared_width
            self._linear_bwd(b, "shared fc2", sp_tokens, m.hidden, shared_ffn, L, column=False)
            self._ew(b, "shared act bwd", (3 + 2 * (mats - 1)) * sp_tokens * shared_ffn * elem,
                     L)
            self._linear_bwd(b, "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L,
                             column=False)
        self._moe_sync(b, "moe token-count sync bwd", L, self.moe_sync_s)
        self._ew(b, "unpermute bwd", 2 * routed * m.hidden * elem, L, kind="permute")
        self._coll(b, "ep combine all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._expert_bias(b, "expert bias bwd", routed * m.hidden, local, L, backward=True)
        for name, mm, n, k in (("expert fc2", routed / local, m.hidden, m.moe_ffn),
                               ("expert fc1", routed / local, m.moe_ffn * mats, m.hidden)):
            if self.fp8:
                self._ew(b, name + " grad quantise", self.cast[1] * mm * n * local, L)
            self._gemm(b, name + " dgrad", mm, k, n, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=True)
            self._gemm(b, name + " wgrad", k, n, mm, L, batch=local, fp8=self.fp8,
                       streams=self.expert_streams, expert=True)
            if name == "expert fc2":
                self._ew(b, "expert act bwd", (3 + 2 * (mats - 1)) * routed * m.moe_ffn * elem, L)
                self._clamp(b, "expert act clamp bwd", routed * m.moe_ffn * mats, L, backward=True)
        self._coll(b, "ep dispatch all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, "permute bwd", 2 * routed * m.hidden * elem, L, kind="permute")
        self._gemm(b, "router dgrad", sp_tokens, m.hidden, m.experts, L)

    # ---- embedding and head --------------------------------------------------------------------
    def _embed_fwd(self, b):
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        self._ew(b, "embedding", 2 * tokens * h * elem, EMBED)
        self._tp_out(b, "embedding", EMBED)

    def _embed_bwd(self, b):
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        if self.sp:
            self._coll(b, "embedding grad all-gather", "ag", "tp", tokens * h * elem, EMBED)
        self._ew(b, "embedding bwd", 3 * tokens * h * elem, EMBED)

    def _head_fwd(self, b):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        V = m.vocab / self.tp
        self._ew(b, "final norm", 2 * self.sp_tokens * m.hidden * elem, HEAD, "norm")
        if self.sp:
            self._coll(b, "head all-gather", "ag", "tp", tokens * m.hidden * elem, HEAD)
        self._gemm(b, "logits", tokens, V, m.hidden, HEAD)
        self._ew(b, "cross entropy", tokens * V * (elem + 8), HEAD, kernels=4)
        self._coll(b, "loss all-reduce", "ar", "tp", 8 * tokens, HEAD)

    def _head_bwd(self, b):
        m, elem, tokens = self.job.model, self.elem, self.tokens
        V = m.vocab / self.tp
        self._ew(b, "cross entropy bwd", tokens * V * (elem + 4), HEAD)
        self._linear_bwd(b, "logits", tokens, V, m.hidden, HEAD, column=True, layer_linear=False)
        self._ew(b, "final norm bwd", 3 * self.sp_tokens * m.hidden * elem, HEAD, "norm")

    # ---- blocks --------------------------------------------------------------------------------
    def template(self, stage: int, chunk: int, phase: str) -> Template:
        at = (stage, chunk, phase)
        hit = self._at.get(at)
        if hit is None:
            hit = self._at[at] = self._template(stage, chunk, phase)
        return hit

    def _template(self, stage: int, chunk: int, phase: str) -> Template:
        first, n = self.chunks[stage][chunk]
        par = self.job.parallel
        embed = stage == 0 and chunk == 0
        head = stage == par.pp - 1 and chunk == par.v - 1
        kinds = tuple(self.job.model.shape_key(L) for L in range(first, first + n))
        offloaded = self.offloaded(stage)
        key = (phase, kinds, embed, head, tuple(sorted(L - first for L in offloaded)))
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
        # a run of layers of one shape: built twice, then copied (Builder.each); each layer
        # alike but for its weights' gathers and its activations' copies, and (recompute_layers)
        # whether it is recomputed
        whole = self.job.recompute_layers if self.job.recompute == "full" else None
        shape = self.job.model.shape_key if not (fsdp or offloaded) else None
        if shape is not None and whole is not None:
            shape = lambda L, key=shape: (key(L), L - first < whole)   # noqa: E731
        if phase == "F":
            if embed:
                self._embed_fwd(b)

            def forward(L):
                b.wait_for(gathers.get(L))
                self._layer_fwd(b, L)
                if L in offloaded:
                    self._offload(b, "activation offload", "offload_out", L)
            b.each(layers, forward, shape)
            if n:
                self._amax_reduce(b, b.fp8_gemms, first + n - 1)
            if head:
                self._head_fwd(b)
        else:
            if head:
                self._head_bwd(b)
            reloads = {}

            def backward(L):
                # each offloaded layer's activations come back while the layer after it in
                # the model runs its backward (Transformer Engine prefetches one layer ahead)
                for nxt in ([L] if L == first + n - 1 else []) + ([L - 1] if L > first else []):
                    if nxt in offloaded:
                        reloads[nxt] = self._offload(b, "activation reload", "offload_in", nxt)
                b.wait_for(gathers.get(L), reloads.get(L))
                self._layer_bwd(b, L, whole is None or L - first < whole)
                if fsdp:
                    self._weights_op(b, "grad reduce-scatter", "rs", L, (self.job.grad_bytes,) * 2)
            b.each(reversed(layers), backward, shape)
            if embed:
                self._embed_bwd(b)
        for op in b.ops:          # layers counted from the chunk's first: templates are shared
            if op.layer >= 0:
                op.layer -= first
        # the host issues each layer's pass (the embedding and the head count as one)
        redone = (n if whole is None else min(n, whole)) if self.job.recompute == "full" else 0
        tpl = Template(b.ops, self.host_layer_s * (n + (1 if embed or head else 0)
                                                   + (redone if phase == "B" else 0)))
        self._cache[key] = tpl
        return tpl

    def offloaded(self, stage: int) -> frozenset:
        """The layers of `stage` whose activations go to host memory: its first
        `offload_layers` (memory.py)."""
        k = self.job.offload_layers or 0
        if not k:
            return frozenset()
        layers = [L for first, n in self.chunks[stage] for L in range(first, first + n)]
        return frozenset(layers[:k])

    def _offload(self, b, name: str, stream: str, L: int) -> int:
        """Layer L's saved activations copied to host memory (after its forward) or back
        (before its backward) over the GPU's host link, on a copy stream of their own: a side
        op the compute stream waits for only where the copy is slower than the layers it
        overlaps."""
        nbytes = layer_activation_bytes(self.job, L)
        bw = self.c.gpu.host_bw
        if bw <= 0:
            raise ValueError(f"GPU `{self.c.gpu.name}` declares no `host_bandwidth`: "
                             f"activation offloading cannot be priced")
        op = b.add(Op(name, "comm", stream, nbytes / bw, 0.0, nbytes, "", L),    # (no rank group)
                   chain=False)
        b.pending.remove(op)
        return op

    def p2p_time(self) -> float:
        """Activations (or their gradients) between neighbouring stages, per rank: each TP rank
        sends its 1/t share (Megatron's scatter-gather); without SP the receiver all-gathers."""
        h, elem = self.job.model.hidden, self.elem
        full = self.tokens * h * elem
        t = comm.p2p(self.net, self.groups["pp"], full / self.tp)
        if not self.sp and self.tp > 1:
            t += comm.all_gather(self.net, self.groups["tp"], full)
        return t
