"""Lowering a job to per-rank operator templates.

One pipeline block is one stage's forward or backward pass of one micro-batch through one model
chunk. Its operators (norms, QKV, attention, out-projection, MLP or MoE router and experts, TP
and EP collectives, recomputation) form a template: a small graph over the rank's streams whose
offsets are computed once and replayed for every block of the schedule (schedule.py). Sizes are
per rank: TP shards heads and FFN columns, sequence parallelism shards norms and dropouts, CP
shards the sequence, EP the experts. Megatron-LM's operator order and overlaps are modelled:
backward TP reduce-scatter / all-reduce of a column-parallel layer's input gradient runs on the
TP stream while the weight gradient is computed; with sequence parallelism the input all-gather
for the weight gradient overlaps the data gradient. With fp8 the linear layers' GEMMs run in fp8
after their casts, and each chunk's forward ends with the amax all-reduce (docs/seer.md, "fp8").
"""
from __future__ import annotations

from typing import Dict

from astral_dsl.seer import comm
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.params import ParamsMixin
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec, chunk_layers
from astral_dsl.seer.template import Op, Template, Builder


EMBED, HEAD = -1, -2      # the `layer` of embedding and of head operators
FP8_CAST_BYTES = 4.0      # per element cast to fp8 with its transpose: read 2, write 1 + 1


