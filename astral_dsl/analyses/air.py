"""Air units: the heat of what they cool that cold plates do not take (and, with
`network = true`, the switches' heat less what their cold plates take), air flow, the heat per
rack, fan power (on the average heat over the year, on the peak heat at the peak), and the
supply temperature against ASHRAE's envelopes.

The flow is that of humid air (analyses/humid_air.py, CoolProp's HAPropsSI): Q over the
enthalpy rise per kilogram of dry air, times the specific volume of the supply air
(formulas.humid_air_flow), at the supply temperature, the unit's `dew_point` and the site's
pressure (its `altitude`, else its climate file's elevation: formulas.pressure_at_altitude).
A unit that declares no dew point is taken at [assumed] 15 degC (or its supply, if colder),
the upper dew point of ASHRAE's recommended envelope: the moistest air it allows, the least
dense, so the flow is not underestimated (W642).

ASHRAE TC 9.9, Thermal Guidelines for Data Processing Environments (5th ed., 2021): the
recommended inlet envelope is 18-27 degC dry bulb; the allowable ranges are A1 15-32, A2 10-35,
A3 5-40 and A4 5-45 degC."""
from __future__ import annotations

from typing import Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import formulas, humid_air
from astral_dsl.analyses.field_reading import si
from astral_dsl.analyses.loops import liquid_heat
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity, format_number, readable

RECOMMENDED_C = (18.0, 27.0)
DEFAULT_DEW_POINT_C = 15.0
ALLOWABLE_C = {"A1": (15.0, 32.0), "A2": (10.0, 35.0), "A3": (5.0, 40.0), "A4": (5.0, 45.0)}


@records.frozen(slots=False)
class AirResult:
    path: str
    replicas: int
    heat_w: float
    rise_k: float
    flow_m3s: float
    max_rack_heat_w: float     # the most heat one rack it serves sends to air (what E644 checks)
    owner: str = ""
    fan_power_ratio: Optional[float] = None
    it_heat_w: float = 0.0      # the part of heat_w that comes from what it serves (not switches)
    average_heat_w: float = 0.0  # heat_w over the year: what it serves at its utilization
    density: Optional[float] = None      # of the supply air, kg of humid air per m^3
    dew_point_c: Optional[float] = None
    pressure_pa: Optional[float] = None
    average_at: Tuple[Tuple[Optional[float], float], ...] = ()   # as LoopResult's
    rack_limit_w: Optional[float] = None   # its declared `max_rack_heat` (None: not declared)


def uncooled_network(mult, served, diags) -> None:
    """W647: the switches' heat to air (cold plates) that no air unit (loop) with
    `network = true` removes."""
    for kind, index, what, unit in (("air", 0, "heat", "air unit"),
                                    ("loop", 1, "cold-plate heat", "loop")):
        units = [(m, i) for m, i in mult.values() if i.kind == kind]
        for fabric, share in served.uncovered(units):
            power, liquid = served.fabric_split(fabric)
            heat = (power - liquid if index == 0 else liquid) * max(fabric.instances, 1) * share
            if heat <= 1e-9:
                continue
            owner = served.resolve.by_path.get(fabric.fabric)
            diags.append(Diagnostic(
                "W647", Severity.WARNING,
                f"the switches of `{fabric.fabric}`{fabric.on} make "
                f"{readable.power(heat)} of {what} that no {unit} removes",
                owner.span if owner is not None else None,
                f"set `network = true` on {'an' if unit[0] == 'a' else 'a'} `{kind}` of the "
                f"fabric's owner (or above)"))


def analyse_air(inst: Instance, replicas: int, owner, served, cache, diags,
                units=None, averages=None, pressure_pa: float = formulas.SEA_LEVEL_PA
                ) -> AirResult:
    """`units` (analyses/served.py) gives the switches' heat of a `network = true` unit;
    `averages` (analyses/utilization.py) the average heat of what it serves; `pressure_pa` the
    site's air pressure."""
    network_only = inst.field("network") is True and inst.field("serves") is None
    served = [] if network_only else served
    it_heat = sum(c * (power_of(i, cache).si - liquid_heat(i, cache)) for c, i in served)
    power, liquid = units.network(inst) if units is not None else (0.0, 0.0)
    switch_heat = power - liquid
    heat = it_heat + switch_heat
    draw, liquid = averages.served_heat(owner, served) if averages is not None else (it_heat, 0.0)
    average = switch_heat + draw - liquid
    average_at = tuple((u, switch_heat + _less(averages.served_heat(owner, served, {u: 1.0})))
                       for u in averages.places(owner)) if averages is not None else ()
    if heat <= 0 and inst.field("network") is not True:
        diags.append(Diagnostic("W650", Severity.WARNING,
                                f"air unit `{inst.path}` cools nothing: the parts it serves send "
                                f"no heat to air", inst.span,
                                "set `serves = ...`, or remove the unit"))
    rise = si(inst.field("rise")) or 0.0
    flow, density, dew = _flow(inst, heat, rise, pressure_pa, diags)
    worst = 0.0
    for c, part in served:
        for _, rack in group_of(part, ("rack",), cache).flat():
            worst = max(worst, power_of(rack, cache).si - liquid_heat(rack, cache))
    limit = si(inst.field("max_rack_heat"))
    if limit is not None and worst > limit * (1 + 1e-9):
        sent, removed = readable.powers_apart(worst, limit, 2)
        diags.append(Diagnostic("E644", Severity.ERROR,
                                f"a rack sends {sent} to air, more than `{inst.path}` removes "
                                f"per rack ({removed} at a "
                                f"{format_number(rise)} K rise)", inst.span_of("max_rack_heat"),
                                "raise the racks' liquid share, lower their load, or use a unit "
                                "that removes more per rack (`max_rack_heat`)"))
    ratio = si(inst.field("fan_power_ratio"))
    if ratio is None and heat > 0:
        diags.append(Diagnostic("W657", Severity.WARNING,
                                f"air unit `{inst.path}` declares no `fan_power_ratio`: its fans "
                                f"count as 0 W in the facility power and the PUE", inst.span,
                                "declare `fan_power_ratio` (fan power per watt of heat, from the "
                                "unit's data sheet)"))
    _envelope(inst, diags)
    return AirResult(inst.path, replicas, heat, rise, flow, worst,
                     owner.path if owner is not None else "", ratio, it_heat, average, density,
                     dew, pressure_pa, average_at, limit)


