"""Where each limit stops holding, one top-level parameter at a time (the others at their
current values).

Symbolic: when both sides of a limit are algebraic in the parameters (shadow.py), sympy solves
it exactly (symbolic.py). The shadows are checked against the compiler at a second point (the
parameter moved) before they are trusted; a mismatch demotes the limit to numeric.

Numeric: otherwise (fluid properties, rounding up to whole units, choices, the memory of a job)
the design is evaluated again at other values of the parameter: outward from the current value
(doubling the step; a count also tries its multiples and halves, the values a divisor takes)
until the limit changes state, then by secant steps or bisection (_limit) to a relative width of
1e-4 (or to adjacent whole numbers). A value where the design does not compile is not the limit
breaking: past an edge of what the parameter may take (its plausible or declared range, its
sign) the search stops and that edge is reported as the parameter's compilable range; a value
that does not compile for another reason (a count no longer whole) is skipped. The result
brackets the nearest boundary on each side within the search range, not a proof that the limit
holds everywhere inside it."""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.explore.margins.limits import Limit  # noqa: F401 (the Probe annotation)
from astral_dsl.explore.margins.symbolic import Range

INT_STEPS = 21             # doublings outward: counts up to +-2^20
REAL_STEPS = 16            # 19 % steps: quantities up to x/÷ 16
REL_TOL = 1e-4
CELSIUS = 273.15           # a temperature's boundary is rounded in degrees Celsius, not kelvin


# ---- numeric ---------------------------------------------------------------------------------
@records.frozen
class Uncompiled:
    """A probe where the design does not compile (or compiles without the limit: `absent`,
    e.g. a job its layout no longer lets Seer read), with the codes of its errors."""
    codes: Tuple[str, ...]
    absent: bool = False
    why: Tuple[str, ...] = ()      # the edge's errors as `reasons` gives them

    @property
    def edge(self) -> bool:
        """Beyond the values the parameter may take (its declared or plausible range, its
        sign, a count's limit; a job larger than its placement): nothing further that way
        compiles. Other errors (a count that is no longer whole, a degree that no longer
        divides) leave gaps between values that do compile."""
        return any(c in (ABSENT_EDGE_CODES if self.absent else EDGE_CODES)
                   for c in self.codes)


class Probed(dict):
    """The limits at a probe (by key), with the codes of the errors the design has there."""

    def __init__(self, limits, codes=(), why=()):
        super().__init__(limits)
        self.codes = tuple(codes)
        self.why = tuple(why)


EDGE_CODES = ("E309", "E314", "E315", "E316", "E400", "E401", "E405")
ABSENT_EDGE_CODES = EDGE_CODES + ("E755",)     # the job needs more GPUs than it is placed on
Probe = Callable[[float], "Dict[str, Limit] | Uncompiled"]


def reasons(diagnostics, codes=ABSENT_EDGE_CODES) -> Tuple[str, ...]:
    """Why a value is past an edge, in words: its first error of each edge code with where it
    stands, so that a parameter's compilable range says what bounds it (a count deep in the
    design at its plausible 1,000,000, not the parameter's own range): `E316: `count` past
    its plausible range, at most 1000000, at stdlib/power.astral:194`."""
    out, seen = [], set()
    for d in diagnostics:
        if d.is_error and d.code in codes and d.code not in seen:
            seen.add(d.code)
            where = f" at {d.span.file}:{d.span.start.line}" if d.span is not None else ""
            out.append(f"{d.code}: {_reason(d)}{where}")
    return tuple(out)


PLAUSIBLE = "the plausible range is "      # how E316's hint states the range (semantics.coerce)