def groups(job: JobSpec, net: comm.Network) -> Dict[str, comm.Layout]:
    """The layout of each communication group of a rank in the job's rank order. The gradient
    group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of neighbouring
    stages; "ep" comes from the expert numbering. A group whose neighbours sit at different
    GPU indices of their hosts crosses rails (p2p and all-to-all; NCCL's rings and trees are
    built rail by rail)."""
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
            "amax": lay("amax", dense, ("tp", "cp", "dp"))}


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
        self._cache: Dict[tuple, Template] = {}

    # ---- collectives -------------------------------------------------------------------------
    def _coll(self, b: Builder, name, kind, group, nbytes, layer, chain=True):
        """A collective on the group's stream: blocking (chain) or a side op (chain=False)."""
        lay = self.groups[group]
        if lay.n <= 1 or nbytes <= 0:
            return None
        fn = {"ar": comm.all_reduce, "rs": comm.reduce_scatter, "ag": comm.all_gather,
              "a2a": comm.all_to_all}[kind]
        return b.add(Op(name, "comm", group, fn(self.net, lay, nbytes), 0.0, nbytes, group, layer),
                     chain)

    def _tp_out(self, b, name, layer):
        """After a row-parallel layer: reduce-scatter (SP) or all-reduce."""
        self._coll(b, name + (" reduce-scatter" if self.sp else " all-reduce"),
                   "rs" if self.sp else "ar", "tp",
                   self.tokens * self.job.model.hidden * self.elem, layer)

    def _gemm(self, b, name, m, n, k, layer, batch=1.0, cat="gemm", join=True, extra=(),
              fp8=False):
        t, f, nb = self.c.gemm(name.split(" ")[0], m, n, k, batch, fp8)
        shape = f"{int(m)}x{int(n)}x{int(k)}"
        return b.add(Op(name, cat, "compute", t, f, nb, "", layer, shape=shape),
                     join=join, extra=extra)

    def _linear(self, b, name, m, n, k, layer, batch=1.0, norm_fed=False):
        """The forward GEMM of a transformer layer's linear layer: in fp8 for an fp8 job, after
        the cast of its input to fp8 with the transpose its weight gradient needs
        (FP8_CAST_BYTES per element), which Transformer Engine fuses into the norm for the
        layers a norm feeds (`norm_fed`: TE's LayerNormLinear, QKV and fc1)."""
        if self.fp8 and not norm_fed:
            self._ew(b, name + " fp8 cast", FP8_CAST_BYTES * m * k * batch, layer)
        b.fp8_gemms += 1 if self.fp8 else 0
        return self._gemm(b, name, m, n, k, layer, batch=batch, fp8=self.fp8)

    def _amax_reduce(self, b, gemms: int, layer: int):
        """fp8 delayed scaling: at the end of a chunk's forward Transformer Engine all-reduces
        (max) the amaxes of its fp8 tensors (input and weight of each GEMM, 4 bytes each) over
        the amax group, TP x CP x DP (Megatron-Core's amax reduction group), on the compute
        stream's critical path; counted with the DP communication."""
        lay = self.groups["amax"]
        if not self.fp8 or gemms <= 0 or lay.n <= 1:
            return
        nbytes = 8.0 * gemms
        b.add(Op("fp8 amax all-reduce", "comm", "dp", comm.all_reduce(self.net, lay, nbytes),
                 0.0, nbytes, "amax", layer))

    def _ew(self, b, name, nbytes, layer, cat="elementwise", kernels=1):
        kind = ("softmax" if "softmax" in name or "cross entropy" in name else
                "dropout" if "dropout" in name else "norm" if cat == "norm" else "stream")
        b.add(Op(name, cat, "compute", self.c.stream(name, nbytes, kernels, kind), 0.0, nbytes, "",
                 layer))

    # ---- one transformer layer -----------------------------------------------------------------
    def _attention_fwd(self, b, L, pre=""):
        m, elem = self.job.model, self.elem
        s, tokens, bsz = self.job.seq, self.tokens, self.job.micro
        rows = s / self.cp
        if self.job.attention == "unfused":
            S = bsz * self.heads * rows * s
            self._gemm(b, pre + "attn scores", rows, s, self.head_dim, L, batch=bsz * self.heads,
                       cat="attention")
            self._ew(b, pre + "softmax", 2 * S * elem, L)
            if m.gpt:
                self._ew(b, pre + "attn dropout", (2 * elem + 1) * S, L)
            self._gemm(b, pre + "attn context", rows, self.head_dim, s, L, batch=bsz * self.heads,
                       cat="attention")
            return
        if self.cp > 1:
            kv = 2 * bsz * rows * self.kv_heads * self.head_dim * elem
            ring = (self.cp - 1) * comm.p2p(self.net, self.groups["cp"], kv)
            b.add(Op(pre + "cp ring", "comm", "cp", ring,
                     0.0, kv * (self.cp - 1), "cp", L), chain=False)
        flops = 4 * bsz * self.heads * rows * s * self.head_dim * 0.5
        nb = elem * tokens * (2 * self.heads + 2 * self.kv_heads) * self.head_dim
        b.add(Op(pre + "flash attention", "attention", "compute",
                 self.c.flash("flash_fwd", flops, nb, False, self.head_dim), flops, nb, "", L))

    def _moe_fwd(self, b, L, pre=""):  # noqa: C901 - one operator per line
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed = sp_tokens * m.top_k
        local = max(1, m.experts // self.ep)
        mats = 1 if m.gpt else 2
        self._gemm(b, pre + "router", sp_tokens, m.experts, m.hidden, L)
        self._ew(b, pre + "permute", 2 * routed * m.hidden * elem, L)
        self._coll(b, pre + "ep dispatch all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._linear(b, pre + "expert fc1", routed / local, m.moe_ffn * mats, m.hidden, L,
                     batch=local)
        self._ew(b, pre + "expert act", (2 + mats - 1) * routed * m.moe_ffn * elem, L)
        self._linear(b, pre + "expert fc2", routed / local, m.hidden, m.moe_ffn, L, batch=local)
        self._coll(b, pre + "ep combine all-to-all", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, pre + "unpermute", 2 * routed * m.hidden * elem, L)
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.moe_ffn
            self._linear(b, pre + "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L)
            self._linear(b, pre + "shared fc2", sp_tokens, m.hidden, shared_ffn, L)

    def _layer_fwd(self, b, L, pre=""):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        self._ew(b, pre + "input norm", 2 * sp_tokens * h * elem, L, "norm")
        if self.sp:
            self._coll(b, pre + "attn all-gather", "ag", "tp", tokens * h * elem, L)
        self._linear(b, pre + "qkv", tokens, q + 2 * kv, h, L, norm_fed=True)
        self._attention_fwd(b, L, pre)
        self._linear(b, pre + "out proj", tokens, h, q, L)
        self._tp_out(b, pre + "attn", L)
        self._ew(b, pre + "residual", (3 * elem + (1 if m.gpt else 0)) * sp_tokens * h, L)
        self._ew(b, pre + "post-attn norm", 2 * sp_tokens * h * elem, L, "norm")
        if m.is_moe(L):
            self._moe_fwd(b, L, pre)
        else:
            if self.sp:
                self._coll(b, pre + "mlp all-gather", "ag", "tp", tokens * h * elem, L)
            self._linear(b, pre + "fc1", tokens, m.ffn / self.tp * (1 if m.gpt else 2), h, L,
                         norm_fed=True)
            F = m.ffn / self.tp
            self._ew(b, pre + ("gelu" if m.gpt else "swiglu"),
                     (2 if m.gpt else 3) * tokens * F * elem, L)
            self._linear(b, pre + "fc2", tokens, h, F, L)
            self._tp_out(b, pre + "mlp", L)
        self._ew(b, pre + "residual", (3 * elem + (1 if m.gpt else 0)) * sp_tokens * h, L)

    def _linear_bwd(self, b, name, m_, n, k, L, column: bool, layer_linear: bool = True):
        """Backward of y[m,n] = x[m,k] w[k,n]: dgrad and wgrad; for a column-parallel layer the
        input-gradient reduction (and, with SP, the input re-gather) overlap the GEMMs
        (`tp_overlap = backward`, Megatron-LM's asynchronous TP all-reduce), or follow them
        on the critical path (`tp_overlap = none`: the reduction of the autograd function that
        copies the input to the TP region, after the layer's whole backward). A transformer
        layer's linear layer (`layer_linear`) of an fp8 job casts its output gradient to fp8
        with its transpose and runs both GEMMs in fp8 (Transformer Engine's default recipe:
        fp8 data and weight gradients); the logits layer stays in bf16."""
        h, elem, tokens = self.job.model.hidden, self.elem, self.tokens
        tp = column and self.tp > 1
        fp8 = self.fp8 and layer_linear
        if fp8:
            self._ew(b, name + " grad fp8 cast", FP8_CAST_BYTES * m_ * n, L)
        if tp and self.job.tp_overlap == "none":
            kind = ("rs", " grad reduce-scatter") if self.sp else ("ar", " grad all-reduce")
            if self.sp:
                self._coll(b, name + " input all-gather", "ag", "tp", tokens * h * elem, L)
            self._gemm(b, name + " dgrad", m_, k, n, L, fp8=fp8)
            self._gemm(b, name + " wgrad", k, n, m_, L, fp8=fp8)
            self._coll(b, name + kind[1], kind[0], "tp", tokens * h * elem, L)
            return
        gather = None
        if tp and self.sp:
            gather = self._coll(b, name + " input all-gather", "ag", "tp", tokens * h * elem, L,
                                chain=False)
            b.pending.remove(gather)
        self._gemm(b, name + " dgrad", m_, k, n, L, join=False, fp8=fp8)
        red = None
        if tp:
            red = self._coll(b, name + (" grad reduce-scatter" if self.sp else " grad all-reduce"),
                             "rs" if self.sp else "ar", "tp", tokens * h * elem, L, chain=False)
        w = self._gemm(b, name + " wgrad", k, n, m_, L, join=False,
                       extra=(gather,) if gather is not None else (), fp8=fp8)
        if self.groups["tp"].hosts <= 1:   # NVLink collectives take SMs and HBM from the GEMMs
            overlapped = sum(b.ops[i].dur for i in (gather, red) if i is not None)
            b.ops[w].dur += self.c.cal.interfere * overlapped

    def _layer_bwd(self, b, L):
        m, elem, tokens, sp_tokens = self.job.model, self.elem, self.tokens, self.sp_tokens
        h = m.hidden
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        mask = 1 if m.gpt else 0
        rec = self.job.recompute
        mark = len(b.ops)
        if rec == "full":
            self._layer_fwd(b, L, pre="recompute ")
        elif rec == "selective" and self.job.attention == "unfused":
            self._attention_fwd(b, L, pre="recompute ")
        for op in b.ops[mark:]:
            if op.stream == "compute":
                op.cat = "recompute"
        self._ew(b, "residual bwd", (3 * elem + mask) * sp_tokens * h, L)
        if m.is_moe(L):
            self._moe_bwd(b, L)
        else:
            F = m.ffn / self.tp
            if self.sp:
                self._coll(b, "mlp grad all-gather", "ag", "tp", tokens * h * elem, L)
            self._linear_bwd(b, "fc2", tokens, h, F, L, column=False)
            self._ew(b, ("gelu" if m.gpt else "swiglu") + " bwd",
                     (3 if m.gpt else 5) * tokens * F * elem, L)
            self._linear_bwd(b, "fc1", tokens, F * (1 if m.gpt else 2), h, L, column=True)
        self._ew(b, "post-attn norm bwd", 3 * sp_tokens * h * elem, L, "norm")
        self._ew(b, "residual bwd", (3 * elem + mask) * sp_tokens * h, L)
        if self.sp:
            self._coll(b, "attn grad all-gather", "ag", "tp", tokens * h * elem, L)
        self._linear_bwd(b, "out proj", tokens, h, q, L, column=False)
        self._attention_bwd(b, L)
        self._linear_bwd(b, "qkv", tokens, q + 2 * kv, h, L, column=True)
        self._ew(b, "input norm bwd", 3 * sp_tokens * h * elem, L, "norm")

    def _attention_bwd(self, b, L):
        m, elem, s, bsz = self.job.model, self.elem, self.job.seq, self.job.micro
        rows = s / self.cp
        if self.job.attention == "unfused":
            S, nb = bsz * self.heads * rows * s, bsz * self.heads
            d = self.head_dim
            self._gemm(b, "attn context dgrad", rows, s, d, L, batch=nb, cat="attention")
            self._gemm(b, "attn context wgrad", s, d, rows, L, batch=nb, cat="attention")
            if m.gpt:
                self._ew(b, "attn dropout bwd", (2 * elem + 1) * S, L)
            self._ew(b, "softmax bwd", 3 * S * elem, L)
            self._gemm(b, "attn scores dgrad", rows, d, s, L, batch=nb, cat="attention")
            self._gemm(b, "attn scores wgrad", s, d, rows, L, batch=nb, cat="attention")
            return
        if self.cp > 1:
            kv = 4 * bsz * rows * self.kv_heads * self.head_dim * elem
            ring = (self.cp - 1) * comm.p2p(self.net, self.groups["cp"], kv)
            b.add(Op("cp ring bwd", "comm", "cp", ring,
                     0.0, kv * (self.cp - 1), "cp", L), chain=False)
        flops = 2.5 * 4 * bsz * self.heads * rows * s * self.head_dim * 0.5
        nb = 2 * elem * self.tokens * (2 * self.heads + 2 * self.kv_heads) * self.head_dim
        b.add(Op("flash attention bwd", "attention", "compute",
                 self.c.flash("flash_bwd", flops, nb, True, self.head_dim), flops, nb, "", L))

    def _moe_bwd(self, b, L):
        m, elem = self.job.model, self.elem
        sp_tokens = self.tokens / self.tp
        routed, local, mats = sp_tokens * m.top_k, max(1, m.experts // self.ep), (1 if m.gpt else 2)
        if m.shared_experts:
            shared_ffn = m.shared_experts * m.moe_ffn
            self._linear_bwd(b, "shared fc2", sp_tokens, m.hidden, shared_ffn, L, column=False)
            self._linear_bwd(b, "shared fc1", sp_tokens, shared_ffn * mats, m.hidden, L,
                             column=False)
        self._ew(b, "unpermute bwd", 2 * routed * m.hidden * elem, L)
        self._coll(b, "ep combine all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        for name, mm, n, k in (("expert fc2", routed / local, m.hidden, m.moe_ffn),
                               ("expert fc1", routed / local, m.moe_ffn * mats, m.hidden)):
            if self.fp8:
                self._ew(b, name + " grad fp8 cast", FP8_CAST_BYTES * mm * n * local, L)
            self._gemm(b, name + " dgrad", mm, k, n, L, batch=local, fp8=self.fp8)
            self._gemm(b, name + " wgrad", k, n, mm, L, batch=local, fp8=self.fp8)
            if name == "expert fc2":
                self._ew(b, "expert act bwd", (3 + 2 * (mats - 1)) * routed * m.moe_ffn * elem, L)
        self._coll(b, "ep dispatch all-to-all bwd", "a2a", "ep", routed * m.hidden * elem, L)
        self._ew(b, "permute bwd", 2 * routed * m.hidden * elem, L)
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
        first, n = self.chunks[stage][chunk]
        par = self.job.parallel
        embed = stage == 0 and chunk == 0
        head = stage == par.pp - 1 and chunk == par.v - 1
        kinds = tuple(self.job.model.is_moe(L) for L in range(first, first + n))
        key = (phase, kinds, embed, head)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        b = Builder()
        layers = range(first, first + n)
        fsdp = self.job.parallel.zero >= 3 and self.groups["dp"].n > 1
        gathers = {}
        # ZeRO-3 / FSDP: every layer's weights are all-gathered ahead of use, in the backward
        # again unless they were kept after the forward (reshard_after_forward = false)
        if fsdp and (phase == "F" or self.job.parallel.reshard_after_forward):
            for L in (layers if phase == "F" else reversed(layers)):
                gathers[L] = self._coll(b, "param all-gather", "ag", "dp",
                                        self.layer_params(L) * self.elem, L, chain=False)
                b.pending.remove(gathers[L])
        if phase == "F":
            if embed:
                self._embed_fwd(b)
            for L in layers:
                b.gate = gathers.get(L)
                self._layer_fwd(b, L)
            if n:
                self._amax_reduce(b, b.fp8_gemms, first + n - 1)
            if head:
                self._head_fwd(b)
        else:
            if head:
                self._head_bwd(b)
            for L in reversed(layers):
                b.gate = gathers.get(L)
                self._layer_bwd(b, L)
                if fsdp:
                    self._coll(b, "grad reduce-scatter", "rs", "dp",
                               self.layer_params(L) * self.job.grad_bytes, L, chain=False)
                    b.pending.pop()
            if embed:
                self._embed_bwd(b)
        for op in b.ops:          # layers counted from the chunk's first: templates are shared
            if op.layer >= 0:
                op.layer -= first
        tpl = Template(b.ops)
        self._cache[key] = tpl
        return tpl

    def p2p_time(self) -> float:
        """Activations (or their gradients) between neighbouring stages, per rank: each TP rank
        sends its 1/t share (Megatron's scatter-gather); without SP the receiver all-gathers."""
        h, elem = self.job.model.hidden, self.elem
        full = self.tokens * h * elem
        t = comm.p2p(self.net, self.groups["pp"], full / self.tp)
        if not self.sp and self.tp > 1:
            t += comm.all_gather(self.net, self.groups["tp"], full)
        return t
