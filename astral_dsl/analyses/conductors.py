"""A feeder's conductors: the current it carries at the lowest voltage it runs at, each
conductor set against its ampacity (E625), and the voltage drop (E622) on the same voltage basis
as the current. Formulas: analyses/formulas/ (IEC 60364-5-52, IEC 60028)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import error, si, symbol_name, warning
from astral_dsl.model.design import Instance
from astral_dsl.model.values import ListValue
from astral_dsl.units import Quantity, format_number, readable

# Conductor temperature used for voltage drop when a feeder declares none: 90 degC, the maximum
# continuous operating temperature of XLPE/EPR insulation (IEC 60502-1, Table 3), so the drop is
# never underestimated.
DEFAULT_CONDUCTOR_C = 90.0

# Reactance per conductor taken for an AC drop when a feeder declares none: 0.08 ohm/km, the
# value to take "in the absence of any other information" (Schneider Electric, Electrical
# Installation Guide, chapter G, voltage drop; IEC 60364-5-52 Annex G's formula). Cable data
# sheets give 0.07-0.1 ohm/km for LV cables laid touching; more when laid apart.
DEFAULT_REACTANCE_OHM_PER_M = 0.08e-3

# Resistivity at 20 degC and its temperature coefficient per conductor material: annealed copper
# 0.017241 ohm mm^2/m, 0.00393 /K (IEC 60028); hard-drawn aluminium 0.028264 ohm mm^2/m,
# 0.00403 /K (IEC 60889).
MATERIALS = {"copper": (formulas.COPPER_RHO20_OHM_M, formulas.COPPER_ALPHA_PER_K),
             "aluminium": (0.028264e-6, 0.00403)}


def current(kind: str, power_w: float, voltage: float, f: Instance) -> float:
    """The current that carries `power_w` at `voltage` (three-phase or single-phase AC, DC)."""
    if not voltage:
        return 0.0
    if kind == "dc":
        return formulas.dc_current(power_w, voltage)
    pf = si(f.field("power_factor")) or 1.0
    if _phases(f) == 3:
        return formulas.ac3_current(power_w, voltage, pf)
    return power_w / (voltage * pf)


def _phases(f: Instance) -> int:
    return int(si(f.field("phases")) or 3)


def _material(f: Instance, table: Optional[Instance], diags) -> Tuple[float, float]:
    name = symbol_name(f.field("material"))
    if name is None and table is not None:
        name = symbol_name(table.field("material"))
    if name is None:
        diags.append(warning("W621", f"the conductor material of `{f.path}` is not declared: "
                                     f"copper is assumed for its resistance",
                             f.span_of("conductor_area"),
                             "declare `material = copper` (or `aluminium`) on the feeder or its "
                             "`cable`"))
        name = "copper"
    return MATERIALS[name]


def _reactance(f: Instance, pf: float, diags) -> float:
    """The feeder's reactance per conductor (ohm/m): declared, else the default with W621 when
    it counts (a power factor below 1: X sin phi)."""
    declared = si(f.field("reactance"))
    if declared is not None:
        return declared
    if pf < 1:
        diags.append(warning("W621", f"feeder `{f.path}` declares no `reactance`: its voltage drop "
                                     f"takes {format_number(DEFAULT_REACTANCE_OHM_PER_M * 1e3)} "
                                     f"ohm/km per conductor, the value to take without other "
                                     f"information (Schneider Electric, Electrical Installation "
                                     f"Guide, chapter G)", f.span_of("length"),
                             "declare `reactance = ...` from the cable's data sheet (it depends on "
                             "the cross-section and how the cables are laid)"))
    return DEFAULT_REACTANCE_OHM_PER_M


# The lowest plausible power factor of a datacenter load: below it W632. IT power supplies
# correct theirs (80 PLUS requires 0.9 at full load at every certification level, Platinum and
# Titanium 0.95 at half load; IEC 61000-3-2's harmonic limits make correction the norm above
# 75 W), a site's load is kept near 0.9-0.95 because utilities bill reactive power below about
# 0.85-0.95 (IEEE Std 1459 defines the quantities; the thresholds are the tariffs'), and an
# induction motor at full load runs at 0.8-0.9 (US DOE, Reducing Power Factor Cost, fact sheet).
# 0.5 is far below all of them: a percent typed for a fraction (`1 %` for 1).
LEAST_POWER_FACTOR = 0.5


def rated_in_va(f: Instance) -> bool:
    """Whether a feeder's `capacity` is written in volt-amperes (`800 kVA`): apparent power
    (feeders.rated_capacity)."""
    return str(getattr(f.field("capacity"), "unit", "")).endswith("VA")


def power_factor_domain(inst: Instance, diags) -> None:
    """W632 for a `power_factor` below LEAST_POWER_FACTOR (a feeder's or a transformer's)."""
    pf = si(inst.field("power_factor"))
    if pf is not None and pf < LEAST_POWER_FACTOR:
        diags.append(warning("W632", f"`{inst.path}` declares a power factor of "
                                     f"{format_number(round(pf, 4))}, below "
                                     f"{format_number(LEAST_POWER_FACTOR)}, which no datacenter "
                                     f"load runs at: its current and apparent power are taken "
                                     f"as {format_number(round(1 / pf, 2))} times those of its "
                                     f"kW at power factor 1",
                             inst.span_of("power_factor"),
                             "IT power supplies with power-factor correction run at 0.9-0.99 "
                             "(80 PLUS), motors at 0.8-0.9: write it as a fraction or a percent "
                             "(`0.95`, `95 %`), from the load's data sheets"))


def phases_domain(f: Instance, kind: str, diags) -> None:
    """E636 for an AC feeder whose `phases` is neither 1 nor 3."""
    phases = si(f.field("phases"))
    if kind != "dc" and phases is not None and phases not in (1, 3):
        diags.append(error("E636", f"AC feeder `{f.path}` declares `phases = "
                                   f"{format_number(phases)}`: a feeder is single-phase "
                                   f"(`phases = 1`) or three-phase (`phases = 3`)",
                           f.span_of("phases"),
                           "a load across two lines of a three-phase supply, or a split-phase "
                           "(120/240 V) feed, is single-phase: `phases = 1` with the voltage "
                           "across it"))


def conductor(f: Instance, current, voltage, kind, resolve, diags, serves: bool):
    """(current per conductor set, ampacity, drop in V, drop over `voltage`): `voltage` is the
    one the current was computed at, so the drop is a share of the same basis."""
    phases_domain(f, kind, diags)
    if kind != "dc":
        power_factor_domain(f, diags)
    if kind != "dc" and serves and si(f.field("power_factor")) is None:
        kva = rated_in_va(f)
        diags.append(warning("W621", f"AC feeder `{f.path}` declares no `power_factor`: its "
                                     f"current and voltage drop are taken at 1, the least current "
                                     f"its load can draw" + (", and its kVA rating as holding as "
                                                             "many kW" if kva else ""),
                             f.span_of("voltage"),
                             "declare `power_factor = ...` (the load's: IT power supplies with "
                             "power-factor correction, from their data sheets)"))
    if kind != "dc" and serves and si(f.field("phases")) is None:
        diags.append(warning("W621", f"AC feeder `{f.path}` declares no `phases`: it is taken as "
                                     f"three-phase, I = P / (sqrt(3) V PF): 58 % of the current a "
                                     f"single-phase feed at the same voltage draws",
                             f.span_of("voltage"),
                             "declare `phases = 3` (or `phases = 1` for a single-phase feed)"))
    area = si(f.field("conductor_area"))
    if area is None:
        if serves:
            diags.append(warning("W621", f"feeder `{f.path}` declares no conductor: its voltage "
                                         f"drop and its conductors' ampacity are not checked",
                                 f.span, "declare `conductor_area`, `length` and `cable` (or "
                                         "`ampacity`)"))
        return None, None, None, None
    sets = int(si(f.field("conductors")) or 1)
    per = current / sets
    ampacity = si(f.field("ampacity"))
    table = resolve(f.field("cable"))
    if ampacity is None and table is not None:
        areas = [a.si for a in table.field("areas", ListValue(())).items]
        amps = [a.si for a in table.field("ampacities", ListValue(())).items]
        try:
            ampacity = formulas.ampacity(list(zip(areas, amps)), area)
        except ValueError as exc:
            diags.append(error("E625", f"feeder `{f.path}`: {exc}", f.span_of("conductor_area")))
    elif ampacity is None:
        diags.append(warning("W621", f"feeder `{f.path}` declares no `ampacity` or `cable`: the "
                                     f"{readable.current(per)} in each conductor set are "
                                     f"not checked against a rating",
                             f.span_of("conductor_area"),
                             "declare `ampacity = ...` or a `cable` with its ampacity table"))
    if ampacity is not None and per > ampacity * (1 + 1e-9):
        diags.append(error("E625", f"each of the {sets} conductor set(s) of `{f.path}` carries "
                                   f"{readable.current(per)}, above its ampacity of "
                                   f"{readable.current(ampacity)}",
                           f.span_of("conductor_area"),
                           "add parallel conductors (`conductors = N`) or a larger cross-section"))
    length = si(f.field("length"))
    drop = ratio = None
    if length is None:
        diags.append(warning("W621", f"feeder `{f.path}` declares no `length`: its voltage drop "
                                     f"is not computed", f.span_of("conductor_area"),
                             "declare `length = ...` (the one-way route length)"))
        return per, ampacity, drop, ratio
    rho20, alpha = _material(f, table, diags)
    t = f.field("conductor_temperature")
    if isinstance(t, Quantity):
        temp_c = t.value_in("degC")
    else:
        temp_c = DEFAULT_CONDUCTOR_C
        diags.append(warning("W621", f"feeder `{f.path}` declares no `conductor_temperature`: its "
                                     f"resistance, and so its voltage drop, is taken at "
                                     f"{format_number(DEFAULT_CONDUCTOR_C)} degC, the continuous "
                                     f"limit of XLPE/EPR insulation (IEC 60502-1)",
                             f.span_of("length"),
                             "declare `conductor_temperature = ...` (the conductor's operating "
                             "temperature at this load, e.g. from the cable's data sheet)"))
    if kind == "dc":
        drop = formulas.dc_voltage_drop(per, length, area, temp_c, rho20, alpha)
    else:
        r = formulas.copper_resistivity(temp_c, rho20, alpha) / area
        pf = si(f.field("power_factor")) or 1.0
        # three-phase: line to line, b = 1; single-phase: out and back, b = 2 (IEC 60364-5-52
        # Annex G), on the voltage the current was computed at either way
        drop = (formulas.ac3_voltage_drop if _phases(f) == 3 else formulas.ac1_voltage_drop)(
            per, length, r, _reactance(f, pf, diags), pf)
    ratio = drop / voltage if voltage else None
    limit = si(f.field("max_voltage_drop"))
    if limit is not None and ratio is not None and ratio > limit * (1 + 1e-9):
        said, allowed = readable.percents_apart(ratio, limit)
        diags.append(error("E622", f"voltage drop on `{f.path}` is "
                                   f"{readable.voltage(drop)} ({said} of the "
                                   f"{readable.voltage(voltage)} it carries its current "
                                   f"at), above the declared {allowed}",
                           f.span_of("max_voltage_drop"),
                           "shorten the run or use a larger cross-section"))
    return per, ampacity, drop, ratio