def _reason(d) -> str:
    """The rule the probe broke, without the probe's value (only the first one tried past the
    edge: `100.0058494 %`): E316 as the field and its plausible range (the same words below
    and above it), E309/E314/E315 without their `, not VALUE` (semantics.coerce); another as
    it says."""
    what, sep, _ = d.message.partition(" is ")
    if d.code == "E316" and sep and (d.hint or "").startswith(PLAUSIBLE):
        return f"{what} past its plausible range, {d.hint[len(PLAUSIBLE):].split(';')[0]},"
    if d.code in ("E309", "E314", "E315") and ", not " in d.message:
        return d.message.rpartition(", not ")[0]
    return d.message


def candidates(x0: float, integer: bool, point: bool, direction: int) -> List[float]:
    """The values tried outward from x0, nearest first: doubling steps (x 2^(1/4) for a
    quantity, +-0.5 K .. 1024 K for a temperature); for a count also its multiples and
    whole fractions by powers of two (the values a divisor may take)."""
    out = []
    steps = INT_STEPS if integer else REAL_STEPS
    for k in range(steps):
        x = _step(x0, direction, k, integer, point)
        if x is not None:
            out.append(x)
    if integer:
        for k in range(1, INT_STEPS):
            x = x0 * 2 ** k if direction > 0 else x0 / 2 ** k
            if x >= 1 and float(x).is_integer():
                out.append(float(x))
    uniq = sorted(set(out), key=lambda x: (abs(x - x0), x))
    return [x for x in uniq if x != x0]


@records.frozen
class _Side:
    bound: Optional[float] = None      # the last value in the current state (or, broken now,
    #                                    the first where it holds again)
    edge: Optional[float] = None       # the last value that compiles, when the design stops
    codes: Tuple[str, ...] = ()        # compiling before the limit changes state
    searched: Optional[float] = None
    gaps: Tuple[float, ...] = ()       # values skipped because the design does not compile
    absent: bool = False               # the edge is where the limit stops applying
    beyond: Optional[float] = None     # the first value past the edge that was tried
    why: Tuple[str, ...] = ()          # the errors there, in words (`reasons`)


def numeric_range(key: str, param: str, x0: float, integer: bool, probe: Probe,
                  holds_now: bool, point: bool = False, shown: Optional["Shown"] = None
                  ) -> Range:
    """Bracket the boundaries of limit `key` around x0 by evaluating the design (`probe(x)`:
    the limits at that value, or Uncompiled). A value where the design does not compile is
    not the limit breaking: beyond an edge (Uncompiled.edge) the search stops and the
    parameter's compilable range is reported apart; a gap is skipped. `shown`: how the bound
    is printed, so that one that is a value of that precision is found as that value."""

    def state(x: float):
        limits = probe(x)
        if isinstance(limits, Uncompiled):
            return limits
        if key not in limits:
            return Uncompiled(getattr(limits, "codes", ()), absent=True,
                              why=getattr(limits, "why", ()))
        return limits[key].holds

    def slack(x: float) -> Optional[float]:
        """rhs - lhs of an inequality at x (None for an equality or a truth value): what the
        secant steps of _limit interpolate."""
        limits = probe(x)
        lim = None if isinstance(limits, Uncompiled) else limits.get(key)
        if lim is None or lim.truth or lim.op == "==":
            return None
        return lim.rhs - lim.lhs

    sides = [_search(x0, direction, integer, point, state, holds_now, slack, shown)
             for direction in (-1, 1)]
    low, high = sides
    searched = (low.searched if low.searched is not None else x0,
                high.searched if high.searched is not None else x0)
    extra = dict(compiles_low=low.edge, compiles_high=high.edge,
                 fails_below=low.beyond, fails_above=high.beyond,
                 edge_codes=tuple(sorted(set(low.codes) | set(high.codes))),
                 why_low=low.why, why_high=high.why,
                 gaps=tuple(sorted(set(low.gaps) | set(high.gaps))),
                 absent=low.absent or high.absent)
    if holds_now:
        return Range(param, low.bound, high.bound, "numeric", integer, searched=searched,
                     **extra)
    return Range(param, None, None, "numeric", integer, low.bound is None and high.bound is None,
                 searched=searched, again_below=low.bound, again_above=high.bound, **extra)


