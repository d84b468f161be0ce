"""The collectives Seer prices inside the blocks, the TP ones, judged against the forecast where
too few groups of their stage run them to compare with each other (docs/diagnose.md, step 4).

Seer's template of a block holds each TP collective as an operator on its `tp` stream
(seer/template.py; `attn all-reduce`, `mlp all-reduce`, ...), and how long the block's compute
waits for them (`Template.exposed["tp"]`). The data gives them at one of three grains, told
apart by how many TP instances a group has in an iteration:
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
    order: (1,) the iteration's sum of the blocks' exposed TP; one a block; one a `tp`
    operator. A grain whose forecast holds a zero (a collective Seer hides whole) is left
    out: a zero cannot be compared with."""
    out: Dict[Tuple[int, int], Tuple[float, ...]] = {}
    low = fc.lowering
    for s, run in enumerate(fc.runs):
        temps = [low.template(s, b.chunk, b.phase) for b in run.blocks]
        ops = tuple(float(o.dur) for t in temps for o in t.ops if o.stream == "tp")
        if not ops:
            continue
        blocks = tuple(float(t.exposed.get("tp", 0.0)) for t in temps)
        for grain in (ops, blocks, (sum(blocks),)):        # a count's first meaning kept
            if grain and min(grain) > 0:
                out.setdefault((s, len(grain)), grain)
    return out


def judged(inst, stage: np.ndarray, eff: np.ndarray, cand: np.ndarray,
           table: Dict[Tuple[int, int], Tuple[float, ...]], band: Tuple[float, float],
           domains: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(expected seconds, NaN where none; whether judged) of the instances `cand` (usable TP
    instances with too few peers and no other forecast): the forecast of their grain times the
    level (the module's docstring). `domains`: per TP group, an id of the NVLink domains its
    members sit in (None: one domain, the level held within `band`)."""
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
    ok = cand & np.isfinite(expected) & (eff > 0)
    if ok.any():
        x = np.sort(np.log(eff[ok] / expected[ok]))
        level = float(np.median(x[:(x.size + 1) // 2]))
        if domains is None or np.unique(domains[inst.group[ok]]).size < 2:
            level = float(np.clip(level, np.log(band[0]), np.log(band[1])))
        expected[ok] *= float(np.exp(level))
    expected[~ok] = np.nan
    return expected, ok


def tp_domains(rm) -> np.ndarray:
    """Per TP group of the rank map, an id of the NVLink domains its members sit in
    (rankmap.domain_of: an NVL72 rack's, else the host)."""
    ids: Dict[Tuple[str, ...], int] = {}
    return np.array([ids.setdefault(tuple(sorted({domain_of(rm.ranks[r]) for r in g.ranks})),
                                    len(ids)) for g in rm.groups["tp"]], dtype=np.int64)


__all__ = ["forecast_tp", "judged", "tp_domains"]
