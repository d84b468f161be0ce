"""The facility's own consumers hour by hour (CDUs, pumps, fans, chillers, heat rejection fans,
lighting and auxiliaries), for the design and for each of its sites.

A site's consumers are those of the cooling parts it holds (its loops' pumps and CDUs, its air
units' fans, its facility-water circuits' pumps, chillers and heat rejection, each counted for
the replicas of it the site holds) and its own `auxiliary`: its mechanical feeders and its
transformers carry those, not a share of the design's by IT load (a site on free cooling does
not carry another site's chillers). A site's conversion losses and auxiliaries heat its own
circuits (extra_by_site, allocate_by_site), not another site's. What no site holds (a part of a
design whose root is no site) is shared by the sites' shares of the IT load
(analyses/sites.py)."""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

from astral_dsl.units import Quantity

# one circuit's hourly chillers and fans: (its heat, W; k per hour, the chillers' draw per watt
# of heat; its heat rejection's fan ratio)
Term = Tuple[float, Sequence[float], float]


# hourly's results by their inputs: a circuit's k per hour is heat_rejection.profile's, one
# tuple per (climate, plan) in a process, so that a design compiled again with the same cooling
# (a margins probe of a job's or a rack's figure, a sweep's point, a scenario's second analysis)
# asks for the same hours again: 8,760 of them a circuit, two lists a site, a millisecond each.
# A key holds the floats' exact bits (float.hex: 0.0 and -0.0 apart) and the k tuples' ids (the
# tuples kept with the result, so an id is theirs); at most _KEPT results (a year's hours are
# ~0.3 MB of floats).
_HOURS: Dict[tuple, Tuple[tuple, Tuple[float, ...]]] = {}
_KEPT = 16


def hourly(base: float, circuits_: List[Term]) -> Tuple[float, ...]:
    """`base` plus every circuit's chillers and fans, hour by hour: heat x (k (1 + ratio) +
    ratio) for (heat, k per hour, fan ratio); a circuit without a climate holds one k for every
    hour. Immutable: the same tuple for the same inputs (_HOURS)."""
    key = (float(base).hex(),) + tuple((float(q).hex(), id(k), float(r).hex())
                                       for q, k, r in circuits_)
    hit = _HOURS.get(key)
    if hit is not None and all(a is b for a, (_, b, _) in zip(hit[0], circuits_)):
        return hit[1]
    out = tuple(_hourly(base, circuits_))
    if len(_HOURS) >= _KEPT:
        _HOURS.clear()
    _HOURS[key] = (tuple(k for _, k, _ in circuits_), out)
    return out


def mean_square(a: float, hours: Sequence[float]) -> float:
    """The mean over `hours` of (a + the hour's) squared (the transformers' load losses), kept
    with hourly's results: the same for the same `a` and hours (one of hourly's tuples)."""
    key = ("square", float(a).hex(), id(hours))
    hit = _HOURS.get(key)
    if hit is not None and hit[0] is hours:
        return hit[1]
    out = sum([(a + h) ** 2 for h in hours]) / len(hours)
    if len(_HOURS) >= _KEPT:
        _HOURS.clear()
    _HOURS[key] = (hours, out)
    return out


def _hourly(base: float, circuits_: List[Term]) -> List[float]:
    n = max((len(k) for _, k, _ in circuits_), default=1)
    c = base + sum(q * r for q, _, r in circuits_)
    terms = [(q * (1 + r), k if len(k) == n else (k[-1],) * n) for q, k, r in circuits_]
    if not terms:
        return [c] * n
    # the circuits added in their order, the first two in one pass (the same sums as a pass
    # per circuit, without a list of 8,760 hours for each: a millisecond of a check)
    (w, k), rest = terms[0], terms[1:]
    if rest:
        (v, j), rest = rest[0], rest[1:]
        out = [c + w * x + v * y for x, y in zip(k, j)]
    else:
        out = [c + w * x for x in k]
    for w, k in rest:
        out = [a + w * x for a, x in zip(out, k)]
    return out


