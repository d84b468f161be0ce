"""The unit table: every unit an exact rational multiple of the SI base units.

Conventions fixed here (and documented in docs/language.md):
- `b` is the bit and `B` the byte; `Gb` is the gigabit (never the gilbert), `GB` the gigabyte
  (10^9 bytes) and `GiB` the gibibyte (2^30 bytes). Information is its own dimension.
- `K`, `delta_degC` and `delta_degF` are temperature differences; `degC` and `degF` are points.
- `%` is 1/100 and dimensionless.
Exact constants: BTU (IT) = 1055.05585262 J (ISO 31-4); foot = 0.3048 m and US gallon =
3.785411784 L (1959 international yard and pound agreement); standard gravity 9.80665 m/s^2
(CGPM 1901) for metres of water head; refrigeration ton = 12,000 BTU/h.
"""
from __future__ import annotations

import re
from fractions import Fraction as F
from functools import lru_cache

import attrs

from astral_dsl import records

from astral_dsl.units.dimension import DIMENSIONLESS, Dim, dim, div, mul, power


@records.frozen
class Unit:
    name: str
    scale: F            # SI value of one unit (for points: size of one degree)
    dims: Dim
    offset: F = F(0)    # for temperature points: SI kelvin of the unit's zero
    point: bool = False  # a temperature point (degC, degF)


UNITS: dict[str, Unit] = {}


def _add(name: str, scale, dims: Dim, **kw) -> None:
    UNITS[name] = Unit(name, F(scale), dims, **kw)


_SI_PREFIXES = {"p": F(1, 10**12), "n": F(1, 10**9), "u": F(1, 10**6), "m": F(1, 1000), "": F(1),
                "k": F(1000), "M": F(10**6), "G": F(10**9), "T": F(10**12), "P": F(10**15),
                "E": F(10**18)}
_BIG = {k: v for k, v in _SI_PREFIXES.items() if v >= 1}


def _prefixed(symbol: str, scale, dims: Dim, prefixes=_SI_PREFIXES) -> None:
    for p, factor in prefixes.items():
        _add(p + symbol, F(scale) * factor, dims)


