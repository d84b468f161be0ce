"""Compute: each rank's compute seconds per iteration against its pipeline stage's other ranks
(they run the same layers), and every stage against the forecast.

What the compute columns measure decides what is compared (docs/diagnose.md, "What the
compute columns measure"):
- `compute` (profiler kernels; a log's forward, backward, compute rows): the GPU's own compute.
  A unit is a rank; the forecast is its stage's compute operators and optimizer step.
- `megatron` (Megatron-LM's forward-compute / backward-compute timers, NeMo's too): wall time of
  each block, the TP collectives inside the layers and the wait for the slowest TP peer
  included. The TP peers of a block finish together, so a slow GPU makes its whole TP group
  slow alike: a unit is a TP group (its GPUs are the candidates; the data cannot separate them),
  and the forecast is each block's wall time (compute plus its exposed TP collectives) and
  the optimizer step.

A unit's evidence is x = ln(its compute / its stage's median) in each iteration, weighed by
likelihood.py's model (healthy spread: the units' own robust spread, at least SPREAD_FLOOR;
slowed: SLOW_MIN to SLOW_MAX): its Bayes factor averages over the share q of iterations it is
slow in (a GPU that slows part of the run). Half or more of a host's GPUs named: the host. With
compute alone, a rank's time is its compute and its GPU's idle time: a rank slow by its idle
time more than by its compute waits for its host, which is named."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from astral_dsl import records
from astral_dsl.analyses.rankmap import natural
from astral_dsl.diagnose import evidence
from astral_dsl.diagnose.likelihood import log_bayes_rows, log_ratio, log_slowed, \
    robust_spread
from astral_dsl.diagnose.model import Evidence, RankComparison, Suspect
from astral_dsl.diagnose.units import merge_names
from astral_dsl.units.readable import whole_percent

SPREAD_FLOOR = 0.005     # GPUs of one model differ by a percent or so (clocks, power capping)
SLOW_MIN, SLOW_MAX = 1.05, 4.0     # the slow-down a faulty GPU causes, log-uniform between
ALARM_ODDS = 19.0
OUTLIERS_GPU = 1e-3      # a healthy unit looks slowed in one iteration in a thousand (not the
#                          data's own share, as for collectives: a few iterations of a few
#                          slow GPUs, of one host or for part of the run, would hide them)
Q_COMPUTE = np.array([0.25, 0.5, 0.75, 1.0])   # a faulty GPU slows a quarter of the iterations
#                          read or more (one that starts late in the run: fewer than all)


@records.frozen(eq=False)
class Unit:
    ranks: Tuple[int, ...]
    stage: int


@records.frozen(eq=False)
class Found:
    """The compute suspects with the ln Bayes factor of each, the ln Bayes factors of the units
    not named, and every rank's comparison with its peers and the forecast."""
    suspects: Tuple[Suspect, ...]
    log_bf: Tuple[float, ...]
    rest: np.ndarray
    comparisons: Tuple[RankComparison, ...]
    units: int
    leading: str = ""     # the unit not named with the largest Bayes factor, as the text says it


def units_of(rm, comp: Dict[int, Dict[int, float]], timers: str) -> List[Unit]:
    """The units compared: ranks, or with wall-time timers the TP groups (their members read)."""
    stage = {r.rank: r.stage for r in rm.ranks}
    if timers != "megatron":
        return [Unit((r,), stage[r]) for r in sorted(comp)]
    out = []
    for g in rm.groups["tp"]:
        members = tuple(r for r in g.ranks if r in comp)
        if members:
            out.append(Unit(members, stage[members[0]]))
    return out


