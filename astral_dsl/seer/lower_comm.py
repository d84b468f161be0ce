"""The lowering's collectives (a mixin of lower.Lowering, whose docstring tells the model):
TP, CP, EP and DP collectives on their groups' streams, the split of a TP collective with the
GEMM beside it (`tp_overlap = full`), ZeRO-3's weight and gradient collectives, fp8 delayed
scaling's amax all-reduce, and the transfer between neighbouring pipeline stages."""
from __future__ import annotations

from typing import Dict, List, Tuple

from astral_dsl.seer import comm, pipeline_pairs, routing
from astral_dsl.seer.template import Op, Builder

# ZeRO-3's operators on the DP stream (lower.py) and the collective each is (the diagnosis
# compares a trace's with them, a drill replays them)
SHARDED_COLLECTIVES = {"param all-gather": "all_gather", "grad reduce-scatter": "reduce_scatter"}


def sharded_parts(low, stage: int, chunk: int, phase: str) -> List[Tuple[Op, str, float, float]]:
    """ZeRO-3 / FSDP's collectives of a block (Seer's operators on the DP stream named in
    SHARDED_COLLECTIVES), in the order they start: (the operator, its collective, the dense
    weights' seconds, the routed experts' seconds). A MoE layer's is priced as two collectives
    one after the other (params.weights_coll): the experts' share is their dp_parts over the
    expert-data-parallel group (at most the whole), the dense weights' the rest. The one split
    the drill (synth/sharded.py) and the diagnosis' forecast (diagnose/forecast_net.py) read."""
    template = low.template(stage, chunk, phase)
    first = low.chunks[stage][chunk][0]
    ops = sorted((o for o in template.ops if o.stream == "dp" and o.name in SHARDED_COLLECTIVES),
                 key=lambda o: (o.start, o.layer))
    out = []
    for o in ops:
        op, L = SHARDED_COLLECTIVES[o.name], first + o.layer
        split = low.layer_split(L)
        expert = min(o.dur, low.at(stage).dp_parts(split, op == "all_gather",
                                                   low.dense_linear(L))[1]) \
            if split[1] > 0 else 0.0
        out.append((o, op, o.dur - expert, expert))
    return out

