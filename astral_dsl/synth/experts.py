"""Expert parallelism in a drill: the EP dispatch and combine all-to-alls of each MoE layer,
replayed where Seer's lowering puts them and for the time it prices them (the block templates'
operators on the `ep` stream: nothing is priced again here), synchronised as NCCL synchronises
an all-to-all (it ends for every member when the last has arrived and the exchange is done),
and slowed by the faults on the parts their traffic crosses.

An EP group is the rank map's (`ep` consecutive data-parallel ranks of one TP index: the
generator's (stage, dp, tp) grid cut into blocks of `ep` along dp). Its all-to-all exchanges
between every two members; a pair inside one NVLink domain (a host, an NVL72 rack: the rank
map's rule, rankmap.one_domain) runs on NVLink and crosses no NIC, so a group inside one rack
is slowed by no network fault, and a group that spans two racks by a fault on a NIC, cable or
switch that one of its cross-rack pairs' flows cross (the generator's routing, _Net.route)."""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

Step = Tuple[float, float, float]      # (share of the block's compute before it, exposed s,
#                                        hidden s: what `ep_overlap` hides behind computation)
OVERLAPPED = " (overlapped)"           # lower_comm._coll's name of the hidden share


def plan(template, speed: float = 1.0) -> Tuple[Step, ...]:
    """The block's all-to-alls in program order, from Seer's template of the block: each one's
    share of the block's compute that runs before it (the compute-stream operators that end by
    its start: the compute stream waits for it), the time it holds the compute stream (its
    operator's duration) and the share another micro-batch's computation hides (its
    `(overlapped)` side operator, with `ep_overlap`), all times `speed`."""
    total = template.compute
    compute = [(o.end, o.dur) for o in template.ops if o.stream == "compute"]
    hidden: Dict[str, float] = {}
    out: List[Step] = []
    for o in template.ops:
        if o.stream != "ep":
            continue
        if o.name.endswith(OVERLAPPED):
            hidden[o.name[:-len(OVERLAPPED)]] = o.dur
            continue
        tol = 1e-12 * max(1.0, o.start)
        before = sum(d for end, d in compute if end <= o.start + tol)
        out.append((before / total if total > 0 else 0.0, speed * o.dur,
                    speed * hidden.pop(o.name, 0.0)))
    return tuple(out)


def exposed(steps: Tuple[Step, ...]) -> float:
    """The time a block's all-to-alls hold its compute stream (the template's duration less its
    compute holds it with the rest of the block's exposed communication)."""
    return sum(e for _, e, _ in steps)


def pairs(net, ranks) -> List[Tuple[int, int]]:
    """The member pairs of an all-to-all over `ranks` whose exchange leaves their NVLink domain
    (one flow set per pair: the generator's routes are symmetric in their ends)."""
    ranks = [int(r) for r in ranks]
    return [(a, b) for i, a in enumerate(ranks) for b in ranks[i + 1:] if net.crosses((a, b))]


def factors(net, ranks: np.ndarray, ep: int):
    """(static slow-down, crosses the flapping link) of each EP group of a stage's (dp, tp)
    grid `ranks`, shaped (dp / ep, tp): the slowest flow of its pairs that leave their NVLink
    domain; 1 for a group whose exchange stays in one."""
    D, T = ranks.shape
    static = np.ones((D // ep, T))
    flap = np.zeros((D // ep, T), dtype=bool)
    for g in range(D // ep):
        for t in range(T):
            crossing = pairs(net, ranks[g * ep:(g + 1) * ep, t])
            if crossing:
                static[g, t], flap[g, t] = net._factor(crossing)
    return static, flap


def run(out, it, ranks, start, comp, steps, ep, factor, net, noise, rng, phase, op):
    """Replay a block's compute `comp` (per rank, (dp, tp)) from `start` with its all-to-alls
    `steps`; returns when each rank's compute ends. Each all-to-all begins when the last member
    of its EP group arrives and ends for all of them together: its priced time (exposed and
    hidden) times the group's slow-down and noise, less what computation hides (it holds the
    compute stream for the rest); a record per rank for the whole exchange: from its arrival
    less the hidden share (its kernel started that much earlier, beside another micro-batch's
    computation) to the end."""
    D, T = ranks.shape
    static, flap = factor
    clock, done = start, 0.0
    for share, shown, hidden in steps:
        arrive = clock + comp * (share - done)
        done = share
        begin = arrive.reshape(D // ep, ep, T).max(axis=1)
        f = static * net.flap_factor(flap, begin)
        whole = (shown + hidden) * f * np.exp(rng.normal(0, noise.comm, begin.shape))
        end = np.repeat(begin + np.maximum(whole - hidden, 0.0), ep, axis=0)
        out.add(ranks, it, phase, arrive - hidden, end - arrive + hidden, op=op)
        clock = end
    return clock + comp * (1.0 - done)


__all__ = ["exposed", "factors", "pairs", "plan", "run"]
