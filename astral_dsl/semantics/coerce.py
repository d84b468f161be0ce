"""Checking a value against a field's or parameter's declared type."""
from __future__ import annotations

import math
from typing import Any

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.domains import bound_violation, sign_violation
from astral_dsl.model.kinds import (AnyType, BoolType, BundleType, EnumType, KINDS, ListType,
                                    QType, RefType, StrType)
from astral_dsl.model.values import Bundle, Group, ListValue, Symbol, UnknownValue, type_name
from astral_dsl.units import DIMENSION_TYPES, Quantity, dimension_name, format_number

_EXAMPLE_UNITS = {"power": "kW", "energy": "kWh", "voltage": "V", "current": "A", "time": "min",
                  "length": "m", "area": "mm^2", "flow": "L/min", "pressure": "kPa",
                  "temperature": "degC", "temperature_delta": "K", "information": "GB",
                  "bandwidth": "Gb/s", "compute": "TFLOP/s", "money": "USD", "charge": "Ah",
                  "mass": "kg", "frequency": "Hz"}


# E304 where a field takes no unit: what it takes, and how it is written
_PLAIN_HINTS = {
    "ratio": ("a ratio", "a ratio is written as a percentage, e.g. `75 %`, or as a fraction, "
                         "`0.75`, without a unit"),
    "count": ("a whole number", "a count is a whole number without a unit, e.g. `8`"),
    "number": ("a number", "a plain number is written without a unit, e.g. `1.5`"),
}


def _example(dim: str) -> str:
    """A quantity of dimension `dim` as written in a file, for a hint: `10 kW`, `10`."""
    unit = _EXAMPLE_UNITS.get(dim)
    return f"10 {unit}" if unit else "10"


WHOLE_HINT = "round a computed count with `ceil(...)` or `floor(...)`, as in `ceil(10 / 4)`"


def _fail(code: str, message: str, span: Span, hint: str | None = None):
    raise DiagnosticError(Diagnostic(code, Severity.ERROR, message, span, hint))


def coerce(value: Any, type_: Any, span: Span, what: str) -> Any:
    """Return the value if it fits `type_`, else raise a diagnostic naming `what`."""
    if isinstance(value, UnknownValue):
        _fail("E312", f"{what} cannot be left unknown here", span,
              "`?` stands for an equipment count (feeder `count`, loop `cdus`, rectifier "
              "`modules`, battery `strings`) or, with options (`? in 1..16`, `? in [A, B]`), "
              "for a value to choose")
    if isinstance(type_, AnyType):
        return value
    if isinstance(type_, QType):
        return _quantity(value, type_, span, what)
    if isinstance(type_, BoolType):
        if isinstance(value, bool):
            return value
        _fail("E303", f"{what} must be `true` or `false`, not a {type_name(value)}", span,
              "write `true` or `false`, or a comparison such as `x > 10 kW`")
    if isinstance(type_, StrType):
        if isinstance(value, str):
            problem = type_.check(value) if type_.check is not None else None
            if problem is not None:
                _fail(problem[0], f"{what}: {problem[1]}", span, problem[2])
            return value
        _fail("E303", f"{what} must be a string, not a {type_name(value)}", span,
              'write it in double quotes: "..."')
    if isinstance(type_, EnumType):
        name = value.name if isinstance(value, Symbol) else value if isinstance(value, str) else None
        if name in type_.values:
            return Symbol(name)
        if name is None:
            shadow = getattr(value, "name", None)
            hint = (f"a bare `{shadow}` is the {type_name(value)} of this file: write the "
                    f"value in double quotes, `\"{shadow}\"`"
                    if isinstance(shadow, str) and shadow in type_.values else
                    f"write {type_.describe()}")
            _fail("E303", f"{what} must be {type_.describe()}, not a {type_name(value)}", span,
                  hint)
        _fail("E311", f"`{name}` is not a valid value for {what}", span,
              did_you_mean(name, type_.values) or f"use {type_.describe()}")
    if isinstance(type_, RefType):
        kind = getattr(value, "kind", None)
        if kind in type_.kinds:
            return value
        got = type_name(value)
        _fail("E303", f"{what} must be {type_.describe()}, not a {got}", span,
              f"name {type_.describe()} declared in this file or imported, by its name "
              "(without quotes)")
    if isinstance(type_, ListType):
        if isinstance(value, Group):
            if value.count > 10_000:
                _fail("E303", f"{what} must be a list; a group of {value.count} instances is "
                              f"too large to list", span,
                      "name at most 10,000 of them: a range of the group, e.g. `[0..99]`")
            items = tuple(value.items(10_000))
        elif isinstance(value, ListValue):
            items = []
            for item in value.items:     # `[7, 14 x 8, 7]`: a bundle stands for its items
                if isinstance(item, Bundle) and item.count <= 10_000:
                    items.extend([item.item] * item.count)
                else:
                    items.append(item)
        else:
            items = (value,)
        return ListValue(tuple(coerce(i, type_.item, span, f"an item of {what}") for i in items))
    if isinstance(type_, BundleType):
        if isinstance(value, Quantity):
            value = Bundle(1, value)
        if isinstance(value, Bundle):
            _quantity(value.item, type_.item, span, f"each item of {what}")
            return value
        _fail("E303", f"{what} must be {type_.describe()}, not a {type_name(value)}", span,
              f"write a count of quantities, e.g. `8 x {_example(type_.item.dim)}`")
    raise AssertionError(type_)


