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

Two ways to price a block: screening, by its layers' profiles (Profile: one-layer templates
priced once per (tp, cp, ep, micro-batch, recomputation) serve every pipeline split and
ZeRO stage); refining, by the block template's whole duration, as the schedule uses it. Each bound is at most the simulated iteration
(tests/explore/test_search.py checks it against brute force)."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Tuple

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
    """Per layer and phase, how long its block holds the compute stream at least: from its
    first compute operator's start to its last's end in its one-layer template (a template of
    a one-layer chunk of the same configuration). Layer 0's includes the embedding, the last
    layer's the head: they always share a chunk with them.

    Why that bounds a chunk of several layers (lower.py's builder): compute operators are all
    chained, every operator depends on the chain's tail when it is added, and each stream runs
    its operators in program order; so in a chunk a layer's operators start, relative to its
    first compute operator, no earlier than in its own template (other layers' operators only
    delay them), and a layer's first compute operator follows the previous layer's last. The
    gaps left by blocking collectives (the forward's TP all-gathers and reduce-scatters) count;
    the prefetch of ZeRO-3 weights before a layer does not."""

    def __init__(self, job: JobSpec, costs, net, tp_layout):
        L = job.model.layers
        variant = job.with_(parallel=replace(job.parallel, pp=L, v=1, stages=None,
                                             schedule="1f1b"))
        low = Lowering(variant, costs, net)
        self.valid = low.groups["tp"] == tp_layout
        self.prefix = {}
        m = job.model
        for phase in ("F", "B"):
            spans = {}                # one template serves every middle layer of a kind
            acc, out = 0.0, [0.0]
            for i in range(L):
                kind = (m.is_moe(i), i == 0, i == L - 1)
                if kind not in spans:
                    spans[kind] = _compute_span(low.template(i, 0, phase))
                acc += spans[kind]
                out.append(acc)
            self.prefix[phase] = out


def _compute_span(tpl) -> float:
    ops = [o for o in tpl.ops if o.stream == "compute"]
    if not ops:
        return 0.0
    return max(o.end for o in ops) - min(o.start for o in ops)


def sends(p: int, v: int, m: int, stage: int) -> int:
    """Blocks of a stage whose output goes to another stage (schedule.py: every forward but
    the last stage's last chunk's, every backward but the first stage's first chunk's)."""
    if p == 1:
        return 0
    return 2 * m * v - (m if stage == p - 1 else 0) - (m if stage == 0 else 0)


def bound(job: JobSpec, block: Callable[[int, int, str], float], tail: Tail,
          hop: float) -> float:
    """The bound with `block(stage, chunk, phase)` the time a block holds its compute stream
    and `hop` one activation's transfer to the next stage (a send is synchronous: the sender's
    compute stream waits until it has arrived, schedule.py)."""
    par, m = job.parallel, job.microbatches
    p, v = par.pp, par.v
    fill, starts, own, bwd0 = 0.0, [], [], []
    for i in range(p):
        f0 = block(i, 0, "F")
        b0 = block(i, 0, "B")
        work = f0 + b0
        for c in range(1, v):
            work += block(i, c, "F") + block(i, c, "B")
        starts.append(fill)
        own.append(fill + m * work + sends(p, v, m, i) * hop)
        bwd0.append(b0 + (hop if i else 0.0))      # stage 0 sends nothing back
        fill += f0 + hop
    gradients, later = 0.0, 0.0
    for i in range(p - 1, -1, -1):
        later = own[i] if i == p - 1 else max(own[i], later + bwd0[i])
        gradients = max(gradients, later + tail.reduce[i])
    return (gradients + max(tail.step)) * (1 - SAFETY)


def screen_bound(job: JobSpec, profile: Profile, tail: Tail, hop: float, chunks=None
                 ) -> float:
    """The bound with each block priced by its layers' profiles (Profile); `chunks`:
    spec.chunk_layers(job), when known."""
    if not profile.valid:
        return 0.0
    chunks = chunks or chunk_layers(job)
    pre = profile.prefix
    return bound(job, lambda i, c, ph: pre[ph][chunks[i][c][0] + chunks[i][c][1]]
                 - pre[ph][chunks[i][c][0]], tail, hop)


def refine_bound(low: Lowering, tail: Tail) -> float:
    """The bound with each block priced by its template's duration."""
    hop = low.p2p_time() if low.job.parallel.pp > 1 else 0.0
    return bound(low.job, lambda i, c, ph: low.template(i, c, ph).duration, tail, hop)


def template_key(low: Lowering) -> Tuple:
    """What a Lowering's block templates depend on besides the layers of the chunk (the key
    under which lower.py caches them): Lowerings with equal keys build equal templates, so
    they may share them. The job with the fields that only place chunks or order ranks
    neutralised, and the layouts of the groups the templates communicate on."""
    job, par, g = low.job, low.job.parallel, low.groups
    fsdp = par.zero >= 3 and g["dp"].n > 1
    neutral = job.with_(global_batch=0, gpus=None, parallel=replace(
        par, pp=1, dp=1, v=1, stages=None, schedule="1f1b", order=(), zero=3 if fsdp else 0,
        reshard_after_forward=par.reshard_after_forward if fsdp else True))
    return (neutral, g["tp"], g["cp"], g["ep"], g["dp"] if fsdp else None)
