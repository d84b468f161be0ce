"""ZeRO-3 / FSDP in a drill: each block's parameter all-gathers and gradient reduce-scatters
(Seer's operators on the DP stream, seer/lower.py: a layer's weights gathered before its
forward and, resharded, again before its backward; its gradients reduce-scattered after it),
replayed where Seer's template of the block puts them and for the time it prices them, over
each data-parallel group of the stage (with context parallelism the DP x CP group,
Megatron-Core's DATA_PARALLEL_GROUP_WITH_CP: the generator's gradient rings, `_ring`, slowed by
the faults on the ring's edges). With routed experts Seer prices each as two collectives one
after the other (seer/params.weights_coll): the dense weights' over DP x CP, then the experts'
over the expert-data-parallel group (Megatron-Core's EXPERT_DATA_PARALLEL_GROUP, torchtitan's
`dp_shard_mod_ep` mesh); the drill runs the two apart, each over its own groups, the experts'
on each rank when its dense one has ended (their records' phase `edp_comm`: write.py writes
them as that group's kernels, or a log's row of the two together).

They run beside the computation on their own stream: a member arrives at the operator's offset
in the block (scaled to the rank's block, its noise and slowdowns included), the collective
begins when the last member has arrived and ends for all together. What the template's block
waits for them is in its exposed time already (the generator's rest of the block); a fault that
slows them lengthens their records, not the blocks (an approximation: in a run the compute
waits for a late gather, so such a drill's iteration is not slowed by it)."""
from __future__ import annotations

from typing import Tuple

from astral_dsl.seer.lower_comm import sharded_parts
from astral_dsl.synth import context

Step = Tuple[float, float, float, str]   # (offset in the block as a share of it, the dense
#                                          weights' seconds, the experts' seconds, collective)


def plan(low, stage: int, chunk: int, phase: str, speed: float = 1.0) -> Tuple[Step, ...]:
    """The block's ZeRO-3 collectives in the order they start: each one's offset as a share of
    the block's duration, its priced time (times `speed`) split into the dense weights' and the
    routed experts' collectives (Seer's dp_parts of the layer's weights) and its collective
    (OPS)."""
    total = low.template(stage, chunk, phase).duration
    return tuple((min(1.0, o.start / total) if total > 0 else 0.0, speed * dense, speed * expert,
                  op) for o, op, dense, expert in sharded_parts(low, stage, chunk, phase))


def run(out, it, ranks, start, end, steps, ring, factor, edp, net, noise, rng, codes) -> None:
    """Replay a block's ZeRO-3 collectives `steps` on the stage's (dp x cp, tp) grid `ranks`,
    the block running from `start` to `end` on each rank; `ring`: the generator's DP collective,
    `edp`: the expert-data-parallel groups of the stage ((members, factor): the generator's
    _groups_on), None without expert parallelism (the experts' weights are then every DP
    rank's: one collective, the whole priced time); `codes`: the generator's OP."""
    for share, dense, expert, op in steps:
        apart = edp is not None and expert > 0
        done = ring(out, it, start + (end - start) * share, ranks,
                    dense if apart else dense + expert, factor, net, noise, rng, op)
        if apart:           # emitted right after its dense one (write._folded pairs them so)
            members, groups = edp
            context.collective(out, it, ranks, done, members, expert, groups, net, noise, rng,
                               "edp_comm", codes[op])


__all__ = ["plan", "run"]
