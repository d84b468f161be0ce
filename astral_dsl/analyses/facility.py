"""What the facility draws, component by component, on one basis each: the annual average (the
PUE is a ratio of yearly energies, The Green Grid, PUE: A Comprehensive Examination of the Metric,
2012) and the peak (what the utility connection must supply on the hottest hour at full load).

- IT: the hosts at their utilization, the switches at full power (analyses/utilization.py);
- conversion losses: each feeder's load over its efficiency (analyses/feeders.py);
- CDUs and pumps: the running CDUs' declared draw and the pumps at the loops' design flow, all
  year (constant-flow loops: the average is the design figure);
- fans: each air unit's `fan_power_ratio` times the heat it removes (average or peak);
- chillers: during the hours without free cooling, the heat that ends in the facility water
  over their COP. Every watt drawn inside the building ends as heat in that water (the IT,
  the conversion losses, the CDUs, the pumps and the air units' fans: conservatively, all of
  them are taken to be inside the cooled space). At the peak there is no free cooling;
- heat rejection: the dry coolers' or cooling towers' fans (the facility's
  `rejection_fan_ratio`) times the heat they reject, all year: the water's heat plus the
  chillers' own work when they run.

Data the design leaves out counts as 0 W with a warning (W656), never silently."""
from __future__ import annotations

from typing import List, Optional, Tuple

import attrs

from astral_dsl.analyses.formulas import HOURS_PER_YEAR
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity, readable

COMPONENTS = (("it_w", "IT"), ("losses_w", "conversion losses"), ("cdus_w", "CDUs"),
              ("pumps_w", "pumps"), ("fans_w", "fans (air units)"),
              ("chillers_w", "chillers"), ("rejection_w", "heat rejection fans"))


@attrs.frozen
class Demand:
    """The facility's draw by component (W), on one basis (average or peak)."""
    it_w: float
    losses_w: float = 0.0
    cdus_w: float = 0.0
    pumps_w: float = 0.0
    fans_w: float = 0.0
    chillers_w: float = 0.0
    rejection_w: float = 0.0

    @property
    def total_w(self) -> float:
        return sum(getattr(self, name) for name, _ in COMPONENTS)

    @property
    def water_heat_w(self) -> float:
        """The heat that ends in the facility water: everything but the chillers and the
        heat rejection's own fans."""
        return self.total_w - self.chillers_w - self.rejection_w


@attrs.frozen
class Rejection:
    """How the facility rejects its heat."""
    free_cooling_h: float = 0.0
    chiller_cop: Optional[float] = None
    fan_ratio: Optional[float] = None
    water_class: Optional[str] = None


def _si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def _warn(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, msg, span, hint)


def rejection_of(facility: Optional[Instance], diags: List[Diagnostic], root=None,
                 cooled: bool = True) -> Rejection:
    """The facility block's data; W656 for what it leaves out (or for no facility at all)."""
    if facility is None:
        if cooled and root is not None:
            diags.append(_warn("W656", "no `facility` is declared: heat rejection (chillers, "
                                       "dry coolers) counts as 0 W in the facility power and "
                                       "the PUE", root.span,
                               "declare `facility { ... }` in the site with its `chiller_cop`, "
                               "`free_cooling` hours and `rejection_fan_ratio`"))
        return Rejection()
    cls = facility.field("water_class")
    free = _si(facility.field("free_cooling"))
    free_h = free / 3600.0 if free is not None else 0.0
    cop = _si(facility.field("chiller_cop"))
    ratio = _si(facility.field("rejection_fan_ratio"))
    if not cop and free_h < HOURS_PER_YEAR:
        diags.append(_warn("W656", f"facility `{facility.path}` declares no `chiller_cop`: its "
                                   f"chillers count as 0 W for the "
                                   f"{readable.grouped(HOURS_PER_YEAR - free_h)} h a year "
                                   f"without free cooling", facility.span,
                           "declare `chiller_cop`, or `free_cooling = 8760 h` if no chiller "
                           "runs"))
    if ratio is None and free_h > 0:
        diags.append(_warn("W656", f"facility `{facility.path}` declares "
                                   f"{readable.grouped(free_h)} h of free cooling but no "
                                   f"`rejection_fan_ratio`: the fans of its dry coolers (or "
                                   f"cooling towers) count as 0 W in the facility power and the "
                                   f"PUE", facility.span_of("free_cooling"),
                           "declare `rejection_fan_ratio` (fan power per watt of heat "
                           "rejected, from the dry coolers' data sheet)"))
    return Rejection(free_h, cop, ratio, cls.name if isinstance(cls, Symbol) else None)


def demand(rejection: Rejection, it_w: float, losses_w: float, cdus_w: float, pumps_w: float,
           fans_w: float, peak: bool) -> Demand:
    """The facility's draw on one basis: `peak` is the hottest hour (chillers on, if any)."""
    inside = Demand(it_w, losses_w, cdus_w, pumps_w, fans_w)
    water = inside.water_heat_w
    chillers = 0.0
    if rejection.chiller_cop:
        mechanical = max(0.0, HOURS_PER_YEAR - rejection.free_cooling_h) / HOURS_PER_YEAR
        if peak:
            mechanical = 1.0 if mechanical > 0 else 0.0
        chillers = water / rejection.chiller_cop * mechanical
    rejected = (rejection.fan_ratio or 0.0) * (water + chillers)
    return attrs.evolve(inside, chillers_w=chillers, rejection_w=rejected)


def annual_and_peak(rejection: Rejection, it: Tuple[float, float], losses: Tuple[float, float],
                    cdus_w: float, pumps_w: float,
                    fans: Tuple[float, float]) -> Tuple[Demand, Demand]:
    """(annual average, peak); each pair is (average, peak)."""
    return (demand(rejection, it[0], losses[0], cdus_w, pumps_w, fans[0], False),
            demand(rejection, it[1], losses[1], cdus_w, pumps_w, fans[1], True))
