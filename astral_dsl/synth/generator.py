"""Observed data of a job, made from Seer's own timeline: every rank replays its stage's blocks
(compute, TP collectives, the EP all-to-alls of MoE layers (experts.py), the steps of context
parallelism's ring attention (context.py), ZeRO-3's per-layer parameter all-gathers and
gradient reduce-scatters, the routed experts' over their expert-data-parallel groups
(sharded.py), pipeline sends and receives, data-parallel gradient reductions over DP x CP,
the optimizer step, the parameter all-gather; the reductions and the gather overlapped with
the compute where the job overlaps them, as Seer places them: overlap.py) with realistic
noise, per-host clock offsets and injected faults, synchronised the way NCCL synchronises
them: a collective ends for all its members when the last has arrived and the transfer is
done; a pipeline transfer ends on both sides together.

The network model is the generator's own (network.py): a transfer lasts its forecast time
divided by the slowest rate on any of its flows; a ring collective by the slowest rate on any
of its ring edges.

The schedule follows the forecast's block order (Seer's 1F1B / interleaved order), sends go out
as soon as a block ends (no batched exchange) and hold their sender until they arrive, or with
`pp_overlap` until the sender's previous send has arrived (Seer's rule: seer/schedule.py
`_run`, `async_sends`); the simulation runs
on numpy arrays over the data- and context-parallel ranks (a DP x CP group: Megatron-Core's
DATA_PARALLEL_GROUP_WITH_CP) and TP ranks of each stage."""
from __future__ import annotations

from collections import deque
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from astral_dsl import records
from astral_dsl.analyses.rankmap import RankMap
from astral_dsl.seer.schedule import async_sends
from astral_dsl.synth import context, experts, overlap, sharded
from astral_dsl.synth.faults import MAX_DRAWN_DRIFT, Fault, Noise
from astral_dsl.synth.network import MAX_FLAPS, Net

EPOCH = 1.7e9           # the hosts' clocks read Unix time (seconds)
PHASE_NAMES = ("forward", "backward", "tp_comm", "pp_comm", "dp_comm", "comm", "optimizer",
               "ep_comm", "cp_comm", "edp_comm")
PH = {p: i for i, p in enumerate(PHASE_NAMES)}
OPS = ("", "send", "recv", "collective", "all_reduce", "reduce_scatter", "all_gather")
OP = {o: i for i, o in enumerate(OPS)}


class SynthError(Exception):
    """`field`: the job's `parallel` field that the drill cannot replay (E798, with `hint`);
    None: the rank map and the job disagree (no fault of the design's)."""

    def __init__(self, message: str, field: Optional[str] = None, hint: str = ""):
        super().__init__(message)
        self.field, self.hint = field, hint


@records.frozen(eq=False)
class Synthetic:
    """Per-record columns over all ranks, in the order the generator emitted them (not in
    time order: an expert-data-parallel collective follows the dense one it goes with,
    write._folded); start times on each rank's own (offset) clock, in seconds."""
    job: str
    world: int
    iterations: Tuple[int, ...]
    rank: np.ndarray
    iteration: np.ndarray
    phase: np.ndarray           # index into PHASE_NAMES
    start: np.ndarray
    duration: np.ndarray
    peer: np.ndarray            # -1: none
    op: np.ndarray              # index into OPS
    faults: Tuple[Fault, ...]
    clock_offsets: np.ndarray   # per rank, seconds (at the run's start)
    groups: Dict[str, Tuple[Tuple[int, ...], ...]]   # kind -> groups (for the trace's PGs)
    device: str = ""
    forecast_iteration_s: float = 0.0
    block: Optional[np.ndarray] = None   # per record: 1 in a forward block (its compute and
    #                                      TP collectives), 2 in a backward block, 0 elsewhere
    clock_drifts: Optional[np.ndarray] = None   # per rank (1e-6: 1 ppm)
    tp_apart: bool = False      # a TP group leaves its NVLink domain: a log writes each TP
    #                             collective as a row of its own (write.log_rows)


