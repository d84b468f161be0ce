"""The schedule's iteration time alone, walked fast (forecast.iteration: what the calibration
forecasts thousands of times).

schedule._run times every block and records what the breakdown and the timeline read (each
block's start and end, the sends, the time each block is held by its send); the iteration time
needs only when each stage's compute stream ends and when the last backward of each chunk
starts and ends (schedule.iteration_tail: the gradient reduction). Which of _run's branches a block
takes does not depend on any duration: whether its output stays on its stage, is held for the
next batched exchange, or is sent (with the one held before it, if any) follows from the plan
alone. A _Program fixes those branches once per plan, so that a walk does per block only the
arithmetic _run does, the same operations on the same operands in the same order: the same
times, to the bit (tests/test_seer_speed.py).

A block's output goes to `arrive` (the keys of schedule_plan._Plan) as in _run; what _run keeps only
for the breakdown is not kept. The blocks a walk must look at more closely (a chunk's first
forward, which may wait for its weights; a chunk's last backward, whose times are kept) end the
program's segments."""
from __future__ import annotations

from operator import itemgetter
from typing import Dict, List, Tuple

from astral_dsl.kept import Kept
from astral_dsl.seer.param_gather import gather_gates
from astral_dsl.seer.schedule import (CACHE_BLOCKS, HELD, LOCAL, async_sends, iteration_tail,
                                      key_hops, plan_of, simulate)


class _Stage:
    """What schedule.iteration_tail and param_gather.gather_gates read of a stage's run, and write."""
    __slots__ = ("codes", "v", "m", "gather", "dp", "finish", "optimizer", "backward_end",
                 "last")

    def __init__(self, codes, v: int, m: int):
        self.codes, self.v, self.m = codes, v, m
        self.gather = (0.0, 0.0)
        # (start, end, (dense, expert) parameters) of each gradient-reduction bucket
        self.dp: List[Tuple[float, float, Tuple[float, float]]] = []
        self.finish = self.backward_end = 0.0
        self.optimizer = (0.0, 0.0)
        self.last: Dict[int, Tuple[float, float]] = {}

    def last_backwards(self) -> Dict[int, Tuple[float, float]]:
        return self.last


class _Program:
    """schedule._run's walk as blocks of one form: on stage i, start when the input (key `want`)
    has arrived and the stage is free, run for the duration in slot `slot` of the durations,
    then add the hop in slot `hops` of (0.0, one transfer over each boundary between stages):
    the time the output (key `out`) arrives and the stage is free again. A block whose output
    stays on its stage adds no hop (slot 0); one that sends adds the hop of the boundary it
    sends over (the send is synchronous: slot `into[out]`); one that sends the output held from
    the block before it (to `out`) and then its own (to `out2`, None for the others) adds a
    second hop for its own (slot `into[out2]`). What _run compares and then discards (a stage's
    PP stream is free again before its compute stream is, and a send starts when its block ends)
    comes out so whenever no duration is negative: iteration_time checks that. The blocks run in
    segments between the watched ones (a chunk's first forward: it may wait for its weights; a
    chunk's last backward: its times are kept)."""
    __slots__ = ("codes", "base", "segments", "slots", "hops", "into", "keys", "blocks")

    def __init__(self, plan, steps, p: int, v: int, m: int):
        self.codes, self.base = plan.codes, plan.base
        n_keys = 2 * p * v * m
        spare = n_keys + 1           # a write no block reads (arrive[n_keys]: no input, 0.0)
        watched = _watched_blocks(plan, v, m)
        # per key, the slot of the hop its input arrives by (schedule.key_hops)
        into = self.into = [0] * (n_keys + 2)
        for k, hop in enumerate(key_hops(range(1, p + 1), p, v * m)[:-1]):
            into[k] = hop
        held = [-1] * p
        stage, want, out, out2, slot, hops, marks = [], [], [], [], [], [], []

        def step(i, src, o, s, h, mark, o2=None):
            stage.append(i)
            want.append(src)
            out.append(o)
            out2.append(o2)
            slot.append(s)
            hops.append(h)
            marks.append(mark)

        for g, i, src, d, does, s in zip(steps.blocks, steps.stage, steps.src, steps.dst,
                                         steps.does, steps.slot):
            src = n_keys if src < 0 else src
            mark = watched.get(g)
            if does == LOCAL:
                step(i, src, d, s, 0, mark)
                continue
            if does == HELD:
                held[i] = d
                step(i, src, spare, s, 0, mark)
                continue
            h, held[i] = held[i], -1
            if h >= 0 and d >= 0:            # the held output's send, then its own
                step(i, src, h, s, into[h], mark, d)
            elif h >= 0 or d >= 0:
                step(i, src, h if h >= 0 else d, s, into[h if h >= 0 else d], mark)
            else:
                step(i, src, spare, s, 0, mark)
        n = self.blocks = len(stage)
        self.segments = []           # (first block, end, its columns, the watched one or None)
        lo = 0
        for k, mark in enumerate(marks + [()]):
            if mark is None:
                continue
            cols = (stage[lo:k], want[lo:k], out[lo:k], out2[lo:k])
            last = (stage[k], want[k], out[k], out2[k], mark) if k < n else None
            self.segments.append((lo, k, tuple(map(tuple, cols)), last))
            lo = k + 1
        self.slots = _getter(slot)
        self.hops = _getter(hops)
        self.keys = n_keys + 2


def _getter(index: List[int]):
    """t -> tuple(t[k] for k in index), at C speed."""
    if len(index) == 1:
        return lambda t: (t[index[0]],)
    return itemgetter(*index) if index else (lambda t: ())


