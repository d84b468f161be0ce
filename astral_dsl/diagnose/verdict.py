"""One verdict per job: the probability that something is wrong, and suspects that compete.

The hypotheses: "all healthy"; one fault of the network (each class of units localise.py weighs);
one compute fault (each unit compute.py weighs: a GPU, or a TP group's GPUs); the forecast or
the software (every stage beyond the forecast's band, slower or faster). A priori a fault is as
likely as none (odds 1), split evenly over the three families and within each over its
hypotheses. Each hypothesis's posterior is its prior times its Bayes factor (likelihood.py),
normalised over all of them and "all healthy": the job's probability that something is wrong is
1 - P(all healthy), and a suspect's probability is its hypothesis's posterior (a tie of several
classes: their sum), so one named suspect's and the alternatives' add up to at most the job's. A
suspect is named when its posterior odds against "all healthy" exceed ALARM_ODDS (19: 95 %);
several faults are found one after the other (localise.py), named in the order of the rounds
(in_turn: each round's most probable, those before it taken as real). With two named or more,
each has the posterior of one round of its own in which every OTHER named suspect is taken as
real and explaining what it does (given_the_others): the probabilities are symmetric, two clear
faults both near 1. Weighed in the first round as the one fault of the model, a second fault,
however certain on its own, had shown only the share it took from the first (`<1%` beside a
named flapping link); given only those before it, the first of two equally clear faults had
kept its first-round share, ~50 %, beside ">99 %" for the second.

The forecast's band: the ratios of observed to forecast time a healthy run keeps: the band Seer
states with every forecast (its envelope), which outside the calibrated envelope is a
documented default, not a measurement (and says so); DEFAULT_BAND serves a forecast without
one (`band_of`, the one place that sets it)."""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Sequence, Tuple

import numpy as np
from scipy.special import logsumexp

from astral_dsl.units.readable import whole_percent

FAMILIES = 3               # network, compute, forecast or software
# Seer's accuracy on the published runs it is checked against is within 9 % (README, "left
# out": 8.7 % the largest error); a healthy job keeps within 15 % of its forecast either way.
DEFAULT_BAND = (1 / 1.15, 1.15)


def band_of(fc) -> Tuple[Tuple[float, float], str]:
    """(low, high) ratio of observed to forecast time a healthy run keeps, and where it comes
    from: the forecast's own error band (Seer's envelope, seer/envelope.py: the true time over
    the forecast, less 1, [low, high] around 0; or a `calibration` dict's `band`, as the JSON
    carries it: relative errors around 0, or ratios around 1), else DEFAULT_BAND. (It had read
    a `band` the forecast's Calibration does not have, so every diagnosis took the default.)
    A forecast outside the calibrated envelope (`inside` false) has a documented default band,
    not a measured one: the source says so and what no calibration run had (W753's words)."""
    band, env = None, None
    if fc is not None:
        env = getattr(fc, "envelope", None)
        env = env() if callable(env) else env
        band = getattr(env, "band", None)
        if band is None:
            env = getattr(fc, "calibration", None)
            band = env.get("band") if isinstance(env, dict) else None
    try:
        low, high = (float(x) for x in band)
    except (TypeError, ValueError):
        return DEFAULT_BAND, "the default band, +-15 %"
    if -1 < low <= 0 <= high and low < high:
        return (1 + low, 1 + high), _source(env)
    if 0 < low < 1 < high:
        return (low, high), _source(env)
    return DEFAULT_BAND, "the default band, +-15 %"


def _source(env) -> str:
    """Where a forecast's band comes from: measured (inside) or the default outside (W753);
    and the scale or layout it goes beyond the calibration runs' at (W759), as the forecast
    says it: a band measured on runs of 8 to 1,024 GPUs had been "the forecast's calibration
    band" for a job of 16,384."""
    get = env.get if isinstance(env, dict) else lambda k, d: getattr(env, k, d)
    beyond = _beyond(get("extrapolated", ()) or ())
    beyond = f"; extrapolated beyond the calibration runs: {beyond}, W759" if beyond else ""
    if get("inside", True) is not False:
        return "the forecast's calibration band" + beyond
    why = [str(o) for o in get("outside", ()) or ()]
    return ("the forecast's default band, not a measurement: outside the calibrated envelope"
            + (" (" + "; ".join(why) + ")" if why else "") + ", W753" + beyond)


