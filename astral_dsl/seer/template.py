"""The operators of one pipeline block as a template (seer/lower.py builds them): each operator
on a stream of the rank with its dependencies, its offset from the block's start computed once,
and the time the compute stream waits for each communication stream."""
from __future__ import annotations

from functools import cached_property
from typing import Dict, List, Optional

COPY_STREAMS = "offload"       # the streams of activation copies to and from host memory

class Op:
    __slots__ = ("name", "cat", "stream", "dur", "flops", "nbytes", "group", "layer", "deps",
                 "start", "end", "shape", "kernels")

    def __init__(self, name, cat, stream, dur, flops=0.0, nbytes=0.0, group="", layer=-1,
                 deps=(), shape="", kernels=1):
        self.name = name        # one store each (no tuple packed and unpacked: ~10 % of a copy)
        self.cat = cat
        self.stream = stream
        self.dur = dur
        self.flops = flops
        self.nbytes = nbytes
        self.group = group
        self.layer = layer
        self.deps = deps
        self.shape = shape
        self.kernels = kernels
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
        at = free.get
        ends = [0.0] * len(ops)   # every dependency is an earlier op (tests/test_seer_fp8.py)
        for k, op in enumerate(ops):      # t = max(its deps' ends, its stream's free time)
            deps = op.deps
            stream = op.stream
            if deps:
                t = ends[deps[0]]
                if len(deps) > 1:
                    for d in deps:
                        if ends[d] > t:
                            t = ends[d]
                f = at(stream, 0.0)
                if f > t:
                    t = f
            else:
                t = at(stream, 0.0)
            op.start = t
            op.end = ends[k] = free[stream] = t + op.dur
        self.ops = ops
        self._layer_ends: Optional[Dict[int, float]] = None
        self.device = device = max(ends, default=0.0)
        self.host = max(0.0, host_s - device)
        self.duration = device + self.host

    # what the breakdown reads, computed when it does (a forecast's iteration time does not)
    @cached_property
    def flops(self) -> float:
        return sum(o.flops for o in self.ops)

    @cached_property
    def compute(self) -> float:
        return sum(o.dur for o in self.ops if o.stream == "compute")

    @cached_property
    def exposed(self) -> Dict[str, float]:
        """Stream -> time the compute stream waits for it."""
        ops, device = self.ops, self.device
        exposed: Dict[str, float] = {}
        comm_ops = [o for o in ops if o.stream != "compute"]
        for o in comm_ops:
            exposed.setdefault(o.stream, 0.0)
        # a wait for an activation copy (lower.py `_offload`) is charged to it exactly: the
        # compute op that waited, or the block's end, follows that copy; the other waits are
        # shared among the communication streams by their busy time
        idle, last = 0.0, 0.0
        for o in sorted((o for o in ops if o.stream == "compute"), key=lambda o: o.start):
            gap = o.start - last
            if gap > 0:
                idle += gap - _charge_copy(exposed, ops, o.deps, o.start, gap)
            last = max(last, o.end)
        tail = device - last
        if tail > 0:
            idle += tail - _charge_copy(exposed, ops, range(len(ops)), device, tail)
        shared = [o for o in comm_ops if not o.stream.startswith(COPY_STREAMS)]
        if shared and idle > 1e-15:
            weight = {s: sum(o.dur for o in shared if o.stream == s)     # in program order
                      for s in dict.fromkeys(o.stream for o in shared)}
            total = sum(weight.values()) or 1.0
            for s in weight:
                exposed[s] = idle * weight[s] / total
        return exposed

    def layer_ends(self) -> Dict[int, float]:
        """Layer (counted from the chunk's first) -> when its last operator ends (computed once:
        the schedule reads it for every stage the template serves)."""
        out = self._layer_ends
        if out is None:
            out = self._layer_ends = {}
            for o in self.ops:
                if o.layer >= 0:
                    out[o.layer] = max(out.get(o.layer, 0.0), o.end)
        return dict(out)


def _charge_copy(exposed: Dict[str, float], ops: List[Op], deps, at: float, gap: float
                 ) -> float:
    """Charge `gap` to the copy stream of the op among `deps` that ended at `at`, if it is a
    copy; returns what was charged."""
    for d in deps:
        o = ops[d]
        if o.stream.startswith(COPY_STREAMS) and abs(o.end - at) <= 1e-12 * max(1.0, at):
            exposed[o.stream] += gap
            return gap
    return 0.0


