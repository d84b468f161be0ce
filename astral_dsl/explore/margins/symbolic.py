"""The symbolic side of the margins: a limit's range in one parameter (`Range`, what both methods
report), solved exactly with sympy where both sides of the limit are algebraic in the parameters
(shadow.py), and the comparisons of two evaluations of a limit (`depends`, `shadow_at`) that
decide whether it moved and whether its symbolic form reproduces the compiler.

`symbolic_range` solves `lhs <= rhs` (or `lhs == rhs`, or `<` for a strict limit) for the
parameter with `solveset`; a parameter used as a count (written where a whole number is needed: a
count field, a replication) keeps the whole values of that set, any other may take fractions."""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import sympy

from astral_dsl import records
from astral_dsl.explore.margins.limits import Limit
from astral_dsl.explore.margins.shadow import OPAQUE
from astral_dsl.kept import Kept

@records.frozen
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
    # numeric: where the design stops compiling (not the limit breaking), and why
    compiles_low: Optional[float] = None
    compiles_high: Optional[float] = None
    edge_codes: Tuple[str, ...] = ()
    why_low: Tuple[str, ...] = ()         # the errors past each edge in words, with where
    why_high: Tuple[str, ...] = ()        # each stands (solve.reasons)
    gaps: Tuple[float, ...] = ()          # values between that do not compile (skipped)
    absent: bool = False                  # an edge is where the limit stops applying
    fails_below: Optional[float] = None   # the values past the edges where that was seen
    fails_above: Optional[float] = None
    low_open: bool = False                # symbolic: `low < x` (a strict limit), not `<=`
    high_open: bool = False


# ---- symbolic --------------------------------------------------------------------------------
def symbolic_range(limit: Limit, param: str, symbol, current: Dict, integer: bool,
                   positive: bool) -> Optional[Range]:
    """Solve the limit for `symbol`; None when it does not depend on it."""
    expr = limit.lhs_shadow - limit.rhs_shadow
    if symbol not in expr.free_symbols:
        return None
    others = {s: v for s, v in current.items() if s is not symbol}
    sol = _solved(expr.subs(others), symbol, limit.op, limit.strict, integer, positive)
    if sol is None:
        return None
    return _range_of(param, sol, integer, positive, current.get(symbol))


# The sets solved, by the exact structure of what was solved (sympy's srepr: every number's
# digits and precision, every symbol's name and assumptions) and how: a margins run solves each
# limit again for each parameter it moves, and the same design's margins (a second run in one
# process: a sweep's points, the language server, the tests) solve the same again; simplify and
# solveset are most of the symbolic side's time. Bounded: the least recently used go first. Each
# is kept as a 1-tuple: a set solveset could not say (None) is kept too.
MAX_SOLVED = 512
_SOLVED = Kept(MAX_SOLVED)


def _solved(g0, symbol, op: str, strict: bool, integer: bool, positive: bool):
    """The set where `g0 op 0` holds in `symbol` (None: solveset could not say), a real
    variable, within the positive reals when `positive`, whole numbers when `integer`."""
    key = (sympy.srepr(g0), sympy.srepr(symbol), op, strict, integer, positive)
    hit = _SOLVED.get(key)
    if hit is None:
        hit = _SOLVED.put(key, (_solve(g0, symbol, op, strict, integer, positive),))
    return hit[0]


def _solve(g0, symbol, op: str, strict: bool, integer: bool, positive: bool):
    x = sympy.Symbol(symbol.name, real=True)
    g = sympy.simplify(g0).subs(symbol, x)
    if op == "==":
        rel = sympy.Eq(g, 0)
    elif strict:
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
    return sol


def _piece(sol, at):
    """Of a union, the piece that holds `at` (the parameter's value now), else the nearest one:
    its hull hid the values between the pieces, where the limit fails (`b / (b - 2 kW) <= 10^6`
    read 'holds for every b' though it fails just above 2 kW)."""
    try:
        x = sympy.Float(float(at))
    except (TypeError, ValueError):
        return sol
    def distance(piece) -> float:
        try:
            if piece.contains(x) == sympy.S.true:
                return 0.0
            return float(max(piece.inf - x, x - piece.sup, 0))
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            return math.inf
    pieces = sorted(sol.args, key=distance)
    return pieces[0] if pieces and distance(pieces[0]) < math.inf else sol


def _range_of(param: str, sol, integer: bool, positive: bool = False,
              at=None) -> Optional[Range]:
    text = sympy.sstr(sol)
    if sol is sympy.S.EmptySet or sol == sympy.S.EmptySet:
        return Range(param, None, None, "symbolic", integer, True, text)
    try:
        inf, sup = sol.inf, sol.sup
    except (AttributeError, NotImplementedError):
        return None
    # a union of pieces (rare: a parameter in a denominator) is reported by the piece of the
    # value now (or the nearest one), noted
    note = None
    if isinstance(sol, sympy.Union):
        note = f"holds on {text}, not one interval"
        sol = _piece(sol, at)
        try:
            inf, sup = sol.inf, sol.sup
        except (AttributeError, NotImplementedError):
            return None
    low = None if inf in (-sympy.oo, sympy.S.NegativeInfinity) else float(inf)
    high = None if sup in (sympy.oo, sympy.S.Infinity) else float(sup)
    if positive and low == 0.0:
        low = None                # the domain's edge (no negative quantity), not the limit's
    if integer:
        low = None if low is None or low <= 1 else math.ceil(low - 1e-9)
        high = None if high is None else math.floor(high + 1e-9)
        if low is not None and high is not None and low > high:
            return Range(param, None, None, "symbolic", integer, True, text)
        return Range(param, low, high, "symbolic", integer, False, text, note=note)
    # a strict limit's end is not in the set (`lim > 10.2 kW`: at 10.2 kW it fails)
    return Range(param, low, high, "symbolic", integer, False, text, note=note,
                 low_open=low is not None and sol.contains(inf) == sympy.S.false,
                 high_open=high is not None and sol.contains(sup) == sympy.S.false)


def depends(limit: Limit, other: Limit) -> bool:
    """The limit moved: either side, or (a truth value) its truth or any operand inside."""
    def moved(a: float, b: float) -> bool:
        return abs(a - b) > 1e-12 * max(abs(a), 1e-300)

    if limit.truth:
        return limit.holds != other.holds or len(limit.operands) != len(other.operands) or \
            any(moved(a, b) for a, b in zip(limit.operands, other.operands))
    return moved(limit.lhs, other.lhs) or moved(limit.rhs, other.rhs)


def shadow_at(limit: Limit, values: Dict) -> Optional[Tuple[float, float]]:
    if limit.lhs_shadow is OPAQUE or limit.rhs_shadow is OPAQUE:
        return None
    try:
        return float(limit.lhs_shadow.subs(values)), float(limit.rhs_shadow.subs(values))
    except (TypeError, ValueError):
        return None
