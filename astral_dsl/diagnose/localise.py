"""From slow collectives to the parts they share, by the likelihood of what was seen.

Every usable instance belongs to a channel: a collective group or a pair of pipeline ranks. A
channel's traffic crosses units (units.py): the NIC of each member, the first-tier switches, the
uplinks and the tier groups it climbs through.

The evidence of an instance is x = ln(effective / expected), its time against its peers'
(evidence.py). A healthy instance has x ~ N(0, s^2), s the kind's spread (the median absolute
deviation of every instance of that kind, robust to the slow ones, with an absolute floor for
the clocks' alignment), or, now and then, an outlier of the slowed shape: NCCL collectives have
a tail. The outliers' share e is, for the hypothesis that unit u is faulty, the share of
instances that look slowed (x above ln SLOW_MIN by two spreads) among those u does not carry,
kept within EPSILON (background.py: the fault's own slowed instances are what it explains,
not its background). A slowed instance has x = ln F + noise, F log-uniform between SLOW_MIN
and SLOW_MAX. So one instance's likelihood ratio, slowed against healthy, is at most 1/e: an
isolated outlier says little, a coherent set of them says a lot.

"Unit u is faulty" predicts how its channels slow:
- a NIC, a first-tier switch, a host or an uplink to one switch: every channel crossing it,
  each instance with probability q (q = 1: a static fault; q < 1: a flapping link);
- a tier group or an uplink into one (ECMP): a share p of its channels (the flows hashed to the
  bad switch or cable), each instance of those with probability q.
Its Bayes factor against "all healthy" is the likelihood averaged over a grid of q (and p): a
unit that needs more freedom to fit pays for it. The first suspect is the unit with the largest
factor, reported when its posterior odds, with one fault a priori as likely as none spread
evenly over the units, exceed ALARM_ODDS; the slow instances it explains are then set aside, in
every unit's e too (background.py), and the next is sought (several faults). Units that cross
exactly the same channels cannot be told apart by any timing, nor can units that explain the
same slow instances with Bayes factors within a factor e (TIE) of each other (the two ends of
one slow transfer): they are one suspect listing every part; a tie of several classes names
each (`A or B`, by name), not the one whose factor happens to be larger. Each round's factors
are kept (Found.rounds: verdict.in_turn names the suspects round by round); with two named
suspects or more, each one's probability is weighed in one more round, with every other named
suspect explained (Found.others, verdict.given_the_others)."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs
import numpy as np
from scipy import sparse
from scipy.special import logsumexp

from astral_dsl import records
from astral_dsl.analyses.rankmap import RankMap, natural
from astral_dsl.diagnose.background import Factors
from astral_dsl.diagnose.evidence import Timing
from astral_dsl.diagnose.likelihood import EPSILON, log_healthy, log_slowed, looks_slowed, \
    lower_spread, robust_spread
from astral_dsl.diagnose.match import KIND_NAMES, P2P, Instances
from astral_dsl.diagnose.model import Evidence, Suspect
from astral_dsl.diagnose.net_evidence import by_kind, kind_label, slowest
from astral_dsl.diagnose.row_groups import group_ids
from astral_dsl.diagnose.units import ECMP_KINDS, KIND_ORDER, Unit, channel_units, display, \
    set_name
from astral_dsl.outputs.diagnosis import TIED

SLOW_MIN, SLOW_MAX = 1.2, 20.0      # the slow-down a fault causes, log-uniform between
SPREAD_FLOOR = 0.01      # relative spread never taken below 1 %
ABS_FLOOR_S = 5e-6       # clocks are aligned to a few microseconds
ALARM_ODDS = 19.0        # posterior odds (95 %) before a part is named
TIE = 1.0                # ln Bayes factor below which two parts are not told apart (Jeffreys:
#                          "not worth more than a bare mention")
MAX_SUSPECTS = 8
ALTERNATIVES = 4


def instance_densities(tm: Timing, inst: Instances) -> Tuple[np.ndarray, ...]:
    """(instances used, ln g(x) slowed, ln h(x) healthy, whether each looks slowed): the
    evidence of every usable instance, before the outliers' share (background.py)."""
    use = np.flatnonzero(tm.usable & np.isfinite(tm.expected) & (tm.expected > 0)
                         & (tm.effective > 0))
    if use.size == 0:
        return use, np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
    x = np.log(tm.effective[use] / tm.expected[use])
    kind = inst.kind[use]
    # compared with the forecast (too few peers): a slow group may be half of them
    fc = tm.forecast[use] if tm.forecast is not None else np.zeros(use.size, dtype=bool)
    spread = np.empty(use.size)
    for k in np.unique(kind):
        for sel in ((kind == k) & ~fc, (kind == k) & fc):
            if sel.any():
                spread[sel] = (lower_spread if fc[sel][0] else robust_spread)(x[sel],
                                                                              SPREAD_FLOOR)
    s = np.sqrt(spread ** 2 + (ABS_FLOOR_S / tm.expected[use]) ** 2)
    return (use, log_slowed(x, s, SLOW_MIN, SLOW_MAX), log_healthy(x, s),
            looks_slowed(x, s, SLOW_MIN))