def find(rm, comp: Dict[int, Dict[int, float]], iterations: Sequence[int],
         fc_comp: Dict[int, float], timers: str, prior_odds: float,
         idle: Optional[Dict[int, Dict[int, float]]] = None) -> Found:
    """Compute suspects (GPUs, candidate GPUs of a TP group, hosts). `comp`: rank -> iteration
    -> compute seconds; `fc_comp`: stage -> forecast seconds; `prior_odds`: the odds, a priori,
    of a compute fault against none (spread evenly over the units). `idle`: rank -> iteration
    -> seconds its GPU ran nothing (evidence.idle_per_rank): a rank's own time is its compute
    and its idle time, so that a rank whose host is slow (its GPU waits for launches, data,
    its Python process: idle, its kernels at their peers' speed) is as slow as one whose GPU
    is; which of the two it is, the rank's excess over its stage's says (`_host_side`)."""
    stage_of = np.array([r.stage for r in rm.ranks])
    units = units_of(rm, comp, timers)
    idle = idle or {}
    own = {r: {it: v + idle.get(r, {}).get(it, 0.0) for it, v in per.items()}
           for r, per in comp.items()} if idle else comp
    values = {u: {it: evidence.median([own[r][it] for r in u.ranks if it in own[r]])
                  for it in iterations if any(it in own[r] for r in u.ranks)} for u in units}
    medians: Dict[Tuple[int, int], float] = {}
    for (s, it), v in _by_stage_iteration(units, values).items():
        medians[(s, it)] = float(np.median(v))
    xs = {u: np.array([np.log(v / medians[(u.stage, it)]) for it, v in sorted(values[u].items())
                       if v > 0 and medians.get((u.stage, it), 0) > 0]) for u in units}
    allx = np.concatenate([x for x in xs.values()]) if xs else np.zeros(0)
    spread = robust_spread(allx, SPREAD_FLOOR)
    width = max((x.size for x in xs.values()), default=0)
    rows = np.zeros((len(units), width))           # a unit lacking an iteration: 0, neutral
    for i, u in enumerate(units):
        rows[i, :xs[u].size] = log_ratio(xs[u], spread, SLOW_MIN, SLOW_MAX, OUTLIERS_GPU)
    log_bf = dict(zip(units, log_bayes_rows(rows, Q_COMPUTE).tolist())) if width else \
        {u: 0.0 for u in units}
    threshold = np.log(ALARM_ODDS) + np.log(max(1, len(units))) - np.log(prior_odds)
    comparisons = []
    rank_medians = evidence.stage_medians(comp, stage_of, iterations)
    for rank in sorted(comp):
        ratio = evidence.median_ratio(comp[rank], rank_medians, int(stage_of[rank]))
        if ratio is not None and ratio > 0:
            own = evidence.median(comp[rank].values())
            s = int(stage_of[rank])
            comparisons.append(RankComparison(rank, s, own, own / ratio, fc_comp.get(s)))
    named = [u for u in units if log_bf[u] >= threshold and _can_name(xs[u])]
    waits = _host_side(named, comp, idle, stage_of) if idle else {}
    suspects, bfs = _suspects(rm, [u for u in named if u not in waits], values, medians, xs,
                              log_bf, fc_comp, timers)
    for host, us in _by_host(rm, [u for u in named if u in waits]).items():
        suspects.append(_waiting_host(rm, host, us, waits, xs))
        bfs.append(float(np.logaddexp.reduce([log_bf[u] for u in us])))
    shown = {u for u in named}
    others = [u for u in units if u not in shown]
    rest = np.array([log_bf[u] if _can_name(xs[u]) else min(log_bf[u], 0.0) for u in others])
    return Found(tuple(suspects), tuple(bfs), rest, tuple(comparisons), len(units),
                 _leading(rm, others, rest, xs))


def _leading(rm, others: List[Unit], rest: np.ndarray, xs) -> str:
    """The unit not named that the compute family's probability leans on most: `GPU ... (rank
    9): 1.040x its stage (median of 3 iterations), 1.062x at most`; '' when none counts more
    than a healthy unit (a Bayes factor of at most 1)."""
    if not others or float(np.max(rest)) <= 0.0:
        return ""
    u = others[int(np.argmax(rest))]
    gpus = [rm.ranks[r].gpu for r in u.ranks]
    who = (f"GPU {gpus[0]} (rank {u.ranks[0]})" if len(gpus) == 1 else
           f"the GPUs {merge_names(gpus)} (ranks {u.ranks[0]}-{u.ranks[-1]})")
    x = xs[u]
    return (f"{who}: {np.exp(np.median(x)):.3f}x its stage (median of {x.size} iterations), "
            f"{np.exp(np.max(x)):.3f}x at most")


def _can_name(x: np.ndarray) -> bool:
    """Whether a unit shows a fault the model names: slower than its stage by SLOW_MIN or more
    in an iteration. One that never is (a GPU 3-4 % slower than its peers in every iteration,
    a healthy GPU's own spread at most) is not named, and its Bayes factor is taken as at most
    1 (as likely healthy as faulty) in the job's probability: that is the probability of a
    fault the diagnosis can name. Its ln Bayes factor against a spread of its stage's of 0.7 %
    (9.2 on a healthy drill of tests/test_synth_context.py) had made a healthy job's
    probability >99 %, beside a `healthy` verdict."""
    return bool(x.size) and float(np.max(x)) > np.log(SLOW_MIN)


