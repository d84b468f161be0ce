"""The operators of one pipeline block as a template (seer/lower.py builds them): each operator
on a stream of the rank with its dependencies, its offset from the block's start computed once,
and the time the compute stream waits for each communication stream."""
from __future__ import annotations

from typing import Dict, List, Optional


class Op:
    __slots__ = ("name", "cat", "stream", "dur", "flops", "nbytes", "group", "layer", "deps",
                 "start", "end", "shape", "kernels")

    def __init__(self, name, cat, stream, dur, flops=0.0, nbytes=0.0, group="", layer=-1,
                 deps=(), shape="", kernels=1):
        self.name, self.cat, self.stream, self.dur = name, cat, stream, dur
        self.flops, self.nbytes, self.group, self.layer = flops, nbytes, group, layer
        self.deps, self.shape, self.kernels = deps, shape, kernels
        self.start = self.end = 0.0


class Template:
    """Operators of one block with offsets from the block's start. An operator's `layer` counts
    from the chunk's first layer (EMBED, HEAD for the others), so that chunks of the same shape
    share one template.

    `host_s`: without CUDA graphs the host issues every kernel of the block, so the block takes at
    least the host's time however fast the GPU runs them (`host` is the time the GPU waits for
    the host, 0 when it does not)."""

    def __init__(self, ops: List[Op], host_s: float = 0.0):
        free: Dict[str, float] = {}
        for op in ops:
            t = max([ops[d].end for d in op.deps] + [free.get(op.stream, 0.0)])
            op.start, op.end = t, t + op.dur
            free[op.stream] = op.end
        self.ops = ops
        device = max((o.end for o in ops), default=0.0)
        self.host = max(0.0, host_s - device)
        self.duration = device + self.host
        self.flops = sum(o.flops for o in ops)
        self.compute = sum(o.dur for o in ops if o.stream == "compute")
        self.exposed = {}   # stream -> time the compute stream waits for it
        busy = sorted((o.start, o.end) for o in ops if o.stream == "compute")
        idle, last = 0.0, 0.0
        for s, e in busy:
            idle += max(0.0, s - last)
            last = max(last, e)
        idle += device - last
        comm_ops = [o for o in ops if o.stream != "compute"]
        for o in comm_ops:
            self.exposed.setdefault(o.stream, 0.0)
        if comm_ops and idle > 0:
            weight = {s: sum(o.dur for o in comm_ops if o.stream == s) for s in self.exposed}
            total = sum(weight.values()) or 1.0
            for s in self.exposed:
                self.exposed[s] = idle * weight[s] / total

    def layer_ends(self) -> Dict[int, float]:
        """Layer (counted from the chunk's first) -> when its last operator ends."""
        out: Dict[int, float] = {}
        for o in self.ops:
            if o.layer >= 0:
                out[o.layer] = max(out.get(o.layer, 0.0), o.end)
        return out


class Builder:
    """Ops in program order. A chained op follows the current tail (and joins the pending side
    ops); a side op (chain=False) starts after the tail on its own stream and is joined by the
    next chained op unless `join=False` is given to the ops in between."""

    def __init__(self):
        self.ops: List[Op] = []
        self.tail: Optional[int] = None
        self.pending: List[int] = []
        self.fp8_gemms = 0          # fp8 forward GEMMs added (their amaxes are reduced)

    gate: Optional[int] = None     # an op the next chained op must also wait for

    def add(self, op: Op, chain: bool = True, join: bool = True, extra=()) -> int:
        deps = ([self.tail] if self.tail is not None else []) + list(extra)
        if chain and self.gate is not None:
            deps.append(self.gate)
            self.gate = None
        if chain and join:
            deps += self.pending
            self.pending = []
        op.deps = tuple(deps)
        self.ops.append(op)
        idx = len(self.ops) - 1
        if chain:
            self.tail = idx
        else:
            self.pending.append(idx)
        return idx
