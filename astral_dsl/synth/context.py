"""Context parallelism in a drill, and the replay of a block's in-line exchanges.

Transformer Engine's ring attention (its p2p ring, AttnFuncWithCPAndKVP2P: "overlap
current-step compute with next-step communication"): each attention layer runs `cp` steps, and
before each of the first cp - 1 every rank sends its key/value block to the next rank of its CP
group (the backward: the key/value blocks and their gradients) while its attention kernel runs
on the block it holds; the next step's kernel waits for the block. Seer prices it so
(seer/lower_ring.py `_cp_attention`: a side operator on the `cp` stream per step, joined by
the next step's kernel; torchtitan's all-gather: one operator beside the first step), and the
drill replays those operators where Seer's template puts them and for the time it prices them:
nothing is priced again here.

A step's exchange is synchronised over the CP group (every member sends and receives: a step
ends for all of them when the last has arrived and the blocks have travelled), slowed by the
faults on its ring's edges (consecutive members, the last to the first) that leave their NVLink
domain; a rank's record runs from its arrival to the exchange's end. The compute goes on beside
it: the next step starts when both the kernel and the exchange are done.

`run` replays a block's compute with its EP all-to-alls (experts.py) and its CP ring steps in
program order; `collective` is one exchange over groups of a stage's grid, as the expert-data-
parallel collectives of ZeRO-3 with experts (sharded.py) are."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from astral_dsl.synth import experts
from astral_dsl.synth.network import flap_mask

Step = Tuple[float, float, float]      # (share of the block's compute before it, seconds,
#                                        share of the compute that runs beside it)


def plan(template, speed: float = 1.0) -> Tuple[Step, ...]:
    """The block's CP ring steps (its operators on the `cp` stream) in program order: each one's
    share of the block's compute that runs before it, its priced time (times `speed`) and the
    share of the compute beside it (the compute operators from its start to the start of the
    one that waits for it)."""
    ops, total = template.ops, template.compute
    if total <= 0:
        return ()
    out: List[Step] = []
    for k, o in enumerate(ops):
        if o.stream != "cp":
            continue
        tol = 1e-12 * max(1.0, o.start)
        waiter = next((w for w in ops[k + 1:] if k in w.deps), None)
        until = waiter.start if waiter is not None else template.device
        before = sum(c.dur for c in ops if c.stream == "compute" and c.end <= o.start + tol)
        beside = sum(c.dur for c in ops if c.stream == "compute" and c.start >= o.start - tol
                     and c.end <= until + tol)
        out.append((before / total, speed * o.dur, beside / total))
    return tuple(out)


def exposed(steps: Tuple[Step, ...], compute: float) -> float:
    """The time the block's compute (`compute` seconds, times the plan's speed) waits for its
    ring steps: each step's time less the compute beside it."""
    return sum(max(0.0, dur - compute * beside) for _, dur, beside in steps)


def ring_factors(net, ranks: np.ndarray, members: np.ndarray):
    """(static slow-down, the flapping links it crosses: network.flap_mask) of each group of a
    stage's grid `ranks` (`members`: their positions in the grid flattened), a ring over its
    members in order: the slowest flow of its edges, or a member's degraded NVLink port
    (Net.nvlink_slow) where slower; 1 for a group inside one NVLink domain, its NVLink
    healthy."""
    flat = ranks.ravel()
    static = np.ones(len(members))
    flap = flap_mask(len(members))
    for g, at in enumerate(members):
        ring = [int(r) for r in flat[at]]
        if len(ring) > 1 and net.crosses(ring):
            static[g], flap[g] = net._factor(list(zip(ring, ring[1:] + ring[:1])))
        if net.nvlink:
            static[g] = max(static[g], net.nvlink_slow(ring))
    return static, flap


def collective(out, it, ranks, arrive, members, dur, factor, net, noise, rng, phase, op):
    """One exchange of `dur` seconds over each group (`members`: positions in `ranks`
    flattened) of a stage's grid: it begins when the last member arrives (`arrive`, per rank)
    and ends for all of them together, its time times the group's slow-down and noise; a record
    per rank from its arrival to the end. Returns the ends, per rank."""
    static, flap = factor
    arrive = np.broadcast_to(arrive, ranks.shape)
    begin = arrive.ravel()[members].max(axis=1)
    f = static * net.flap_factor(flap, begin)
    end = np.empty(ranks.size)
    end[members] = (begin + dur * f * np.exp(rng.normal(0, noise.comm, begin.shape)))[:, None]
    end = end.reshape(ranks.shape)
    out.add(ranks, it, phase, arrive, end - arrive, op=op)
    return end


def run(out, it, ranks, start, comp, steps, ep, cp, net, noise, rng, op, phase, block):
    """Replay a block's compute `comp` (per rank) from `start` with its exchanges in program
    order: `steps` ((share, "ep", (exposed, hidden)) and (share, "cp", (seconds, beside))),
    `ep` and `cp` each (members, factor) of the stage's groups; returns when each rank's compute
    ends. The compute is recorded (`phase`, `block`) as the stretches it runs in, as a profiler
    shows its kernels: up to an all-to-all, which the compute stream waits for, and on from its
    end; through a ring step's exchange for the compute beside it, on from when both are done.
    One record from the block's start to its compute's sum had run over the exchanges and left
    the wait for the slowest member as a gap after it: a trace showed every peer of a slow GPU
    idle for as long as it waited, and its host as slow as the GPU."""
    clock, done = start, 0.0
    for share, kind, (a, b) in steps:
        arrive = np.broadcast_to(clock + comp * (share - done), ranks.shape)
        _stretch(out, it, ranks, clock, comp, share - done + (b if kind == "cp" else 0.0),
                 phase, block)
        done = share
        if kind == "ep":
            clock = experts.exchange(out, it, ranks, arrive, (a, b), *ep, net, noise, rng, op)
            continue
        members, factor = cp
        end = collective(out, it, ranks, arrive, members, a, factor, net, noise, rng,
                         "cp_comm", op)
        clock = np.maximum(arrive + comp * b, end)
        done = share + b
    _stretch(out, it, ranks, clock, comp, 1.0 - done, phase, block)
    return clock + comp * (1.0 - done)


def _stretch(out, it, ranks, start, comp, share, phase, block):
    """A stretch of a block's compute: `share` of `comp` (per rank) from `start`; none when
    the share is none (two exchanges back to back)."""
    if share > 1e-12:
        out.add(ranks, it, phase, np.broadcast_to(start, ranks.shape), comp * share,
                block=block)


def merged(ep_steps, cp_steps) -> tuple:
    """The block's EP and CP steps as `run` takes them, in program order."""
    out = [(s, "ep", (e, h)) for s, e, h in ep_steps] + \
        [(s, "cp", (d, b)) for s, d, b in cp_steps]
    return tuple(sorted(out, key=lambda x: x[0]))


__all__ = ["collective", "exposed", "merged", "plan", "ring_factors", "run"]