class _Emit:
    def __init__(self):
        self.parts: List[Tuple] = []

    def add(self, ranks, it, phase, start, dur, peer=None, op=0, block=0):
        ranks = np.asarray(ranks)
        shape = ranks.shape
        n = ranks.size
        # copies: the simulation updates its arrays in place afterwards
        start = np.array(np.broadcast_to(np.asarray(start, dtype=float), shape)).ravel()
        dur = np.array(np.broadcast_to(np.asarray(dur, dtype=float), shape)).ravel()
        peer = np.full(n, -1) if peer is None else np.array(np.broadcast_to(peer, shape)).ravel()
        self.parts.append((ranks.ravel(), np.full(n, it), np.full(n, PH[phase], dtype=np.int8),
                           start, dur, peer, np.full(n, op, dtype=np.int8),
                           np.full(n, block, dtype=np.int8)))

    def arrays(self):
        cols = list(zip(*self.parts))
        return [np.concatenate(c) for c in cols]


def drift_refused(ppm: float) -> str:
    """Why a drill does not draw clocks drifting up to `ppm` (beyond MAX_DRAWN_DRIFT)."""
    most, tolerated = MAX_DRAWN_DRIFT * 1e6, 2 * MAX_DRAWN_DRIFT * 1e6
    return (f"a drift of {ppm:g} ppm: a drill draws each host's in +-{ppm:g} ppm, so two hosts "
            f"differ by up to {2 * ppm:g} ppm, and diagnose sets aside a clock beyond "
            f"{tolerated:g} ppm from its set's median drift (NTP's frequency tolerance) as a bad "
            f"one (E789); at most {most:g} ppm, so that a healthy drill reads healthy")


