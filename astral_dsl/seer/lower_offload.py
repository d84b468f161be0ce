"""The lowering's activation offloading (a mixin of lower.Lowering): which layers of a stage
send their saved activations to host memory (its first `offload_layers`, memory.py), the copies
out and back over the GPU's host link on streams of their own, and the keys that let a run of
layers with copies be copied instead of built (template.Builder.each)."""
from __future__ import annotations

from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.template import Op


class OffloadOps:
    """Lowering's activation copies to and from host memory (attributes: lower.Lowering)."""

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


def reload_of(ops, L: int) -> int:
    """The op that brings layer L's activations back: issued by the layer after it, or by L
    itself when last, built or copied (Builder.each): the latest op of that name and layer."""
    for k in range(len(ops) - 1, -1, -1):
        op = ops[k]
        if op.layer == L and op.name == "activation reload":
            return k
    raise AssertionError(f"no reload of layer {L}")


def offload_shape(shape, offloaded: frozenset, phase: str, first: int, n: int):
    """Builder.each's key of a layer in a chunk with offloaded layers: its shape and what its
    pass does with copies: in the forward, whether it offloads; in the backward, whether it
    waits for its own reload, whether it is the chunk's last (which reloads itself), and the
    shape of the layer before it when it reloads that one (the copy's size)."""
    if phase == "F":
        return lambda L: (shape(L), L in offloaded)
    last = first + n - 1
    return lambda L: (shape(L), L in offloaded, L == last,
                      shape(L - 1) if L > first and L - 1 in offloaded else None)