def _watched_blocks(plan, v: int, m: int) -> Dict[int, Tuple]:
    """g -> (g, stage, chunk, is the chunk's last backward) of each chunk's first forward and
    last backward on each stage."""
    vm = v * m
    out = {}
    for i, (seq, b) in enumerate(zip(plan.codes, plan.base)):
        seen = set()
        for k, x in enumerate(seq):
            if x < vm and x // m not in seen:
                seen.add(x // m)
                out[b + k] = (b + k, i, x // m, False)
        seen = set()
        for k in range(len(seq) - 1, -1, -1):
            c = (seq[k] - vm) // m
            if seq[k] >= vm and c not in seen:
                seen.add(c)
                out[b + k] = (b + k, i, c, True)
    return out


_PROGRAMS = Kept(CACHE_BLOCKS, weigh=lambda prog: prog.blocks)


def _program(p: int, v: int, m: int, schedule: str, overlap: bool = False) -> _Program:
    """The program of schedule.simulate's plan (the batched exchanges, or failing that or with
    `overlap` each send on its own), the most recent ones kept up to CACHE_BLOCKS blocks in all
    (as schedule keeps plans)."""
    key = (p, v, m, schedule, overlap)
    prog = _PROGRAMS.get(key)
    if prog is None:
        plan, steps = plan_of(p, v, m, schedule, overlap)
        prog = _PROGRAMS.put(key, _Program(plan, steps, p, v, m))
    return prog


def iteration_time(low, m: int) -> float:
    """schedule.simulate(low, m)[1], walked by a _Program."""
    par = low.job.parallel
    p, v = par.pp, par.v
    hops = low.p2p_hops() if p > 1 else (0.0,)
    table = [low.template(i, c, ph).duration for i in range(p) for ph in ("F", "B")
             for c in range(v)]
    if not (all(h >= 0.0 for h in hops) and all(t >= 0.0 for t in table)):  # the premise
        return simulate(low, m)[1]
    overlap = async_sends(low.job)
    prog = _program(p, v, m, low.job.schedule_key, overlap)
    stages = [_Stage(seq, v, m) for seq in prog.codes]
    gates = {}
    for i, st in enumerate(stages):
        gates.update({prog.base[i] + k: gate for k, gate in gather_gates(low, i, st).items()})
    hv = (0.0,) + tuple(hops)
    durs, adds = prog.slots(table), prog.hops(hv)
    if overlap:
        return _overlapped(low, prog, stages, gates, durs, adds)
    into = prog.into
    arrive = [0.0] * prog.keys
    free = [0.0] * p
    for lo, hi, (stage, want, out, out2), last in prog.segments:
        for i, w, o, o2, dur, add in zip(stage, want, out, out2, durs[lo:hi], adds[lo:hi]):
            start = arrive[w]
            f = free[i]
            if start < f:
                start = f
            if o2 is None:
                arrive[o] = free[i] = start + dur + add
            else:                       # the held output's send, then its own
                arrive[o] = a = start + dur + add
                arrive[o2] = free[i] = a + hv[into[o2]]
        if last is None:
            break
        i, o, o2, end = _watched(last, arrive, free, durs[hi], gates, stages)
        arrive[o] = a = end + adds[hi]
        if o2 is not None:
            a += hv[into[o2]]
            arrive[o2] = a
        free[i] = a
    for i, st in enumerate(stages):
        st.backward_end = free[i]
    return iteration_tail(low, stages)


def _overlapped(low, prog: _Program, stages, gates, durs, adds) -> float:
    """iteration_time with asynchronous sends (schedule._run's `overlap`): each send starts
    when its block ends and the PP stream is free, and the stage goes on once its previous
    send has arrived. Every send goes out on its own (no held outputs: `out2` is None)."""
    arrive = [0.0] * prog.keys
    p = len(stages)
    free, pp_free = [0.0] * p, [0.0] * p
    for lo, hi, (stage, want, out, _), last in prog.segments:
        for i, w, o, dur, add in zip(stage, want, out, durs[lo:hi], adds[lo:hi]):
            start = arrive[w]
            f = free[i]
            if start < f:
                start = f
            end = start + dur
            if add:                     # a send: after the previous one, on the PP stream
                t = pp_free[i]
                s = end if end > t else t
                arrive[o] = pp_free[i] = s + add
                free[i] = t if t > end else end
            else:
                arrive[o] = free[i] = end
        if last is None:
            break
        i, o, _, end = _watched(last, arrive, free, durs[hi], gates, stages)
        add = adds[hi]
        if add:                         # its send, as the loop's above (inlined there: per block)
            t = pp_free[i]
            arrive[o] = pp_free[i] = (end if end > t else t) + add
            free[i] = t if t > end else end
        else:
            arrive[o] = free[i] = end
    for i, st in enumerate(stages):
        st.backward_end = free[i]
    return iteration_tail(low, stages)


def _watched(last, arrive, free, dur: float, gates, stages):
    """The watched block that ends a segment (a chunk's first forward: it may wait for its
    weights; a chunk's last backward: its times are kept): its stage, its output keys, its end."""
    i, w, o, o2, (g, i_, c, backward) = last
    start = arrive[w]
    f = free[i]
    if start < f:
        start = f
    start, end = _gated(start, start + dur, gates.get(g))
    if backward:
        stages[i_].last[c] = (start, end)
    return i, o, o2, end


def _gated(start: float, end: float, gate) -> Tuple[float, float]:
    """A chunk's first forward waits for its weights' gather (schedule._run)."""
    if gate is None:
        return start, end
    first, last, tail = gate
    wait_dp = first - start if first > start else 0.0
    start, end = start + wait_dp, end + wait_dp
    stretch = last + tail - end if last + tail > end else 0.0
    return start, end + stretch