def _quantity(value: Any, t: QType, span: Span, what: str) -> Quantity:
    if isinstance(value, Group) and t.dim in ("count", "number"):
        value = Quantity(float(value.count))
    if isinstance(value, Bundle) and t.dim not in ("count", "number"):
        value = value.total
    if not isinstance(value, Quantity):
        hint = (f"write a number and its unit, without quotes: `{value.strip()}`"
                if isinstance(value, str) and value.strip()[:1].isdigit() else
                f"write a number and its unit, e.g. `{_example(t.dim)}`")
        if getattr(value, "kind", None) and what.startswith("`"):
            hint = (f"{what} is a field of this kind; give the member another name, e.g. "
                    f"`{value.kind}_{what.strip('`')} = ...`")
        _fail("E303", f"{what} must be {t.describe()}, not a {type_name(value)}", span, hint)
    dims, point = DIMENSION_TYPES[t.dim]
    if value.dims != dims or value.point != point:
        expected = dimension_name(dims, point)
        unit = _EXAMPLE_UNITS.get(t.dim)
        if t.dim in _PLAIN_HINTS:        # a ratio, a count, a number: no unit
            _fail("E304", f"{what} expects {_PLAIN_HINTS[t.dim][0]}, got {value.describe()}",
                  span, _PLAIN_HINTS[t.dim][1])
        if value.dimensionless and not value.unit and unit:
            hint = f"add a unit, e.g. `{format_number(value.si)} {unit}`"
        elif t.dim in ("temperature", "temperature_delta") and value.dims == dims:
            hint = temperature_hint(value, point)
        else:
            hint = f"expected {_a(expected)} such as `{unit}`" if unit else None
        _fail("E304", f"{what} expects {_a(expected)}, got {value.describe()}", span, hint)
    if math.isnan(value.si):            # not from source text: from an API value, float("nan")
        _fail("E309", f"{what} is not a number (NaN)", span, "give a finite number")
    if not math.isfinite(value.si):
        _fail("E309", f"{what} is too large to represent", span,
              "the largest number is about 1.8e308 in SI units: check the number and its unit")
    if t.whole and not float(value.si).is_integer():
        _fail("E308", f"{what} must be a whole number, not {value}", span, WHOLE_HINT)
    dom = t.domain
    bad = sign_violation(dom, value.si) if dom is not None else None
    if bad is not None:
        _fail(bad[0], f"{what} {bad[1]}, not {value}", span, _sign_hint(t, bad[0]))
    if t.low is not None and value.si < t.low:
        _fail("E309", f"{what} must be at least {format_number(t.low)}, not {value}", span,
              _range_hint(t, value))
    if t.high is not None and value.si > t.high:
        limit = "100 %" if t.dim == "ratio" and t.high == 1 else _shown(t.high, value)
        _fail("E309", f"{what} must be at most {limit}, not {value}", span,
              _range_hint(t, value))
    bad = bound_violation(dom, value.si) if dom is not None else None
    if bad is not None:
        _fail(bad[0], f"{what} {bad[1]}: {value}", span, _bound_hint(dom, value))
    return value


