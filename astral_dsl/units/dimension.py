"""Dimensions as exponent vectors over eight base dimensions."""
from __future__ import annotations

from typing import Tuple

BASES = ("kg", "m", "s", "A", "K", "bit", "FLOP", "USD")

Dim = Tuple[int, int, int, int, int, int, int, int]

DIMENSIONLESS: Dim = (0, 0, 0, 0, 0, 0, 0, 0)


def dim(kg=0, m=0, s=0, A=0, K=0, bit=0, FLOP=0, USD=0) -> Dim:
    return (kg, m, s, A, K, bit, FLOP, USD)


def mul(a: Dim, b: Dim) -> Dim:
    return tuple(x + y for x, y in zip(a, b))  # type: ignore[return-value]


def div(a: Dim, b: Dim) -> Dim:
    return tuple(x - y for x, y in zip(a, b))  # type: ignore[return-value]


def power(a: Dim, n: int) -> Dim:
    return tuple(x * n for x in a)  # type: ignore[return-value]


# Named dimensions: the names people read in messages, and the type names a parameter may carry.
# Temperature points and differences share a dimension vector; the point flag tells them apart.
NAMED: dict[str, Dim] = {
    "number": DIMENSIONLESS,
    "power": dim(kg=1, m=2, s=-3),
    "energy": dim(kg=1, m=2, s=-2),
    "voltage": dim(kg=1, m=2, s=-3, A=-1),
    "current": dim(A=1),
    "charge": dim(A=1, s=1),
    "resistance": dim(kg=1, m=2, s=-3, A=-2),
    "resistivity": dim(kg=1, m=3, s=-3, A=-2),
    "impedance_per_length": dim(kg=1, m=1, s=-3, A=-2),
    "time": dim(s=1),
    "frequency": dim(s=-1),
    "length": dim(m=1),
    "area": dim(m=2),
    "volume": dim(m=3),
    "flow": dim(m=3, s=-1),
    "mass": dim(kg=1),
    "mass_flow": dim(kg=1, s=-1),
    "density": dim(kg=1, m=-3),
    "pressure": dim(kg=1, m=-1, s=-2),
    "specific_heat": dim(m=2, s=-2, K=-1),
    "temperature_delta": dim(K=1),
    "information": dim(bit=1),
    "bandwidth": dim(bit=1, s=-1),
    "operations": dim(FLOP=1),
    "compute": dim(FLOP=1, s=-1),
    "money": dim(USD=1),
    "price_per_energy": dim(USD=1, kg=-1, m=-2, s=2),
}

# Type names accepted in annotations: every named dimension, plus temperature (a point),
# count (a whole number) and ratio (a dimensionless fraction such as 75 %).
DIMENSION_TYPES: dict[str, tuple[Dim, bool]] = {name: (d, False) for name, d in NAMED.items()}
DIMENSION_TYPES["temperature"] = (dim(K=1), True)
DIMENSION_TYPES["count"] = (DIMENSIONLESS, False)
DIMENSION_TYPES["ratio"] = (DIMENSIONLESS, False)

_BY_DIM = {}
for _name, _d in NAMED.items():
    _BY_DIM.setdefault(_d, _name)


def dimension_name(d: Dim, point: bool = False) -> str:
    if d == dim(K=1):
        return "temperature" if point else "temperature difference"
    if d in _BY_DIM:
        return _BY_DIM[d].replace("_", " ")
    parts = []
    for base, exp in zip(BASES, d):
        if exp == 1:
            parts.append(base)
        elif exp:
            parts.append(f"{base}^{exp}")
    return "*".join(parts) or "number"
