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

import base64
import math
import sys
from array import array
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.formulas import HOURS_PER_YEAR


@records.frozen(slots=False)
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


@records.frozen(slots=False)
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


@records.frozen(slots=False)
class Profile:
    """A circuit's heat rejection per watt of heat, hour by hour: in hour h its chillers draw
    heat x k[h] (k: the chillers' share over their COP) and its fans `ratio` x (heat +
    chillers). `average` holds the hours of the annual basis, `peak` those the peak is the
    hottest of (the same hours with a climate; one value each without: the average over the
    declared free-cooling hours, and the chillers carrying it all)."""
    average: Tuple[float, ...]
    peak: Tuple[float, ...]
    free_h: float           # hours a year with the chillers off
    partial_h: float        # chillers taking part of the heat
    mechanical_h: float     # chillers taking all of it
    ratio: float = 0.0

    @property
    def mean(self) -> float:
        return sum(self.average) / len(self.average)


@records.frozen(slots=False)
class Year:
    """A circuit over the year at its average heat, and the hours by mode."""
    chillers_w: float     # average
    fans_w: float         # average
    free_h: float
    partial_h: float
    mechanical_h: float


_PROFILES: Dict[Tuple[int, Plan], Tuple[object, Profile]] = {}


def profile(plan: Plan, ambient: Optional[Sequence[float]], key: str = "") -> Profile:
    """The circuit's heat rejection per watt over the hours of `ambient` (a typical year, or a
    sample of one), or over its declared free-cooling hours without a climate: the arithmetic of
    formulas.chiller_share and chiller_cop (tests hold it to them) without their checks, 8,760
    hours at a time, kept per (hours, plan) for this process (a scenario's second analysis) and,
    when `key` names the hours (a climate file's digest and column), in the per-user cache as
    the bytes of its doubles: the very numbers computed without it."""
    if ambient is None:
        free = min(plan.free_cooling_h or 0.0, HOURS_PER_YEAR)
        mech = HOURS_PER_YEAR - free
        cop = plan.chiller.at(plan.supply_c, None) if plan.chiller is not None else None
        k = 1.0 / cop if cop else 0.0
        return Profile((k * mech / HOURS_PER_YEAR,), (k if mech else 0.0,), free, 0.0, mech,
                       plan.fan_ratio)
    memo = (id(ambient), plan)
    hit = _PROFILES.get(memo)
    if hit is not None and hit[0] is ambient:
        return hit[1]
    out = _stored(plan, key, len(ambient)) if key else None
    if out is None:
        out = _compute(plan, ambient)
        if key:
            _store(plan, key, out)
    if len(_PROFILES) > 32:
        _PROFILES.clear()
    _PROFILES[memo] = (ambient, out)
    return out


def _cache_key(plan: Plan, key: str) -> Tuple[str, str]:
    from astral_dsl import usercache

    text = f"rejection 1 {sys.byteorder} {key} {plan!r}"
    return f"rejection-{usercache.sha256_hex(text.encode())[:16]}", text


def _stored(plan: Plan, key: str, n: int) -> Optional[Profile]:
    from astral_dsl import usercache

    name, text = _cache_key(plan, key)
    got = usercache.read(name, text)
    try:
        k = tuple(array("d", base64.b64decode(got["k"], validate=True)))
        hours = [float(got[f]) for f in ("free_h", "partial_h", "mechanical_h")]
    except (KeyError, TypeError, ValueError):
        return None
    return Profile(k, k, *hours, plan.fan_ratio) if len(k) == n else None


def _store(plan: Plan, key: str, p: Profile) -> None:
    from astral_dsl import usercache

    name, text = _cache_key(plan, key)
    usercache.write(name, text, {"k": base64.b64encode(array("d", p.average).tobytes())
                                 .decode("ascii"), "free_h": p.free_h,
                                 "partial_h": p.partial_h, "mechanical_h": p.mechanical_h})
    usercache.prune("rejection-", keep=32)


def _compute(plan: Plan, ambient: Sequence[float]) -> Profile:
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
    per_watt = []
    free = mech = 0
    seen: Dict[float, Tuple[float, float]] = {}       # weather repeats its 0.1 K values
    for t in ambient:
        hit = seen.get(t)
        if hit is not None:
            share, k = hit
            free += share <= 0.0
            mech += share >= 1.0
            per_watt.append(k)
            continue
        x = t + plan.approach_k
        if econ == "none":
            share = 1.0
        elif x <= s:
            share = 0.0
        elif econ == "integrated" and x < r:
            share = (x - s) / span
        else:
            share = 1.0
        free += share <= 0.0
        mech += share >= 1.0
        k = 0.0
        if share > 0.0 and ch is not None:
            if lift_model:
                cop = scale / (x - s) if x > s else math.inf
                k = share / (cop if cop < top else top)
            else:
                k = share / ch.cop
        seen[t] = (share, k)
        per_watt.append(k)
    n = len(per_watt)
    hours = HOURS_PER_YEAR / n
    k = tuple(per_watt)
    return Profile(k, k, free * hours, HOURS_PER_YEAR - (free + mech) * hours, mech * hours,
                   plan.fan_ratio)


def series(plan: Plan, ambient: Sequence[float], heat_w: float
           ) -> Tuple[List[float], List[float]]:
    """(chillers W, heat rejection fans W) of every hour of `ambient` at `heat_w`."""
    chillers = [heat_w * k for k in profile(plan, ambient).average]
    return chillers, [plan.fan_ratio * (heat_w + w) for w in chillers]


def year(plan: Plan, ambient: Optional[Sequence[float]], heat_w: float) -> Year:
    """The circuit at `heat_w` on the annual basis: the chillers draw heat x mean(k)."""
    p = profile(plan, ambient)
    chillers = heat_w * p.mean
    return Year(chillers, p.ratio * (heat_w + chillers), p.free_h, p.partial_h, p.mechanical_h)