def generate(fc, rank_map: RankMap, faults: Sequence[Fault] = (), noise: Noise = Noise(),
             iterations: int = 3, seed: int = 0, first_iteration: int = 100) -> Synthetic:
    """Simulate `iterations` iterations of the forecast job `fc` on the ranks of `rank_map`."""
    par = fc.job.parallel
    rng = np.random.default_rng(seed)
    P, D, T, V, C = par.pp, par.dp, par.tp, par.v, max(1, par.cp)
    world = P * D * C * T
    if rank_map.world != world:
        raise SynthError(f"the rank map has {rank_map.world} ranks, the job {world}")
    if not 0 <= noise.drift <= MAX_DRAWN_DRIFT:
        raise SynthError(drift_refused(noise.drift * 1e6))
    # each stage's grid: the DP x CP group (Megatron-Core's DATA_PARALLEL_GROUP_WITH_CP, over
    # which the gradients are reduced and ZeRO-3 shards the dense weights) along axis 0, TP
    # along axis 1
    idx = np.zeros((P, D * C, T), dtype=np.int64)
    for info in rank_map.ranks:
        c = dict(info.coords)
        idx[c["pp"], c["dp"] * C + c["cp"], c["tp"]] = info.rank
    low = fc.lowering
    speed = 1.0 / max(f.severity for f in faults if f.kind == "fast") \
        if any(f.kind == "fast" for f in faults) else 1.0
    # each stage runs its blocks in the order of Seer's timeline
    orders = [[(b.phase, b.chunk, b.mb) for b in run.blocks] for run in fc.runs]
    # the EP all-to-alls of each block (none without experts across ranks), and the rest of
    # its exposed communication (the TP collectives) after its compute
    ep = max(1, par.ep)
    steps, base = {}, {}
    for key in [(s, ph, c) for s in range(P) for c in range(V) for ph in ("F", "B")]:
        t = low.template(key[0], key[2], key[1])
        a2a = experts.plan(t, speed) if ep > 1 else ()
        ring = context.plan(t, speed) if C > 1 else ()
        steps[key] = context.merged(a2a, ring)
        base[key] = (speed * t.compute, max(0.0, speed * (t.duration - t.compute)
                                            - experts.exposed(a2a)
                                            - context.exposed(ring, speed * t.compute)))
    hop = tuple(speed * h for h in low.p2p_hops())       # per boundary between stages
    buckets = [[speed * (e - s) for s, e, _ in run.dp] for run in fc.runs]
    gathers = [speed * (run.gather[1] - run.gather[0]) for run in fc.runs]
    # the reductions and the gather a job overlaps with its compute, where Seer places them
    ovl = overlap.plan(fc, speed)
    # the gradient buckets' collective: a sharded optimizer reduce-scatters them (Seer prices
    # it so: schedule.iteration_tail, low.dp_reduce), else they are all-reduced
    reduce_op = "reduce_scatter" if par.zero else "all_reduce"
    opt = [speed * low.optimizer_time(s) for s in range(P)]
    from astral_dsl.seer import comm

    sync = speed * comm.all_reduce(low.net, comm.layout(low.net, "world", max(2, world), 1), 8.0)
    if sum(f.kind == "link_flap" for f in faults) > MAX_FLAPS:
        raise SynthError(f"at most {MAX_FLAPS} flapping links in one drill")
    net = Net(rank_map, faults, seed)
    gpu_factor = np.clip(1 + rng.normal(0, noise.gpu_spread, world), 0.97, 1.03)
    for f in faults:
        if f.kind == "gpu" and f.rank is not None and not f.windows:
            gpu_factor[f.rank] *= 1 + f.severity
    net.gpu_windows = [f for f in faults if f.kind == "gpu" and f.rank is not None and f.windows]
    hosts = np.array([info.host_index for info in rank_map.ranks])
    host_offset = rng.uniform(-noise.clock, noise.clock, hosts.max() + 1)
    offsets = host_offset[hosts]
    drifts = rng.uniform(-noise.drift, noise.drift, hosts.max() + 1)[hosts] if noise.drift \
        else np.zeros(world)
    pair_factor = {}
    for s in range(P):
        for s2 in (s - 1, s + 1, 0, P - 1):
            if 0 <= s2 < P and s2 != s and (s, s2) not in pair_factor:
                pair_factor[(s, s2)] = net.pairs(idx[s], idx[s2])
    dp_factor = [net.rings(idx[s]) for s in range(P)]
    # a TP group that leaves its NVLink domain (an NVL72-like rack's tp 16 over two racks) is
    # slowed by the faults of its ring, as a DP group's is: per stage, (D, 1) of each group
    tp_factor = [tuple(a.T for a in net.rings(idx[s].T)) for s in range(P)]
    ep_groups = [g.ranks for g in rank_map.groups["ep"]]
    ep_members = [experts.members(ep_groups, idx[s]) if ep > 1 else None for s in range(P)]
    if ep > 1 and any(m is None for m in ep_members):
        raise _spans(fc, rank_map, "ep")
    ep_factor = [experts.factors(net, idx[s], ep_members[s]) if ep > 1 else None
                 for s in range(P)]
    cp_side = _groups_on(fc, rank_map, "cp", idx, net) if C > 1 else [None] * P
    # ZeRO-3 with experts: the routed experts' weights are gathered and their gradients
    # reduce-scattered over the expert-data-parallel groups
    edp = _groups_on(fc, rank_map, "edp", idx, net) if par.zero >= 3 and ep > 1 \
        else [None] * P
    zsteps = {key: sharded.plan(low, key[0], key[2], key[1], speed) if par.zero >= 3
              else () for key in steps}
    side = (steps, tuple(zip(ep_members, ep_factor)), cp_side, zsteps, dp_factor, tp_factor,
            edp)
    sends_async = async_sends(fc.job)
    out = _Emit()
    free = np.zeros((P, D * C, T))
    for k in range(iterations):
        it = first_iteration + k
        it_factor = 1 + rng.normal(0, noise.iteration)
        gates, dp_free = [{} for _ in range(P)], free.copy()
        for s in range(P):
            if ovl[s].gather:
                gates[s], dp_free[s] = overlap.gather(out, it, free[s], idx[s], ovl[s],
                                                      dp_factor[s], net, noise, rng, _ring)
        marks: Optional[Dict[Tuple[int, int], Tuple[np.ndarray, np.ndarray]]] = \
            {} if any(o.buckets for o in ovl) else None
        free = _pipeline(out, it, free, idx, orders, base, hop, gpu_factor, it_factor, noise,
                         rng, pair_factor, net, P, V, side, gates, marks, sends_async)
        for s in range(P):
            if ovl[s].buckets:
                free[s] = overlap.reduce(out, it, free[s], dp_free[s],
                                         {c: m for (i, c), m in marks.items() if i == s},
                                         ovl[s], idx[s], dp_factor[s], net, noise, rng, _ring,
                                         reduce_op)
                continue
            for b, dur in enumerate(buckets[s]):
                free[s] = _ring(out, it, free[s], idx[s], dur, dp_factor[s], net, noise, rng,
                                reduce_op)
        end = free.max() + sync
        out.add(idx.ravel(), it, "comm", free.ravel(), end - free.ravel(), op=OP["collective"])
        free[:] = end
        for s in range(P):
            t_opt = opt[s] * gpu_factor[idx[s]] * it_factor * (1 + rng.normal(0, noise.kernel,
                                                                                (D * C, T)))
            out.add(idx[s], it, "optimizer", free[s], t_opt)
            free[s] = free[s] + t_opt
            if gathers[s] > 0 and not ovl[s].gather:
                free[s] = _ring(out, it, free[s], idx[s], gathers[s], dp_factor[s], net, noise,
                                rng, "all_gather")
    rank, iteration, phase, start, dur, peer, op, block = out.arrays()
    # each host reads the true moment t (from the run's start) as t + offset + drift t
    start = start + EPOCH + offsets[rank] + drifts[rank] * start
    dur = dur * (1 + drifts[rank])
    groups = {kind: tuple(g.ranks for g in gs) for kind, gs in rank_map.groups.items()
              if kind in ("tp", "dp", "pp") or (kind == "ep" and ep > 1)
              or (kind in ("cp", "dpcp") and C > 1) or (kind == "edp" and edp[0] is not None)}
    tp_apart = T > 1 and any(net.crosses(idx[s, d].tolist()) for s in range(P)
                             for d in range(D * C))       # where tp_factor may slow them
    return Synthetic(fc.job.name, world, tuple(first_iteration + k for k in range(iterations)),
                     rank, iteration, phase, start, dur, peer, op, tuple(faults), offsets,
                     groups, fc.gpu, fc.iteration_time, block, drifts, tp_apart)