def temperature_hint(value: Quantity, point: bool, written=lambda v: f"`{v}`") -> str:
    """The hint for a temperature `value` given where a temperature point (`point`) or a
    difference is expected: which the language reads its unit as, and how to write the other
    (`written`: how an example is shown, e.g. as a --set flag)."""
    if point:
        kelvin = value.si > 150           # absolute kelvin, as a physicist writes them
        absolute = format_number(round(value.si - 273.15, 9) if kelvin else value.si)
        return (f"`{value.unit or 'K'}` is a temperature difference in astral, not an absolute "
                f"temperature: write an absolute one in `degC` or `degF`, e.g. "
                f"{written(f'{absolute} degC')}"
                + (f" for {value} above absolute zero" if kelvin else ""))
    return (f"`{value.unit}` is an absolute temperature; a difference is written in `K` (or "
            f"`delta_degC`), e.g. {written(f'{format_number(value.si - 273.15)} K')} for "
            f"{value} above 0 degC")


def _shown(si: float, like: Quantity) -> str:
    """An SI value in the unit of `like` (the user's unit)."""
    if like.unit:
        try:
            return str(Quantity(si, like.dims, like.unit, like.point))
        except (ValueError, ArithmeticError):
            pass
    return format_number(si)


def _sign_hint(t: QType, code: str) -> str:
    name = t.dim.replace("_", " ")
    if code == "E314":
        return f"a {name} is zero or more here"
    return f"a {name} of zero would be divided by: give the real, positive value"


def _bound_hint(dom, value: Quantity) -> str:
    if dom.least is not None and 0 < abs(value.si) < dom.least:
        why = f" ({dom.least_why})" if dom.least_why else ""
        return (f"the plausible range starts at {_shown(dom.least, value)}{why}; check the unit "
                f"and the number")
    if dom.floor is not None:
        text = f"between {_shown(dom.floor, value)} and {_shown(dom.limit, value)}"
    else:
        text = f"at most {_shown(dom.limit, value)}"
    # the reason, unless it is the range again in the same words (`-100 degC to 1,000 degC`)
    same = dom.why.replace(",", "") == text.replace("between ", "").replace(" and ", " to ") \
        if dom.why else True
    why = "" if same else f" ({dom.why})"
    return f"the plausible range is {text}{why}; check the unit and the number"


def _range_hint(t: QType, value: Quantity) -> str:
    """E309's hint: the declared range in the value's unit (a ratio's percent read as a
    fraction above 100 %, written as one)."""
    if t.dim == "ratio" and t.high == 1 and value.si > 1:
        if not value.unit:              # `power_factor = 95`: a percent written as a fraction
            return (f"a plain number is a fraction: write `{format_number(value.si)} %` for a "
                    f"percent, or the fraction `{format_number(value.si / 100)}`")
        return (f"a ratio is at most 100 %: {value} reads as {format_number(value.si)}; write a "
                f"percentage (`95 %`) or a fraction (`0.95`)")
    if t.low is not None and t.high is not None:
        text = f"from {_shown(t.low, value)} to {_shown(t.high, value)}"
    elif t.low is not None:
        text = f"of at least {_shown(t.low, value)}"
    else:
        text = f"of at most {_shown(t.high, value)}"
    return f"it takes values {text}: check the number and its unit"


def type_from_annotation(name: str):
    """A parameter annotation: a dimension name, `bool`, `string`, or a kind."""
    if name in DIMENSION_TYPES:
        return QType(name, whole=name == "count", low=0 if name == "count" else None)
    if name == "bool":
        return BoolType()
    if name == "string":
        return StrType()
    if name in KINDS:
        return RefType((name,))
    return None


ANNOTATIONS = sorted(list(DIMENSION_TYPES) + ["bool", "string"] + list(KINDS))


def _a(name: str) -> str:
    """`a power`, `an information`, `an energy`."""
    return ("an " if name[:1] in "aeiou" else "a ") + name
