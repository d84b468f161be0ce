"""A network suspect's evidence (localise.py): one per kind of the slow instances it explains,
and the slowest of them, each with its expected and observed time."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from astral_dsl.diagnose.match import KIND_NAMES, P2P
from astral_dsl.diagnose.model import Evidence, Observation


def kind_label(k) -> str:
    """How instances of kind `k` are named (plural)."""
    return "pipeline transfers" if k == P2P else f"{KIND_NAMES[int(k)].upper()} collectives"


def by_kind(explained, crossing, use, chan, chan_ranks, inst, tm) -> Tuple[Evidence, ...]:
    """The evidence of a network suspect, one per kind of the slow instances it explains (in
    the order of their names): their medians, ranks and iterations, and of that kind's
    instances crossing it how many ran slow. One median over kinds had given a NIC's DP
    all-reduces of 78 ms as "DP collectives, pipeline transfers: expected 0.199 ms", the
    transfers' time."""
    kinds = inst.kind[use]
    out = []
    for k in sorted(set(kinds[explained].tolist()), key=kind_label):
        mine = explained & (kinds == k)
        sel = use[mine]
        ranks = sorted({r for c in np.unique(chan[mine]).tolist() for r in chan_ranks[c]})
        its = tuple(sorted({int(i) for i in inst.iteration[sel]}))
        out.append(Evidence(kind_label(k), float(np.median(tm.expected[sel])),
                            float(np.median(tm.effective[sel])), None, tuple(ranks[:64]), its,
                            int(mine.sum()), int((crossing & (kinds == k)).sum())))
    return tuple(out)


SLOWEST = 12          # slow instances listed per network suspect


def slowest(sel, chans, chan_ranks, inst, tm) -> Tuple[Observation, ...]:
    """The slowest instances (by observed / expected) among `sel`, `chans` their channels."""
    if sel.size == 0:
        return ()
    ratio = tm.effective[sel] / tm.expected[sel]
    order = np.lexsort((sel, -ratio))[:SLOWEST]
    out = []
    for j in order.tolist():
        i = int(sel[j])
        k = int(inst.kind[i])
        what = "pipeline transfer" if k == P2P else f"{KIND_NAMES[k].upper()} collective"
        ranks = (int(inst.group[i]), int(inst.peer[i])) if k == P2P else \
            tuple(chan_ranks[int(chans[j])])
        out.append(Observation(what, ranks, int(inst.iteration[i]),
                               float(tm.expected[i]), float(tm.effective[i]),
                               int(inst.seq[i])))
    return tuple(out)


__all__ = ["SLOWEST", "by_kind", "kind_label", "slowest"]