@records.frozen(eq=False)
class Found:
    """The network's suspects, each with the ln Bayes factor of its hypothesis (a tie of
    several classes: the ln of their factors' sum), and the ln Bayes factors of every other
    class (verdict.py weighs them all against "all healthy")."""
    suspects: Tuple[Suspect, ...] = ()
    log_bf: Tuple[float, ...] = ()
    rest: np.ndarray = attrs.field(factory=lambda: np.zeros(0))
    classes: int = 0                   # hypotheses the prior is spread over
    # per round s = 1, 2, ... (the first s named suspects explained, every e measured again
    # without their instances): each suspect's ln Bayes factor and the rest's, as log_bf and
    # rest are round 0's; verdict.in_turn names the s+1-th named suspect by round s's
    rounds: Tuple[Tuple[Tuple[float, ...], np.ndarray], ...] = ()
    # with two named suspects or more, per named suspect: the factors (as a round's) with every
    # OTHER named suspect explained (the last one's is the last round's); verdict.
    # given_the_others weighs each by its own; empty with one named suspect or none
    others: Tuple[Tuple[Tuple[float, ...], np.ndarray], ...] = ()


def localise(rm: RankMap, inst: Instances, tm: Timing, prior_odds: float = 1.0) -> Found:
    """The suspects of the slow collectives and transfers. `prior_odds`: the odds, a priori, of
    a fault of the network against none (spread evenly over the classes of units); a class is
    named when its posterior odds against none exceed ALARM_ODDS."""
    use, log_g, log_h, slowed = instance_densities(tm, inst)
    log_r = log_g - log_h            # positive where an instance is more slowed than healthy
    if use.size == 0 or not (log_r > 0).any():
        return Found()
    kind = inst.kind[use]
    a = np.where(kind == P2P, np.minimum(inst.group[use], inst.peer[use]), inst.group[use])
    b = np.where(kind == P2P, np.maximum(inst.group[use], inst.peer[use]), -1)
    chan, firsts = group_ids(kind, a, b)
    n_chan = firsts.size
    chan_ranks: List[Tuple[int, ...]] = []
    unit_index: Dict[Unit, int] = {}
    parts_of: List[set] = []
    rows, cols = [], []
    for c, f in enumerate(firsts):
        k = int(kind[f])
        ranks = (int(a[f]), int(b[f])) if k == P2P else rm.groups[KIND_NAMES[k]][int(a[f])].ranks
        chan_ranks.append(ranks)
        for u, parts in channel_units(rm, ranks).items():
            i = unit_index.setdefault(u, len(unit_index))
            if i == len(parts_of):
                parts_of.append(set())
            parts_of[i].update(parts)
            rows.append(i)
            cols.append(c)
    units = sorted(unit_index, key=unit_index.get)
    incidence = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)),
                                  shape=(len(units), n_chan))
    incidence.data[:] = 1.0
    # units crossing the same channels are one suspect: timings cannot tell them apart
    classes = [sorted(cl, key=lambda i: (KIND_ORDER.index(units[i][0]), i))
               for cl in _classes(incidence)]
    if not classes:           # the slow transfers cross no part of the network (a rank's
        return Found()        # transfer to itself, or within one GPU): nothing to name
    ecmp = np.array([u[0] in ECMP_KINDS for u in units])
    threshold = np.log(ALARM_ODDS) + np.log(max(1, len(classes))) - np.log(prior_odds)
    log_r0, log_r = log_r, log_r.copy()
    data = (incidence, ecmp, chan, log_g, log_h, slowed)
    factors = Factors(*data)
    suspects: List[Suspect] = []
    taken: List[List[List[int]]] = []
    leads: List[np.ndarray] = []           # each named suspect's lead's channels
    llrs: List[np.ndarray] = []            # each round's factors, the first round's first
    while len(suspects) < MAX_SUSPECTS:
        llr = factors.log_bayes()
        llrs.append(llr)
        best_cls = max(classes, key=lambda cl: (llr[cl[0]], -cl[0]))
        lead = best_cls[0]
        if llr[lead] < threshold:
            break
        posterior = _posterior(llr, classes)
        chans = np.flatnonzero(incidence[lead].toarray().ravel())
        leads.append(np.isin(chan, chans))
        explained = leads[-1] & (log_r > 0)
        group = [best_cls]
        for cl in classes:        # the same slow instances, nearly as likely: a tie
            if cl is not best_cls and llr[cl[0]] >= llr[lead] - TIE:
                other = np.flatnonzero(incidence[cl[0]].toarray().ravel())
                if np.array_equal(np.isin(chan, other) & (log_r > 0), explained):
                    group.append(cl)
        if len(group) > 1:        # a tie: by name, the order saying nothing of which
            group.sort(key=lambda cl: tie_order(units[cl[0]]))
            chans = np.flatnonzero(incidence[[cl[0] for cl in group]].sum(axis=0))
        taken.append(group)
        suspects.append(_suspect([[units[i] for i in cl] for cl in group],
                                 [parts_of[i] for cl in group for i in cl],
                                 sum(posterior[cl[0]] for cl in group), chans, explained, chan,
                                 chan_ranks, use, inst, tm))
        log_r[explained] = 0.0            # explained: neither for nor against the next
        factors.explain(explained)
        if not (log_r > 0).any():
            break
    first_round = llrs[0]
    if not suspects:
        return Found(rest=np.array([first_round[cl[0]] for cl in classes]),
                     classes=len(classes))
    named = len(suspects)
    if len(llrs) == named:        # the factors once the last named suspect is explained
        llrs.append(factors.log_bayes())
    posterior = _posterior(first_round, classes)
    shown = {p for s in suspects for p in s.parts}
    ranked = sorted((cl for cl in classes if not any(p in shown for i in cl
                                                      for p in parts_of[i])),
                    key=lambda cl: (-first_round[cl[0]], cl[0]))
    for cl in ranked[:ALTERNATIVES]:
        if first_round[cl[0]] <= 0:
            break
        chans = np.flatnonzero(incidence[cl[0]].toarray().ravel())
        explained = np.isin(chan, chans) & (log_r0 > 0)
        taken.append([cl])
        suspects.append(_suspect([[units[i] for i in cl]], [parts_of[i] for i in cl],
                                 posterior[cl[0]], chans, explained, chan, chan_ranks, use,
                                 inst, tm, alternative=True))
    used = {cl[0] for group in taken for cl in group}
    by_round = [_factors(llr, taken, classes, used) for llr in llrs[:named + 1]]
    others = [_factors(_but(j, leads, log_r0, data), taken, classes, used)
              for j in range(named - 1)] + by_round[named - 1:named] if named > 1 else []
    return Found(tuple(suspects), *by_round[0], len(classes), tuple(by_round[1:]), tuple(others))


