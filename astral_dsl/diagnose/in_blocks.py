"""The collectives Seer prices inside the blocks, the TP ones, judged against the forecast where
too few groups of their stage run them to compare with each other (docs/diagnose.md, step 4).

Seer's template of a block holds each TP collective as an operator on its `tp` stream
(seer/template.py; `attn all-reduce`, `mlp all-reduce`, ...), and from its timeline how long
the block's compute waits for them (`waits`: each of the compute stream's gaps charged to the
operator it waited for). Not `Template.exposed["tp"]`, the breakdown's share: it divides the
compute's idle time among the communication streams by their busy time, which is what the
compute waits for the TP collectives only where they are the block's one stream. Beside a
context-parallel ring it is not: the backward of `ctx` in tests/test_synth_context.py (tp 8,
cp 2) waits 260.7 us for its ring steps and 40.1 us for its TP all-reduces (the shipped fit of
eb52f1f), which the share makes 98.0 and 202.9 us; the drill replays the waits
(synth/generator.py: its TP kernel is the block's rest), so its backward TP kernels ran 0.2x
the forecast, set the level of the faster half at that, and every forward one looked 5.4x
slow: both hosts named beside a slow GPU (under the fit before it, 1.8 us and 100x, or not
at all as `interfere`, a GEMM's share of slow-down beside an NVLink collective, moved the wait
to none). The data gives them at one of three grains, told apart by how many TP instances a
group has in an iteration:
- one: a rank log's per-iteration sum (compute-only timers, TP inside its host: one `tp_comm`
  row a rank and iteration), forecast as the sum over the stage's blocks of their exposed TP;
- one a block (a drill's trace: one TP kernel a block), forecast as each block's exposed TP,
  in the order the stage runs its blocks;
- one a collective (a profiler trace of a real run: an NCCL kernel for each), forecast as each
  `tp` operator's time, in the blocks' order.
Any other count (a log cut differently, collectives merged) has no forecast: W797 says so.

The level. Such an instance is not exactly what Seer prices: a sum holds the waits of the
blocks in which the member was not the last to arrive (on the 16-rank drill of tp 8, dp 2 about
1.1x the blocks' exposed TP), a kernel its whole time where Seer overlaps part of it (a
backward block's gradient all-reduces beside the weight-gradient GEMMs: 23.0 ms of collectives,
12.9 ms exposed, on Llama 3 8B at tp 8). So the forecast sets the shape (which collective
takes how long) and the data the level: the median ratio of the faster half of the instances
to the forecast. A fault only slows, and one fault of the network slows the collectives of one
NVLink domain or the links from it: where the instances' groups sit in two domains or more
the faster half holds healthy ones (with one group of two slowed, the faster half is the
healthy one) and the level is theirs. Where they all sit in one (one TP group a stage, the
job on one host) it cannot tell a fault from Seer's error, and is held within Seer's band
(verdict.band_of; step 6's rule: within the band Seer cannot tell its error from a slow-down):
the excess beyond the band is judged. With that host's NVLink at half rate every instance is
2x, the level stops at the band's high edge (1.25x for the default, outside-the-envelope band)
and the instances stay 1.53x slow."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from astral_dsl.analyses.rankmap import domain_of
from astral_dsl.diagnose.match import KIND_CODES
from astral_dsl.diagnose.row_groups import group_ids, occurrence

TP = KIND_CODES["tp"]


def forecast_tp(fc) -> Dict[Tuple[int, int], Tuple[float, ...]]:
    """(stage, TP instances a group has in an iteration) -> the forecast's seconds of each, in
    order: (1,) the iteration's sum of the blocks' waits for their TP collectives (`waits`);
    one a block; one a `tp` operator. A block whose compute never waits for its TP
    collectives (Seer hides them whole) is a zero: its instances are judged on the absolute
    floor alone (`judged`), the other blocks' against their waits; a grain of zeros only is
    left out."""
    out: Dict[Tuple[int, int], Tuple[float, ...]] = {}
    low = fc.lowering
    for s, run in enumerate(fc.runs):
        temps = [low.template(s, b.chunk, b.phase) for b in run.blocks]
        ops = tuple(float(o.dur) for t in temps for o in t.ops if o.stream == "tp")
        if not ops:
            continue
        blocks = tuple(waits(t, "tp") for t in temps)
        for grain in (ops, blocks, (sum(blocks),)):        # a count's first meaning kept
            if grain and max(grain) > 0:
                out.setdefault((s, len(grain)), grain)
    return out


def waits(template, stream: str) -> float:
    """Seconds the block's compute waits for the operators of `stream`: each gap of the compute
    stream (from the end of the compute before it to a compute operator's start) charged to the
    stream of the operator it waited for, the latest to end of its dependencies; the gap after
    the last compute operator (to the block's device end) to the operator that ends last. The
    timeline's own attribution, as Template.exposed charges a wait for an activation copy (its
    other waits it shares by busy time, for the breakdown); summed over the streams, the
    compute's idle time."""
    ops = template.ops
    total, last = 0.0, 0.0
    for o in sorted((o for o in ops if o.stream == "compute"), key=lambda o: o.start):
        gap = o.start - last
        if gap > 0 and o.deps and ops[max(o.deps, key=lambda d: ops[d].end)].stream == stream:
            total += gap
        last = max(last, o.end)
    tail = template.device - last
    if tail > 0 and ops and max(ops, key=lambda o: o.end).stream == stream:
        total += tail
    return total


def judged(inst, stage: np.ndarray, eff: np.ndarray, cand: np.ndarray,
           table: Dict[Tuple[int, int], Tuple[float, ...]], band: Tuple[float, float],
           domains: Optional[np.ndarray] = None, floor: float = 0.0
           ) -> Tuple[np.ndarray, np.ndarray]:
    """(expected seconds, NaN where none; whether judged) of the instances `cand` (usable TP
    instances with too few peers and no other forecast): the forecast of their grain times the
    level (the module's docstring), set by those forecast at `floor` seconds or more where any
    are; a block's forecast of none (Seer hides its TP collectives whole) is 0, judged.
    `domains`: per TP group, an id of the NVLink domains its members sit in (None: one domain,
    the level held within `band`)."""
    n = len(inst)
    expected = np.full(n, np.nan)
    if not table or not cand.any():
        return expected, np.zeros(n, dtype=bool)
    tp = inst.kind == TP
    ids, _ = group_ids(np.where(tp, inst.group, -1) + 1, inst.iteration)
    count = np.bincount(ids[tp], minlength=int(ids.max()) + 1)[ids]
    k = occurrence(ids, inst.seq)
    for i in np.flatnonzero(cand):
        grain = table.get((int(stage[i]), int(count[i])))
        if grain is not None:
            expected[i] = grain[int(k[i])]
    # a block Seer hides whole (its compute never waits for its TP collectives) forecasts no
    # wait: judged on the absolute floor alone (evidence.py: slow past NET_FLOOR_S), with no
    # ratio (localise.py weighs no instance of a forecast of none) and no part in the level
    hidden = cand & (expected == 0)
    ok = cand & np.isfinite(expected) & (expected > 0) & (eff > 0)
    # the level from the instances of a measurable forecast: at `floor` (evidence.NET_FLOOR_S,
    # under which no difference is called slow) and above, where any are; a wait of a few
    # microseconds is read to a trace's quarter microsecond and a clock's few (the drill's
    # 1.8 us backward TP of `ctx`: its ratios spread 10 %, the faster half set the level at
    # 0.94x and the forward's healthy 0.89 ms waits looked 1.12x, enough to name a host)
    use = ok & (expected >= floor) if (ok & (expected >= floor)).any() else ok
    if use.any():
        x = np.sort(np.log(eff[use] / expected[use]))
        level = float(np.median(x[:(x.size + 1) // 2]))
        if domains is None or np.unique(domains[inst.group[use]]).size < 2:
            level = float(np.clip(level, np.log(band[0]), np.log(band[1])))
        expected[ok] *= float(np.exp(level))
    expected[~ok & ~hidden] = np.nan
    return expected, ok | hidden


def tp_domains(rm) -> np.ndarray:
    """Per TP group of the rank map, an id of the NVLink domains its members sit in
    (rankmap.domain_of: an NVL72 rack's, else the host)."""
    ids: Dict[Tuple[str, ...], int] = {}
    return np.array([ids.setdefault(tuple(sorted({domain_of(rm.ranks[r]) for r in g.ranks})),
                                    len(ids)) for g in rm.groups["tp"]], dtype=np.int64)


__all__ = ["forecast_tp", "judged", "tp_domains", "waits"]