def _search(x0, direction, integer, point, state, holds_now, slack=None,
            shown: Optional["Shown"] = None) -> _Side:
    inside, gaps, searched = x0, [], None
    for x in candidates(x0, integer, point, direction):
        if (x - inside) * direction <= 0:
            continue                            # nearer than what is already known
        st = state(x)
        if isinstance(st, Uncompiled):
            if st.edge:
                found = _edge(inside, x, integer, state, holds_now)
                if isinstance(found[1], tuple):  # the limit changes before the edge
                    a, b = found[1]
                    return _limit(a, b, integer, state, holds_now, gaps, b, slack, point,
                                  shown)
                edge, beyond = found
                edge = _round_edge(edge, beyond, integer, state)
                codes = tuple(c for c in st.codes
                              if c in (ABSENT_EDGE_CODES if st.absent else EDGE_CODES))
                past = state(beyond)                   # probed already: what stops it there
                why = (past if isinstance(past, Uncompiled) else st).why
                return _Side(None, edge, codes, edge, tuple(gaps), st.absent, beyond,
                             tuple(w for w in why if w.split(":")[0] in codes))
            gaps.append(x)
            continue
        searched = x
        if st != holds_now:
            return _limit(inside, x, integer, state, holds_now, gaps, x, slack, point, shown)
        inside = x
    return _Side(None, None, (), searched, tuple(gaps))


def _limit(inside, outside, integer, state, holds_now, gaps, searched, slack=None,
           point=False, shown: Optional["Shown"] = None) -> _Side:
    """Narrow the bracket between a value in the current state and one in the other to
    REL_TOL (or adjacent whole numbers). Where the limit is an inequality whose sides the
    probes read, a secant step first: the root of rhs - lhs interpolated between the two ends,
    probed just either side of it (an affine limit is bracketed in two probes instead of about
    fourteen bisections); a secant round that does not halve the bracket, a probe that does
    not compile or an equality falls back to bisection, which always halves it."""
    tried = set()
    secant = slack is not None
    while not _close_enough(inside, outside, integer):
        if secant:
            width = abs(outside - inside)
            got = _secant(inside, outside, integer, state, slack, holds_now)
            if got is None:
                secant = False
            else:
                for x, st in got:
                    if st == holds_now:
                        inside = x
                    else:
                        outside = x
                secant = abs(outside - inside) <= width / 2
            continue
        mid = _mid(inside, outside, integer)
        st = state(mid)
        if isinstance(st, Uncompiled):
            alt = _around(mid, inside, outside, integer, tried, state)
            if alt is None:
                gaps.append(mid)
                break                             # no value between compiles: as close as it gets
            mid, st = alt
        if st == holds_now:
            inside = mid
        else:
            outside = mid
    bound = inside if holds_now else outside
    if not integer:         # a round boundary (45 degC, not the bracket's 44.9987) when it holds
        offset = CELSIUS if point else 0.0
        x = _roundest(inside - offset, outside - offset) + offset
        if x not in (inside, outside):
            st = state(x)
            if not isinstance(st, Uncompiled) and bool(st):
                bound = x
        if bound in (inside, outside) and shown is not None:
            # the boundary as printed, when the bracket's end sits on a value of the shown
            # precision but for the probes' noise (2088.125 W, not 2088.1249 from the bracket's
            # 2088.12499968): probed, and taken when it holds
            holding, failing = (inside, outside) if holds_now else (outside, inside)
            y = shown.snap(holding, failing)
            if y is not None and y not in (inside, outside, x):
                st = state(y)
                if not isinstance(st, Uncompiled) and bool(st):
                    bound = y
    return _Side(bound, None, (), searched, tuple(gaps))


