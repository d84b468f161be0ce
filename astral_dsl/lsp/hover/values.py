"""Hover text for values: a value and its type in words, the conversions people want (kW and
BTU/h, Gb/s and GB/s, ...) and the evaluated fields of an instance."""
from __future__ import annotations

from typing import List

from astral_dsl.units import Quantity, format_number

# Units worth seeing a quantity in, by dimension name (Quantity.dimension()).
CONVERSIONS = {
    "power": ["W", "kW", "MW", "BTU/h", "RT"],
    "energy": ["kWh", "MWh", "MJ", "BTU"],
    "bandwidth": ["Gb/s", "GB/s", "Tb/s", "TB/s"],
    "information": ["GB", "GiB", "TB", "TiB"],
    "compute": ["TFLOP/s", "PFLOP/s"],
    "operations": ["TFLOP", "PFLOP", "EFLOP"],
    "temperature": ["degC", "degF"],
    "temperature difference": ["K", "delta_degF"],
    "flow": ["L/min", "m^3/h", "GPM", "CFM"],
    "pressure": ["kPa", "bar", "psi", "mH2O"],
    "length": ["m", "mm", "ft", "U"],
    "area": ["mm^2", "m^2"],
    "volume": ["L", "m^3", "gal"],
    "time": ["s", "min", "h", "day"],
    "voltage": ["V", "kV"],
    "current": ["A", "kA"],
    "charge": ["Ah"],
    "money": ["USD", "kUSD", "MUSD"],
    "mass": ["kg", "lb", "t"],
    "mass flow": ["kg/s", "kg/h"],
    "frequency": ["Hz", "MHz", "GHz"],
    "resistance": ["ohm", "mohm"],
}


def _round(x: float) -> str:
    if x == 0:
        return "0"
    text = format_number(float(f"{x:.4g}"))
    if "e" not in text and "." not in text and abs(x) >= 10000:
        return f"{int(float(text)):,}"
    return text


def conversions(q: Quantity) -> List[str]:
    if q.dimensionless:
        if q.unit == "%":
            return [format_number(q.si)]
        return [f"{int(q.si):,}"] if float(q.si).is_integer() and abs(q.si) >= 10000 else []
    out = []
    for unit in CONVERSIONS.get(q.dimension(), []):
        if unit == q.unit:
            continue
        try:
            out.append(f"{_round(q.value_in(unit))} {unit}")
        except Exception:  # noqa: BLE001 - a unit that does not apply to this quantity
            continue
    return out


# ---- describing values ---------------------------------------------------------------------------
def show_value(value) -> str:
    from astral_dsl.model.values import (Bundle, FabricAxis, FabricSelection, Group, ListValue,
                                         RangeValue, Symbol, UnknownValue, Values, show)
    from astral_dsl.semantics.frames import Frame

    if isinstance(value, Frame):
        return f"{value.kind} {value.display}"
    if isinstance(value, Group):
        return " + ".join(f"{r.count:,} x {show_value(r.item)}" if not hasattr(r.item, "runs")
                          else f"{r.count:,} x [{show_value(r.item)}]" for r in value.runs)
    if isinstance(value, Bundle):
        return f"{value.count:,} x {value.item}"
    if type(value).__name__ == "Namespace":
        return f"module {value.name}"
    if isinstance(value, FabricAxis):
        return f"{value.selection.display}.{value.axis}"
    if isinstance(value, FabricSelection):
        return value.display
    if isinstance(value, (bool, str, float, Quantity, Symbol, ListValue, RangeValue, Values,
                          UnknownValue)):
        text = show(value)
        return text if len(text) <= 200 else text[:197] + "..."
    return type(value).__name__          # never the repr of an evaluator object


def type_of(value) -> str:
    from astral_dsl.model.values import (Bundle, Group, ListValue, RangeValue, Symbol,
                                         UnknownValue, Values)
    from astral_dsl.semantics.frames import Frame

    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Quantity):
        if value.dimensionless:
            return "ratio" if value.unit == "%" else "number"
        return value.dimension()
    if isinstance(value, Frame):
        return value.kind
    if isinstance(value, Group):
        kinds = sorted({getattr(i, "kind", "?") for _, i in value.flat()})
        return f"group of {value.count:,} ({', '.join(kinds)})"
    if isinstance(value, Bundle):
        return f"bundle of {value.item.dimension()}"
    if isinstance(value, Symbol):
        return "name"
    if isinstance(value, ListValue):
        return "list"
    if isinstance(value, RangeValue):
        return "range"
    if isinstance(value, Values):
        return "values over a group"
    if isinstance(value, UnknownValue):
        return "unknown (chosen by sizing)"
    if type(value).__name__ == "Namespace":
        return "module"
    if type(value).__name__ in ("FabricAxis", "FabricSelection"):
        return "part of a fabric"
    return type(value).__name__


def describe_value(value) -> List[str]:
    """Markdown lines for one value."""
    from astral_dsl.model.values import Bundle, Group
    from astral_dsl.semantics.frames import Frame

    lines = [f"**`{show_value(value)}`** · {type_of(value)}"]
    if isinstance(value, Quantity):
        conv = conversions(value)
        if conv:
            lines.append("= " + " · ".join(f"`{c}`" for c in conv))
    elif isinstance(value, Bundle):
        total = value.total
        lines.append(f"in all `{total}`" + ("" if not conversions(total) else " = " + " · ".join(
            f"`{c}`" for c in conversions(total))))
    elif isinstance(value, Group):
        lines.append(f"{value.count:,} in all")
    elif isinstance(value, Frame):
        lines.extend(frame_fields(value))
    return lines


def frame_fields(frame, limit: int = 12) -> List[str]:
    """`name = value` of an instance's fields (evaluated), for hovering a template or instance."""
    from astral_dsl.model.values import POISON

    rows = []
    for name, d in frame.defs.items():
        if d.is_let or name in ("source", "note"):
            continue
        value = frame.values.get(name)
        if value is None or value is POISON:
            continue
        rows.append(f"- `{name} = {show_value(value)}`")
        if len(rows) >= limit:
            rows.append("- ...")
            break
    return rows
