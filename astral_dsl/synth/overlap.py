"""The data-parallel collectives a job overlaps with its compute, placed where Seer's timeline
places them (generator.py runs them):

- `overlap_grad_reduce` (Megatron-LM's --overlap-grad-reduce): each gradient bucket is reduced
  over the DP x CP group as soon as the weight gradients of its last layer are done in its
  chunk's last backward, one after the other on the DP stream, beside the rest of the backward
  (seer/schedule.py grad_buckets, iteration_tail): a bucket's ready time is Seer's offset into
  that backward, taken as the same share of the drill's own (noisy) block;
- `overlap_param_gather` with ZeRO-1/2 (--overlap-param-gather): the weights the last step
  updated are all-gathered at the iteration's start, during its first forwards, as one
  collective, Seer's whole gather (the diagnosis's forecast of it: diagnose/forecast_net.py);
  each chunk's first forward waits for the buckets of its first layer and ends no earlier
  than one layer after its last layer's buckets arrived (seer/param_gather.py chunk_gates),
  Seer's times scaled by the pace the drill's gather ran at (its noise and faults), and
  the bucket reductions start after it, as Seer starts them.

Without them the generator reduces the buckets after the pipeline and gathers after the
optimizer step, as before."""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from astral_dsl import records
from astral_dsl.seer.param_gather import chunk_gates
from astral_dsl.seer.schedule import grad_buckets


@records.frozen(eq=False)
class Overlap:
    """One stage's overlapped DP collectives, seconds (`speed` applied)."""
    gather: float = 0.0            # the overlapped parameter all-gather (0: none overlapped)
    gates: Tuple[Tuple[int, float, float, float], ...] = ()   # (block position, first ready,
    #                                 last ready, one layer's forward) from the gather's start
    buckets: Tuple[Tuple[int, float, float], ...] = ()   # (chunk, share of its last backward
    #                                 when the bucket is ready, seconds); () : not overlapped


def plan(fc, speed: float = 1.0) -> Tuple[Overlap, ...]:
    """Per stage, what of Seer's forecast `fc` is overlapped."""
    low, job, out = fc.lowering, fc.job, []
    for i, run in enumerate(fc.runs):
        gather, gates = 0.0, ()
        gated = chunk_gates(low, i, run)
        if gated is not None and gated[1][1] > 0:
            at, (_, seconds) = gated
            gather = speed * seconds
            gates = tuple((k, speed * a, speed * b, speed * c) for k, (a, b, c) in
                          sorted(at.items()))
        buckets = ()
        if job.overlap_grad_reduce and run.dp:
            last = run.last_backwards()
            found = grad_buckets(low, i, last)
            if len(found) != len(run.dp):
                raise ValueError(f"stage {i}: {len(found)} buckets against Seer's {len(run.dp)}")
            buckets = tuple((c, off / max(last[c][1] - last[c][0], 1e-30), speed * (e - s))
                            for (_, _, c, off), (s, e, _) in zip(found, run.dp))
        out.append(Overlap(gather, gates, buckets))
    return tuple(out)


def gather(out, it, free, ranks, ov: Overlap, factor, net, noise, rng, ring
           ) -> Tuple[Dict[int, Tuple[np.ndarray, float]], np.ndarray]:
    """Run the stage's overlapped parameter all-gather from `free` (the iteration's start, each
    rank's) over each DP group; returns the gates of the chunks' first forwards (block
    position -> (earliest start per rank, earliest end)) and when the DP stream is free."""
    end = ring(out, it, free, ranks, ov.gather, factor, net, noise, rng, "all_gather")
    begin = free.max(axis=0, keepdims=True)
    pace = (end[:1] - begin) / ov.gather          # per DP group: its time against Seer's
    gates = {k: (np.broadcast_to(begin + pace * first, free.shape),
                 float((begin + pace * last).max()) + tail)   # the TP group waits for all
             for k, first, last, tail in ov.gates}
    return gates, end


def reduce(out, it, free, dp_free, marks: Dict[int, Tuple[np.ndarray, np.ndarray]],
           ov: Overlap, ranks, factor, net, noise, rng, ring, op: str) -> np.ndarray:
    """Reduce the stage's gradient buckets on the DP stream (free from `dp_free`), each once
    its layers' weight gradients are done in its chunk's last backward (`marks`: chunk ->
    (start, end) of it, per rank); returns when each rank's stage is done (its pipeline
    `free` and its last reduction)."""
    for c, share, seconds in ov.buckets:
        start, end = marks[c]
        ready = start + share * (end - start)
        dp_free = ring(out, it, np.maximum(ready, dp_free), ranks, seconds, factor, net, noise,
                       rng, op)
    return np.maximum(free, dp_free)

