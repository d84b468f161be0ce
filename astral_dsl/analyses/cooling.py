"""Cooling: heat split into liquid (cold plates, analyses/loops.py) and air (analyses/air.py),
loop flows, CDUs, pumps, air flow, and the facility's draw by component with the annualised PUE
(analyses/facility.py). Every electrical watt ends as heat; heat that no loop or air unit
removes, and a design with no cooling at all, are reported (W647, W651-W653) rather than
counted as removed."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses.air import AirResult, analyse_air, uncooled_network
from astral_dsl.analyses.facility import Demand, Rejection, annual_and_peak, rejection_of
from astral_dsl.analyses.loops import LoopResult, analyse_loop, liquid_heat
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.utilization import Averages
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.units import Quantity, readable

__all__ = ["AirResult", "CoolingResult", "Demand", "LoopResult", "analyse_cooling",
           "liquid_heat"]


@attrs.frozen
class CoolingResult:
    liquid_heat_w: float
    air_heat_w: float
    loops: Tuple[LoopResult, ...]
    air: Tuple[AirResult, ...]
    pump_w: float
    fan_w: float              # air units' fans, average over the year
    chiller_w: float          # average over the year
    facility_w: float         # IT (average) + losses + cooling, average over the year
    pue: Optional[float]
    water_class: Optional[str]
    diagnostics: Tuple[Diagnostic, ...]
    requirements: Tuple = ()
    cdu_w: float = 0.0
    average: Optional[Demand] = None     # the facility's draw by component, annual average
    peak: Optional[Demand] = None        # and at the peak (the utility connection)
    rejection: Rejection = Rejection()


def _si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def _err(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, msg, span, hint)


def _warn(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, msg, span, hint)


def analyse_cooling(design: Design, power, cache: Optional[Dict] = None,
                    overrides: Optional[Dict] = None, fabrics=(),
                    served: Optional[Served] = None,
                    averages: Optional[Averages] = None) -> CoolingResult:
    """`power`: the PowerResult (IT load and conversion losses, average and peak).
    `overrides`: {(path, field): value} from a scenario (a failed CDU).
    `fabrics`: the network's switch counts: an air unit (a loop) with `network = true` removes
    the air (cold-plate) heat of the fabrics attached at or below its owner; heat no unit
    removes is a warning."""
    cache = {} if cache is None else cache
    overrides = overrides or {}
    resolve = Resolver(design)
    mult = multiplicities(design)
    served = served if served is not None else Served(design, mult, resolve, cache, fabrics)
    averages = averages if averages is not None else Averages(design, mult, cache)
    diags: List[Diagnostic] = []
    total_power = sum(power_of(r, cache).si for r in design.roots)
    network_w = sum(f.power_w for f in fabrics)
    network_liquid = sum(served.fabric_split(f)[1] * max(f.instances, 1) for f in fabrics)
    total_liquid = sum(liquid_heat(r, cache) for r in design.roots) + network_liquid
    loops, air, reqs = [], [], []
    for replicas, inst in mult.values():
        if inst.kind == "loop":
            loops.append(analyse_loop(inst, replicas, served.of(inst), resolve, cache, overrides,
                                      diags, reqs, served.network(inst)[1],
                                      served.physical_owner(inst)))
        elif inst.kind == "air":
            air.append(analyse_air(inst, replicas, served.physical_owner(inst),
                                   served.of(inst), cache, diags, served, averages))
    loops.sort(key=lambda lp: lp.path)
    air.sort(key=lambda a: a.path)
    uncooled_network(mult, served, diags)
    facility = None
    for root in design.roots:
        for m in root.members:
            if isinstance(m.value, Instance) and m.value.kind == "facility":
                facility = m.value
    cooled = bool(loops or air or facility)
    if not cooled and total_power + network_w > 0 and design.roots:
        root = design.roots[0]
        diags.append(_warn("W653", f"no cooling is declared: the "
                                   f"{readable.power(total_power + network_w)} "
                                   f"of heat of `{root.path}` have no path out, and no PUE is "
                                   f"computed", root.span,
                           "declare the `loop`s and `air` units that remove the heat and the "
                           "`facility` that rejects it"))
    elif cooled:
        _heat_paths(design, mult, served, loops, air, cache, diags)
    rejection = rejection_of(facility, diags, design.roots[0] if design.roots else None,
                             cooled)
    if facility is not None:
        _water_class(facility, rejection, diags)
    pump = sum(lp.replicas * lp.pump_w for lp in loops)
    cdu_w = sum(lp.replicas * lp.cdu_w for lp in loops)
    fans = (sum(a.replicas * a.average_heat_w * (a.fan_power_ratio or 0.0) for a in air),
            sum(a.replicas * a.heat_w * (a.fan_power_ratio or 0.0) for a in air))
    average, peak = annual_and_peak(
        rejection, (power.it_average_w, power.it_peak_w),
        (power.conversion_loss_w, power.conversion_loss_peak_w), cdu_w, pump, fans)
    pue = average.total_w / power.it_average_w if power.it_average_w and cooled else None
    return CoolingResult(total_liquid, total_power + network_w - total_liquid, tuple(loops),
                         tuple(air), pump, average.fans_w, average.chillers_w, average.total_w,
                         pue, rejection.water_class, tuple(diags), tuple(reqs), cdu_w, average,
                         peak, rejection)


def _water_class(facility: Instance, rejection: Rejection, diags) -> None:
    supply = facility.field("supply")
    cls = rejection.water_class
    if isinstance(supply, Quantity) and cls and cls[1:].isdigit() and \
            supply.value_in("degC") > int(cls[1:]):
        diags.append(_err("E645", f"facility water at {supply} exceeds class {cls} "
                                  f"(supply at most {cls[1:]} degC, ASHRAE)",
                          facility.span_of("supply")))


def _heat_paths(design, mult, served: Served, loops, air, cache, diags) -> None:
    """W651 (W652): racks whose cold-plate (air) heat no loop (air unit) removes."""
    by_path = {i.path: i for _, i in mult.values()}
    for code, units, heat_of, what, unit in (
            ("W651", [lp for lp in loops if not _network_only(by_path.get(lp.path))],
             lambda r: liquid_heat(r, cache), "cold-plate", "loop"),
            ("W652", [a for a in air if not _network_only(by_path.get(a.path))],
             lambda r: power_of(r, cache).si - liquid_heat(r, cache), "air", "air unit")):
        covered: Dict[int, float] = {}
        for u in units:
            inst = by_path.get(u.path)
            if inst is None:
                continue
            for c, part in served.of(inst):
                for n, rack in _racks(part, cache):
                    covered[id(rack)] = covered.get(id(rack), 0.0) + u.replicas * c * n
        missing, watts, example = 0.0, 0.0, None
        for replicas, rack in _rack_like(design, mult):
            q = heat_of(rack)
            if q <= 1e-9:
                continue
            lost = replicas - covered.get(id(rack), 0.0)
            if lost > 1e-9:
                missing += lost
                watts += lost * q
                example = example or rack
        if missing:
            where = f"{readable.grouped(missing)} rack(s), e.g. `{example.path}`" \
                if example.kind == "rack" else f"`{example.path}`"
            diags.append(_warn(code, f"{readable.power(watts)} of {what} heat "
                                     f"({where}) reach no {unit}: that heat has no path out",
                               example.span, f"declare a {unit} that serves them"))


def _network_only(inst: Optional[Instance]) -> bool:
    return inst is not None and inst.field("network") is True and inst.field("serves") is None


def _racks(part: Instance, cache):
    racks = group_of(part, ("rack",), cache).flat()
    return racks if racks or part.kind == "rack" else ((1, part),)


def _rack_like(design: Design, mult):
    """The racks, or in a design without racks the sites (their heat as a whole)."""
    racks = [(m, i) for m, i in mult.values() if i.kind == "rack"]
    return racks or [(1, r) for r in design.roots]