def _by_stage_iteration(units, values) -> Dict[Tuple[int, int], List[float]]:
    out: Dict[Tuple[int, int], List[float]] = {}
    for u in units:
        for it, v in values[u].items():
            out.setdefault((u.stage, it), []).append(v)
    return out


def _by_host(rm, units) -> Dict[str, List[Unit]]:
    by_host: Dict[str, List[Unit]] = {}
    for u in units:
        by_host.setdefault(rm.ranks[u.ranks[0]].host, []).append(u)
    return dict(sorted(by_host.items(), key=lambda kv: natural(kv[0])))   # hosts[2], hosts[10]


def _host_side(named, comp, idle, stage_of) -> Dict[Unit, Tuple[float, float, Tuple[int, ...]]]:
    """The named units (ranks) slow by their GPU's idle time more than by its compute: unit ->
    (its median idle seconds per iteration, its stage's, the iterations idle by SLOW_MIN - 1
    of its stage's compute or more)."""
    by: Dict[Tuple[int, int], List[Tuple[float, float]]] = {}
    for r, per in comp.items():
        for it, c in per.items():
            by.setdefault((int(stage_of[r]), it), []).append((c, idle.get(r, {}).get(it, 0.0)))
    med = {k: (float(np.median([c for c, _ in v])), float(np.median([i for _, i in v])))
           for k, v in by.items()}
    out = {}
    for u in named:
        if len(u.ranks) != 1:
            continue
        r = u.ranks[0]
        rows = [(it, c - med[(u.stage, it)][0], idle.get(r, {}).get(it, 0.0),
                 med[(u.stage, it)][1], med[(u.stage, it)][0]) for it, c in sorted(comp[r].items())]
        if rows and evidence.median([i - m for _, _, i, m, _ in rows]) > \
                evidence.median([c for _, c, _, _, _ in rows]):
            slow = tuple(it for it, _, i, m, c in rows if i - m >= (SLOW_MIN - 1) * c)
            out[u] = (evidence.median([i for _, _, i, _, _ in rows]),
                      evidence.median([m for _, _, _, m, _ in rows]), slow)
    return out


def _waiting_host(rm, host: str, us: List[Unit], waits, xs) -> Suspect:
    """The host suspect of ranks whose GPUs wait for their host."""
    ranks = [u.ranks[0] for u in us]
    own = evidence.median([waits[u][0] for u in us])
    peers = evidence.median([waits[u][1] for u in us])
    its = tuple(sorted({it for u in us for it in waits[u][2]}))
    ratio = float(np.exp(np.median(np.concatenate([xs[u] for u in us]))))
    n = sum(xs[u].size for u in us)
    slow = sum(len(waits[u][2]) for u in us)
    which = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {_ranks(ranks)}"
    return Suspect(
        "host", host, (host,) + tuple(rm.ranks[r].gpu for r in ranks), 0.0,
        (f"host {host}: the GPU of {which} waits for its host, idle {own * 1e3:.3f} ms per "
         f"iteration against {peers * 1e3:.3f} ms for its stage's other ranks, its kernels "
         if len(ranks) == 1 else
         f"host {host}: the GPUs of {which} wait for their host, idle {own * 1e3:.3f} ms per "
         f"iteration against {peers * 1e3:.3f} ms for their stage's other ranks, their "
         f"kernels ")
        + f"at their speed: {which} {'is' if len(ranks) == 1 else 'are'} "
        f"{whole_percent(ratio - 1)} slower "
        f"than {'its' if len(ranks) == 1 else 'their'} stage, and every collective "
        f"{'it joins waits for it' if len(ranks) == 1 else 'they join waits for them'}",
        (Evidence("GPU idle per iteration", peers, own, None, tuple(ranks), its, slow, n),),
        "the host side: its CPU (throttled, shared, a noisy neighbour), data loading, the "
        "rank's Python process (garbage collection, logging), kernel launches",
        supports=f"{slow} of {n} iterations idle {whole_percent(SLOW_MIN - 1)} of the "
                 f"stage's compute or more beyond the stage's idle time",
        contradicts=f"{n - slow} idle less" if n - slow else "none: every iteration was "
                                                             "idle that long")


