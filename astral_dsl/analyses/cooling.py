"""Cooling: heat split into liquid (cold plates) and air, loop flows from Q = m_dot * cp * dT
with fluid properties from CoolProp at the mean loop temperature, CDUs with N+1, pump power,
air flow, and the annualised PUE. Every electrical watt ends as heat (engineering.md)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses import formulas
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.model.values import Symbol, UnknownValue
from astral_dsl.units import Quantity, format_number

HOURS_PER_YEAR = 8760.0   # a 365-day year


@attrs.frozen
class LoopResult:
    path: str
    replicas: int
    fluid: str
    heat_w: float
    supply_c: float
    rise_k: float
    density: Optional[float]
    cp: Optional[float]
    flow_m3s: Optional[float]
    cdus_needed: Optional[int]
    cdus: Optional[int]
    cdu_capacity_w: Optional[float]
    pump_w: float
    parts: Tuple[Tuple[str, str, int, float, Optional[float]], ...] = ()
    # (kind, path, replicas per loop, liquid heat, flow) for the rows and racks it serves


@attrs.frozen
class AirResult:
    path: str
    replicas: int
    heat_w: float
    rise_k: float
    flow_m3s: float
    max_rack_heat_w: float
    owner: str = ""


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


def _si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def _err(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, msg, span, hint)


def liquid_heat(inst: Instance, cache: Dict) -> float:
    """Heat taken by cold plates: the declared share of this instance's power, else the sum of
    its parts' (a part with no share sends all its heat to air)."""
    key = (id(inst), "liquid")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    share = _si(inst.field("liquid_share"))
    if share is not None:
        value = power_of(inst, cache).si * share
    else:
        value = sum(c * liquid_heat(child, cache) for c, child in inst.containment())
    cache[key] = (inst, value)
    return value


def analyse_cooling(design: Design, it_average_w: float, losses_w: float, network_w: float,
                    cache: Optional[Dict] = None, overrides: Optional[Dict] = None,
                    fabrics=()) -> CoolingResult:
    """`overrides`: {(path, field): value} from a scenario (a hotter supply, a failed CDU).
    `fabrics`: the network's switch counts: an air unit with `network = true` removes the heat
    of the fabrics attached at or below its owner; heat no unit removes is a warning."""
    cache = {} if cache is None else cache
    overrides = overrides or {}
    resolve = Resolver(design)
    mult = multiplicities(design)
    diags: List[Diagnostic] = []
    total_power = sum(power_of(r, cache).si for r in design.roots)
    total_liquid = sum(liquid_heat(r, cache) for r in design.roots)
    loops, air, reqs = [], [], []
    for replicas, inst in mult.values():
        if inst.kind == "loop":
            loops.append(_loop(inst, replicas, _owner(design, inst, mult), resolve, cache,
                               overrides, diags, reqs))
        elif inst.kind == "air":
            air.append(_air(inst, replicas, _owner(design, inst, mult), resolve, cache, diags,
                            fabrics))
    _uncooled_network(design, air, fabrics, diags)
    pump = sum(l.replicas * l.pump_w for l in loops)
    fan = 0.0
    for a in air:
        inst = resolve.by_path.get(a.path)
        ratio = _si(inst.field("fan_power_ratio")) if inst is not None else None
        fan += a.replicas * a.heat_w * (ratio or 0.0)
    facility = None
    for root in design.roots:
        for m in root.members:
            if isinstance(m.value, Instance) and m.value.kind == "facility":
                facility = m.value
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
        supply = facility.field("supply")
        if cls is not None and isinstance(supply, Quantity) and water_class and \
                water_class[1:].isdigit() and supply.value_in("degC") > int(water_class[1:]):
            diags.append(_err("E645", f"facility water at {supply} exceeds class {water_class} "
                                      f"(supply at most {water_class[1:]} degC, ASHRAE)",
                              facility.span_of("supply")))
    facility_w = it_average_w + losses_w + pump + fan + chiller
    pue = facility_w / it_average_w if it_average_w else None
    return CoolingResult(total_liquid, total_power + network_w - total_liquid, tuple(loops),
                         tuple(air), pump, fan, chiller, facility_w, pue, water_class,
                         tuple(diags), tuple(reqs))