def _but(j, leads, log_r0, data) -> np.ndarray:
    """Every unit's ln Bayes factor with every named suspect but the j-th explained: the slow
    instances crossing their leads' channels set aside from the start (the union of what the
    rounds explain one after the other), every e measured without them (one localisation
    round more per named suspect but the last, whose is the last round's)."""
    others = np.logical_or.reduce([m for k, m in enumerate(leads) if k != j])
    return Factors(*data, explained=others & (log_r0 > 0)).log_bayes()


def _factors(llr, taken, classes, used) -> Tuple[Tuple[float, ...], np.ndarray]:
    """(each suspect's ln Bayes factor, a tie's the ln of its classes' sum; every other
    class's) in the round of `llr`."""
    return (tuple(float(logsumexp([llr[cl[0]] for cl in group])) for group in taken),
            np.array([llr[cl[0]] for cl in classes if cl[0] not in used]))


def _classes(incidence) -> List[List[int]]:
    """Units with identical channel sets, each class in the order of KIND_ORDER's precedence
    (the unit named first) and then by index."""
    out: Dict[bytes, List[int]] = {}
    for i in range(incidence.shape[0]):
        row = incidence.indices[incidence.indptr[i]:incidence.indptr[i + 1]]
        out.setdefault(np.sort(row).tobytes(), []).append(i)
    return list(out.values())


