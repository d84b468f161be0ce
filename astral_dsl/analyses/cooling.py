"""Cooling: heat split into liquid (cold plates, analyses/loops.py) and air (analyses/air.py,
humid air at the site's pressure), loop flows, CDUs, pumps, air flow, the facility-water circuits
each loop and air unit draws on (analyses/circuits.py: approaches, flows, pumps), and the
facility's draw by component with the annual PUE (analyses/facility.py: the heat rejection over
the site's climate, the power chain). Every electrical watt ends as heat; heat that no loop or
air unit removes, and a design with no cooling at all, are reported (W647, W651-W653) rather
than counted as removed."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import climate as climates
from astral_dsl.analyses import facility as plant
from astral_dsl.analyses import formulas, humid_air
from astral_dsl.analyses.air import AirResult, analyse_air, uncooled_network
from astral_dsl.analyses.circuits import Approach, Circuits, approach
from astral_dsl.analyses.facility import Demand, FacilityResult
from astral_dsl.analyses.field_reading import error, si, warning
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


@records.frozen(slots=False)
class CoolingResult:
    liquid_heat_w: float
    air_heat_w: float
    loops: Tuple[LoopResult, ...]
    air: Tuple[AirResult, ...]
    pump_w: float             # the loops' (secondary) pumps
    fan_w: float              # air units' fans, average over the year
    chiller_w: float          # average over the year
    facility_w: float         # everything the facility draws, average over the year
    pue: Optional[float]
    water_class: Optional[str]
    diagnostics: Tuple[Diagnostic, ...]
    requirements: Tuple = ()
    cdu_w: float = 0.0
    average: Optional[Demand] = None     # the facility's draw by component, annual average
    peak: Optional[Demand] = None        # and at the peak hour (the utility point)
    facility: Optional[FacilityResult] = None
    approaches: Tuple[Approach, ...] = ()   # each unit's supply against its circuit's (E651)


def other_sites_air(design: Design) -> List[Diagnostic]:
    """W645 for each site after the first that declares a `climate` or `altitude` other than
    the first's, or declares none where the first does (it silently takes the first's): the
    facility (heat rejection, free cooling, the air's density) is one model, on the first
    site's."""
    out = []
    first = design.roots[0] if design.roots else None
    for site in design.roots[1:]:
        differ = [f for f in ("climate", "altitude")
                  if site.field(f) is not None and site.field(f) != first.field(f)]
        taken = [f for f in ("climate", "altitude")
                 if site.field(f) is None and first.field(f) is not None]
        if differ:
            what = " and ".join(f"`{f}`" for f in differ)
            out.append(Diagnostic(
                "W645", Severity.WARNING,
                f"site `{site.path}` declares its own {what}, which is not used: the "
                f"facility's heat rejection, free cooling and air are computed for the design "
                f"as one, with the first site's (`{first.path}`)", site.span_of(differ[0]),
                "check each site in a design of its own, or give the sites the same "
                f"{what}"))
        if taken:
            what = " and ".join(f"`{f}` ({first.field(f)})" for f in taken)
            out.append(Diagnostic(
                "W645", Severity.WARNING,
                f"site `{site.path}` declares no " + " and no ".join(f"`{f}`" for f in taken)
                + f": the facility's heat rejection, free cooling and air are computed for it "
                f"with the first site's (`{first.path}`): {what}", site.span,
                "declare the site's own " + " and ".join(f"`{f}`" for f in taken)
                + " (it is then W645 if it differs), or check the site in a design of its own"))
    return out


#: The highest elevation of ASHRAE TC 9.9's air-cooled classes A1-A4, m (Thermal Guidelines for
#: Data Processing Environments, 4th ed., 2015, Table 2.1: 3,050 m; the allowable dry-bulb
#: derated by 1 degC per 300 m above 900 m).
AIR_COOLED_MAX_ALTITUDE_M = 3050.0


def high_sites(design: Design, site_climates=()) -> List[Diagnostic]:
    """W640 for each site whose `altitude` is above what air-cooled IT is specified for, or
    without one, whose own climate file's elevation (`site_climates`, one per site or None:
    climate.of_sites) is."""
    out = []
    for site, climate in zip(design.roots, tuple(site_climates) + (None,) * len(design.roots)):
        alt, span, what = si(site.field("altitude")), site.span_of("altitude"), "its altitude"
        if alt is None and climate is not None and climate.elevation_m is not None:
            alt, span = climate.elevation_m, site.span_of("climate")
            what = f"the elevation of its climate file `{climate.name}`"
        if alt is not None and alt > AIR_COOLED_MAX_ALTITUDE_M:
            out.append(warning(
                "W640", f"site `{site.path}` is at {readable.grouped(alt, 1)} m ({what}), "
                          f"above the 3,050 m of ASHRAE TC 9.9's air-cooled classes A1-A4: the "
                          f"thin air cools less and the IT is outside its specification", span,
                f"check {what} and its unit; at such a site, check the IT's rated "
                "operating altitude and its derating (`allow W640 \"...\"` once done)"))
    return out


def site_air(design: Design, climate, diags) -> Tuple[float, str]:
    """(the site's air pressure, where it comes from): its `altitude`, else its climate
    file's elevation, else sea level (W642 when air units need it)."""
    root = design.roots[0] if design.roots else None
    alt = si(root.field("altitude")) if root is not None else None
    if alt is not None:
        return formulas.pressure_at_altitude(alt), f"altitude {readable.grouped(alt, 1)} m"
    if climate is not None and climate.elevation_m is not None:
        return (formulas.pressure_at_altitude(climate.elevation_m),
                f"elevation {readable.grouped(climate.elevation_m, 1)} m of `{climate.name}`")
    return formulas.SEA_LEVEL_PA, "sea level"


def _project_root(design: Design) -> Path:
    return Path(design.root) if design.root else Path.cwd()


def analyse_cooling(design: Design, power, cache: Optional[Dict] = None,
                    overrides: Optional[Dict] = None, fabrics=(),
                    served: Optional[Served] = None,
                    averages: Optional[Averages] = None, failed: frozenset = frozenset()) -> CoolingResult:
    """`power`: the PowerResult (IT load and conversion losses, average and peak).
    `overrides`: {(path, field): value} from a scenario (a failed CDU); `failed`: the feeders
    a scenario has failed (the mechanical ones among them).
    `fabrics`: the network's switch counts: an air unit (a loop) with `network = true` removes
    the air (cold-plate) heat of the fabrics attached at or below its owner; heat no unit
    removes is a warning."""
    cache = {} if cache is None else cache
    overrides = overrides or {}
    resolve = Resolver(design)
    mult = served.mult if served is not None else multiplicities(design)
    served = served if served is not None else Served(design, mult, resolve, cache, fabrics)
    averages = averages if averages is not None else Averages(design, mult, cache)
    diags: List[Diagnostic] = []
    root = design.roots[0] if design.roots else None
    climate = climates.of_site(root, _project_root(design), diags, design.read) \
        if root is not None else None
    pressure = site_air(design, climate, diags)
    diags.extend(other_sites_air(design))
    diags.extend(high_sites(design, climates.of_sites(design.roots, climate,
                                                      _project_root(design), diags,
                                                      design.read)))
    total_power = sum(power_of(r, cache).si for r in design.roots)
    network_w = sum(f.power_w for f in fabrics)
    network_liquid = sum(served.fabric_split(f)[1] * max(f.instances, 1) for f in fabrics)
    total_liquid = sum(liquid_heat(r, cache) for r in design.roots) + network_liquid
    loops, air, reqs = [], [], []
    for replicas, inst in mult.values():
        if inst.kind == "loop":
            loops.append(analyse_loop(inst, replicas, served.of(inst), resolve, cache, overrides,
                                      diags, reqs, served.network(inst)[1],
                                      served.physical_owner(inst), averages))
        elif inst.kind == "air":
            air.append(analyse_air(inst, replicas, served.physical_owner(inst),
                                   served.of(inst), cache, diags, served, averages,
                                   pressure[0]))
    loops.sort(key=lambda lp: lp.path)
    air.sort(key=lambda a: a.path)
    if air and pressure[1] == "sea level":
        diags.extend(_sea_level(design, air))
    uncooled_network(mult, served, diags)
    assign = Circuits(mult, served, resolve, diags)
    cooled = bool(loops or air or assign.all)
    if not cooled and total_power + network_w > 0 and design.roots:
        names = [f"`{r.path}`" for r in design.roots]     # every site's heat, not the first's
        whose = names[0] if len(names) == 1 else \
            f"the sites {', '.join(names[:-1])} and {names[-1]}"
        diags.append(warning("W653", f"no cooling is declared: the "
                                     f"{readable.power(total_power + network_w)} "
                                     f"of heat of {whose} have no path out, and no PUE is "
                                     f"computed", root.span,
                             "declare the `loop`s and `air` units that remove the heat and the "
                             "`facility` that rejects it"))
    elif cooled:
        _heat_paths(design, mult, served, loops, air, cache, diags)
    by_path = {i.path: i for _, i in mult.values()}
    approaches = []                # what E651 compared, for the margins
    for unit in loops + air:
        inst = by_path.get(unit.path)
        for circuit in {id(c): c for c, _, _ in (assign.split(inst, unit.replicas)
                                                 if inst is not None else ())
                        if c is not None}.values():
            cdu = resolve(inst.field("cdu")) if inst.kind == "loop" else None
            approaches.append(approach(inst, cdu, circuit, diags))
    per, lost = plant.draws(loops, air, by_path, assign.split, diags)
    if cooled and root is not None:
        _unrejected(assign, lost, root, diags)
    for inst in assign.all:
        _water_class(inst, diags)
    # every site's lighting and building services (a design of several sites: all of them)
    aux = sum(si(r.field("auxiliary")) or 0.0 for r in design.roots)
    result = plant.model([(i, assign.replicas[id(i)]) for i in assign.all], per, power, loops,
                         air, climate, aux or 0.0, mult, resolve, served, cache, failed, reqs,
                         diags, cooled, pressure, root)
    humid_air.flush()          # the states CoolProp gave, kept for the next run
    average, peak = result.average, result.peak
    pue = average.total_w / power.it_average_w if power.it_average_w and cooled else None
    classes = [c.water_class for c in result.circuits if c.water_class]
    return CoolingResult(total_liquid, total_power + network_w - total_liquid, tuple(loops),
                         tuple(air), average.pumps_w, average.fans_w, average.chillers_w,
                         average.total_w, pue, classes[0] if classes else None, tuple(diags),
                         tuple(reqs), average.cdus_w, average, peak, result,
                         tuple(a for a in approaches if a is not None))


def _sea_level(design: Design, air) -> List[Diagnostic]:
    """W642 at each site that holds air units (the first site when none is found) and declares
    no `altitude` (a later one no `climate` either: its own is W645): the first site declares
    no altitude and no climate file with an elevation, so the air is taken at sea level. It
    named the first site, whether or not it held the air units."""
    def holds(site) -> bool:
        return any(a.path == site.path or a.path.startswith((site.path + ".", site.path + "["))
                   for a in air)
    sites = [s for s in design.roots if holds(s)] or design.roots[:1]
    return [warning("W642", f"site `{site.path}` declares no `altitude` (nor a `climate` file "
                            f"with an elevation): its air units' air is taken at sea level "
                            f"(101,325 Pa)", site.span, "declare `altitude = ...` on the site")
            for site in sites if site.field("altitude") is None and
            (site is design.roots[0] or site.field("climate") is None)]


def _unrejected(assign: Circuits, lost: float, root: Instance, diags) -> None:
    """W656: heat that reaches no facility-water circuit (none is declared, or none above
    the unit): its heat rejection counts as 0 W."""
    if not assign.all:
        diags.append(warning("W656", "no `facility` is declared: heat rejection (chillers, "
                                     "dry coolers, facility-water pumps) counts as 0 W in the "
                                     "facility power and the PUE", root.span,
                             "declare `facility NAME { ... }` in the site: its water's "
                             "`supply` and `rise`, its pumps, `rejection` and `chiller`, and the "
                             "site's `climate`"))
    elif lost > 0:
        diags.append(warning("W656", f"{readable.power(lost)} of heat from loops and air units "
                                     f"reach no facility-water circuit (none is declared above "
                                     f"them, and they name none): their heat rejection counts as "
                                     f"0 W", root.span,
                             "name the circuit (`facility = ...`) on the loops and air units"))


def _water_class(facility: Instance, diags) -> None:
    supply = facility.field("supply")
    cls = facility.field("water_class")
    cls = getattr(cls, "name", None)
    if isinstance(supply, Quantity) and cls and cls[1:].isdigit() and \
            supply.value_in("degC") > int(cls[1:]):
        diags.append(error("E645", f"facility water at {supply} exceeds class {cls} "
                                   f"(supply at most {cls[1:]} degC, ASHRAE)",
                           facility.span_of("supply")))


def _heat_paths(design, mult, served: Served, loops, air, cache, diags) -> None:
    """W651 (W652): racks whose cold-plate (air) heat no loop (air unit) removes."""
    by_path = {i.path: i for _, i in mult.values()}
    for code, every, heat_of, what, unit in (
            ("W651", loops, lambda r: liquid_heat(r, cache), "cold-plate", "a loop"),
            ("W652", air, lambda r: power_of(r, cache).si - liquid_heat(r, cache), "air",
             "an air unit")):
        units = [u for u in every if not _network_only(by_path.get(u.path))]
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
            # a unit with `network = true` and no `serves` cools the switches alone: say so
            # where one was meant for the racks too
            only = next((u.path for u in every if _network_only(by_path.get(u.path))), None)
            diags.append(warning(code, f"{readable.power(watts)} of {what} heat "
                                       f"({where}) reach no {unit.split(' ', 1)[1]}: that heat "
                                       "has no path out",
                                 example.span, f"declare {unit} that serves them" + (
                                     f", or add `serves = racks` to `{only}`: with `network = "
                                     f"true` and no `serves` it removes the switches' heat alone"
                                     if only else "")))


def _network_only(inst: Optional[Instance]) -> bool:
    return inst is not None and inst.field("network") is True and inst.field("serves") is None


def _racks(part: Instance, cache):
    racks = group_of(part, ("rack",), cache).flat()
    return racks if racks or part.kind == "rack" else ((1, part),)


def _rack_like(design: Design, mult):
    """The racks, or in a design without racks the sites (their heat as a whole)."""
    racks = [(m, i) for m, i in mult.values() if i.kind == "rack"]
    return racks or [(1, r) for r in design.roots]
