"""From slow collectives to the parts they share.

Every usable instance belongs to a channel: a collective group or a pair of pipeline ranks. A
channel's traffic crosses units: the NIC of each member (its ports and their cables: timings
cannot tell a port from its cable, nor one port of a dual-homed NIC from the other, as both
carry every collective), each first-tier switch (the same switch index in every plane, for the
same reason), and, between first-tier switches, the tier group they meet in (ECMP: the twin
does not know which switch of the group a flow hashed to, so the group is the unit and a fault
there counts as found when it is localised to it).

A unit is scored by how well "this unit is faulty" explains what was seen: recall (the share
of the slow instances whose channel crosses it) times precision (the share of the instances
crossing it that were slow), precision counting less for ECMP groups (only the flows hashed to a
bad switch slow down, but those all the time: the share of slow channels counts with the
exponent PRECISION_ECMP, the share of slow instances within them fully). The best unit is the first suspect; the slow instances
it explains are set aside and the next best explains the rest (several faults); the remaining
candidates follow as alternatives."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs
import numpy as np

from astral_dsl.analyses.fabric_names import link_name
from astral_dsl.analyses.rankmap import RankMap
from astral_dsl.diagnose.evidence import Timing
from astral_dsl.diagnose.match import KIND_NAMES, P2P, Instances, group_ids
from astral_dsl.diagnose.model import Evidence, Suspect

PRECISION_ECMP = 0.25      # exponent on precision for tier groups
MIN_SLOW = 2               # slow instances needed before a network part is suspected
MIN_SCORE = 0.05
ALTERNATIVES = 4

Unit = Tuple[str, str]      # (kind, path)


def channel_units(rm: RankMap, ranks: Tuple[int, ...]) -> Dict[Unit, Tuple[str, ...]]:
    """The units a channel among `ranks` crosses, with the parts of each."""
    infos = [rm.ranks[r] for r in ranks]
    hosts = {i.host for i in infos}
    out: Dict[Unit, set] = {}
    if len(hosts) <= 1:
        host = next(iter(hosts))
        return {("host", host): (host,)}
    by_port: Dict[int, list] = {}
    for info in infos:
        if not info.ports:
            continue
        nic = info.ports[0].name.rsplit(".port[", 1)[0]
        parts = out.setdefault(("nic port", nic), set())
        for p in info.ports:
            parts.update((p.name, link_name(p.name, p.switch)))
            tor = p.tiers[0].other_planes().switch(int(p.switch.rsplit("[", 1)[1][:-1]))
            out.setdefault(("switch", tor), set()).add(p.switch)
            by_port.setdefault(p.port, []).append(p)
    for members in by_port.values():
        if len({p.switch for p in members}) <= 1:
            continue
        for i in range(1, len(members[0].tiers)):
            keys = {p.tiers[i] for p in members}
            if len(keys) == 1:
                key = keys.pop()
                out.setdefault(("tier", key.other_planes().name), set()).add(key.name)
                break
    return {u: tuple(sorted(parts)) for u, parts in out.items()}


def localise(rm: RankMap, inst: Instances, tm: Timing) -> List[Suspect]:
    use = np.flatnonzero(tm.usable)
    if not tm.slow.any() or int(tm.slow.sum()) < MIN_SLOW:
        return []
    kind = inst.kind[use]
    a = np.where(kind == P2P, np.minimum(inst.group[use], inst.peer[use]), inst.group[use])
    b = np.where(kind == P2P, np.maximum(inst.group[use], inst.peer[use]), -1)
    chan, firsts = group_ids(kind, a, b)
    n_chan = firsts.size
    slow = tm.slow[use]
    total = np.bincount(chan, minlength=n_chan)
    n_slow = np.bincount(chan, weights=slow.astype(float), minlength=n_chan)
    units: Dict[Unit, List[int]] = {}
    parts_of: Dict[Unit, Tuple[str, ...]] = {}
    chan_ranks: List[Tuple[int, ...]] = []
    for c, f in enumerate(firsts):
        k = int(kind[f])
        ranks = (int(a[f]), int(b[f])) if k == P2P else rm.groups[KIND_NAMES[k]][int(a[f])].ranks
        chan_ranks.append(ranks)
        if n_slow[c] == 0 and total[c] == 0:
            continue
        for u, parts in channel_units(rm, ranks).items():
            units.setdefault(u, []).append(c)
            parts_of[u] = tuple(sorted(set(parts_of.get(u, ())) | set(parts)))
    remaining = n_slow.copy()
    suspects: List[Suspect] = []
    picked = set()
    while remaining.sum() >= MIN_SLOW:
        best = _best(units, remaining, n_slow, total, picked)
        if best is None or best[1] < MIN_SCORE or (suspects and best[1] < MIN_SCORE * 4):
            break
        u, score = best
        picked.add(u)
        suspects.append(_suspect(u, parts_of[u], score, units[u], n_slow, total, chan_ranks,
                                 chan, slow, use, inst, tm, kind))
        remaining[units[u]] = 0
    ranked = sorted(((s, u) for u in units if u not in picked
                     for s in [_score(u, units[u], n_slow, n_slow, total)] if s >= MIN_SCORE),
                    key=lambda x: (-x[0], x[1]))
    runner_up = ranked[0][0] if ranked else 0.0
    top = suspects[0].confidence if suspects else 1.0
    # confidence: how clearly a suspect beats the best alternative (0.5: a tie)
    suspects = [attrs.evolve(s, confidence=s.confidence / (s.confidence + runner_up))
                for s in suspects]
    for score, u in ranked[:ALTERNATIVES]:
        suspects.append(_suspect(u, parts_of[u], score / (score + top), units[u], n_slow,
                                 total, chan_ranks, chan, slow, use, inst, tm, kind,
                                 alternative=True))
    return suspects


def _score(u: Unit, chans: List[int], remaining, n_slow, total) -> float:
    all_slow = remaining.sum()
    e = remaining[chans].sum()
    if all_slow <= 0 or e <= 0:
        return 0.0
    recall = e / all_slow
    if u[0] != "tier":
        return float(recall * n_slow[chans].sum() / max(1, total[chans].sum()))
    # ECMP: a bad switch slows the channels whose flows hash to it, all the time; so the share
    # of slow channels counts less, the share of slow instances within them fully
    chans = np.asarray(chans)
    hit = chans[n_slow[chans] > 0]
    share = hit.size / max(1, chans.size)
    within = n_slow[hit].sum() / max(1, total[hit].sum())
    return float(recall * share ** PRECISION_ECMP * within)


def _best(units, remaining, n_slow, total, picked):
    best = None
    for u, chans in sorted(units.items()):
        if u in picked:
            continue
        s = _score(u, chans, remaining, n_slow, total)
        if best is None or s > best[1] + 1e-12:
            best = (u, s)
    return best


def _suspect(u, parts, score, chans, n_slow, total, chan_ranks, chan, slow, use, inst, tm,
             kind, alternative=False) -> Suspect:
    in_unit = np.isin(chan, chans)
    sel = use[in_unit & slow]
    its = tuple(sorted({int(i) for i in inst.iteration[sel]}))
    ranks = sorted({r for c in chans if n_slow[c] > 0 for r in chan_ranks[c]})
    what = sorted({"pipeline transfers" if k == P2P else f"{KIND_NAMES[int(k)].upper()} "
                   f"collectives" for k in inst.kind[sel]})
    obs = float(np.median(tm.effective[sel])) if sel.size else None
    exp = float(np.median(tm.expected[sel])) if sel.size else None
    n_s, n_t = int(n_slow[chans].sum()), int(total[chans].sum())
    ev = Evidence(", ".join(what) or "collectives", exp, obs, None, tuple(ranks[:64]), its,
                  n_s, n_t)
    factor = f"{obs / exp:.2f}x" if obs and exp else "slower than"
    kind_name, path = u
    label = {"nic port": "NIC (either port or its cable)",
             "switch": "first-tier switch (same index in every plane)",
             "tier": "tier group (ECMP: any of its switches)", "host": "host"}[kind_name]
    summary = (f"{label} {path}: {n_s} of the {n_t} collectives and transfers crossing it ran "
               f"{factor} their peers' time")
    note = ""
    if kind_name == "nic port":
        note = "a NIC port, its cable and the other port of a dual-homed NIC carry the same " \
               "collectives: timings cannot tell them apart"
    elif kind_name == "tier":
        note = "above the first tier the twin does not know the ECMP hash: check the switches " \
               "of this group and the uplinks into it"
    elif kind_name == "switch":
        note = "the planes of a dual-homed fabric carry the same collectives: timings cannot " \
               "tell the plane"
    if alternative:
        note = ("alternative: explains less of what was seen. " + note).strip()
    return Suspect(kind_name, path, parts, min(1.0, score), summary, (ev,), note)


__all__ = ["ALTERNATIVES", "MIN_SCORE", "MIN_SLOW", "PRECISION_ECMP", "channel_units",
           "localise"]