def _posterior(llr, classes) -> np.ndarray:
    """Per unit: the posterior probability of its class among all classes, one fault given
    (classes counted once)."""
    lead = np.array([cl[0] for cl in classes])
    weights = llr[lead]
    norm = logsumexp(np.r_[weights, 0.0])        # 0: "none of them" (ln 1), the null
    out = np.zeros(llr.size)
    for cl, w in zip(classes, weights):
        out[cl] = np.exp(w - norm)
    return out


def _against(tm, sel) -> str:
    """What the instances `sel` were compared with: their peers' time, or with too few peers
    (one DP or EP group a stage) the forecast's."""
    fc = tm.forecast[sel] if tm.forecast is not None else np.zeros(len(sel), dtype=bool)
    if fc.size and fc.all():
        return "their forecast time (too few peers to compare with)"
    if fc.any():
        return "their peers' time (the forecast's where too few peers)"
    return "their peers' time"


def _suspect(classes: List[List[Unit]], parts, confidence, chans, explained, chan,
             chan_ranks, use, inst, tm, alternative=False) -> Suspect:
    """`classes`: the units of each class the suspect holds, its lead first; several classes
    are a tie (the same slow instances, Bayes factors within TIE), named together."""
    leads = [c[0] for c in classes]
    kind_name = leads[0][0]
    tied = tuple(display(u) for u in leads) if len(leads) > 1 else ()
    all_parts = tuple(set().union(*parts))             # Suspect orders them (natural)
    heading = "" if tied else set_name(classes[0], all_parts)
    path = heading or " or ".join(display(u) for u in leads)
    crossing = np.isin(chan, chans)
    sel = use[explained]
    its = tuple(sorted({int(i) for i in inst.iteration[sel]}))
    what = sorted({kind_label(k) for k in inst.kind[sel]})
    n_s, n_t = int(explained.sum()), int(crossing.sum())
    ev = by_kind(explained, crossing, use, chan, chan_ranks, inst, tm) or \
        (Evidence("collectives", None, None, None, (), its, n_s, n_t),)
    it = "them" if tied or heading else "it"
    supports = (f"{n_s:,} of the {n_t:,} collectives and transfers crossing {it} ran slow "
                f"({', '.join(what) or 'none'})")
    fast = crossing & ~explained
    against = _against(tm, use[crossing])
    contradicts = (f"{int(fast.sum()):,} crossing {it} ran at {against}" if fast.any()
                   else f"none: every collective and transfer crossing {it} ran slow")
    slow = slowest(sel, chan[explained], chan_ranks, inst, tm)
    ratio = tm.effective[sel] / np.maximum(tm.expected[sel], 1e-12) if sel.size else None
    factor = f"{float(np.median(ratio)):.2f}x" if ratio is not None else "slower than"
    if heading and kind_name == "nvlink":
        named = f"NVLink ports of GPUs {heading}"
    elif heading:
        named = heading[0].upper() + heading[1:]
    elif len({u[0] for u in leads}) == 1:
        named = f"{_LABEL[kind_name]} {path}"
    else:
        named = " or ".join(f"{_LABEL[u[0]]} {display(u)}" for u in leads)
    summary = (f"{named}{TIED if tied else ''}: {n_s:,} of the {n_t:,} collectives and transfers "
               f"crossing {it} ran {factor} {against}")
    notes = []
    if tied:
        notes.append(f"tied: {' and '.join(tied)} explain the same slow instances (as the two "
                     f"ends of one slow transfer do) about as well (Bayes factors within a "
                     f"factor e), and nothing else they carry tells them apart: check each")
    if kind_name == "nic port":
        notes += _nic_note(all_parts)
    if kind_name == "host" and len(all_parts) > 1:
        notes.append("the collectives ran on the NVLink of one rack's hosts (nvlink_domain = "
                     "rack), none of their NICs: its NVLink switch trays or these hosts")
    elif kind_name == "nvlink":
        notes.append("the collectives that slowed are those the GPU holds with GPUs of its "
                     "own NVLink domain (inside its host, or on the way to the NICs): its "
                     "NVLink port or links to the NVSwitches (nvidia-smi nvlink --status, its "
                     "NVLink error counters); a slow GPU is its compute's, not this")
    elif kind_name == "host":
        notes.append("the collectives ran inside the host, on its NVLink, none of its NICs: "
                     "its NVSwitches or a GPU's NVLink ports (nvidia-smi nvlink --status, "
                     "its NVLink error counters); a slow GPU is its compute's, not this")
    if any(u[0] not in ("nic port", "host", "nvlink") and _planes(display(u)) for u in leads):
        notes.append("the planes of a dual-homed fabric carry the same collectives: "
                     "timings cannot tell the plane")
    if any(m[0] in ECMP_KINDS for c in classes for m in c):
        notes.append("above the first tier the twin does not know the ECMP hash: check the "
                     "switches of this group and the uplinks into it")
    same = [m for c in classes for m in c[1:]]          # each crossing what its lead crosses
    if same:
        others = ", ".join(f"{m[0]} {display(m)}" for m in same[:3])
        notes.append(f"the same collectives cross {others}"
                     + (f" and {len(same) - 3} more" if len(same) > 3 else "")
                     + ": one suspect")
    note = "; ".join(notes)
    if alternative:
        note = ("alternative: explains less of what was seen. " + note).strip()
    return Suspect(kind_name, path, all_parts, float(min(1.0, confidence)), summary, ev,
                   note, alternative, supports, contradicts, slow, tied)


