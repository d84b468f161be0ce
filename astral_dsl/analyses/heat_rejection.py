"""Heat rejection of one facility-water circuit, hour by hour over a typical year.

Each hour the water leaving the dry coolers (cooling towers) is the outdoor dry bulb (wet bulb)
plus their approach. At or below the circuit's supply temperature the heat rejection carries the
whole load (free cooling); above it, with an integrated economiser, it pre-cools the return water
and the chillers take the share (leaving - supply) / (return - supply), and all of it from the
return temperature up (formulas.chiller_share). The chillers' COP follows the lift between the
supply and the condenser water (the leaving water of the heat rejection, formulas.chiller_cop)
or is a declared constant. The heat rejection's fans draw `rejection_fan_ratio` of the heat they
reject: the circuit's heat plus the chillers' work.

Without a climate the hours come from the declared `free_cooling` (all the heat on the chillers
in the other hours, at the chiller's rated COP). The annual figures are averages over the hours
(a file shorter than a year stands for it in proportion); the peak is the hottest hour at the
peak load."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses import formulas
from astral_dsl.analyses.formulas import HOURS_PER_YEAR


@attrs.frozen
class Chiller:
    """A chiller model: a constant COP (`rated_supply` None), or its COP at a rating point."""
    cop: float
    rated_supply_c: Optional[float] = None
    rated_condenser_c: Optional[float] = None
    max_cop: Optional[float] = None

    def at(self, supply_c: float, condenser_c: Optional[float]) -> float:
        if self.rated_supply_c is None or self.rated_condenser_c is None or condenser_c is None:
            return self.cop
        return formulas.chiller_cop(self.cop, self.rated_supply_c, self.rated_condenser_c,
                                    supply_c, condenser_c,
                                    self.max_cop if self.max_cop else math.inf)


@attrs.frozen
class Plan:
    """What a circuit declares for its heat rejection."""
    supply_c: float
    return_c: Optional[float]          # None: no `rise` (no partial hours)
    rejection: str = "dry_cooler"      # or cooling_tower
    approach_k: float = 0.0
    economiser: str = "integrated"
    chiller: Optional[Chiller] = None
    fan_ratio: float = 0.0
    free_cooling_h: Optional[float] = None    # declared hours (no climate)


@attrs.frozen
class Hour:
    """One hour of a circuit at a heat load."""
    share: float          # of the heat on the chillers
    chillers_w: float
    fans_w: float         # the heat rejection's


@attrs.frozen
class Year:
    """A circuit over the year at its average heat, and the hours by mode."""
    chillers_w: float     # average
    fans_w: float         # average
    free_h: float         # hours a year with the chillers off
    partial_h: float      # chillers taking part of the heat
    mechanical_h: float   # chillers taking all of it
    load: Tuple[float, ...] = ()   # chillers and fans, hour by hour


def leaving(plan: Plan, ambient_c: float) -> float:
    """The water leaving the heat rejection in an hour of `ambient_c` (dry or wet bulb)."""
    return ambient_c + plan.approach_k


def hour(plan: Plan, ambient_c: Optional[float], heat_w: float) -> Hour:
    """The chillers and fans of one hour; `ambient_c` None: a mechanical hour of a circuit
    without a climate."""
    if ambient_c is None:
        share, condenser = 1.0, None
    else:
        condenser = leaving(plan, ambient_c)
        ret = plan.return_c if plan.return_c is not None else plan.supply_c + 1e-9
        economiser = plan.economiser if plan.return_c is not None or \
            plan.economiser == "none" else "switchover"
        share = formulas.chiller_share(condenser, plan.supply_c, ret, economiser)
    chillers = 0.0
    if share > 0 and plan.chiller is not None:
        chillers = share * heat_w / plan.chiller.at(plan.supply_c, condenser)
    return Hour(share, chillers, plan.fan_ratio * (heat_w + chillers))


_FACTORS: Dict[Tuple[int, Plan], Tuple[object, Tuple[float, ...], Tuple[float, ...]]] = {}


def factors(plan: Plan, ambient: Sequence[float]) -> Tuple[Tuple[float, ...],
                                                          Tuple[float, ...]]:
    """(chiller share, chiller share / COP) of every hour of `ambient`: the arithmetic of
    `hour` (and of formulas.chiller_share and chiller_cop, which tests hold it to) without
    their checks, for 8,760 hours at a time. The chillers draw heat x the second, at any heat;
    kept per (hours, plan) for this process (a scenario's second analysis)."""
    key = (id(ambient), plan)
    hit = _FACTORS.get(key)
    if hit is not None and hit[0] is ambient:
        return hit[1], hit[2]
    s = plan.supply_c
    r = plan.return_c
    econ = plan.economiser if r is not None or plan.economiser == "none" else "switchover"
    span = (r - s) if r is not None else 1.0
    ch = plan.chiller
    lift_model = ch is not None and ch.rated_supply_c is not None and \
        ch.rated_condenser_c is not None
    scale = top = 0.0
    if lift_model:
        rated = (ch.rated_supply_c + 273.15) / (ch.rated_condenser_c - ch.rated_supply_c)
        scale = ch.cop / rated * (s + 273.15)
        top = ch.max_cop if ch.max_cop else math.inf
    shares, per_watt = [], []
    for t in ambient:
        x = t + plan.approach_k
        if econ == "none":
            share = 1.0
        elif x <= s:
            share = 0.0
        elif econ == "integrated" and x < r:
            share = (x - s) / span
        else:
            share = 1.0
        k = 0.0
        if share > 0.0 and ch is not None:
            if lift_model:
                cop = scale / (x - s) if x > s else math.inf
                k = share / (cop if cop < top else top)
            else:
                k = share / ch.cop
        shares.append(share)
        per_watt.append(k)
    if len(_FACTORS) > 32:
        _FACTORS.clear()
    out = (tuple(shares), tuple(per_watt))
    _FACTORS[key] = (ambient, *out)
    return out


def series(plan: Plan, ambient: Sequence[float], heat_w: float
           ) -> Tuple[Tuple[float, ...], List[float], List[float]]:
    """(chiller share, chillers W, heat rejection fans W) of every hour of `ambient` at
    `heat_w`."""
    shares, per_watt = factors(plan, ambient)
    chillers = [heat_w * k for k in per_watt]
    ratio = plan.fan_ratio
    return shares, chillers, [ratio * (heat_w + w) for w in chillers]


def year(plan: Plan, ambient: Optional[Sequence[float]], heat_w: float) -> Year:
    """The circuit at `heat_w` over the hours of `ambient` (a typical year, or a sample of one),
    or over the declared free-cooling hours without a climate; `load` holds each hour's
    chillers and fans together (one value, the average, without a climate)."""
    if ambient is None:
        free = min(plan.free_cooling_h or 0.0, HOURS_PER_YEAR)
        mech = HOURS_PER_YEAR - free
        on = hour(plan, None, heat_w)
        off = hour(plan, plan.supply_c - plan.approach_k - 1.0, heat_w) if free else on
        w = mech / HOURS_PER_YEAR
        chillers, fans = on.chillers_w * w, on.fans_w * w + off.fans_w * (1 - w)
        return Year(chillers, fans, free, 0.0, mech, (chillers + fans,))
    shares, chillers, fans = series(plan, ambient, heat_w)
    n = len(shares)
    scale = HOURS_PER_YEAR / n
    free = sum(1 for x in shares if x <= 0.0) * scale
    mech = sum(1 for x in shares if x >= 1.0) * scale
    return Year(sum(chillers) / n, sum(fans) / n, free, HOURS_PER_YEAR - free - mech, mech,
                tuple(c + f for c, f in zip(chillers, fans)))


def peak(plan: Plan, ambient: Optional[Sequence[float]],
         heat_w: float) -> Tuple[List[float], List[float]]:
    """(chillers, fans) of every hour at the peak heat; one hour without a climate: the
    chillers carrying all of it when any hour needs them."""
    if ambient is None:
        needs = (plan.free_cooling_h or 0.0) < HOURS_PER_YEAR
        h = hour(plan, None, heat_w) if needs else \
            hour(plan, plan.supply_c - plan.approach_k - 1.0, heat_w)
        return [h.chillers_w], [h.fans_w]
    _, chillers, fans = series(plan, ambient, heat_w)
    return chillers, fans
