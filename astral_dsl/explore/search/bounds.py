"""Lower bounds of a configuration's iteration time from Seer's own operator costs, without
simulating its schedule: `astral search` forecasts fully only what they cannot rule out.

What Seer's schedule (seer/schedule.py) cannot avoid, for every pipeline stage i:
- its compute stream runs all its blocks one after another: m x the sum over its chunks of a
  forward and a backward block;
- its first block waits for micro-batch 0 to go forward through the stages before it;
- stage i - 1's last backward follows stage i's (the gradient comes back), so a stage's
  backward ends no earlier than the stage after it plus one backward of its own;
- without `overlap_grad_reduce` the reduction of the stage's gradients (all at once, on the
  data-parallel group, ZeRO-0 to 2) follows its last backward;
- the optimizer step (and ZeRO-1/2's parameter all-gather) waits for every stage's gradients.

- a send to another stage holds the sender's compute stream until it has arrived.

A block is priced by its layers' profiles (Profile): one-layer templates priced once per (tp,
cp, ep, micro-batch, recomputation) serve every pipeline split and ZeRO stage. Each bound is at most the simulated iteration
(tests/explore/test_search.py checks it against brute force)."""
from __future__ import annotations

from typing import Optional

import attrs
import numpy as np

from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec
from astral_dsl.seer.stages import chunk_layers

SAFETY = 1e-9        # bounds are lowered by this fraction: sums taken in another order


class Tail:
    """The per-stage terms after the last backward, for one layout, ZeRO stage and split."""

    def __init__(self, low: Lowering):
        job, par = low.job, low.job.parallel
        synced = low.synced
        p = par.pp
        params = [low.stage_split(i) for i in range(p)]
        reduce_after = synced and par.zero < 3 and not job.overlap_grad_reduce
        self.reduce = np.array([low.at(i).dp_reduce(x) if reduce_after else 0.0
                                for i, x in enumerate(params)])
        gather_after = par.zero in (1, 2) and synced and not job.overlap_param_gather
        self.step = [low.optimizer_time(i) + (low.at(i).param_gather(params[i]) if gather_after
                                              else 0.0) for i in range(p)]


class Profile:
    """Per layer and phase, a time its block holds the compute stream at least, as prefix
    sums over the layers (`prefix[phase][L]`: layers 0 .. L-1). Layer 0's includes the
    embedding, the last layer's the head: they always share a chunk with them. Measured on
    one-layer templates (a template of a one-layer chunk of the same configuration).

    `compute`: from the layer's first compute operator's start to its last's end, measured
    without ZeRO-3's weight gathers. Why that bounds a chunk of several layers (lower.py's
    builder): compute operators are all chained, every operator depends on the chain's tail
    when it is added, each stream runs its operators in program order, and more operators or
    dependencies only delay the others; so in a chunk a layer's operators start, relative to
    its first compute operator, no earlier than in its own template, and a layer's first
    compute operator follows the previous layer's last. The gaps left by blocking collectives
    (the forward's TP all-gathers and reduce-scatters) count.

    `dp` (ZeRO-3 only): the operators on the data-parallel stream (each layer's weight
    all-gathers and gradient reduce-scatter), which that stream runs one after another inside
    the block."""

    def __init__(self, job: JobSpec, costs, net, group: str, layout, measure: str):
        L = job.model.layers
        variant = job.with_(parallel=attrs.evolve(job.parallel, pp=L, v=1, stages=None,
                                                  schedule="1f1b"))
        low = Lowering(variant, costs, net)
        self.valid = low.groups[group] == layout
        self.prefix = {}
        m = job.model
        for phase in ("F", "B"):
            seen = {}                 # one template serves every middle layer of a kind
            acc, out = 0.0, [0.0]
            for i in range(L):
                kind = (m.is_moe(i), i == 0, i == L - 1)
                if kind not in seen:
                    # the fastest of the stages' groups (comm_groups.stage_groups): a stage
                    # of the configuration sits as one of the variant's (the same ranks per
                    # stage and PP stride, more stages)
                    seen[kind] = min(
                        _span(tpl, "compute") if measure == "compute" else
                        sum(o.dur for o in tpl.ops if o.stream == "dp")
                        for tpl in (w._template(i, 0, phase) for w in low.stage_lowerings()))
                acc += seen[kind]
                out.append(acc)
            self.prefix[phase] = np.array(out)