def _owner(design: Design, inst: Instance, mult) -> Optional[Instance]:
    for _, parent in mult.values():
        for m in parent.members:
            if m.value is inst:
                return parent
    return None


def _served(inst: Instance, owner: Optional[Instance], resolve) -> List[Tuple[int, Instance]]:
    served = resolve.group(inst.field("serves"))
    if not served and owner is not None:
        served = [(1, owner)]
    return served


def _loop(inst: Instance, replicas: int, owner, resolve, cache, overrides, diags,
          reqs) -> LoopResult:
    served = _served(inst, owner, resolve)
    heat = sum(c * liquid_heat(i, cache) for c, i in served)
    supply_q = overrides.get((inst.path, "supply"), inst.field("supply"))
    supply_c = supply_q.value_in("degC") if isinstance(supply_q, Quantity) else 0.0
    rise = _si(inst.field("rise")) or 0.0
    fluid = resolve(inst.field("fluid"))
    name = fluid.field("coolprop") if fluid is not None else None
    density = cp = flow = None
    if isinstance(name, str) and rise > 0:
        from astral_dsl.analyses import fluids

        try:
            props = fluids.properties(name, supply_c + rise / 2)
            density, cp = props.density, props.cp
            flow = formulas.liquid_flow(heat, density, cp, rise)
        except ValueError as exc:
            diags.append(_err("E646", f"fluid properties of `{fluid.path}` at "
                                      f"{format_number(supply_c + rise / 2)} degC: {exc}",
                              inst.span_of("fluid")))
    cdu = resolve(inst.field("cdu"))
    cap = _si(cdu.field("capacity")) if cdu is not None else None
    cdu_flow = _si(cdu.field("max_flow")) if cdu is not None else None
    scheme = inst.field("redundancy")
    scheme = scheme.name if isinstance(scheme, Symbol) else "n_plus_1"
    cdus_field = inst.field("cdus")
    declared = _si(cdus_field)
    failed = overrides.get((inst.path, "failed_cdus"), 0)
    declared_n = int(declared) - failed if declared is not None else None
    needed = None
    if cap:
        n = formulas.modules_needed(heat, cap)
        if cdu_flow and flow:
            n = max(n, math.ceil(flow / cdu_flow - 1e-9))
        needed = formulas.with_redundancy(n, scheme)
        if isinstance(cdus_field, UnknownValue):
            from astral_dsl.analyses.power import Requirement

            reqs.append(Requirement(cdus_field.key, needed + failed, replicas,
                                    _si(cdu.field("price")) or 0.0,
                                    f"loop `{inst.path}` needs {needed} CDUs for "
                                    f"{format_number(round(heat / 1e6, 3))} MW ({scheme})",
                                    inst.span_of("cdu")))
        if declared_n is not None:
            if declared_n * cap < heat * (1 - 1e-9):
                diags.append(_err("E640", f"loop `{inst.path}` carries "
                                          f"{format_number(round(heat / 1e6, 3))} MW of liquid "
                                          f"heat but its {declared_n} CDUs hold "
                                          f"{format_number(round(declared_n * cap / 1e6, 3))} MW",
                                  inst.span_of("cdus"), f"{needed} CDUs are needed ({scheme})"))
            elif scheme != "n" and ((declared_n - 1) * cap < heat * (1 - 1e-9) or (
                    cdu_flow and flow and (declared_n - 1) * cdu_flow < flow * (1 - 1e-9))):
                have = (f"{format_number(round((declared_n - 1) * cap / 1e6, 3))} MW for "
                        f"{format_number(round(heat / 1e6, 3))} MW")
                if (declared_n - 1) * cap >= heat * (1 - 1e-9):
                    have = (f"flow for {format_number(round((declared_n - 1) * cdu_flow * 6e4))} "
                            f"L/min of the {format_number(round(flow * 6e4))} L/min needed")
                diags.append(_err("E641", f"with one CDU failed, loop `{inst.path}` has {have}",
                                  inst.span_of("cdus"), f"{needed} CDUs are needed ({scheme})"))
    if flow is not None:
        limit = _si(inst.field("max_flow"))
        if limit is not None and flow > limit * (1 + 1e-9):
            diags.append(_err("E643", f"loop `{inst.path}` needs "
                                      f"{format_number(round(flow * 60000, 1))} L/min, above its "
                                      f"limit of {format_number(round(limit * 60000, 1))} L/min",
                              inst.span_of("max_flow")))
        if cdu_flow and declared_n and flow > cdu_flow * declared_n * (1 + 1e-9):
            diags.append(_err("E643", f"loop `{inst.path}` needs "
                                      f"{format_number(round(flow * 60000, 1))} L/min, above what "
                                      f"its {declared_n} CDUs pass "
                                      f"({format_number(round(cdu_flow * declared_n * 60000, 1))}"
                                      f" L/min)", inst.span_of("cdus")))
    for c, part in served:
        for _, gpu in group_of(part, ("gpu",), cache).flat():
            limit_t = gpu.field("max_supply")
            if isinstance(limit_t, Quantity) and supply_c > limit_t.value_in("degC") + 1e-9:
                diags.append(_err("E642", f"loop `{inst.path}` supplies {format_number(supply_c)}"
                                          f" degC but `{gpu.path}` accepts at most {limit_t}",
                                  inst.span_of("supply")))
                break
    head = _si(inst.field("pump_head"))
    eff = _si(inst.field("pump_efficiency"))
    pump = formulas.pump_power(flow, head, eff) if flow and head and eff else 0.0
    parts = []
    if density and cp:
        for kinds in (("row", "block"), ("rack",)):
            for c, part in served:
                for n, sub in group_of(part, kinds, cache).flat():
                    q = liquid_heat(sub, cache)
                    parts.append((sub.kind, sub.path, c * n, q,
                                  formulas.liquid_flow(q, density, cp, rise)))
    return LoopResult(inst.path, replicas, name if isinstance(name, str) else "?", heat,
                      supply_c, rise, density, cp, flow, needed, declared_n, cap, pump,
                      tuple(parts))


