"""How a computed quantity's unit is spelled, by one rule for products, quotients and powers:
the unit names the operands were written in, each with its exponents added (`1 / (2 kW/h)` is
in `h/kW`, `(2 kW/h) ^ 2` in `kW^2/h^2`, `(6 kW*h) / (2 h)` in `kW`), kept only when it parses
back to the quantity's dimension, else the preferred unit of the dimension (`J/kg/K`, base
units)."""
from __future__ import annotations

import re
from typing import Dict, List

from astral_dsl.units.dimension import BASES, NAMED, Dim
from astral_dsl.units.table import MAX_UNIT_EXPONENT, parse_unit


_ATOM = re.compile(r"([*/]?)([^*/^]+)(?:\^(-?[0-9]+))?")


def exponents(unit: str) -> Dict[str, int]:
    """Each unit name of `unit` and its exponent, in the order written (`kW/h` -> kW 1, h -1;
    `m/s*kg` -> m 1, s -1, kg 1: each factor after a `/` is a divisor, the rest multiply)."""
    out: Dict[str, int] = {}
    for op, atom, e in _ATOM.findall(unit):
        out[atom] = out.get(atom, 0) + (-1 if op == "/" else 1) * int(e or 1)
    return out


def combined_unit(a: str, b: str, op: str, dims: Dim) -> str:
    """The display unit of a product (`op` `*`) or quotient (`/`) of quantities in units `a`
    and `b` ("" for a plain number or a ratio)."""
    written = exponents(a)
    for atom, e in exponents(b).items():
        written[atom] = written.get(atom, 0) + (e if op == "*" else -e)
    return spell(written, dims)


def unit_power(unit: str, n: int, dims: Dim) -> str:
    """The display unit of a quantity in `unit` raised to `n`: each name's exponent times n
    (`m^2` -> `m^4`, `kW/h` -> `kW^2/h^2`, to the -2 `h^2/kW^2`)."""
    if not unit:
        return ""
    return spell({atom: e * n for atom, e in exponents(unit).items()}, dims)


def spell(written: Dict[str, int], dims: Dim) -> str:
    """The unit of `dims` spelled in the names `written` with their exponents: a name whose
    exponents cancel is left out (`kW*h/h` is `kW`), and so are two names of one dimension
    above and below the line (`GB*s/Gb` is `s`, the value shown 8 times larger: the amount is
    held in SI units); with none written above the line, a named dimension's unit (`1 / (10
    ms)` is `100 Hz`, not `ms^-1`; `1 / (2 kW)` stays `kW^-1`), and with none left above it
    after cancelling, the named unit only where it shows the same number (`(10 GB/s) / (2 GB)`
    is `5 Hz`; `(1 MW/h) / (1 kW)` is `1000 h^-1`, a rate per hour as written, not `0.2778
    Hz`). Kept when it reads back as a unit of `dims`, else the preferred unit of `dims`."""
    reciprocal = not any(e >= 0 for e in written.values())     # a 0: names that cancelled
    written = _cancelled(written)
    candidate = _written(written)
    if not any(e > 0 for e in written.values()) and _named(dims) and (
            reciprocal or _scale(candidate) == _scale(_named(dims))):
        return _named(dims)
    if candidate:
        try:
            if parse_unit(candidate).dims == dims:
                return candidate
        except ValueError:
            pass
    return preferred_unit(dims)


def _cancelled(written: Dict[str, int]) -> Dict[str, int]:
    """`written` with the powers of a name above the line and of another of its dimension
    below cancelled (`kW*h/W`: kW and W; `MW/h/kW`: MW and kW), as far as they go."""
    out = dict(written)
    for up in written:
        for down in written:
            if out[up] > 0 and out[down] < 0 and _dims_of(up) == _dims_of(down) is not None:
                n = min(out[up], -out[down])
                out[up], out[down] = out[up] - n, out[down] + n
    return out


def _scale(unit: str):
    try:
        return parse_unit(unit).scale if unit else None
    except ValueError:
        return None


def _dims_of(name: str):
    try:
        return parse_unit(name).dims
    except ValueError:
        return None


def _written(written: Dict[str, int]) -> str:
    """The names with a positive exponent, in the order written, then each with a negative one
    after its own `/` (`a/b*c` would be a*c/b); each power in factors a unit may spell (`m^14`:
    `m^12*m^2`); with none positive, the negative exponents written (`m^-1*s^-2`: `m^-1/s^-2`
    would read back as m^-1*s^2, and a unit cannot start with `/`)."""
    num = [f for atom, e in written.items() if e > 0 for f in _factors(atom, e)]
    den = [f for atom, e in written.items() if e < 0 for f in _factors(atom, -e)]
    if not num:
        return "*".join(f for atom, e in written.items() if e < 0 for f in _factors(atom, e))
    return "*".join(num) + "".join("/" + f for f in den)


_PREFERRED = {
    "power": "W", "energy": "J", "voltage": "V", "current": "A", "charge": "Ah",
    "resistance": "ohm", "time": "s", "frequency": "Hz", "length": "m", "area": "m^2",
    "volume": "m^3", "flow": "m^3/s", "mass": "kg", "mass_flow": "kg/s", "density": "kg/m^3",
    "pressure": "Pa", "specific_heat": "J/kg/K", "temperature_delta": "K", "information": "B",
    "bandwidth": "b/s", "operations": "FLOP", "compute": "FLOP/s", "money": "USD",
}

# the unit of each base dimension (dimension.BASES): information's is the bit, `b`
_BASE_UNIT = {"bit": "b"}


def _named(dims: Dim) -> str:
    """The preferred unit of a named dimension, "" for any other (and for a plain number)."""
    for name, d in NAMED.items():
        if d == dims and name in _PREFERRED:
            return _PREFERRED[name]
    return ""


def preferred_unit(dims: Dim) -> str:
    """A named dimension's unit, else the base units (`s^4/kg/m^2`, `s/b`)."""
    return _named(dims) or _written({_BASE_UNIT.get(b, b): e for b, e in zip(BASES, dims)})


def _factors(base: str, e: int) -> List[str]:
    """`base^e` as factors of at most MAX_UNIT_EXPONENT each."""
    step = MAX_UNIT_EXPONENT if e > 0 else -MAX_UNIT_EXPONENT
    out = []
    while e:
        part = step if abs(e) > MAX_UNIT_EXPONENT else e
        out.append(base if part == 1 else f"{base}^{part}")
        e -= part
    return out
