"""Expert parallelism in a drill: the EP dispatch and combine all-to-alls of each MoE layer,
replayed where Seer's lowering puts them and for the time it prices them (the block templates'
operators on the `ep` stream: nothing is priced again here), synchronised as NCCL synchronises
an all-to-all (it ends for every member when the last has arrived and the exchange is done),
and slowed by the faults on the parts their traffic crosses.

An EP group is the rank map's (Megatron-Core's expert numbering, analyses/rank_order.py: with
the default order `ep` consecutive ranks, TP folded in; `members` places each group of a stage
on the generator's (dp x cp, tp) grid of the stage). Its all-to-all exchanges between every
two members; a pair inside one NVLink domain (a host, an NVL72 rack: the rank
map's rule, rankmap.one_domain) runs on NVLink and crosses no NIC, so a group inside one rack
is slowed by no network fault, and a group that spans two racks by a fault on a NIC, cable or
switch that one of its cross-rack pairs' flows cross (the generator's routing, network.Net.route)."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from astral_dsl.synth.network import flap_mask

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
    ops = template.ops
    out: List[Step] = []
    for k, o in enumerate(ops):
        if o.stream != "ep" or o.name.endswith(OVERLAPPED):
            continue
        # its hidden share, if any, is the operator after it (lower_comm._coll)
        nxt = ops[k + 1] if k + 1 < len(ops) else None
        hidden = nxt.dur if nxt is not None and nxt.name == o.name + OVERLAPPED else 0.0
        tol = 1e-12 * max(1.0, o.start)
        before = sum(d for end, d in compute if end <= o.start + tol)
        out.append((before / total if total > 0 else 0.0, speed * o.dur, speed * hidden))
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


def members(groups, ranks: np.ndarray) -> np.ndarray:
    """The groups (the rank map's, tuples of ranks: EP groups, and CP and expert-data-parallel
    groups for the generator's _groups_on) whose members are in the stage's (dp x cp, tp) grid
    `ranks`, as positions in the grid flattened, shaped (groups, size); groups of another stage
    are left out (a group lies in one stage: None when one straddles this one)."""
    pos = {int(r): k for k, r in enumerate(ranks.ravel().tolist())}
    out = []
    for g in groups:
        here = [pos[r] for r in g if r in pos]
        if not here:
            continue
        if len(here) != len(g):
            return None
        out.append(here)
    return np.array(out, dtype=np.int64)


def factors(net, ranks: np.ndarray, members: np.ndarray):
    """(static slow-down, the flapping links it crosses: network.flap_mask) of each EP group of
    a stage's (dp x cp, tp) grid `ranks` (`members`: their positions in the grid flattened),
    one per group: the slowest flow of its pairs that leave their NVLink domain, or a member's
    degraded NVLink port (Net.nvlink_slow) where slower; 1 for a group whose exchange stays in
    one, its NVLink healthy."""
    flat = ranks.ravel()
    static = np.ones(len(members))
    flap = flap_mask(len(members))
    for g, at in enumerate(members):
        crossing = pairs(net, flat[at])
        if crossing:
            static[g], flap[g] = net._factor(crossing)
        if net.nvlink:
            static[g] = max(static[g], net.nvlink_slow(flat[at].tolist()))
    return static, flap


def exchange(out, it, ranks, arrive, step, members, factor, net, noise, rng, op):
    """One all-to-all of a block over each EP group (`members`: positions in the stage's grid
    `ranks` flattened), the ranks arriving at `arrive`; `step`: its (exposed, hidden) seconds.
    It begins when the last member of the group arrives and ends for all of them together: its
    priced time (exposed and hidden) times the group's slow-down and noise, less what
    computation hides (it holds the compute stream for the rest); a record per rank for the
    whole exchange: from its arrival less the hidden share (its kernel started that much
    earlier, beside another micro-batch's computation) to the end. Returns the ends."""
    shown, hidden = step
    static, flap = factor
    begin = arrive.ravel()[members].max(axis=1)
    f = static * net.flap_factor(flap, begin)
    whole = (shown + hidden) * f * np.exp(rng.normal(0, noise.comm, begin.shape))
    end = np.empty(ranks.size)
    end[members] = (begin + np.maximum(whole - hidden, 0.0))[:, None]
    end = end.reshape(ranks.shape)
    out.add(ranks, it, "ep_comm", arrive - hidden, end - arrive + hidden, op=op)
    return end


__all__ = ["exchange", "exposed", "factors", "members", "pairs", "plan"]