def tie_order(unit: Unit) -> Tuple:
    """The order a tie's parts are named in: by kind, then by name in the design's order
    (`hosts[2]` before `hosts[10]`), as paths, groups and parts are listed."""
    return KIND_ORDER.index(unit[0]), natural(display(unit))


def _nic_note(parts) -> List[str]:
    """What a NIC suspect's parts are, from the ports the design gives each NIC (the rank map
    lists every port of a GPU's NIC, one per plane): a dual-homed NIC's two ports, or the
    single-port NICs at the two ends of the same transfers."""
    nics: Dict[str, set] = {}
    for p in parts:
        if " -- " not in p and ".port[" in p:
            nics.setdefault(p.rsplit(".port[", 1)[0], set()).add(p)
    if any(len(ports) > 1 for ports in nics.values()):
        return ["a NIC port, its cable and the other port of a dual-homed NIC carry the same "
                "collectives: timings cannot tell them apart"]
    if len(nics) > 1:
        return [f"{len(nics)} single-port NICs (not dual-homed), each port and its cable, carry "
                f"the same collectives and transfers: timings cannot tell them apart"]
    return []


_LABEL = {"nic port": "NIC (either port or its cable)", "switch": "first-tier switch",
          "tier": "tier group (ECMP: any of its switches)", "link": "uplink", "host": "host",
          "nvlink": "NVLink port of GPU"}


def _planes(path: str) -> bool:
    """Whether a unit's name lists several planes (or, of a link, several indices of its
    lower end's parent): `plane[A|B]`."""
    return "[A|" in path or "|" in path.split(" -- ")[0].rsplit(".", 1)[0]


__all__ = ["ALARM_ODDS", "ALTERNATIVES", "EPSILON", "Found", "instance_densities", "localise",
           "tie_order"]