def _beyond(extrapolated) -> str:
    """The dimensions beyond the calibration runs (Envelope.extrapolated, or its JSON)."""
    from astral_dsl.seer.checked import Beyond

    out = []
    for b in extrapolated:
        if isinstance(b, dict):
            b = Beyond(str(b.get("field")), float(b.get("value") or 0),
                       tuple(b["checked"]) if b.get("checked") else None)
        if isinstance(b, Beyond):
            out.append(b.text())
    return "; ".join(out)


PRIOR_ODDS = 1.0 / FAMILIES     # a priori, one family's fault against none
FAMILY_NAMES = ("network", "compute", "forecast")   # weigh's families, in their order
# the verdict without a named suspect: `healthy` while "all healthy" is the more likely (the
# job's probability below one half), else `inconclusive`: a fault is the more likely, and no
# part of it reaches ALARM_ODDS to be named (docs/diagnose.md, step 7)
INCONCLUSIVE_P = 0.5


def weigh(families: Iterable[Tuple[List[float], np.ndarray, int]]
          ) -> Tuple[float, List[List[float]], List[float]]:
    """(the job's probability that something is wrong, per family the posterior of each of its
    suspects, per family the posterior of its hypotheses not named). `families`: per family
    (its suspects' ln Bayes factors, the ln Bayes factors of its hypotheses not named, how many
    hypotheses it spreads its prior over)."""
    fams = list(families)
    terms = [0.0]                            # ln of "all healthy"'s prior odds, 1
    per, rests = [], []
    for named, rest, n in fams:
        lp = np.log(1.0 / FAMILIES) - np.log(max(1, n))
        per.append([lp + b for b in named])
        rests.append(lp + np.asarray(rest, dtype=float))
        terms.extend(lp + b for b in named)
        terms.extend(rests[-1].tolist())
    norm = float(logsumexp(terms))
    p_none = float(np.exp(-norm))
    unnamed = [float(np.exp(logsumexp(r) - norm)) if r.size else 0.0 for r in rests]
    return 1.0 - p_none, [[float(np.exp(t - norm)) for t in f] for f in per], unnamed


def in_turn(families: Sequence[Tuple[Sequence[Tuple[Sequence[float], np.ndarray]], int, int,
                                     bool]],
            key: Callable[[int, int], Tuple]) -> List[Tuple[int, int, float]]:
    """The named suspects one after the other, each with the posterior of the round that names
    it: (family, its suspect's index, probability), in that order. `families`: per family (its
    rounds: round s, once its first s suspects are explained, as (each suspect's ln Bayes
    factor, every other hypothesis's); how many hypotheses its prior is spread over; how many
    of its suspects are named, its first ones (the others are alternatives); whether they are
    named in order, round s's factors measured again without the first s's instances
    (localise.py), or each from the same factors (compute, forecast: one round)). Round 1 is
    `weigh` of every family's round 0, its most probable named suspect the first, with the
    probability `weigh` gives it; each later round takes the suspects already picked as real
    and explained (out of the hypotheses; a family in order moves to its next round) and weighs
    the rest with the same priors: the next suspect is the most probable named one, its
    probability conditional on those before it. Ties: by `key(family, index)`."""
    taken: List[List[int]] = [[] for _ in families]
    picks: List[Tuple[int, int, float]] = []
    while True:
        state, cands = [], []
        for f, (rounds, n, named, in_order) in enumerate(families):
            bfs, rest = rounds[min(len(taken[f]), len(rounds) - 1) if in_order else 0]
            keep = [i for i in range(len(bfs)) if i not in taken[f]]
            state.append(([bfs[i] for i in keep], rest, n))
            nxt = ([len(taken[f])] if len(taken[f]) < named else []) if in_order else \
                [i for i in range(named) if i not in taken[f]]
            cands.extend((f, i, keep.index(i)) for i in nxt)
        if not cands:
            return picks
        post = weigh(state)[1]
        f, i, p = min(((f, i, post[f][at]) for f, i, at in cands),
                      key=lambda c: (-round(c[2], 6), key(c[0], c[1])))
        picks.append((f, i, p))
        taken[f].append(i)