def _span(tpl, stream: str) -> float:
    ops = [o for o in tpl.ops if o.stream == stream]
    if not ops:
        return 0.0
    return max(o.end for o in ops) - min(o.start for o in ops)


def sends(p: int, v: int, m: int, stage: int) -> int:
    """Blocks of a stage whose output goes to another stage (schedule.py: every forward but
    the last stage's last chunk's, every backward but the first stage's first chunk's)."""
    if p == 1:
        return 0
    return 2 * m * v - (m if stage == p - 1 else 0) - (m if stage == 0 else 0)


class Split:
    """The chunks of one pipeline split (stages.chunk_layers) as arrays: [stage, chunk] ->
    first layer and the layer after its last."""

    def __init__(self, chunks):
        self.first = np.array([[f for f, _ in row] for row in chunks], dtype=np.int64)
        self.stop = self.first + np.array([[n for _, n in row] for row in chunks],
                                          dtype=np.int64)


def backward_ends(job: JobSpec, forward: np.ndarray, backward: np.ndarray, hop: float
                  ) -> np.ndarray:
    """Per stage, a time its last backward cannot end before; `forward[i, c]` and
    `backward[i, c]` the time a block of stage i, chunk c holds its compute stream, and `hop`
    one activation's transfer to the next stage (a send is synchronous: the sender's compute
    stream waits until it has arrived, schedule.py).

    A stage starts when micro-batch 0 has gone forward through the stages before it (and
    across each link), then runs all its blocks and its sends; its last backward also waits
    for the next stage's, plus its own backward and the link back:
    end_i = max(own_i, end_(i+1) + back_i), i.e. max over j >= i of own_j + back_i + ... +
    back_(j-1), a reversed running maximum."""
    m = job.microbatches
    p, v = forward.shape
    work = forward.sum(axis=1) + backward.sum(axis=1)
    sent = np.zeros(p) if p == 1 else np.full(p, 2.0 * m * v)
    if p > 1:
        sent[0] -= m                       # the first stage's first chunk sends no gradient
        sent[-1] -= m                      # the last stage's last chunk turns to its backward
    fill = np.concatenate(([0.0], np.cumsum(forward[:-1, 0] + hop)))
    own = fill + m * work + sent * hop
    back = backward[:, 0] + hop
    back[0] -= hop                         # stage 0 sends nothing back
    before = np.concatenate(([0.0], np.cumsum(back[:-1])))     # back_0 + ... + back_(i-1)
    return np.maximum.accumulate((own + before)[::-1])[::-1] - before


def finish(ends: np.ndarray, tail: Tail) -> float:
    """The bound of the iteration: the slowest stage's gradients, then the step."""
    gradients = float(np.max(ends + tail.reduce))
    return (gradients + max(tail.step)) * (1 - SAFETY)


def screen_ends(job: JobSpec, profile: Profile, hop: float, split: Split,
                dp: Optional[Profile] = None) -> Optional[np.ndarray]:
    """backward_ends with each block priced by its layers' profiles (Profile): the compute
    one, or the data-parallel stream's (`dp`, ZeRO-3) where that is longer. None when the
    compute profile does not apply."""
    if not profile.valid:
        return None
    blocks = []
    for phase in ("F", "B"):
        pre = profile.prefix[phase]
        t = pre[split.stop] - pre[split.first]
        if dp is not None and dp.valid:
            t = np.maximum(t, dp.prefix[phase][split.stop] - dp.prefix[phase][split.first])
        blocks.append(t)
    return backward_ends(job, blocks[0], blocks[1], hop)


def screen_bound(job: JobSpec, profile: Profile, tail: Tail, hop: float,
                 split: Optional[Split] = None, dp: Optional[Profile] = None) -> float:
    ends = screen_ends(job, profile, hop, split or Split(chunk_layers(job)), dp)
    return 0.0 if ends is None else finish(ends, tail)
