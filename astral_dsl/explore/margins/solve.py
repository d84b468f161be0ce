"""Where each limit stops holding, one top-level parameter at a time (the others at their
current values).

Symbolic: when both sides of a limit are algebraic in the parameters (shadow.py), sympy solves
`lhs <= rhs` (or `lhs == rhs`) for the parameter exactly (`solve_univariate_inequality`); a
parameter used as a count (a whole number, no unit) keeps the whole values of that set. The
shadows are checked against the compiler at a second point (the parameter moved) before they are
trusted; a mismatch demotes the limit to numeric.

Numeric: otherwise (fluid properties, rounding up to whole units, choices, the memory of a job)
the design is evaluated again at other values of the parameter: outward from the current value
(doubling the step) until the limit changes state, then by bisection to a relative width of
1e-4 (or to adjacent whole numbers). That is a bracket of the nearest boundary on each side
within the search range, not a proof that the limit holds everywhere inside it."""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Tuple

import attrs
import sympy

from astral_dsl.explore.margins.limits import Limit
from astral_dsl.explore.margins.shadow import OPAQUE

INT_STEPS = 21             # doublings outward: counts up to +-2^20
REAL_STEPS = 16            # 19 % steps: quantities up to x/÷ 16
REL_TOL = 1e-4


@attrs.frozen
class Range:
    """Where a limit holds in one parameter (the others fixed): [low, high], None = unbounded
    within what was searched; `method` symbolic | numeric."""
    param: str
    low: Optional[float]          # SI
    high: Optional[float]
    method: str
    integer: bool = False
    empty: bool = False           # holds for no value of this parameter
    exact: Optional[str] = None   # the symbolic set, as sympy prints it (SI)
    searched: Tuple[float, float] = (0.0, 0.0)   # numeric: the values searched
    note: Optional[str] = None
    # broken now (numeric): the nearest values where it holds again, below and above
    again_below: Optional[float] = None
    again_above: Optional[float] = None

    def contains(self, x: float) -> bool:
        return not self.empty and (self.low is None or x >= self.low - 1e-12 * abs(x)) and \
            (self.high is None or x <= self.high + 1e-12 * abs(x))


# ---- symbolic --------------------------------------------------------------------------------
def symbolic_range(limit: Limit, param: str, symbol, current: Dict, integer: bool,
                   positive: bool) -> Optional[Range]:
    """Solve the limit for `symbol`; None when it does not depend on it."""
    expr = limit.lhs_shadow - limit.rhs_shadow
    if symbol not in expr.free_symbols:
        return None
    others = {s: v for s, v in current.items() if s is not symbol}
    g = sympy.simplify(expr.subs(others))
    x = sympy.Symbol(symbol.name, real=True)
    g = g.subs(symbol, x)
    if limit.op == "==":
        rel = sympy.Eq(g, 0)
    elif limit.strict:
        rel = g < 0
    else:
        rel = g <= 0
    domain = sympy.Interval(0, sympy.oo) if positive else sympy.S.Reals
    try:
        sol = sympy.solveset(rel, x, domain=domain)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if isinstance(sol, sympy.ConditionSet):
        return None
    if integer:
        sol = sympy.Intersection(sol, sympy.Range(1, sympy.oo) if positive else sympy.Integers)
    return _range_of(param, sol, integer)


def _range_of(param: str, sol, integer: bool) -> Optional[Range]:
    text = sympy.sstr(sol)
    if sol is sympy.S.EmptySet or sol == sympy.S.EmptySet:
        return Range(param, None, None, "symbolic", integer, True, text)
    try:
        inf, sup = sol.inf, sol.sup
    except (AttributeError, NotImplementedError):
        return None
    # a union of pieces (rare: a parameter in a denominator) is reported by its hull, noted
    note = None
    if isinstance(sol, sympy.Union):
        note = f"holds on {text}, not one interval"
    low = None if inf in (-sympy.oo, sympy.S.NegativeInfinity) else float(inf)
    high = None if sup in (sympy.oo, sympy.S.Infinity) else float(sup)
    if integer:
        low = None if low is None or low <= 1 else math.ceil(low - 1e-9)
        high = None if high is None else math.floor(high + 1e-9)
        if low is not None and high is not None and low > high:
            return Range(param, None, None, "symbolic", integer, True, text)
    return Range(param, low, high, "symbolic", integer, False, text, note=note)


# ---- numeric ---------------------------------------------------------------------------------
Probe = Callable[[float], Optional[Dict[str, Limit]]]


def numeric_range(key: str, param: str, x0: float, integer: bool, probe: Probe,
                  holds_now: bool, point: bool = False) -> Range:
    """Bracket the boundaries of limit `key` around x0 by evaluating the design (`probe(x)`:
    the limits at that value, None when the design does not compile there)."""

    def state(x: float) -> Optional[bool]:
        limits = probe(x)
        if limits is None or key not in limits:
            return None
        return limits[key].holds

    bounds: List[Optional[float]] = []
    searched = [x0, x0]
    for direction in (-1, 1):
        inside, outside = x0, None
        for k in range(INT_STEPS if integer else REAL_STEPS):
            x = _step(x0, direction, k, integer, point)
            if x is None:
                break
            searched[0 if direction < 0 else 1] = x
            if state(x) != holds_now:
                outside = x
                break
            inside = x
        if outside is None:
            bounds.append(None)
            continue
        while not _close_enough(inside, outside, integer):
            mid = _mid(inside, outside, integer)
            if state(mid) == holds_now:
                inside = mid
            else:
                outside = mid
        bounds.append(inside if holds_now else outside)
    low, high = bounds
    if holds_now:
        return Range(param, low, high, "numeric", integer, searched=tuple(searched))
    # broken now: the nearest values where it holds, on either side
    return Range(param, None, None, "numeric", integer, low is None and high is None,
                 searched=tuple(searched), again_below=low, again_above=high)


def _step(x0: float, direction: int, k: int, integer: bool, point: bool = False
          ) -> Optional[float]:
    if integer:
        x = x0 + direction * 2 ** k
        if x < 1:
            previous = x0 + direction * 2 ** (k - 1) if k else x0
            return 1.0 if previous > 1 else None
        return float(x)
    if point:                                    # temperatures: 0.5 K .. 1024 K away
        return x0 + direction * 2.0 ** (k - 1)
    if x0 == 0:
        return direction * 2.0 ** (k - 4)
    return x0 * 2.0 ** (direction * (k + 1) / 4)


def _close_enough(a: float, b: float, integer: bool) -> bool:
    if integer:
        return abs(a - b) <= 1
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def _mid(a: float, b: float, integer: bool) -> float:
    return float(math.floor((a + b) / 2)) if integer else (a + b) / 2


def is_integer_param(value) -> bool:
    return value.dimensionless and float(value.si).is_integer() and value.unit in ("", None)


def depends(limit: Limit, other: Limit) -> bool:
    return abs(limit.lhs - other.lhs) > 1e-12 * max(abs(limit.lhs), 1e-300) or \
        abs(limit.rhs - other.rhs) > 1e-12 * max(abs(limit.rhs), 1e-300)


def shadow_at(limit: Limit, values: Dict) -> Optional[Tuple[float, float]]:
    if limit.lhs_shadow is OPAQUE or limit.rhs_shadow is OPAQUE:
        return None
    try:
        return float(limit.lhs_shadow.subs(values)), float(limit.rhs_shadow.subs(values))
    except (TypeError, ValueError):
        return None
