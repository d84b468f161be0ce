"""A DC or AC bus's voltages: the lowest it runs at (where its current is computed), the
nominal voltage against its standard's range (E626), and the end of a battery's discharge less
the worst drop against the lowest input the equipment on the bus accepts (E633)."""
from __future__ import annotations

import math
from typing import Optional, Tuple

from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import error, si, warning
from astral_dsl.model.design import Instance
from astral_dsl.units import format_number

def lowest(f: Instance, kind: str, nominal: float, resolve, diags,
           serves: bool) -> Tuple[float, str]:
    """The lowest voltage the feeder runs at, where its current is highest: the battery's end of
    discharge (cells x end voltage) on a DC bus with batteries, else the standard's minimum,
    else (with W622) the nominal voltage."""
    bat = resolve(f.field("battery"))
    if kind == "dc" and bat is not None:
        cells, end_v = si(bat.field("cells")), si(bat.field("end_voltage"))
        if cells and end_v:
            return min(cells * end_v, nominal) if nominal else cells * end_v, \
                "battery end of discharge"
    std = resolve(f.field("standard"))
    lo = si(std.field("min")) if std is not None else None
    if lo:
        return min(lo, nominal) if nominal else lo, "standard minimum"
    if serves and nominal:
        why = f"its standard `{std.path}` gives no `min`" if std is not None else \
            "it declares no `standard` (with a `min`)"
        diags.append(warning("W622", f"feeder `{f.path}`: {why} and no battery on its bus, so its "
                                     f"current is computed at the nominal "
                                     f"{format_number(nominal)} V, not at the lowest voltage it "
                                     f"runs at", f.span_of("voltage"),
                             _w622_hint(std, kind)))
    return nominal, "nominal"


def _w622_hint(std: Optional[Instance], kind: str) -> str:
    """What W622 asks for: a `min` on the standard the feeder declares (it has one already), or
    a standard with one; a battery only where there is a DC bus to put it on."""
    if std is None:
        first = "declare `standard = ...` with a `min` (the low end of its normal range)"
    elif "." in std.path:
        first = f"give its standard `{std.path}` a `min` (the low end of its normal range)"
    else:
        first = (f"give its standard a `min`, the low end of its normal range from the "
                 f"equipment's data sheets: `standard = {std.path}(min = ...)`")
    return first + (", or a `battery` with `cells` and `end_voltage` on its DC bus"
                    if kind == "dc" else "")


def in_range(f: Instance, voltage: float, resolve, diags) -> None:
    """E626: a nominal voltage outside its standard's normal range."""
    std = resolve(f.field("standard"))
    if std is None or not voltage:
        return
    lo, hi = si(std.field("min")), si(std.field("max"))
    if (lo is not None and voltage < lo) or (hi is not None and voltage > hi):
        diags.append(error("E626", f"feeder `{f.path}` runs at {format_number(voltage)} V, "
                                   f"outside the normal range of `{std.path}` "
                                   f"({format_number(lo)}-{format_number(hi)} V)",
                           f.span_of("voltage"), "choose a voltage within the standard's range"))




def equipment_min(f: Instance, resolve) -> Tuple[Optional[float], str]:
    """(the lowest input the equipment on the feeder's bus accepts, where it is declared): the
    feeder's `min_input`, else its standard's `equipment_min`, else the standard's `min`."""
    own = si(f.field("min_input"))
    if own:
        return own, f"`{f.path}`'s `min_input`"
    std = resolve(f.field("standard"))
    if std is None:
        return None, ""
    for name, what in (("equipment_min", "equipment minimum"), ("min", "minimum")):
        v = si(std.field(name))
        if v:
            return v, f"`{std.path}`'s {what}"
    return None, ""


def end_of_discharge(f: Instance, resolve, low: float, low_from: str, current_a: float,
                     drop_v: Optional[float], carried_w: float, diags) -> Optional[float]:
    """E633: on a DC bus with batteries, the battery's end of discharge less the feeder's drop
    (at the current of that voltage) must stay at or above the equipment's lowest input; the
    error names the end voltage per cell that would hold (formulas.end_voltage_needed, the drop
    growing as the voltage falls). Returns the voltage at the equipment (None: not checked)."""
    if low_from != "battery end of discharge" or drop_v is None or not current_a:
        return None
    floor, where = equipment_min(f, resolve)
    at_equipment = low - drop_v
    if floor is None or at_equipment >= floor - 1e-9:
        return at_equipment
    bat = resolve(f.field("battery"))
    cells = int(si(bat.field("cells")))
    per_cell = si(bat.field("end_voltage"))
    needed = formulas.end_voltage_needed(floor, carried_w, drop_v / current_a)
    cell = math.ceil(needed / cells * 100 - 1e-9) / 100
    diags.append(error("E633", f"feeder `{f.path}`: its batteries end their discharge at "
                               f"{cells} x {format_number(per_cell)} V = "
                               f"{format_number(round(low, 3))} V, and after the "
                               f"{format_number(round(drop_v, 2))} V drop the equipment sees "
                               f"{format_number(round(at_equipment, 2))} V, below the "
                               f"{format_number(floor)} V it accepts ({where})",
                       bat.span_of("end_voltage") or f.span_of("battery"),
                       f"end the discharge at {format_number(cell)} V per cell or above "
                       f"({cells} x {format_number(cell)} V = "
                       f"{format_number(round(cells * cell, 3))} V), or lower the drop"))
    return at_equipment
