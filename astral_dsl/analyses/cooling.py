"""Cooling: heat split into liquid (cold plates, analyses/loops.py) and air (analyses/air.py),
loop flows, CDUs, pumps, air flow, and the annualised PUE. Every electrical watt ends as heat;
heat that no loop or air unit removes, and a design with no cooling at all, are reported
(W651-W653) rather than counted as removed."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses.air import AirResult, analyse_air, uncooled_network
from astral_dsl.analyses.loops import LoopResult, analyse_loop, liquid_heat
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity, format_number, readable

__all__ = ["AirResult", "CoolingResult", "LoopResult", "analyse_cooling", "liquid_heat"]

HOURS_PER_YEAR = 8760.0   # a 365-day year


@attrs.frozen
class CoolingResult:
    liquid_heat_w: float
    air_heat_w: float
    loops: Tuple[LoopResult, ...]
    air: Tuple[AirResult, ...]
    pump_w: float
    fan_w: float
    chiller_w: float          # average over the year
    facility_w: float         # IT (average) + losses + cooling, average over the year
    pue: Optional[float]
    water_class: Optional[str]
    diagnostics: Tuple[Diagnostic, ...]
    requirements: Tuple = ()
    cdu_w: float = 0.0


def _si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def _err(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, msg, span, hint)


def _warn(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, msg, span, hint)


def analyse_cooling(design: Design, it_average_w: float, losses_w: float, network_w: float,
                    cache: Optional[Dict] = None, overrides: Optional[Dict] = None,
                    fabrics=(), served: Optional[Served] = None) -> CoolingResult:
    """`overrides`: {(path, field): value} from a scenario (a hotter supply, a failed CDU).
    `fabrics`: the network's switch counts: an air unit with `network = true` removes the heat
    of the fabrics attached at or below its owner; heat no unit removes is a warning."""
    cache = {} if cache is None else cache
    overrides = overrides or {}
    resolve = Resolver(design)
    mult = multiplicities(design)
    served = served if served is not None else Served(design, mult, resolve, cache)
    diags: List[Diagnostic] = []
    total_power = sum(power_of(r, cache).si for r in design.roots)
    total_liquid = sum(liquid_heat(r, cache) for r in design.roots)
    loops, air, reqs = [], [], []
    for replicas, inst in mult.values():
        if inst.kind == "loop":
            loops.append(analyse_loop(inst, replicas, served.of(inst), resolve, cache, overrides,
                                      diags, reqs))
        elif inst.kind == "air":
            air.append(analyse_air(inst, replicas, _physical_owner(served, inst),
                                   served.of(inst), cache, diags, fabrics))
    uncooled_network(design, air, fabrics, diags)
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
    pump = sum(l.replicas * l.pump_w for l in loops)
    cdu_w = sum(l.replicas * l.cdu_w for l in loops)
    fan = sum(a.replicas * a.heat_w * (a.fan_power_ratio or 0.0) for a in air)
    chiller = 0.0
    water_class = None
    if facility is not None:
        cls = facility.field("water_class")
        water_class = cls.name if isinstance(cls, Symbol) else None
        cop = _si(facility.field("chiller_cop"))
        free = _si(facility.field("free_cooling"))
        free_h = free / 3600.0 if free is not None else 0.0
        if cop:
            # PUE is a ratio of yearly energies: the chillers reject the average IT heat
            chiller = it_average_w / cop * max(0.0, HOURS_PER_YEAR - free_h) / HOURS_PER_YEAR
        elif free_h < HOURS_PER_YEAR:
            diags.append(_warn("W656", f"facility `{facility.path}` declares no `chiller_cop`: "
                                       f"its chillers count as 0 W for the "
                                       f"{readable.grouped(HOURS_PER_YEAR - free_h)} h a year "
                                       f"without free cooling", facility.span,
                               "declare `chiller_cop`, or `free_cooling = 8760 h` if no "
                               "chiller runs"))
        supply = facility.field("supply")
        if cls is not None and isinstance(supply, Quantity) and water_class and \
                water_class[1:].isdigit() and supply.value_in("degC") > int(water_class[1:]):
            diags.append(_err("E645", f"facility water at {supply} exceeds class {water_class} "
                                      f"(supply at most {water_class[1:]} degC, ASHRAE)",
                              facility.span_of("supply")))
    elif cooled and design.roots:
        root = design.roots[0]
        diags.append(_warn("W656", f"no `facility` is declared: heat rejection (chillers, dry "
                                   f"coolers) counts as 0 W in the facility power and the PUE",
                           root.span, "declare `facility { ... }` in the site with its "
                                      "`chiller_cop` and `free_cooling` hours"))
    facility_w = it_average_w + losses_w + pump + cdu_w + fan + chiller
    pue = facility_w / it_average_w if it_average_w and cooled else None
    return CoolingResult(total_liquid, total_power + network_w - total_liquid, tuple(loops),
                         tuple(air), pump, fan, chiller, facility_w, pue, water_class,
                         tuple(diags), tuple(reqs), cdu_w)


def _physical_owner(served: Served, inst: Instance) -> Optional[Instance]:
    owner = served.owner_of(inst)
    while owner is not None and owner.level is None:
        owner = served.owner_of(owner)
    return owner


def _heat_paths(design, mult, served: Served, loops, air, cache, diags) -> None:
    """W651 (W652): racks whose cold-plate (air) heat no loop (air unit) removes."""
    by_path = {i.path: i for _, i in mult.values()}
    for code, units, heat_of, what, unit in (
            ("W651", loops, lambda r: liquid_heat(r, cache), "cold-plate", "loop"),
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
