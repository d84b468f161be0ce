"""Input validators shared by the engineering formulas (astral_dsl/analyses/formulas/).

Each returns the value as a float (or int) and raises ``ValueError`` for a physically meaningless
input; callers turn that into a diagnostic.
"""
from __future__ import annotations

import math

#: Relative tolerance used when a ratio that should be an integer comes out a hair above it through
#: floating-point rounding (132e3 / 5.5e3 = 24.000000000000004). Ratios within this much of an
#: integer are taken as that integer; anything further is rounded up.
SIZING_REL_TOL = 1e-9


# --------------------------------------------------------------------------- input checks

def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


def _positive(name: str, value: float) -> float:
    v = _finite(name, value)
    if v <= 0.0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return v


def _non_negative(name: str, value: float) -> float:
    v = _finite(name, value)
    if v < 0.0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return v


def _fraction(name: str, value: float) -> float:
    """A ratio in (0, 1]: efficiency, power factor, derating, utilisation."""
    v = _finite(name, value)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return v


def _ceil_tol(x: float) -> int:
    """ceil(x), except that x within SIZING_REL_TOL (relative) of an integer is that integer."""
    nearest = round(x)
    if abs(x - nearest) <= SIZING_REL_TOL * max(1.0, abs(x)):
        return int(nearest)
    return int(math.ceil(x))
