"""The domain of every physical field: finite, signed as physics allows, within plausible bounds.

The front end checks a field's value against its domain before any analysis runs (E309 for a
declared range, E314 negative, E315 zero where a positive value is needed, E316 beyond the
plausible bound), so no analysis, Seer included, ever sees inf, NaN, a negative power or
capacity, a zero capacity or speed it divides by, or a magnitude whose products overflow.

Each dimension has a default domain below; a field narrows it in model/kinds.py (a port speed or
a capacity must be positive, a layer count is bounded by what any model has). The plausible
bounds are generous: one to three orders of magnitude above the largest real value of the kind,
so that no real design meets them, while products of a bound and the largest replication count
(MAX_COUNT = 10^9) stay far below the floating-point range (1.8e308).

A value that must be positive is something an analysis divides by (a capacity, an efficiency, a
temperature rise, a voltage, a bandwidth): it also has a plausible LOWER bound (LEAST, per
dimension, narrowed per field), two or more orders of magnitude below the smallest real value,
so that `chiller_cop = 1e-300` or `rise = 1e-300 K` is E316 where it is written instead of an
infinite facility power or flow in the report."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from astral_dsl import records

NONNEG, POSITIVE, ANY = "nonneg", "positive", "any"

ZERO_CELSIUS = 273.15


@records.frozen
class Domain:
    sign: str = ANY                      # ANY, NONNEG (>= 0) or POSITIVE (> 0)
    limit: Optional[float] = None        # the largest plausible magnitude, in SI units
    floor: Optional[float] = None        # the smallest plausible value (temperatures), SI
    why: str = ""                        # what the bound stands for, for the message
    least: Optional[float] = None        # the smallest plausible magnitude but zero, SI
    least_why: str = ""


# dimension -> its default domain (SI units). The why-texts name the real-world reference.
DEFAULTS: Dict[str, Domain] = {
    "number": Domain(ANY, 1e15, why="no dimensionless input of a design is larger"),
    "count": Domain(NONNEG, 1e9, why="the largest replication count"),
    "ratio": Domain(NONNEG, 1e3),
    "power": Domain(NONNEG, 1e10, why="10 GW, twice the largest campus planned"),
    "energy": Domain(NONNEG, 1e16),
    "voltage": Domain(POSITIVE, 1e6, why="1 MV, above any transmission line"),
    "current": Domain(NONNEG, 1e6),
    "charge": Domain(POSITIVE, 3.6e10, why="10^7 Ah"),
    "resistance": Domain(NONNEG, 1e9),
    "resistivity": Domain(NONNEG, 1e9),
    "impedance_per_length": Domain(NONNEG, 1e3),
    "time": Domain(NONNEG, 3.2e9, why="a century"),
    "frequency": Domain(POSITIVE, 1e12),
    "length": Domain(NONNEG, 1e5, why="100 km"),
    "area": Domain(NONNEG, 1e6),
    "volume": Domain(NONNEG, 1e9),
    "flow": Domain(NONNEG, 1e3, why="1,000 m^3/s, a large river"),
    "mass": Domain(NONNEG, 1e9),
    "mass_flow": Domain(NONNEG, 1e6),
    "density": Domain(POSITIVE, 1e5),
    "pressure": Domain(NONNEG, 1e9, why="1 GPa"),
    "specific_heat": Domain(POSITIVE, 1e6),
    "temperature": Domain(ANY, ZERO_CELSIUS + 1000, ZERO_CELSIUS - 100,
                          why="-100 degC to 1,000 degC"),
    "temperature_delta": Domain(ANY, 1e3, why="1,000 K"),
    "information": Domain(NONNEG, 8e21, why="a zettabyte"),
    "bandwidth": Domain(POSITIVE, 1e16, why="10 Pb/s"),
    "operations": Domain(NONNEG, 1e30),
    "compute": Domain(POSITIVE, 1e20, why="100 EFLOP/s on one device"),
    "money": Domain(NONNEG, 1e13, why="10 trillion USD"),
    "price_per_energy": Domain(NONNEG, 1e3),
}


# dimension -> (the smallest plausible positive magnitude, SI; what it stands for): the lower
# bound of every positive field of the dimension (a field may narrow it: kinds.py).
LEAST: Dict[str, Tuple[float, str]] = {
    "power": (1.0, "below any rated capacity"),
    "ratio": (0.01, "below any efficiency, power factor or derating"),
    "number": (1e-3, ""),
    "voltage": (0.1, "below any cell or bus voltage"),
    "current": (1e-3, ""),
    "charge": (36.0, "0.01 Ah"),
    "time": (1.0, ""),
    "frequency": (1e-3, ""),
    "length": (1e-3, ""),
    "area": (1e-8, "0.01 mm^2, below any conductor"),
    "flow": (1e-7, "0.1 mL/s"),
    "density": (1e-2, "thinner than any coolant"),
    "specific_heat": (10.0, "below any coolant"),
    "temperature_delta": (0.1, "no loop or air path runs that close"),
    "bandwidth": (1e3, "below any link or memory"),
    "compute": (1e6, "below any accelerator"),
}


def domain(dim: str, sign: Optional[str] = None, limit: Optional[float] = None,
           why: Optional[str] = None, least: Optional[float] = None,
           least_why: Optional[str] = None) -> Domain:
    """The default domain of `dim`, narrowed (or widened) by a field. A positive domain gets
    the dimension's plausible lower bound (LEAST) unless the field names its own."""
    base = DEFAULTS.get(dim, Domain())
    sign = sign or base.sign
    if least is None and sign == POSITIVE and dim in LEAST:
        least, least_why = LEAST[dim]
    return Domain(sign, limit if limit is not None else base.limit, base.floor,
                  why if why is not None else (base.why if limit is None else ""),
                  least, least_why or "")


def sign_violation(dom: Domain, si: float) -> Optional[Tuple[str, str]]:
    """(code, what is wrong) when `si` has a sign the domain excludes."""
    if dom.sign == NONNEG and si < 0:
        return "E314", "must not be negative"
    if dom.sign == POSITIVE and si <= 0:
        return "E315", "must be greater than zero" if si == 0 else "must be positive"
    return None


def bound_violation(dom: Domain, si: float) -> Optional[Tuple[str, str]]:
    """(code, what is wrong) when `si` lies beyond the plausible bounds of the domain."""
    if dom.floor is not None and si < dom.floor:
        return "E316", "is below the plausible range"
    if dom.least is not None and 0 < abs(si) < dom.least:
        return "E316", "is below the plausible range"
    if dom.limit is not None and abs(si) > dom.limit:
        return "E316", "is beyond the plausible range"
    return None