POWER = dim(kg=1, m=2, s=-3)
ENERGY = dim(kg=1, m=2, s=-2)
_prefixed("W", 1, POWER)
_prefixed("J", 1, ENERGY)
_prefixed("Wh", 3600, ENERGY)
_prefixed("V", 1, dim(kg=1, m=2, s=-3, A=-1))
_prefixed("A", 1, dim(A=1))
_prefixed("Ah", 3600, dim(A=1, s=1))
_prefixed("ohm", 1, dim(kg=1, m=2, s=-3, A=-2))
_prefixed("Hz", 1, dim(s=-1))
_prefixed("Pa", 1, dim(kg=1, m=-1, s=-2))
_prefixed("s", 1, dim(s=1), {"": 1, "m": F(1, 1000), "u": F(1, 10**6), "n": F(1, 10**9)})
_prefixed("m", 1, dim(m=1), {"": 1, "k": 1000, "c": F(1, 100), "m": F(1, 1000), "u": F(1, 10**6)})
_prefixed("g", F(1, 1000), dim(kg=1), {"": 1, "k": 1000, "m": F(1, 1000)})
_prefixed("L", F(1, 1000), dim(m=3), {"": 1, "m": F(1, 1000)})
_prefixed("b", 1, dim(bit=1), _BIG)
_prefixed("B", 8, dim(bit=1), _BIG)
_prefixed("bps", 1, dim(bit=1, s=-1), _BIG)
_prefixed("FLOP", 1, dim(FLOP=1), _BIG)
_prefixed("FLOPS", 1, dim(FLOP=1, s=-1), _BIG)
_prefixed("USD", 1, dim(USD=1), {"": 1, "k": 1000, "M": 10**6})
for _p, _e in (("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50)):
    _add(_p + "B", 8 * 2**_e, dim(bit=1))
    _add(_p + "b", 2**_e, dim(bit=1))

_add("min", 60, dim(s=1))
_add("h", 3600, dim(s=1))
_add("day", 86400, dim(s=1))
_add("week", 7 * 86400, dim(s=1))
_add("yr", 365 * 86400, dim(s=1))          # a 365-day year: 8,760 h, as in annual PUE
_add("t", 1000, dim(kg=1))                 # tonne
_add("lb", F("0.45359237"), dim(kg=1))
_add("ft", F("0.3048"), dim(m=1))
_add("inch", F("0.0254"), dim(m=1))        # `in` is a keyword: a rack's width, `19 inch`
_add("U", F("0.04445"), dim(m=1))          # rack unit, EIA-310: 1.75 in
_add("gal", F("0.003785411784"), dim(m=3))  # US gallon
_add("CFM", F("0.3048") ** 3 / 60, dim(m=3, s=-1))
_add("GPM", F("0.003785411784") / 60, dim(m=3, s=-1))
_add("bar", 100000, dim(kg=1, m=-1, s=-2))
_add("psi", F("6894.757293168"), dim(kg=1, m=-1, s=-2))
_add("mH2O", F("9806.65"), dim(kg=1, m=-1, s=-2))
_add("BTU", F("1055.05585262"), ENERGY)
_add("RT", F("1055.05585262") * 12000 / 3600, POWER)
_add("VA", 1, POWER)
_add("kVA", 1000, POWER)
_add("MVA", 10**6, POWER)
_add("%", F(1, 100), DIMENSIONLESS)
_add("ppm", F(1, 10**6), DIMENSIONLESS)
_add("K", 1, dim(K=1))
_add("mK", F(1, 1000), dim(K=1))
_add("delta_degC", 1, dim(K=1))
_add("delta_degF", F(5, 9), dim(K=1))
_add("degC", 1, dim(K=1), offset=F("273.15"), point=True)
_add("\u00b0C", 1, dim(K=1), offset=F("273.15"), point=True)
_add("degF", F(5, 9), dim(K=1), offset=F("273.15") - F(32) * F(5, 9), point=True)
_add("\u00b0F", F(5, 9), dim(K=1), offset=F("273.15") - F(32) * F(5, 9), point=True)


for _name in [n for n in UNITS if n.startswith("u") and len(n) > 1]:
    UNITS["\u00b5" + _name[1:]] = attrs.evolve(UNITS[_name], name="\u00b5" + _name[1:])


def unit_names() -> list[str]:
    return sorted(UNITS)


class UnitSpecError(ValueError):
    def __init__(self, message: str, atom: str, hint: str | None = None, code: str = "E300"):
        super().__init__(message)
        self.atom = atom
        self.hint = hint
        self.code = code


# The largest exponent written on a unit (`m^3`, `s^-3`) and of a base dimension in a unit: far
# above any physical unit (kg*m^2*s^-3*A^-2 is the ohm), while `kW^99999999` would ask for a
# rational of 300 million digits.
MAX_UNIT_EXPONENT = 12
MAX_DIMENSION_EXPONENT = 24


_ATOM = re.compile(r"^([^\^]+)(?:\^(-?[0-9]+))?$")   # 0-9: `\d` takes any script's digits


@lru_cache(maxsize=2048)
def parse_unit(spec: str) -> Unit:
    """Parse `kW`, `Gb/s`, `kJ/kg/K`, `ohm*mm^2/m`, `degC` into one Unit (left to right)."""
    tokens = re.split(r"([*/])", spec.strip())
    scale, dims = F(1), DIMENSIONLESS
    op = "*"
    atoms = tokens[0::2]
    ops = ["*"] + tokens[1::2]
    if len(atoms) == 1:
        m = _ATOM.match(atoms[0])
        if m and m.group(2) is None and m.group(1) in UNITS:
            return UNITS[m.group(1)]
    for op, atom in zip(ops, atoms):
        m = _ATOM.match(atom)
        if not m:
            raise UnitSpecError(f"malformed unit `{spec}`", atom,
                                "a unit is names of the unit table, each with an optional "
                                "`^N`, joined by `*` or `/`, as in `kJ/kg/K`")
        name, digits = m.group(1), m.group(2) or "1"
        if len(digits.lstrip("-")) > 3 or abs(int(digits)) > MAX_UNIT_EXPONENT:
            raise UnitSpecError(f"the exponent of `{atom[:40]}` is beyond "
                                f"±{MAX_UNIT_EXPONENT}", atom, "no physical unit needs more; "
                                "write the power of a quantity as `(x) ^ n`", code="E313")
        exp = int(digits)
        unit = UNITS.get(name)
        if unit is None:
            raise UnitSpecError(f"unknown unit `{name}`", name, _suggest(name))
        if unit.point:
            raise UnitSpecError(
                f"`{name}` is a temperature point and cannot be part of a compound unit", name,
                "use `K` (or `delta_degC`) for temperature differences, e.g. `kJ/kg/K`")
        s, d = unit.scale ** exp, power(unit.dims, exp)
        if op == "*":
            scale, dims = scale * s, mul(dims, d)
        else:
            scale, dims = scale / s, div(dims, d)
        if any(abs(e) > MAX_DIMENSION_EXPONENT for e in dims):
            raise UnitSpecError(f"the unit `{spec[:60]}` has a dimension exponent beyond "
                                f"±{MAX_DIMENSION_EXPONENT}", atom, "no physical unit needs "
                                "it: check the unit's exponents", code="E313")
    return Unit(spec, scale, dims)


def is_unit(spec: str) -> bool:
    """Whether `spec` names a unit (`1f1b` is a keyword that reads as a quantity: `f1b` is not)."""
    try:
        parse_unit(spec)
    except UnitSpecError:
        return False
    return True


# Spellings of units that other tools and habits use, and the unit here: the nearest name by
# letters would be wrong for them (`degK` is nearest `degF`, `m3` nearest `m`, `sec` nothing).
OTHER_SPELLINGS = {
    "degK": "K", "sec": "s", "secs": "s", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "mins": "min", "days": "day", "lbs": "lb", "m2": "m^2", "m3": "m^3", "cm2": "cm^2",
    "mm2": "mm^2", "ft3": "ft^3",
}


def _suggest(name: str):
    from astral_dsl.diagnostics import did_you_mean

    known = OTHER_SPELLINGS.get(name)
    return f"did you mean `{known}`?" if known else did_you_mean(name, UNITS) or (
        "the units are those of the unit table (docs/language.md, section 2.5), as `kW`, "
        "`GB`, `Gb/s`, `m^3/h`, `degC`, `K`")