def _groups_on(fc, rank_map, kind: str, idx, net):
    """Per stage: the rank map's groups of `kind` as positions in the stage's grid and each
    one's ring slow-down ((members, factor): context.ring_factors)."""
    groups = [g.ranks for g in rank_map.groups[kind]]
    out = []
    for s in range(idx.shape[0]):
        at = experts.members(groups, idx[s])
        if at is None:
            raise _spans(fc, rank_map, kind)
        out.append((at, context.ring_factors(net, idx[s], at)))
    return out


def _spans(fc, rank_map, kind: str) -> SynthError:
    """E798: a group of `kind` (ep, or the experts' edp: the expert numbering's) holds ranks of
    two pipeline stages, which the drill's stage-by-stage replay cannot run."""
    order = "-".join(rank_map.order)
    return SynthError(f"job `{fc.job.name}`: order `{order}`: an {kind.upper()} group holds "
                      f"ranks of more than one pipeline stage: the drill generator replays "
                      f"each stage's groups within the stage", "order",
                      "put pp last in the order, as Megatron-Core's default tp-cp-ep-dp-pp does "
                      "(the same groups within each stage), or diagnose a real run's data")


def _dest(i, ph, c, j, p, v):
    if p == 1:
        return None
    if ph == "F":
        return (i + 1, "F", c, j) if i < p - 1 else ((0, "F", c + 1, j) if c < v - 1 else None)
    return (i - 1, "B", c, j) if i > 0 else ((p - 1, "B", c - 1, j) if c > 0 else None)