def _suspects(rm, named, values, medians, xs, log_bf, fc_comp, timers):
    """GPU suspects (a TP group's candidate GPUs with wall-time timers), or the host when half
    or more of its GPUs are named."""
    suspects, bfs = [], []
    for host, us in _by_host(rm, named).items():
        gpus = [r for r in rm.ranks if r.host == host]
        ranks = [r for u in us for r in u.ranks]
        ratio = float(np.exp(np.median(np.concatenate([xs[u] for u in us]))))
        ev = tuple(_evidence(u, values, medians, fc_comp) for u in us)
        support, contra = _support(us, xs)
        if timers != "megatron" and len(ranks) >= max(2, (len(gpus) + 1) // 2):
            suspects.append(Suspect(
                "host", host, (host,) + tuple(rm.ranks[r].gpu for r in ranks), 0.0,
                f"host {host}: {len(ranks)} of its {len(gpus)} GPUs compute "
                f"{whole_percent(ratio - 1)} slower than their stage's other ranks", ev,
                "several GPUs of one host: power or cooling of the host, its CPU or PCIe, "
                "before the GPUs themselves", supports=support, contradicts=contra))
            bfs.append(float(np.logaddexp.reduce([log_bf[u] for u in us])))
            continue
        for u in us:
            r = float(np.exp(np.median(xs[u])))
            gpus_u = tuple(rm.ranks[x].gpu for x in u.ranks)
            support, contra = _support([u], xs)
            if len(u.ranks) == 1:
                suspects.append(Suspect(
                    "gpu", gpus_u[0], gpus_u, 0.0,
                    f"GPU {gpus_u[0]} (rank {u.ranks[0]}) computes {whole_percent(r - 1)} "
                    f"slower than the other ranks of stage {u.stage}",
                    (_evidence(u, values, medians, fc_comp),),
                    supports=support, contradicts=contra))
            else:
                suspects.append(Suspect(
                    "gpu", merge_names(gpus_u), gpus_u, 0.0,
                    f"one of the {len(gpus_u)} GPUs of TP group {_ranks(u.ranks)} computes "
                    f"slower: the group's blocks take {whole_percent(r - 1)} longer than the "
                    f"other groups of stage {u.stage}", (_evidence(u, values, medians, fc_comp),),
                    "the compute timers (Megatron-LM's forward-compute / backward-compute) "
                    "include the wait for the slowest TP peer, so the peers of a TP group look "
                    "alike: the data cannot tell which of these GPUs is slow (or whether their "
                    "host is); a profiler trace of one step separates them",
                    supports=support, contradicts=contra))
            bfs.append(log_bf[u])
    return suspects, bfs


def _support(us, xs) -> Tuple[str, str]:
    x = np.concatenate([xs[u] for u in us])
    slow = int(np.count_nonzero(x > np.log(SLOW_MIN)))
    what = "iterations" if len(us) == 1 else f"iterations of its {len(us)} GPUs"
    return (f"{slow} of {x.size} {what} computed {whole_percent(SLOW_MIN - 1)} or more above "
            f"their stage's median",
            f"{x.size - slow} within {whole_percent(SLOW_MIN - 1)} of it" if x.size - slow else
            "none: every iteration was slow")


def _evidence(u: Unit, values, medians, fc_comp) -> Evidence:
    per = values[u]
    own = evidence.median(per.values())
    peers = evidence.median([medians[(u.stage, it)] for it in per])
    its = tuple(it for it, v in sorted(per.items())
                if v >= medians[(u.stage, it)] * SLOW_MIN)
    # slow of total: its iterations SLOW_MIN or more above the stage's median, of those compared
    return Evidence("compute per iteration", peers, own, fc_comp.get(u.stage), u.ranks, its,
                    len(its), len(per))


def _ranks(ranks) -> str:
    ranks = list(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


# ---- every stage against the forecast ------------------------------------------------------
FORECAST_MAX = 20.0      # a forecast wrong by more than this is not a forecast of this job
STAGE_NOISE = 0.01       # a stage's median compute over a few iterations varies by about 1 %
OUTLIERS = 1e-3          # healthy runs outside the band all the same


def forecast_ratio(medians: Dict[Tuple[int, int], float], fc_comp: Dict[int, float],
                   iterations) -> Dict[int, float]:
    """Per stage: the median over iterations of its ranks' median compute, over the forecast."""
    out = {}
    for s, f in fc_comp.items():
        vals = [medians[(s, it)] for it in iterations if (s, it) in medians]
        if vals and f > 0 and float(np.median(vals)) > 0:   # no compute logged: no ratio
            out[s] = float(np.median(vals)) / f
    return out


def forecast_evidence(ratios: Dict[int, float], band: Tuple[float, float]
                      ) -> Tuple[float, float]:
    """(ln Bayes factor of "every stage slower than the forecast's band", of "every stage
    faster"): the stage nearest the forecast is weighed (every stage must be beyond). Healthy:
    the ratio anywhere in the band (log-uniform); slower: log-uniform from the band's top to
    FORECAST_MAX; faster: from 1 / FORECAST_MAX to the band's bottom; each measured within
    STAGE_NOISE, and a share OUTLIERS of healthy runs outside the band anyway."""
    if not ratios:
        return 0.0, 0.0
    low, high = band
    out = []
    for x, lo, hi in ((np.log(min(ratios.values())), high, FORECAST_MAX),
                      (np.log(max(ratios.values())), 1 / FORECAST_MAX, low)):
        x = np.array([x])
        log_g = log_slowed(x, STAGE_NOISE, lo, hi)
        log_h = np.logaddexp(np.log1p(-OUTLIERS) + log_slowed(x, STAGE_NOISE, low, high),
                            np.log(OUTLIERS) + log_g)
        out.append(float((log_g - log_h)[0]))
    return out[0], out[1]


def forecast_suspect(ratios: Dict[int, float], fc_comp: Dict[int, float], band, source: str,
                     faster: bool, timers: str) -> Suspect:
    """The forecast (every stage read faster than the band) or the software (slower) as a
    suspect. The stage weighed is the one nearest the forecast (forecast_evidence): the
    slowest against its forecast of stages all faster, the fastest of stages all slower; the
    stages not read are said (nothing is known of them)."""
    ratio = float(np.median(list(ratios.values())))
    ev = tuple(Evidence(f"compute per iteration, stage {s}", fc_comp[s], fc_comp[s] * r,
                        fc_comp[s]) for s, r in sorted(ratios.items()))
    stages = "every stage" if len(ratios) == len(fc_comp) else \
        f"every stage read ({len(ratios)} of {len(fc_comp)})"
    what = (f"the blocks of {stages} (compute, TP collectives and waits: Megatron-LM's timers) "
            f"run" if timers == "megatron" else f"{stages} computes")
    near = (max if faster else min)(sorted(ratios), key=ratios.get)
    low, high = min(ratios.values()), max(ratios.values())
    spread = f"{low:.3f}x" if len(ratios) == 1 else f"{low:.3f}-{high:.3f}x"
    each = "" if len(ratios) == 1 else \
        f" for every stage (stage {near} the nearest the forecast, at {ratios[near]:.3f}x)"
    supports = (f"observed over forecast compute, {spread}, is {'below' if faster else 'above'}"
                f" the band{each}; the forecast's band is {band[0]:.2f}-{band[1]:.2f}x "
                f"({source})")
    if faster:
        return Suspect("forecast", "forecast", ("forecast",), 0.0,
                       f"{what} {1 / ratio:.2f}x faster than the forecast: the forecast does "
                       f"not describe this job", ev,
                       "check what the forecast assumes (GPU model and clocks, model size, "
                       "batch, sequence, parallel layout, recomputation) against the job: a "
                       "run this much faster than its forecast is not the job the design "
                       "states", supports=supports,
                       contradicts=f"none: {stages} is faster than the band")
    return Suspect("software", "forecast or software", (), 0.0,
                   f"{what} {whole_percent(ratio - 1)} slower than the forecast: the forecast "
                   f"or the software (kernels, clocks, versions), not one part", ev,
                   "compare the framework, kernels and GPU clocks with the forecast's "
                   "assumptions before suspecting hardware", supports=supports,
                   contradicts=f"none: {stages} is slower than the band")


__all__ = ["ALARM_ODDS", "Found", "SLOW_MAX", "SLOW_MIN", "find", "forecast_evidence",
           "forecast_ratio", "forecast_suspect"]
