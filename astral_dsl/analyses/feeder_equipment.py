"""A DC feeder's equipment: its rectifier modules (N+1 by default, with W625 when the rectifier
does not say so), sized for the load and the batteries' recharge, and its battery strings
(IEEE 485, at the batteries' end of discharge), each checked against what the feeder carries, or
sized when the count is unknown (`?`).

The recharge takes `recharge_rate` C of the strings' capacity (0.1 C: a tenth of the Ah per
hour, in amperes) at the bus's nominal voltage; a battery that declares no rate is recharged at
[assumed] 0.1 C, with W625 (the usual limit on a VRLA cell's charging current: data sheets give
0.1-0.3 C10). A rectifier's `no_load_loss` (a share of each installed module's rating) is drawn
whatever the load (Schneider Electric White Paper 113: no-load losses)."""
from __future__ import annotations

import math
from typing import Optional


from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import error, si, symbol_name, warning
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Instance
from astral_dsl.model.values import UnknownValue
from astral_dsl.units import format_number, readable


@records.frozen
class Requirement:
    """The least value an unknown equipment count (`?`) may take, and why; `units` is how many
    of the counted things one unit of the count stands for in the whole design (for its cost)."""
    key: str
    minimum: int
    units: int
    price: float                # of one counted thing (0 when undeclared)
    label: str
    span: Optional[object]


DEFAULT_RECHARGE_RATE = 0.1


def recharge(f: Instance, capacity_ah: Optional[float], voltage: float, resolve, diags) -> float:
    """The power (W) the batteries of one feeder take while they recharge, on top of its load."""
    bat = resolve(f.field("battery"))
    if bat is None or not capacity_ah or not voltage or resolve(f.field("rectifier")) is None:
        return 0.0
    rate = si(bat.field("recharge_rate"))
    if rate is None:
        rate = DEFAULT_RECHARGE_RATE
        diags.append(warning("W625", f"battery `{bat.path}` of `{f.path}` declares no "
                                     f"`recharge_rate`: its rectifier modules are sized for a "
                                     f"{format_number(rate)} C recharge on top of the load",
                             f.span_of("battery"),
                             "declare `recharge_rate` (C per hour, from the charger's setting or "
                             "the cells' data sheet)"))
    else:
        _charge_limit(bat, rate, diags)
    return formulas.recharge_power(rate, capacity_ah, voltage)


# the fastest recharge each chemistry takes, in C: VRLA data sheets limit the charging current to
# 0.1-0.3 C10; [assumed] 1 C for lithium-ion, the most the NMC and LFP cells of UPS battery
# cabinets take continuously (their data sheets give 0.5-1 C). A battery without `chemistry` is
# held to the larger.
CHARGE_LIMIT_C = {"lead_acid": 0.3, "lithium_ion": 1.0}


def _charge_limit(bat: Instance, rate: float, diags) -> None:
    """W633 when a battery's recharge is faster than its chemistry's cells take."""
    chem = symbol_name(bat.field("chemistry"))
    limit = CHARGE_LIMIT_C.get(chem, max(CHARGE_LIMIT_C.values()))
    if rate <= limit + 1e-9:
        return
    what = chem.replace("_", "-") if chem else "lithium-ion (no `chemistry` declared)"
    _once(diags, warning("W633", f"battery `{bat.path}` recharges at {format_number(rate)} C, "
                                 f"faster than {what} cells take ({format_number(limit)} C): the "
                                 f"rectifier modules of its feeders are sized for that recharge on "
                                 f"top of the load", bat.span_of("recharge_rate"),
                         f"set `recharge_rate` to the charger's current limit over the strings' "
                         f"Ah (at most {format_number(limit)} C, or the cells' data sheet's)"))