class CommOps:
    """Lowering's communication operators (attributes: lower.Lowering)."""

    def _coll(self, b: Builder, name, kind, group, nbytes, layer, chain=True, stream=None):
        """A collective on the group's stream (or `stream`): blocking (chain) or a side op
        (chain=False)."""
        lay = self.groups[group]
        if lay.n <= 1 or nbytes <= 0:
            return None
        if kind == "a2a":
            if self.job.moe_dispatcher == "alltoall":
                t = comm.all_to_all(self.net, lay, nbytes, self.a2a_eff)
            else:           # nbytes: the top-k copies of the rank's tokens
                k = max(1, self.job.model.top_k)
                t = comm.dispatch(self.net, lay, nbytes / k, self.ep_hit(), self.a2a_eff)
            # the share another micro-batch's computation hides, on the passes the schedule
            # pairs (spec.ep_overlap_share): after the exposed rest on the EP stream (it
            # occupies the stream, not this block's critical path)
            hidden = self.c.cal.ep_hidden * self.job.ep_overlap_share * t
            if hidden > 0:
                main = b.add(Op(name, "comm", stream or group, t - hidden, 0.0, nbytes, group,
                                layer), chain)
                side = b.add(Op(name + " (overlapped)", "comm", group, hidden, 0.0, 0.0, group,
                                layer, kernels=0), chain=False, join=False,
                             extra=() if chain else (main,))
                b.pending.remove(side)
                return main
        else:
            t = {"ar": comm.all_reduce, "rs": comm.reduce_scatter,
                 "ag": comm.all_gather}[kind](self.net, lay, nbytes)
        return b.add(Op(name, "comm", stream or group, t, 0.0, nbytes, group, layer), chain)

    def _weights_op(self, b: Builder, name, kind, L, per_param) -> int:
        """ZeRO-3's collective over layer L's weights (or gradients), a side op on the DP
        stream: the dense ones over DP x CP, the experts' over the expert-data-parallel group
        (ParamsMixin.weights_coll), `per_param` (dense, expert) bytes."""
        split = self.layer_split(L)
        op = b.add(Op(name, "comm", "dp", self.weights_coll(kind, split, per_param), 0.0,
                      split[0] * per_param[0] + split[1] * per_param[1], "dp", L), chain=False)
        b.pending.remove(op)
        return op

    def ep_hit(self) -> Tuple[float, float]:
        """(expected EP ranks, expected NVLink domains) holding one of a token's experts
        (routing.spread over the EP group): where a fused dispatcher sends each token once."""
        m, lay = self.job.model, self.groups["ep"]
        return routing.spread(self.job.moe_routing, m.experts, max(1, m.top_k), m.expert_groups,
                              m.group_top_k, lay.n, lay.hosts)

    @property
    def a2a_eff(self) -> float:
        cal = self.c.cal
        return cal.a2a_eff if self.job.moe_dispatcher == "alltoall" else cal.a2a_eff_fused

    @property
    def tp_full(self) -> bool:
        return self.job.tp_overlap == "full" and self.tp > 1

    def _tp_out(self, b, name, layer, gemm=True):
        """After a row-parallel layer: reduce-scatter (SP) or all-reduce; with `tp_overlap =
        full` split with the GEMM before it and overlapping it (_overlap). Not after a layer
        that is no GEMM (`gemm` False: the embedding's lookup, which neither Megatron-Core's
        userbuffers nor torch's micro-pipelined TP splits): blocking. torch's fused
        matmul-reduce-scatter ends with a kernel of its own that sums the TP partials the
        exchange gathered (_ring_sum)."""
        split = self.tp_full and gemm
        nbytes = self.tokens * self.job.model.hidden * self.elem
        if not split:
            self._dim_copy(b, name + " reduce-scatter", nbytes, layer, fused=not gemm)
        op = self._coll(b, name + (" reduce-scatter" if self.sp else " all-reduce"),
                        "rs" if self.sp else "ar", "tp", nbytes, layer, chain=not split)
        if op is not None and split:
            self._overlap(b, op, b.tail)
            self._ring_sum(b, name + " reduce-scatter sum", layer)

    def _dim_copy(self, b, name, nbytes, layer, fused=False):
        """A collective of torchtitan's that no GEMM is fused with (`dim_copies`) runs on the
        sequence dimension as torch's functional collectives do it: an all-gather gathers on
        dim 0 and copies the result into dim 1, `torch.cat(torch.chunk(res, group_size,
        dim=0), dim=gather_dim)`; a reduce-scatter first copies its input so,
        `torch.cat(torch.chunk(self, group_size, dim=scatter_dim))` (torch 2.6.0 / 2.8.0
        distributed/_functional_collectives.py, all_gather_tensor and reduce_scatter_tensor,
        which DTensor's Shard -> Replicate and Partial -> Shard redistributions call): `nbytes`
        read and written, after the all-gather or before the reduce-scatter. torch.compile
        fuses the copy into an Inductor kernel beside it (`fused`: the rowwise cast that reads
        the gathered tensor, the sum of separate layers' data gradients that writes the
        reduce-scatter's input, the embedding's lookup), not into a GEMM (an extern kernel);
        micro-pipelined TP's fused ops take the shard and return the result in place
        (_fused_all_gather_matmul_impl's `movedim`) and copy nothing so."""
        if self.dim_copies and not (fused and self.job.torch_compile):
            self._ew(b, name + " layout copy", 2 * nbytes, layer)

    def _ring_sum(self, b, name, layer):
        """torch's fused matmul-reduce-scatter (micro-pipelined TP, `ring`): each rank's GEMM
        chunks land in a buffer of TP partials of its rows ("stacked_partials"), summed after
        the pipeline by one reduction kernel on the compute stream (torch 2.8.0 distributed/
        _symmetric_memory/__init__.py, _fused_matmul_reduce_scatter_impl and
        _fused_scaled_matmul_reduce_scatter_impl: `reduce_fn(stacked_partials...)`, in the
        output dtype, bf16): it reads tokens x hidden elements and writes tokens / TP x hidden.
        NCCL's reduce-scatter sums inside the collective (priced with it)."""
        if self.ring > 1:
            h = self.job.model.hidden
            self._ew(b, name, (self.tokens + self.sp_tokens) * h * self.elem, layer)

    def _overlap(self, b, comm_op: int, gemm: int):
        """A TP collective split with GEMM `gemm` (userbuffers / async TP): it starts with the
        GEMM, the next operator waits for both, and the GEMM loses `interfere` of its time to
        it when it runs on NVLink. torch's micro-pipelined TP (`ring`) leaves one GEMM chunk
        beside no transfer: an all-gather's last chunk is multiplied after its copy, a
        reduce-scatter's first chunk is produced before any copy (torch 2.8.0
        _symmetric_memory/__init__.py, _pipelined_multi_all_gather_and_consume and
        _pipelined_produce_and_all2all), so the pair takes max(GEMM, transfer + GEMM / TP):
        the collective is priced one chunk (`ring`) longer."""
        ops = b.ops
        ops[comm_op].deps = ops[gemm].deps
        if self.groups["tp"].hosts <= 1:
            ops[gemm].dur += self.c.cal.interfere * ops[comm_op].dur
        if self.ring > 1:
            ops[comm_op].dur += ops[gemm].dur / self.ring

    def _tp_gather(self, b, name, layer, width):
        """With SP, the TP all-gather of a layer's input (or of a row-parallel layer's output
        gradient), `width` elements a token: blocking, or
        (tp_overlap = full, where the GEMM reads the gathered tensor: `gather_fused`) a side
        operator the GEMM beside it overlaps (returned; None
        otherwise). A quantised job's layers gather quantised data (ag_bytes). torch's
        micro-pipelined TP (`ring`) first copies the rank's shard into its symmetric-memory
        buffer on the compute stream, before the first GEMM chunk (torch 2.8.0
        _symmetric_memory/__init__.py, _pipelined_multi_all_gather_and_consume: "mv", which
        the source leaves unoverlapped): the shard read and written once."""
        if not self.sp:
            return None
        split = self.tp_full and self.gather_fused
        nbytes = self.tokens * width * self.ag_bytes
        if split and self.ring > 1:
            self._ew(b, name + " symmetric copy", 2 * nbytes / self.tp, layer)
        op = self._coll(b, name, "ag", "tp", nbytes, layer, chain=not split)
        if op is None or not split:
            self._dim_copy(b, name, nbytes, layer, fused=self.fp8 and not self.ag_quantised)
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

    def p2p_hops(self) -> Tuple[float, ...]:
        """One transfer over each boundary between neighbouring stages (p of them: boundary b
        from stage b to b + 1, the last from stage p - 1 back to 0; (0.0,) without a
        pipeline), each priced by its own slowest pair (pipeline_pairs.boundaries; under
        failures Network.pp), per rank: each TP rank sends its 1/t share (Megatron's
        scatter-gather); without SP the receiver all-gathers."""
        hops = self.__dict__.get("_hops")
        if hops is not None:
            return hops
        if self.job.parallel.pp <= 1:
            hops = (0.0,)
        else:
            lays = self.net.pp or tuple(lay for lay, _ in pipeline_pairs.boundaries(
                self.job, self.net, self.groups["pp"]))
            h, elem = self.job.model.hidden, self.elem
            full = self.tokens * h * elem
            gather = comm.all_gather(self.net, self.groups["tp"], full) \
                if not self.sp and self.tp > 1 else None
            priced: Dict[comm.Layout, float] = {}
            for lay in lays:
                if lay not in priced:
                    t = comm.p2p(self.net, lay, full / self.tp)
                    if gather is not None:
                        t += gather
                    priced[lay] = t
            hops = tuple(priced[lay] for lay in lays)
        self.__dict__["_hops"] = hops
        return hops