def given_the_others(families: Sequence[Tuple[Tuple[Sequence[float], np.ndarray],
                                             Sequence[Tuple[Sequence[float], np.ndarray]], int]],
                     picks: Sequence[Tuple[int, int, float]]) -> List[Tuple[int, int, float]]:
    """Each named suspect (`picks`: in_turn's, in that order) with the posterior of one round
    in which every other named suspect is taken as real and explained: out of the hypotheses,
    and a family in order (the network) measured again without their instances. `families`:
    per family (its factors with every one of its named suspects explained, as (each suspect's
    ln Bayes factor, every other hypothesis's); per named suspect i, its factors with every
    OTHER one of its named suspects explained; how many hypotheses its prior is spread over).
    The rest is weighed as in_turn weighs it, with the same priors; the last pick's is its
    in_turn probability (every other named suspect is before it). Symmetric: two equally
    clear faults read alike, each given the other."""
    named = [[i for g, i, _ in picks if g == f] for f in range(len(families))]
    out = []
    for f, i, _ in picks:
        state, at = [], 0
        for g, (every, each, n) in enumerate(families):
            bfs, rest = each[i] if g == f else every
            keep = [k for k in range(len(bfs)) if k not in named[g] or (g, k) == (f, i)]
            state.append(([bfs[k] for k in keep], rest, n))
            at = keep.index(i) if g == f else at
        out.append((f, i, weigh(state)[1][f][at]))
    return out


def verdict_of(named: bool, probability: float) -> str:
    """`suspects` when a suspect is named; else `inconclusive` when a fault is the more likely
    (INCONCLUSIVE_P), `healthy` when "all healthy" is."""
    if named:
        return "suspects"
    return "inconclusive" if probability >= INCONCLUSIVE_P else "healthy"


_WHERE = {"compute": "a GPU (or a TP group's GPUs) slower than its stage in some iterations",
          "network": "the network: collectives or transfers slower than their peers' or the "
                     "forecast's in places",
          "forecast": "the whole job against its forecast"}


def next_steps(unnamed: Dict[str, float], iterations: int, source: str, timers: str,
               leading: str = "") -> str:
    """What an inconclusive verdict asks for: where the probability sits (the family holding
    most of it, unnamed; `leading`: the compute unit it leans on most, compute.Found.leading)
    and what to collect so that a part can be named or cleared."""
    lead = max(FAMILY_NAMES, key=lambda f: (unnamed.get(f, 0.0), -FAMILY_NAMES.index(f)))
    where = _WHERE[lead] + (f" (the likeliest: {leading})" if lead == "compute" and leading
                            else "")
    asks = [f"diagnose more iterations ({iterations} read: each one a fault slows adds to its "
            f"evidence, each one it does not clears a healthy part)"]
    if source != "kineto":
        asks.append("collect profiler traces instead of rank logs (each collective on its own, "
                    "with its process group, and every kernel's interval)")
    if lead == "compute" and leading:
        asks.append("check that GPU's clocks and throttling (nvidia-smi -q -d PERFORMANCE): "
                    "one slower than its peers in every iteration by less than a faulty GPU's "
                    "5 % is not named however many iterations are read")
    if timers == "megatron":
        asks.append("log compute-only timers, or collect traces (Megatron-LM's timers fold a "
                    "TP group's GPUs into one)")
    return (f"{whole_percent(unnamed.get(lead, 0.0))} of it sits with {where}, none of it on one "
            f"part enough to name it (odds of 19 to 1 against all healthy); next, "
            + "; or ".join(asks))


__all__ = ["DEFAULT_BAND", "FAMILIES", "FAMILY_NAMES", "INCONCLUSIVE_P", "PRIOR_ODDS", "band_of",
           "given_the_others", "in_turn", "next_steps", "verdict_of", "weigh"]
