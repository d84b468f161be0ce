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

from dataclasses import replace
from typing import Callable, List, Optional, Sequence, Tuple

from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, chunk_layers

SAFETY = 1e-9        # bounds are lowered by this fraction: sums taken in another order


class Tail:
    """The per-stage terms after the last backward, for one layout, ZeRO stage and split."""

    def __init__(self, low: Lowering):
        job, par = low.job, low.job.parallel
        dp = low.groups["dp"].n
        p = par.pp
        params = [low.stage_params(i) for i in range(p)]
        reduce_after = dp > 1 and par.zero < 3 and not job.overlap_grad_reduce
        self.reduce = [low.dp_reduce(x) if reduce_after else 0.0 for x in params]
        gather_after = par.zero in (1, 2) and dp > 1 and not job.overlap_param_gather
        self.step = [low.optimizer_time(i) + (low.param_gather(params[i]) if gather_after
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
        variant = job.with_(parallel=replace(job.parallel, pp=L, v=1, stages=None,
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
                    tpl = low.template(i, 0, phase)
                    seen[kind] = _span(tpl, "compute") if measure == "compute" else \
                        sum(o.dur for o in tpl.ops if o.stream == "dp")
                acc += seen[kind]
                out.append(acc)
            self.prefix[phase] = out

    def chunk(self, first: int, n: int, phase: str) -> float:
        p = self.prefix[phase]
        return p[first + n] - p[first]


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


def backward_ends(job: JobSpec, block: Callable[[int, int, str], float], hop: float
                  ) -> List[float]:
    """Per stage, a time its last backward cannot end before, with `block(stage, chunk,
    phase)` the time a block holds its compute stream and `hop` one activation's transfer
    to the next stage (a send is synchronous: the sender's compute stream waits until it has
    arrived, schedule.py)."""
    par, m = job.parallel, job.microbatches
    p, v = par.pp, par.v
    fill, own, bwd0 = 0.0, [], []
    for i in range(p):
        f0 = block(i, 0, "F")
        b0 = block(i, 0, "B")
        work = f0 + b0
        for c in range(1, v):
            work += block(i, c, "F") + block(i, c, "B")
        own.append(fill + m * work + sends(p, v, m, i) * hop)
        bwd0.append(b0 + (hop if i else 0.0))      # stage 0 sends nothing back
        fill += f0 + hop
    ends, later = [0.0] * p, 0.0
    for i in range(p - 1, -1, -1):
        later = own[i] if i == p - 1 else max(own[i], later + bwd0[i])
        ends[i] = later
    return ends


def finish(ends: Sequence[float], tail: Tail) -> float:
    """The bound of the iteration: the slowest stage's gradients, then the step."""
    gradients = max(e + r for e, r in zip(ends, tail.reduce))
    return (gradients + max(tail.step)) * (1 - SAFETY)


def screen_ends(job: JobSpec, profile: Profile, hop: float, chunks=None,
                dp: Optional[Profile] = None) -> Optional[List[float]]:
    """backward_ends with each block priced by its layers' profiles (Profile): the compute
    one, or the data-parallel stream's (`dp`, ZeRO-3) where that is longer. None when the
    compute profile does not apply; `chunks`: spec.chunk_layers(job), when known."""
    if not profile.valid:
        return None
    chunks = chunks or chunk_layers(job)
    if dp is not None and dp.valid:
        def block(i, c, ph):
            first, n = chunks[i][c]
            return max(profile.chunk(first, n, ph), dp.chunk(first, n, ph))
    else:
        def block(i, c, ph):
            return profile.chunk(*chunks[i][c], ph)
    return backward_ends(job, block, hop)


def screen_bound(job: JobSpec, profile: Profile, tail: Tail, hop: float, chunks=None,
                 dp: Optional[Profile] = None) -> float:
    ends = screen_ends(job, profile, hop, chunks, dp)
    return 0.0 if ends is None else finish(ends, tail)