@records.frozen
class Shown:
    """How a parameter's bound is printed: `decimals` in its unit, one unit being `scale` SI
    units from `offset` (a temperature point: 273.15 K from degC's zero)."""
    scale: float = 1.0
    offset: float = 0.0
    decimals: int = 4

    def snap(self, holding: float, failing: float) -> Optional[float]:
        """The value of the shown precision next to `holding` toward `failing` (SI), when it
        is within a hundredth of the last shown digit of it and strictly between the two;
        else None."""
        step = 10.0 ** -self.decimals
        v = (holding - self.offset) / self.scale
        n = math.ceil(v / step - 1e-12) if failing > holding else math.floor(v / step + 1e-12)
        y = round(n * step, self.decimals)
        if abs(y - v) > 0.01 * step:
            return None
        x = y * self.scale + self.offset
        lo, hi = sorted((holding, failing))
        return x if lo < x < hi else None


def _secant(inside, outside, integer, state, slack, holds_now):
    """Probes at the interpolated root of the limit's slack between the bracket's ends, then
    just past it on the side that brackets it (an inequality that holds at equality holds at
    its root), with their states; None when the slack is not known at both ends, does not
    change sign, or a probe does not compile."""
    fa, fb = slack(inside), slack(outside)
    if fa is None or fb is None or fa == fb or (fa < 0) == (fb < 0):
        return None
    root = inside + (outside - inside) * fa / (fa - fb)
    direction = 1.0 if outside > inside else -1.0
    if integer:
        root = float(math.floor(root) if direction > 0 else math.ceil(root))
    lo, hi = sorted((inside, outside))
    if not lo < root < hi:
        return None
    st = state(root)
    if isinstance(st, Uncompiled):
        return None
    out = [(root, st)]
    step = 1.0 if integer else 0.8 * REL_TOL * abs(root)
    x = root + (direction if st == holds_now else -direction) * step
    if lo < x < hi:
        st = state(x)
        if isinstance(st, Uncompiled):
            return None
        out.append((x, st))
    return out


def _around(mid, inside, outside, integer, tried, state):
    """A value near `mid`, strictly between the two, where the design compiles."""
    lo, hi = sorted((inside, outside))
    if integer:
        near = sorted((x for x in range(int(lo) + 1, int(hi)) if x not in tried),
                      key=lambda x: (abs(x - mid), x))[:16]
    else:
        near = [lo + (hi - lo) * f for f in (0.25, 0.75, 0.125, 0.875)]
    for x in near:
        tried.add(x)
        st = state(float(x))
        if not isinstance(st, Uncompiled):
            return float(x), st
    return None


def _edge(inside, outside, integer, state, holds_now):
    """The last value before `outside` (beyond an edge) where the design compiles with the
    limit; or, when the limit changes state on the way, (a value in the current state, one
    in the other)."""
    last = inside
    while not _close_enough(inside, outside, integer):
        mid = _mid(inside, outside, integer)
        st = state(mid)
        if isinstance(st, Uncompiled):
            if st.edge:
                outside = mid
            else:
                inside = mid                    # a gap: the edge is further out
            continue
        if st != holds_now:
            return last, (last, mid)
        inside = last = mid
    return last, outside


def _round_edge(last: float, beyond: float, integer: bool, state) -> float:
    """The roundest value between the last that compiles and the first beyond the edge, when
    it compiles too (a declared bound of 100 % rather than the bisection's 99.997 %)."""
    if integer:
        return last
    x = _roundest(last, beyond)
    if x == last:
        return last
    return last if isinstance(state(x), Uncompiled) else x


def _roundest(a: float, b: float) -> float:
    """The value between a and b with the fewest significant digits (the smallest of those)."""
    lo, hi = sorted((a, b))
    for digits in range(0, 13):
        scale = 10.0 ** (digits - math.floor(math.log10(max(abs(lo), 1e-300))))
        x = math.ceil(lo * scale) / scale
        if x <= hi:
            return x
    return a


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