def by_site(every, by_path: Dict, loops, air, years, base: Tuple[float, float],
            design: Tuple[List[float], List[float]]) -> List[Tuple[List[float], List[float]]]:
    """For each site of `every` (analyses/sites.py), its consumers hour by hour (on average,
    at the peak), from the loops' and air units' results, the circuits' (`years`: (CircuitYear,
    heat_rejection.Profile)) and the design's base draw (CDUs, pumps, fans and auxiliaries, W:
    average, peak). One site: the design's own hours (`design`)."""
    if len(every) <= 1:
        return [design] * len(every)

    def held(site, path: str, replicas: int) -> float:
        """The share of a part's replicas the site holds."""
        inst = by_path.get(path)
        return site.replicas.get(id(inst), 0) / replicas if inst is not None and replicas \
            else 0.0

    own = []
    for site in every:
        avg = peak = _si(site.inst.field("auxiliary"))
        for lp in loops:
            w = held(site, lp.path, lp.replicas) * lp.replicas * (lp.pump_w + lp.cdu_w)
            avg, peak = avg + w, peak + w
        for a in air:
            w = held(site, a.path, a.replicas) * a.replicas * (a.fan_power_ratio or 0.0)
            avg, peak = avg + w * a.average_heat_w, peak + w * a.heat_w
        weights = [held(site, cy.circuit.path, cy.circuit.replicas) for cy, _ in years]
        pumps = sum(w * cy.circuit.pump_w for w, (cy, _) in zip(weights, years))
        own.append([avg + pumps, peak + pumps, weights])
    # what no site holds, by the sites' shares of the IT load
    rest = (base[0] - sum(o[0] for o in own), base[1] - sum(o[1] for o in own))
    left = [1.0 - sum(o[2][c] for o in own) for c in range(len(years))]
    out = []
    for site, (avg, peak, weights) in zip(every, own):
        w = [x + site.share * y for x, y in zip(weights, left)]
        out.append((hourly(avg + site.share * rest[0],
                           [(x * cy.circuit.average_w, pr.average, pr.ratio)
                            for x, (cy, pr) in zip(w, years)]),
                    hourly(peak + site.share * rest[1],
                           [(x * cy.circuit.peak_w, pr.peak, pr.ratio)
                            for x, (cy, pr) in zip(w, years)])))
    return out


def extra_by_site(every, by_path: Dict, feeders, loss: Callable,
                  total: Tuple[float, float]) -> List[Tuple[float, float]]:
    """Each site's conversion losses (its IT feeders' `loss` at their average and peak loads,
    for the replicas of each it holds) and its `auxiliary` (average, peak, W); what no site
    holds of `total` (the design's), by the sites' shares of the IT load."""
    out = []
    for site in every:
        aux = _si(site.inst.field("auxiliary"))
        avg, peak = _feeder_losses(site, by_path, feeders, loss, (aux, aux))
        out.append((avg, peak))
    return _rest_by_share(every, out, total)


def it_by_site(every, by_path: Dict, it: Dict[int, Tuple[float, float]], fabrics, feeders,
               loss: Callable, total: Tuple[float, float]) -> List[Tuple[float, float]]:
    """What each site's transformers carry besides its own consumers (average, peak, W): the IT
    load of the site (`it`: id(site) -> its hosts' average at their utilization and its peak,
    analyses/utilization.py and rollup `power`), its fabrics' switches (the replicas of their
    owner it holds: at full power, as the power analysis counts them) and the losses of the
    feeders it holds (`feeders`, IT and mechanical: `loss` at their average and peak loads), so
    that a site whose feeders convert at 80 % carries its own losses, not a share of every
    site's by IT load; what no site holds of `total` (the design's), by the sites' shares."""
    out = []
    for site in every:
        avg, peak = it.get(id(site.inst), (0.0, 0.0))
        for f in fabrics:
            owner = by_path.get(f.owner)
            n = site.replicas.get(id(owner), 0) / max(f.instances, 1) if owner is not None \
                else 0.0
            avg, peak = avg + n * f.power_w, peak + n * f.power_w
        out.append(_feeder_losses(site, by_path, feeders, loss, (avg, peak)))
    return _rest_by_share(every, out, total)


def _feeder_losses(site, by_path: Dict, feeders, loss: Callable,
                   start: Tuple[float, float]) -> Tuple[float, float]:
    """`start` plus the losses of the feeders' replicas the site holds that are in service
    (at their average and peak loads)."""
    avg, peak = start
    for f in feeders:
        inst = by_path.get(f.path)
        n = site.replicas.get(id(inst), 0) * f.running if inst is not None else 0
        avg, peak = avg + n * loss(f, f.average_w), peak + n * loss(f, f.normal_w)
    return avg, peak


def _rest_by_share(every, out: List[Tuple[float, float]],
                   total: Tuple[float, float]) -> List[Tuple[float, float]]:
    """Each site's (average, peak) and its share of what no site holds of `total`."""
    rest = (total[0] - sum(a for a, _ in out), total[1] - sum(p for _, p in out))
    return [(a + site.share * rest[0], p + site.share * rest[1])
            for site, (a, p) in zip(every, out)]


def allocate_by_site(every, per: Dict, circuits_: List, extras: List[Tuple[float, float]],
                     allocate: Callable) -> Dict[int, Tuple[float, float]]:
    """The sites' losses and auxiliaries (`extras`) shared by the circuits each site holds as
    `allocate` shares them (by air heat); a site that holds none shares its own among all."""
    out: Dict[int, Tuple[float, float]] = {}
    for site, extra in zip(every, extras):
        own = {id(c) for c in circuits_ if site.holds(c)}
        mine = {k: v for k, v in per.items() if k in own}
        got = allocate(mine, extra)
        if not any(a or b for a, b in got.values()):
            got = allocate(per, extra)
        for k, (a, b) in got.items():
            had = out.get(k, (0.0, 0.0))
            out[k] = (had[0] + a, had[1] + b)
    return out


def _si(v) -> float:
    return v.si if isinstance(v, Quantity) else 0.0