# the most a cell of each chemistry is charged at, in V: lead-acid floats at 2.25-2.30 V a cell
# and equalises at about 2.4 V (VRLA data sheets; 120 cells x 2.4 V = 288 V, the top of 240 V
# HVDC's range, YD/T 2378-2011); lithium-ion cells stop charging at 4.2 V (NMC, NCA; LFP at
# 3.65 V). A battery without `chemistry` is held to the larger.
CHARGE_VOLTS = {"lead_acid": 2.4, "lithium_ion": 4.2}
# the float voltage a lead-acid cell is kept at, for the hint's count of cells
LEAD_ACID_FLOAT = 2.25


def _float_limit(bat: Instance, f: Instance, bus: float, cells: int, end_v: float,
                 diags) -> None:
    """W633 when a DC bus runs above what the battery's cells can be charged at (its nominal
    voltage over `cells`): a string floats at its bus's voltage, so too few cells (the 120 of a
    240 V string on an 800 V bus) put the end of discharge, and the current and Ah sized at it,
    far below the bus."""
    chem = symbol_name(bat.field("chemistry"))
    limit = CHARGE_VOLTS.get(chem, max(CHARGE_VOLTS.values()))
    if bus <= cells * limit * (1 + 1e-9):
        return
    what = chem.replace("_", "-") if chem else "lithium-ion (no `chemistry` declared)"
    count = (f"about {format_number(math.ceil(bus / LEAD_ACID_FLOAT))} lead-acid cells at a "
             f"float of {format_number(LEAD_ACID_FLOAT)} V" if chem == "lead_acid" else
             "the bus's voltage over the cells' float voltage (their data sheet)")
    diags.append(warning("W633", f"battery `{bat.path}` of `{f.path}` has {format_number(cells)} "
                                 f"cells on its {format_number(bus)} V bus, "
                                 f"{format_number(round(bus / cells, 2))} V a cell: more than "
                                 f"{what} cells are charged at ({format_number(limit)} V), and a "
                                 f"string floats at its bus's voltage; its end of discharge "
                                 f"({format_number(round(cells * end_v, 3))} V) and the current "
                                 f"and Ah sized at it are not the bus's",
                         f.span_of("battery"),
                         f"declare the `cells` of a string for this bus: {count}"))


def _once(diags, d: Diagnostic) -> None:
    """A battery's own figure is said once, however many feeders it is on."""
    if d not in diags:
        diags.append(d)


def rectifier(f: Instance, load, resolve, diags, reqs, units: int, recharge_w: float = 0.0):
    """(modules needed, modules declared, no-load draw of the installed modules in W) for
    `load` W, of which `recharge_w` is its batteries' recharge."""
    rect = resolve(f.field("rectifier"))
    if rect is None:
        return None, None, 0.0
    module = si(rect.field("module"))
    if not module:
        diags.append(warning("W625", f"rectifier `{rect.path}` of `{f.path}` declares no "
                                     f"`module` rating: its modules are not counted",
                             f.span_of("rectifier"),
                             "declare `module = ...` (one module's rated power)"))
        return None, None, 0.0
    derate = si(rect.field("derate")) or 1.0
    scheme = symbol_name(rect.field("redundancy"))
    if scheme is None:
        scheme = "n_plus_1"
        diags.append(warning("W625", f"rectifier `{rect.path}` of `{f.path}` declares no "
                                     f"`redundancy`: N+1 (one spare module) is assumed",
                             f.span_of("rectifier"),
                             "declare `redundancy = n_plus_1` (or `n`, `two_n`) on the rectifier"))
    base = formulas.modules_needed(load, module, derate)
    needed = formulas.with_redundancy(base, scheme)
    modules = rect.field("modules")
    if isinstance(modules, UnknownValue):
        reqs.append(Requirement(modules.key, needed, units, si(rect.field("price")) or 0.0,
                                f"`{f.path}` needs {needed} modules of "
                                f"{format_number(module / 1e3)} kW ({scheme})",
                                rect.span_of("module")))
        return needed, None, needed * module * (si(rect.field("no_load_loss")) or 0.0)
    declared_q = si(modules)
    declared = int(declared_q) if declared_q is not None else None
    if declared is not None and declared < needed:
        rated = f" derated to {format_number(round(derate * 100, 4))} %" if derate < 1 else ""
        what = f" ({readable.power(recharge_w)} of it the batteries' recharge)" \
            if recharge_w else ""
        diags.append(error("E627", f"`{f.path}` needs {needed} rectifier modules of "
                                   f"{format_number(module / 1e3)} kW ({scheme}) but "
                                   f"`{rect.path}` has {declared}", rect.span_of("modules"),
                           f"use at least {needed} modules: {readable.power(load)}{what} "
                           f"on {format_number(module / 1e3)} kW modules{rated} need {base}, "
                           f"and {scheme} makes {needed}"))
    installed = declared if declared is not None else needed
    return needed, declared, installed * module * (si(rect.field("no_load_loss")) or 0.0)