def _pipeline(out, it, free0, idx, orders, base, hop, gpu_factor, it_factor, noise, rng,
              pair_factor, net, P, V, side, gates, marks, sends_async=False):
    """Run the iteration's blocks; `gates`: per stage, block position -> (earliest start per
    rank, earliest end) of a chunk's first forward waiting for its overlapped weights
    (overlap.gather); fills `marks` (unless None): (stage, chunk) -> (start, end) of its last
    backward, per rank (overlap.reduce reads it); `sends_async` (seer/schedule.py
    `async_sends`): a send holds its sender until the previous send has arrived, not itself."""
    free = free0.copy()
    pp_free = free0.copy()
    ready: Dict[Tuple, Tuple[np.ndarray, np.ndarray, int]] = {}
    fdone: Dict[Tuple[int, int], np.ndarray] = {}
    ptr = [0] * P
    queue, waiting = deque(range(P)), {}
    D, T = idx.shape[1], idx.shape[2]
    while queue:
        i = queue.popleft()
        seq = orders[i]
        while ptr[i] < len(seq):
            ph, c, j = seq[ptr[i]]
            got = None
            if ph == "F" and i == 0 and c == 0:
                arrive = None
            elif ph == "B" and i == P - 1 and c == V - 1:
                arrive = fdone[(c, j)]
            else:
                got = ready.get((i, ph, c, j))
                if got is None:
                    waiting[(i, ph, c, j)] = i
                    break
                arrive = got[0]
            start = free[i] if arrive is None else np.maximum(free[i], arrive)
            gate = gates[i].get(ptr[i])
            if gate is not None:       # its weights' overlapped all-gather
                start = np.maximum(start, gate[0])
            if got is not None:
                arrive_t, send_start, src = got
                out.add(idx[i], it, "pp_comm", np.minimum(free[i], send_start),
                        arrive_t - np.minimum(free[i], send_start), idx[src], OP["recv"])
            comp_base, tp_base = base[(i, ph, c)]
            comp = comp_base * gpu_factor[idx[i]] * it_factor * \
                (1 + rng.normal(0, noise.kernel, (D, T))) * net.gpu_slow(idx[i], start)
            tag, phase = (1, "forward") if ph == "F" else (2, "backward")
            steps, ep_side, cp_side, zsteps, dp_factor, tp_factor, edp = side
            if steps[(i, ph, c)]:        # the compute in stretches between its exchanges
                done = context.run(out, it, idx[i], start, comp, steps[(i, ph, c)],
                                   ep_side[i], cp_side[i], net, noise, rng, OP["collective"],
                                   phase, tag)
            else:
                done = start + comp
                out.add(idx[i], it, phase, start, comp, block=tag)
            ready_tp = done.max(axis=1, keepdims=True)
            tp_static, tp_flap = tp_factor[i]
            tp = tp_base * tp_static * net.flap_factor(tp_flap, ready_tp) * \
                np.exp(rng.normal(0, noise.comm, (D, 1)))
            end = ready_tp + tp
            if zsteps[(i, ph, c)]:
                sharded.run(out, it, idx[i], start, np.broadcast_to(end, (D, T)),
                            zsteps[(i, ph, c)], _ring, dp_factor[i], edp[i], net, noise,
                            rng, OP)
            if T > 1:
                out.add(idx[i], it, "tp_comm", done, end - done, op=OP["collective"], block=tag)
            if gate is not None:       # its last layer's weights came late
                end = np.maximum(end, gate[1])
            free[i] = np.broadcast_to(end, (D, T))
            if ph == "B" and marks is not None:      # the last one of its chunk stays
                marks[(i, c)] = (np.array(start, dtype=float), free[i].copy())
            if ph == "F" and i == P - 1:
                fdone[(c, j)] = free[i].copy()
            dest = _dest(i, ph, c, j, P, V)
            ptr[i] += 1
            if dest is None:
                continue
            s2 = dest[0]
            send_start = np.maximum(free[i], pp_free[i])
            static, flap = pair_factor[(i, s2)]
            factor = static * net.flap_factor(flap, send_start)
            # the boundary it crosses (seer/schedule.key_hops; P - 1: the wrap-around)
            b = min(i, s2) if abs(i - s2) == 1 else P - 1
            dur = hop[b] * factor * np.exp(rng.normal(0, noise.comm, (D, T)))
            arrive = send_start + dur
            # the sender is held until this send arrives, or asynchronous until the previous
            held = pp_free[i].copy() if sends_async else arrive
            pp_free[i] = arrive
            out.add(idx[i], it, "pp_comm", send_start, dur, idx[s2], OP["send"])
            free[i] = np.maximum(free[i], held)
            ready[dest] = (arrive, send_start, i)
            if dest in waiting:
                queue.append(waiting.pop(dest))
    if any(ptr[i] < len(orders[i]) for i in range(P)):
        raise SynthError("the pipeline schedule deadlocked")
    return free


def _ring(out, it, free, ranks, dur, factor, net, noise, rng, op):
    """A collective `op` (OPS: all_reduce, reduce_scatter, all_gather) over each data-parallel
    group of a stage (axis 0 of `ranks`)."""
    static, flap = factor
    begin = free.max(axis=0, keepdims=True)
    f = static * net.flap_factor(flap, begin)
    end = begin + dur * f * np.exp(rng.normal(0, noise.comm, begin.shape))
    out.add(ranks, it, "dp_comm", free, np.broadcast_to(end, free.shape) - free, op=OP[op])
    return np.broadcast_to(end, free.shape).copy()


__all__ = ["OPS", "PHASE_NAMES", "SynthError", "Synthetic", "generate"]