class Builder:
    """Ops in program order. A chained op follows the current tail (and joins the pending side
    ops); a side op (chain=False) starts after the tail on its own stream and is joined by the
    next chained op unless `join=False` is given to the ops in between."""

    def __init__(self):
        self.ops: List[Op] = []
        self.tail: Optional[int] = None
        self.pending: List[int] = []
        self.fp8_gemms = 0          # fp8 forward GEMMs added (their amaxes are reduced)

    gates: tuple = ()              # ops the next chained op must also wait for

    def wait_for(self, *ops: Optional[int]) -> None:
        """The next chained op also waits for `ops` (side ops; None is skipped)."""
        self.gates = tuple(o for o in ops if o is not None)

    def _state(self) -> tuple:
        return self.tail, tuple(self.pending), self.gates

    def each(self, layers, body, key=None, own: range = range(0)) -> None:
        """body(L) for each layer L of `layers` (it adds the layer's ops). Layers of one shape
        (`key(L)`) get the same ops, shifted: where the two layers before L had its shape and
        came out so (their ops, and the builder's state after them, shifted by their count; the
        ops' layers by the step between them), L's ops are copies of the last layer's, shifted
        again: what building them gives, without building. key None: every layer is built.
        `own`: ops added before the run, one per layer in the run's order (ZeRO-3's weight
        gathers, lower.py): a layer's dependency on one of them is the layer before's on the
        one before it (shifted by 1, not by the ops' count)."""
        ops = self.ops
        last = None          # (shape, layer, first op, op count, state after) of the last layer
        alike = False        # the last layer's ops and state are the one's before it, shifted
        proto = None         # (first op, layer, the fields of its ops) copied in this run
        for L in layers:
            k = key(L) if key is not None else None
            if alike and k == last[0] and L - last[1] == step:
                _, _, first, count, (tail, pending, gates) = last
                at = len(ops)
                if proto is None:       # the run's first copy: of the last built layer
                    proto = (first, last[1], [
                        (o.name, o.cat, o.stream, o.dur, o.flops, o.nbytes, o.group, o.layer,
                         o.deps, o.shape, o.kernels) for o in ops[first:first + count]])
                shift, move = at - proto[0], L - proto[1]
                if own:         # one own op a layer: this layer's is nth after the proto's
                    lo, hi, nth = own.start, own.stop, move // step
                    ops += [Op(name, cat, stream, dur, flops, nbytes, group, layer + move,
                               tuple([d + nth if lo <= d < hi else d + shift for d in deps])
                               if deps else deps, shape, kernels)
                            for name, cat, stream, dur, flops, nbytes, group, layer, deps,
                            shape, kernels in proto[2]]
                else:
                    ops += [Op(name, cat, stream, dur, flops, nbytes, group, layer + move,
                               tuple([d + shift for d in deps]) if deps else deps, shape,
                               kernels)
                            for name, cat, stream, dur, flops, nbytes, group, layer, deps,
                            shape, kernels in proto[2]]
                self.tail = tail + count
                self.pending = [x + count for x in pending]
                self.gates = tuple(x + count for x in gates)
                self.fp8_gemms += grew
                last = (k, L, at, count, self._state())
                continue
            first, fp8 = len(ops), self.fp8_gemms      # fp8 GEMMs a layer adds: alike
            proto = None
            body(L)
            state = self._state()
            count = len(ops) - first
            alike = False
            if k is not None and last is not None and last[0] == k and last[2] + count == first \
                    and last[3] == count:
                step, grew = L - last[1], self.fp8_gemms - fp8
                alike = _shifted(ops, last[2], count, step, own) and \
                    _state_shifted(last[4], state, count)
            last = (k, L, first, count, state)

    def add(self, op: Op, chain: bool = True, join: bool = True, extra=()) -> int:
        tail, ops = self.tail, self.ops
        deps = [tail] if tail is not None else []
        if extra:
            deps += extra
        if chain:
            if self.gates:
                deps += self.gates
                self.gates = ()
            if join and self.pending:
                deps += self.pending
                self.pending = []
        op.deps = tuple(deps)
        ops.append(op)
        idx = len(ops) - 1
        if chain:
            self.tail = idx
        else:
            self.pending.append(idx)
        return idx


def _shifted(ops: List[Op], first: int, count: int, step: int, own: range = range(0)) -> bool:
    """Whether ops[first + count:first + 2 count] are ops[first:first + count] shifted by count
    (their dependencies; by 1 those on the layers' `own` ops, Builder.each) and step (their
    layers)."""
    lo, hi = own.start, own.stop
    for a, c in zip(ops[first:first + count], ops[first + count:first + 2 * count]):
        if (a.name != c.name or a.cat != c.cat or a.stream != c.stream or a.dur != c.dur
                or a.flops != c.flops or a.nbytes != c.nbytes or a.group != c.group
                or a.shape != c.shape or a.kernels != c.kernels or c.layer != a.layer + step
                or c.deps != tuple([d + 1 if lo <= d < hi else d + count for d in a.deps])):
            return False
    return True


def _state_shifted(before: tuple, after: tuple, count: int) -> bool:
    """Whether a Builder's state `after` is `before` shifted by count ops (Builder._state)."""
    tail, pending, gates = before
    return (tail is not None and after[0] == tail + count
            and after[1] == tuple(x + count for x in pending)
            and after[2] == tuple(x + count for x in gates))