def _less(pair) -> float:
    """Heat to air: the draw less what cold plates take."""
    return pair[0] - pair[1]


def _flow(inst: Instance, heat: float, rise: float, pressure_pa: float, diags):
    """(flow m^3/s, density of the supply air, its dew point) of humid air."""
    supply = inst.field("supply")
    if rise <= 0 or not isinstance(supply, Quantity):
        return 0.0, None, None
    t = supply.value_in("degC")
    dew_q = inst.field("dew_point")
    if isinstance(dew_q, Quantity):
        dew = dew_q.value_in("degC")
        if dew > t + 1e-9:
            diags.append(Diagnostic("E646", Severity.ERROR,
                                    f"air unit `{inst.path}` declares a dew point of "
                                    f"{format_number(dew)} degC, above its "
                                    f"{format_number(t)} degC supply: air cannot hold that "
                                    f"much water", inst.span_of("dew_point"),
                                    "a dew point is at most the dry bulb"))
            return 0.0, None, None
    else:
        dew = min(DEFAULT_DEW_POINT_C, t)
        diags.append(Diagnostic("W642", Severity.WARNING,
                                f"air unit `{inst.path}` declares no `dew_point`: its air is "
                                f"taken at a {format_number(dew)} degC dew point (the upper "
                                f"limit of ASHRAE's recommended envelope, the least dense air)",
                                inst.span, "declare `dew_point = ...`, the supply air's moisture"))
    try:
        state, dh = humid_air.heating(t, rise, dew, pressure_pa)
    except ValueError as exc:
        diags.append(Diagnostic("E646", Severity.ERROR,
                                f"humid-air properties of `{inst.path}`: {exc}",
                                inst.span_of("supply"),
                                "check the unit's `supply`, `rise` and `dew_point` and the "
                                "site's `altitude` (the air's pressure): humid air must exist "
                                "at them"))
        return 0.0, None, dew
    density = (1 + state.humidity_ratio) / state.specific_volume
    return formulas.humid_air_flow(heat, state.specific_volume, dh), density, dew


def _envelope(inst: Instance, diags) -> None:
    """W655 outside the allowable range of the declared ASHRAE class; W654 outside the
    recommended envelope when no class is declared."""
    supply = inst.field("supply")
    if not isinstance(supply, Quantity):
        return
    t = supply.value_in("degC")
    cls = inst.field("ashrae_class")
    cls = cls.name if isinstance(cls, Symbol) else None
    if cls in ALLOWABLE_C:
        lo, hi = ALLOWABLE_C[cls]
        if not lo - 1e-9 <= t <= hi + 1e-9:
            diags.append(Diagnostic("W655", Severity.WARNING,
                                    f"air unit `{inst.path}` supplies {format_number(t)} degC, "
                                    f"outside the allowable range of ASHRAE class {cls} "
                                    f"({format_number(lo)}-{format_number(hi)} degC)",
                                    inst.span_of("supply"),
                                    "lower the supply, or declare the class the equipment is "
                                    "rated for"))
        return
    lo, hi = RECOMMENDED_C
    if not lo - 1e-9 <= t <= hi + 1e-9:
        diags.append(Diagnostic("W654", Severity.WARNING,
                                f"air unit `{inst.path}` supplies {format_number(t)} degC, "
                                f"outside ASHRAE's recommended envelope "
                                f"({format_number(lo)}-{format_number(hi)} degC)",
                                inst.span_of("supply"),
                                "keep the supply within 18-27 degC, or declare `ashrae_class` "
                                "(A1-A4) if the equipment is rated for its allowable range"))
