"""ZeRO-3 / FSDP in a drill: each block's parameter all-gathers and gradient reduce-scatters
(Seer's operators on the DP stream, seer/lower.py: a layer's weights gathered before its
forward and, resharded, again before its backward; its gradients reduce-scattered after it),
replayed where Seer's template of the block puts them and for the time it prices them, over
each data-parallel group of the stage (as the generator's gradient rings: `_ring`, slowed by
the faults on the ring's edges).

They run beside the computation on their own stream: a member arrives at the operator's offset
in the block (scaled to the rank's block, its noise and slowdowns included), the collective
begins when the last member has arrived and ends for all together. What the template's block
waits for them is in its exposed time already (the generator's rest of the block); a fault that
slows them lengthens their records, not the blocks (an approximation: in a run the compute
waits for a late gather, so such a drill's iteration is not slowed by it)."""
from __future__ import annotations

from typing import Tuple

from astral_dsl.seer.lower_comm import SHARDED_COLLECTIVES

Step = Tuple[float, float, str]    # (offset in the block as a share of it, seconds, collective)


def plan(template, speed: float = 1.0) -> Tuple[Step, ...]:
    """The block's ZeRO-3 collectives in the order they start: each one's offset as a share of
    the block's duration, its priced time (times `speed`) and its collective (OPS)."""
    total = template.duration
    ops = sorted((o for o in template.ops if o.stream == "dp" and o.name in SHARDED_COLLECTIVES),
                 key=lambda o: (o.start, o.layer))
    return tuple((min(1.0, o.start / total) if total > 0 else 0.0, speed * o.dur,
                  SHARDED_COLLECTIVES[o.name]) for o in ops)


def run(out, it, ranks, start, end, steps, ring, factor, net, noise, rng) -> None:
    """Replay a block's ZeRO-3 collectives `steps` on the stage's (dp, tp) grid `ranks`, the
    block running from `start` to `end` on each rank; `ring`: the generator's DP collective."""
    for share, dur, op in steps:
        ring(out, it, start + (end - start) * share, ranks, dur, factor, net, noise, rng, op)


__all__ = ["plan", "run"]