def _within(path: str, owner: str) -> bool:
    return path == owner or path.startswith(owner + ".")


def _network_heat(inst: Instance, owner, replicas: int, fabrics) -> float:
    """Switch heat per replica of an air unit with `network = true`."""
    if inst.field("network") is not True or owner is None:
        return 0.0
    return sum(f.power_w for f in fabrics if _within(f.owner, owner.path)) / max(replicas, 1)


def _uncooled_network(design: Design, air, fabrics, diags) -> None:
    by_path = {i.path: i for i in design.instances}
    covered = [a.owner for a in air if by_path.get(a.path) is not None
               and by_path[a.path].field("network") is True]
    for f in fabrics:
        if f.power_w > 0 and not any(_within(f.owner, o) for o in covered if o):
            fabric = by_path.get(f.fabric)
            diags.append(Diagnostic(
                "W647", Severity.WARNING,
                f"the switches of `{f.fabric}` make {format_number(round(f.power_w / 1e6, 3))} MW "
                f"of heat that no cooling unit removes", fabric.span if fabric else None,
                "set `network = true` on an `air` unit of the fabric's owner (or above)"))


def _air(inst: Instance, replicas: int, owner, resolve, cache, diags, fabrics=()) -> AirResult:
    network_only = inst.field("network") is True and inst.field("serves") is None
    served = [] if network_only else _served(inst, owner, resolve)
    heat = sum(c * (power_of(i, cache).si - liquid_heat(i, cache)) for c, i in served)
    heat += _network_heat(inst, owner, replicas, fabrics)
    rise = _si(inst.field("rise")) or 0.0
    flow = formulas.air_flow(heat, rise) if rise > 0 else 0.0
    worst = 0.0
    for c, part in served:
        for _, rack in group_of(part, ("rack",), cache).flat():
            worst = max(worst, power_of(rack, cache).si - liquid_heat(rack, cache))
    limit = _si(inst.field("max_rack_heat"))
    if limit is not None and worst > limit * (1 + 1e-9):
        diags.append(_err("E644", f"a rack sends {format_number(round(worst / 1e3, 2))} kW to "
                                  f"air, more than `{inst.path}` removes per rack "
                                  f"({format_number(limit / 1e3)} kW at a "
                                  f"{format_number(rise)} K rise)", inst.span_of("max_rack_heat"),
                          "raise the liquid share or the air rise, or lower the rack's load"))
    return AirResult(inst.path, replicas, heat, rise, flow, worst,
                     owner.path if owner is not None else "")
