"""How a computed quantity's unit is spelled: a product's or a power's unit from its operands'
(`kW/h` squared is `kW^2/h^2`, its inverse square `h^2/kW^2`), kept only when it parses back to
the quantity's dimension, else the preferred unit of the dimension (`J/kg/K`, base units)."""
from __future__ import annotations

import re
from typing import List

from astral_dsl.units.dimension import Dim
from astral_dsl.units.table import MAX_UNIT_EXPONENT, parse_unit


def reads_back(candidate: str, dims: Dim) -> str:
    """`candidate` when it parses back to a unit of `dims`, else the preferred unit of `dims`."""
    if candidate:
        try:
            if parse_unit(candidate).dims == dims:
                return candidate
        except ValueError:
            pass
    return preferred_unit(dims)


_ATOM = re.compile(r"([*/]?)([^*/^]+)(?:\^(-?\d+))?")


def unit_power(unit: str, n: int, dims: Dim) -> str:
    """The display unit of a quantity in `unit` raised to `n`: each factor's exponent times n
    (`m^2` -> `m^4`, `kW/h` -> `kW^2/h^2`; `m^2^2` and `kW/h^2` would not read back, or read
    back as another quantity), else the preferred unit of the result's dimension."""
    if not unit:
        return ""
    parts = [f"{op}{atom}" + ("" if int(e or 1) * n == 1 else f"^{int(e or 1) * n}")
             for op, atom, e in _ATOM.findall(unit)]
    return reads_back(tidy("".join(parts)), dims)


def tidy(unit: str) -> str:
    """`unit` with its negative exponents written as a denominator after the factors with a
    positive one (`kW^-2/h^-2` is `h^2/kW^2`, `m^-1/s^-2` is `s^2/m`); `unit` itself when no
    exponent is written negative, or when none is positive (`m^-1*s^-2`: a unit cannot start
    with `/`). Each factor after a `/` is a divisor: `a/b*c` would be a*c/b."""
    if "^-" not in unit:
        return unit
    factors = [(atom, (-1 if op == "/" else 1) * int(e or 1))
               for op, atom, e in _ATOM.findall(unit)]
    num = [_power(atom, e) for atom, e in factors if e > 0]
    if not num:
        return unit
    return "*".join(num) + "".join("/" + _power(atom, -e) for atom, e in factors if e < 0)


def _power(atom: str, e: int) -> str:
    return atom if e == 1 else f"{atom}^{e}"


_PREFERRED = {
    "power": "W", "energy": "J", "voltage": "V", "current": "A", "charge": "Ah",
    "resistance": "ohm", "time": "s", "frequency": "Hz", "length": "m", "area": "m^2",
    "volume": "m^3", "flow": "m^3/s", "mass": "kg", "mass_flow": "kg/s", "density": "kg/m^3",
    "pressure": "Pa", "specific_heat": "J/kg/K", "temperature_delta": "K", "information": "B",
    "bandwidth": "b/s", "operations": "FLOP", "compute": "FLOP/s", "money": "USD",
}


def preferred_unit(dims: Dim) -> str:
    from astral_dsl.units.dimension import BASES, NAMED

    for name, d in NAMED.items():
        if d == dims and name in _PREFERRED:
            return _PREFERRED[name]
    # the base units, each power in factors a unit may spell (`m^14`: `m^12*m^2`); a
    # denominator's factors each after a `/` (`kg*m/s^2`), none without a numerator
    # (`m^-1*s^-2`: `m^-1/s^-2` would read back as m^-1*s^2)
    num = [f for b, e in zip(BASES, dims) if e > 0 for f in _factors(b, e)]
    den = [f for b, e in zip(BASES, dims) if e < 0 for f in _factors(b, -e)]
    if not num:
        return "*".join(f for b, e in zip(BASES, dims) if e < 0 for f in _factors(b, e))
    return "*".join(num) + "".join("/" + f for f in den)


def _factors(base: str, e: int) -> List[str]:
    """`base^e` as factors of at most MAX_UNIT_EXPONENT each."""
    step = MAX_UNIT_EXPONENT if e > 0 else -MAX_UNIT_EXPONENT
    out = []
    while e:
        part = step if abs(e) > MAX_UNIT_EXPONENT else e
        out.append(base if part == 1 else f"{base}^{part}")
        e -= part
    return out