# IEEE Std 485 sizing factors taken when a battery declares none: aging 1.25 (replace at 80 %
# of rated capacity), design margin 1.1, temperature 1.0 (electrolyte at 25 degC).
_FACTORS = (("aging_factor", 1.25), ("design_factor", 1.1), ("temperature_factor", 1.0))
_FACTOR_WORDS = {"aging_factor": "aging", "design_factor": "design margin",
                 "temperature_factor": "temperature"}


def sizing_factors(bat: Optional[Instance]) -> tuple:
    """((name, value), ...) of the IEEE 485 factors a battery is sized with: those it declares,
    else the standard's (`_FACTORS`)."""
    if bat is None:
        return ()
    return tuple((name, si(bat.field(name)) or value) for name, value in _FACTORS)


def factors_text(factors) -> str:
    """`IEEE 485: aging 1.25 x design margin 1.1`: the factors the need was multiplied by (a
    factor of 1 left out), said where the need is."""
    said = [f"{_FACTOR_WORDS[n]} {format_number(round(v, 6))}" for n, v in factors
            if abs(v - 1) > 1e-9]
    return "IEEE 485: " + (" x ".join(said) if said else "no aging, design or temperature factor")


def battery(f: Instance, load, resolve, diags, reqs, units: int, said: str = ""):
    """(current, Ah its autonomy needs, Ah installed) of the batteries of one feeder that
    supply `load` W (`said`: how that power comes from the load, for the message)."""
    bat = resolve(f.field("battery"))
    if bat is None:
        return None, None, None
    autonomy = si(bat.field("autonomy"))
    cells = si(bat.field("cells"))
    end_v = si(bat.field("end_voltage"))
    if not (autonomy and cells and end_v):
        missing = [n for n, v in (("cells", cells), ("end_voltage", end_v)) if not v]
        diags.append(warning("W625", f"battery `{bat.path}` of `{f.path}` declares no "
                                     f"{' or '.join(f'`{m}`' for m in missing) or 'autonomy'}: "
                                     f"its capacity is not sized", f.span_of("battery"),
                             "declare `cells` and `end_voltage` (per cell, e.g. 1.75 V for "
                             "lead-acid)"))
        return None, None, None
    bus = si(f.field("voltage"))
    # a battery discharges from its float voltage down: its end is below its bus's nominal. On
    # an AC feeder (a UPS) it sits behind the inverter, on a DC link whose voltage the feeder
    # does not state: 240 cells end at 420 V on a 400 V AC output, as UPSs are built
    if symbol_name(f.field("current")) == "dc" and bus and cells * end_v > bus * (1 + 1e-9):
        diags.append(error("E635", f"battery `{bat.path}` of `{f.path}` ends its discharge at "
                                   f"{format_number(int(cells))} x {format_number(end_v)} V = "
                                   f"{format_number(round(cells * end_v, 3))} V, above the "
                                   f"{format_number(bus)} V of its bus: it would never discharge "
                                   f"into it", bat.span_of("end_voltage", "cells"),
                           "`end_voltage` is per cell (lead-acid ends at 1.6-1.9 V a cell: "
                           "IEEE Std 485); check it and `cells` against the bus"))
        return None, None, None
    if symbol_name(f.field("current")) == "dc" and bus:
        _float_limit(bat, f, bus, int(cells), end_v, diags)
    assumed = [(name, value) for name, value in _FACTORS if si(bat.field(name)) is None]
    if assumed:
        chem = symbol_name(bat.field("chemistry")) or "lead_acid"
        lead = "" if chem == "lead_acid" else \
            f"; they are lead-acid figures and this battery is {chem.replace('_', '-')}"
        diags.append(warning("W625", f"battery `{bat.path}` declares no "
                                     f"{', '.join(f'`{n}`' for n, _ in assumed)}: the IEEE 485 "
                                     f"values {', '.join(f'{n} = {v}' for n, v in assumed)} are "
                                     f"assumed{lead}", f.span_of("battery"),
                             "declare the sizing factors for the battery's chemistry"))
    factors = dict(sizing_factors(bat))
    how = factors_text(sizing_factors(bat))
    if factors["temperature_factor"] < 1 - 1e-9:
        # IEEE Std 485: the correction is 1.0 at 25 degC and above 1 below it; a warmer room
        # gives more capacity but a shorter life, and the standard advises no factor below 1
        _once(diags, warning("W633", f"battery `{bat.path}` declares a `temperature_factor` of "
                                     f"{format_number(factors['temperature_factor'])}: IEEE Std "
                                     f"485 advises none below 1 (1.0 at 25 degC, more below it; "
                                     f"the capacity gained above 25 degC is lost in life), so its "
                                     f"strings are sized smaller than the standard sizes them",
                             bat.span_of("temperature_factor"),
                             "declare `temperature_factor = 1` for a room at 25 degC or warmer, "
                             "the IEEE 485 correction for the lowest electrolyte temperature "
                             "below it"))
    current, _, sized = formulas.battery_capacity_ah(
        load, autonomy, si(bat.field("efficiency")) or 1.0, int(cells), end_v,
        aging=factors["aging_factor"], design=factors["design_factor"],
        temperature=factors["temperature_factor"])
    per_string = si(bat.field("string_capacity"))
    available = None
    strings = bat.field("strings")
    if isinstance(strings, UnknownValue):
        if per_string:
            need = max(1, math.ceil(sized / (per_string / 3600.0) - 1e-9))
            reqs.append(Requirement(strings.key, need, units, si(bat.field("price")) or 0.0,
                                    f"batteries of `{f.path}` must hold "
                                    f"{format_number(round(sized))} Ah",
                                    bat.span_of("string_capacity")))
            available = need * per_string / 3600.0
        return current, sized, available
    if per_string is None:
        diags.append(warning("W625", f"battery `{bat.path}` of `{f.path}` declares no "
                                     f"`string_capacity`: the {readable.grouped(sized, 1)} Ah "
                                     f"its autonomy needs ({how}) are not checked against what it "
                                     f"holds",
                             f.span_of("battery"),
                             "declare `string_capacity` (at the autonomy's discharge rate) and "
                             "`strings`"))
        return current, sized, None
    available = per_string / 3600.0 * (int(si(bat.field("strings")) or 1))
    if available < sized * (1 - 1e-9):
        need = math.ceil(sized / (per_string / 3600.0) - 1e-9)
        diags.append(error("E623", f"batteries of `{f.path}` hold "
                                   f"{format_number(round(available, 1))} Ah but "
                                   f"{format_number(autonomy / 60)} min at "
                                   f"{readable.power(load)}{said} needs "
                                   f"{format_number(round(sized, 1))} Ah ({how})",
                           bat.span_of("strings"), f"use at least {need} strings"))
    return current, sized, available
