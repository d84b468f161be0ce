"""The shipped table of CoolProp's wet-bulb temperatures, so that a year of hourly weather (8,760
wet bulbs for a cooling tower) costs 30-45 ms of CPU instead of about 25 s: CoolProp's HAPropsSI
takes 2-3 ms for one wet bulb (it solves the psychrometric balance by Brent's method). (The
previous table, bilinear and less exact, took 18-26 ms.)

CoolProp's wet bulb, HAPropsSI("Twb", "T", T, "P", p, "Tdp", Tdp), is not one smooth function:
it switches between ice and water at 0.01 degC (273.16 K) twice.

- In the dew point: below 273.16 K the vapour's pressure is over ice, from it over water. The wet
  bulb has a kink there (at 20 degC and 100 kPa its slope in the dew point drops from 0.34 to
  0.30) and a step of a few 1e-4 K.
- In the wet bulb itself: at most 273.16 K the bulb is ice, above it water. Near a 0 degC wet
  bulb both roots of the balance can be valid over a band of dry bulbs, and Brent's method
  (bracketed from the dry bulb + 1 K down to 100 K) returns one or the other: as the dry bulb
  rises, CoolProp's wet bulb jumps from the ice root to the water root, by up to 0.85 K (less
  toward the triple point), at a dry bulb T_S(Tdp, p). T_S is where the water root becomes
  valid for dew points from about -1.4 degC up; colder it lies between the two roots' limits,
  wherever Brent's path turns: a smooth curve in each of three ranges of dew point, with kinks
  between them (the warmer at -1.3 to -1.5 degC, the colder moving from -3.2 degC at 65 kPa to
  -10.6 degC at 105 kPa).

Interpolating across either switch is off by up to the kink or the jump (the previous table,
bilinear across both on a 1 K grid, was off by up to 0.42 K near a 0 degC wet bulb, 0.25 K on an
hour of stdlib/climate/723170TYA.CSV, and up to 0.005 K where the wet bulb is smooth). So this
table keeps three smooth pieces apart and interpolates within one:

- "ice": a dew point of at most 0.01 degC and a dry bulb below T_S (the wet bulb on ice), on every
  kelvin of dew-point depression (rows) and every whole degree of dry bulb (columns);
- "mixed": a dew point of at most 0.01 degC and a dry bulb from T_S up (the wet bulb on water, the
  vapour over ice), on every kelvin of dew point down from 0.01 degC and every whole degree of
  dry bulb;
- "water": a dew point above 0.01 degC (everything on water), on every kelvin of dew point up
  from 0.01 degC and every kelvin of depression;

each at every 5 kPa from 65 to 105 kPa. A grid point holds its value on the nine pressures. A
value is quadratic in each temperature (Lagrange through three grid points, the stencil turned
away from the piece's switch) and cubic in the pressure (four planes). A grid point that a
piece's stencil reaches but that lies past its switch holds the piece's smooth continuation,
extrapolated along the dry bulb from the piece's five nearest grid points in its row (CoolProp
cannot be asked for the root it did not choose): 1,305 values of "ice" and 1,058 of "mixed",
of 37,503. The switch T_S is tabulated too: CoolProp's own jump, bisected on CoolProp to 1e-6 K,
at every 2.5 kPa, at nodes evenly spaced in each range of dew point between its kinks (located
from CoolProp as well: where fits to the curve on either side cross); quadratic between nodes,
cubic in the pressure. Below a dew point of -32 degC every state of the domain is on ice.

The domain is a dry bulb of -40 to 50 degC, a dew-point depression of 0 to 40 K and a pressure
of 65 to 105 kPa (sea level to about 3,500 m); a state outside it goes to CoolProp. Over it the
table is within WITHIN_K (1.2e-4 K) of HAPropsSI, except where it gives the other root than
CoolProp: within SWITCH_WITHIN_K (5e-5 K) of dry bulb from CoolProp's jump. Measured (python -m
astral_dsl.analyses.wetbulb_table --measure): worst 9.0e-5 K on the 8,760 hours of
stdlib/climate/723170TYA.CSV and 8.4e-5 K on those of the EPW file of ../shared/climate, none on
the other root; 9.9e-5 K at 40,000 random states, none on the other root; 1.0e-4 K at 10,000
states within 0.02 K of the switch, one of them on the other root (2.2e-6 K from CoolProp's
jump, 0.71 K off); the switch within 4.2e-5 K of CoolProp's at 3,000 random dew points and
pressures. tests/test_humid_air.py holds every hour
of the stdlib's climate files, random states and a sample of the grid to these bounds against
CoolProp itself. Lookups use only additions, multiplications, divisions and comparisons: the
same doubles on every machine. The file is 415 kB; parsing it takes 10-15 ms.

    python -m astral_dsl.analyses.wetbulb_table            # compare the shipped table with CoolProp
    python -m astral_dsl.analyses.wetbulb_table --write    # regenerate it (after a CoolProp update;
                                                           # about 7 minutes)
    python -m astral_dsl.analyses.wetbulb_table --measure [STATES [NEAR [SWITCHES]]] [FILE...]
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

PATH = Path(__file__).with_name("wetbulb_table.json")
ZERO_K = 273.15
TRIPLE_C = 0.01                 # degC: where CoolProp switches between ice and water,
TRIPLE_K = 273.16               # as CoolProp writes it (ZERO_K + TRIPLE_C is a hair below)
T_RANGE = (-40, 50)             # dry bulb, degC
D_RANGE = (0, 40)               # dew-point depression, K
P_RANGE = (65000, 105000)       # pressure, Pa
P_STEP = 5000
SWITCH_P_STEP = 2500
SWITCH_LOW = -32.0              # below this dew point (degC) the whole domain is on ice
SWITCH_NODES = (120, 36, 14)    # nodes along the dew point: to the first kink, between, to 0.01
SWITCH_TOL = 1e-6               # K, the bisection's bracket on CoolProp's jump
GHOST_POINTS = 5                # grid points a continuation is extrapolated from
ROUND = 6                       # decimals kept (1e-6 K)
WITHIN_K = 1.2e-4               # the table against HAPropsSI (measured: 1.0e-4)
SWITCH_WITHIN_K = 5e-5          # its switch against CoolProp's jump (measured: 4.2e-5)

_N_PLANES = (P_RANGE[1] - P_RANGE[0]) // P_STEP + 1
_N_SWITCH = (P_RANGE[1] - P_RANGE[0]) // SWITCH_P_STEP + 1


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def source() -> str:
    """The table's identity for a cache key of values derived from it: the SHA-256 of the
    shipped file (reading it is a millisecond; parsing it, ten)."""
    import hashlib

    return hashlib.sha256(PATH.read_bytes()).hexdigest()[:16]


def _cubic(s: float) -> Tuple[float, float, float, float]:
    """Lagrange weights of the nodes 0, 1, 2, 3 at s."""
    a, b, c = s - 1.0, s - 2.0, s - 3.0
    return (-a * b * c / 6.0, s * b * c / 2.0, -s * a * c / 2.0, s * a * b / 6.0)


def _quad(s: float) -> Tuple[float, float, float]:
    """Lagrange weights of the nodes 0, 1, 2 at s."""
    a, b = s - 1.0, s - 2.0
    return (a * b / 2.0, -s * b, s * a / 2.0)


def _planes(pressure_pa: float, step: int, count: int) -> Tuple[int, Tuple[float, ...]]:
    """The first of the four planes around a pressure, and their weights."""
    z = (pressure_pa - P_RANGE[0]) / step
    k = min(max(int(z) - 1, 0), count - 4)
    return k, _cubic(z - k)


def switch(dew_point_c: float, pressure_pa: float, table: Optional[dict] = None) -> float:
    """The dry bulb (degC) from which CoolProp's wet bulb is on water, at a dew point from
    SWITCH_LOW to 0.01 degC (on ice below it)."""
    sw = (table or _table())["switch"]
    k, wz = _planes(pressure_pa, SWITCH_P_STEP, _N_SWITCH)
    kinks = sw["kinks"]
    first = wz[0] * kinks[k][0] + wz[1] * kinks[k + 1][0] + wz[2] * kinks[k + 2][0] \
        + wz[3] * kinks[k + 3][0]
    second = wz[0] * kinks[k][1] + wz[1] * kinks[k + 1][1] + wz[2] * kinks[k + 2][1] \
        + wz[3] * kinks[k + 3][1]
    n0, n1, n2 = SWITCH_NODES
    if dew_point_c < first:
        lo, hi, offset, n = SWITCH_LOW, first, 0, n0
    elif dew_point_c < second:
        lo, hi, offset, n = first, second, n0 + 1, n1
    else:
        lo, hi, offset, n = second, TRIPLE_C, n0 + n1 + 2, n2
    m = (dew_point_c - lo) / (hi - lo) * n
    i = min(max(int(m), 0), n - 2)
    w = _quad(m - i)
    i += offset
    nodes = sw["t"]
    out = 0.0
    for kk in range(4):
        row = nodes[k + kk]
        out += wz[kk] * (w[0] * row[i] + w[1] * row[i + 1] + w[2] * row[i + 2])
    return out


def _locate(tab: dict, dry_bulb_c: float, dew_point_c: float, depression: float,
            pressure_pa: float) -> Tuple[str, int, float, int, float]:
    """The piece of a state of the domain, and its stencil: the first row and the state's
    position from it, the first column and the position from it."""
    if dew_point_c > TRIPLE_C:
        # water: rows of dew point above 0.01 degC (the stencil toward it), columns of
        # depression (toward 0)
        x, y = dew_point_c - TRIPLE_C, depression
        i, j = min(max(int(x) - 1, 0), 48), min(max(int(y) - 1, 0), D_RANGE[1] - 2)
        return "water", i, x - i, j, y - j
    if dry_bulb_c <= 0.0 or dew_point_c < SWITCH_LOW or \
            dry_bulb_c < switch(dew_point_c, pressure_pa, tab):
        # ice: rows of depression (toward more), columns of dry bulb (toward less)
        x, y = depression, dry_bulb_c - T_RANGE[0]
        i, j = min(int(x), D_RANGE[1] - 2), max(int(y) - 1, 0)
        return "ice", i, x - i, j, y - j
    # mixed: rows of dew point below 0.01 degC (toward it), columns of dry bulb (toward more)
    x, y = TRIPLE_C - dew_point_c, dry_bulb_c - T_RANGE[0]
    i, j = max(int(x) - 1, 0), min(int(y), T_RANGE[1] - T_RANGE[0] - 2)
    return "mixed", i, x - i, j, y - j


def lookup(dry_bulb_c: float, dew_point_c: float, pressure_pa: float) -> Optional[float]:
    """The wet bulb (degC) from the table, or None when the state lies outside it."""
    return _lookup(_table(), dry_bulb_c, dew_point_c, pressure_pa)


def _lookup(tab: dict, dry_bulb_c: float, dew_point_c: float,
            pressure_pa: float) -> Optional[float]:
    depression = dry_bulb_c - dew_point_c
    if depression < 0.0:
        depression = 0.0
    if not (T_RANGE[0] <= dry_bulb_c <= T_RANGE[1] and depression <= D_RANGE[1]
            and P_RANGE[0] <= pressure_pa <= P_RANGE[1]):
        return None                                         # NaN fails these too
    name, i, fx, j, fy = _locate(tab, dry_bulb_c, dew_point_c, depression, pressure_pa)
    # a grid point holds its values on the 9 pressure planes; cubic in the pressure through
    # the four planes around it, quadratic in each temperature (the weights written out: this
    # runs 8,760 times a year of weather)
    z = (pressure_pa - P_RANGE[0]) / P_STEP
    k = int(z) - 1
    k = 0 if k < 0 else (_N_PLANES - 4 if k > _N_PLANES - 4 else k)
    s = z - k
    a, b, c = s - 1.0, s - 2.0, s - 3.0
    w0, w1, w2, w3 = -a * b * c / 6.0, s * b * c / 2.0, -s * a * c / 2.0, s * a * b / 6.0
    a, b = fx - 1.0, fx - 2.0
    x0, x1, x2 = a * b / 2.0, -fx * b, fx * a / 2.0
    a, b = fy - 1.0, fy - 2.0
    y0, y1, y2 = a * b / 2.0, -fy * b, fy * a / 2.0
    piece = tab[name]
    start, rows = piece["start"], piece["rows"]
    out = 0.0
    for row, col, wx in ((rows[i], j - start[i], x0), (rows[i + 1], j - start[i + 1], x1),
                         (rows[i + 2], j - start[i + 2], x2)):
        n0, n1, n2 = row[col], row[col + 1], row[col + 2]
        out += wx * (y0 * (w0 * n0[k] + w1 * n0[k + 1] + w2 * n0[k + 2] + w3 * n0[k + 3])
                     + y1 * (w0 * n1[k] + w1 * n1[k + 1] + w2 * n1[k + 2] + w3 * n1[k + 3])
                     + y2 * (w0 * n2[k] + w1 * n2[k + 1] + w2 * n2[k + 2] + w3 * n2[k + 3]))
    return out


# --- generation (imports CoolProp) ---------------------------------------------------------------

class _CoolProp:
    """HAPropsSI's wet bulb (degC) at a dry bulb and a dew point in kelvin, kept per state."""

    def __init__(self):
        from CoolProp.HumidAirProp import HAPropsSI

        self._props = HAPropsSI
        self.memo: Dict[Tuple[float, float, float], float] = {}

    def __call__(self, t_k: float, dew_k: float, p: float) -> float:
        key = (t_k, dew_k, p)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._props("Twb", "T", t_k, "P", p, "Tdp", dew_k) - ZERO_K
        return hit


def _on_ice(value: float) -> bool:
    return value <= TRIPLE_C


def _jump(cp: _CoolProp, dew_c: float, p: float, guess: Optional[float]) -> float:
    """CoolProp's switch T_S at a dew point below 0.01 degC: the dry bulb (degC) below which its
    wet bulb is on ice and above which on water (bisection to SWITCH_TOL)."""
    dew_k = dew_c + ZERO_K

    def ice(t_c: float) -> bool:
        return _on_ice(cp(t_c + ZERO_K, dew_k, p))

    lo = hi = None
    if guess is not None:
        a, b = max(guess - 0.3, dew_c), guess + 0.3
        if ice(a) and not ice(b):
            lo, hi = a, b
    if lo is None:
        lo, hi = dew_c, dew_c + 100.0
        if not ice(lo):
            return lo                           # on water from the dew point up
        if ice(hi):
            raise ValueError(f"no ice-water switch at a dew point of {dew_c} degC, {p} Pa")
    while hi - lo > SWITCH_TOL:
        mid = (lo + hi) / 2
        if ice(mid):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _fit2(xs: Sequence[float], ys: Sequence[float]) -> List[float]:
    """The least-squares quadratic (c0, c1, c2) through the points."""
    a = [[sum(x ** (r + c) for x in xs) for c in range(3)]
         + [sum(y * x ** r for x, y in zip(xs, ys))] for r in range(3)]
    for c in range(3):
        pivot = max(range(c, 3), key=lambda r: abs(a[r][c]))
        a[c], a[pivot] = a[pivot], a[c]
        for r in range(3):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [v - f * w for v, w in zip(a[r], a[c])]
    return [a[r][3] / a[r][r] for r in range(3)]


def _crossing(left: Sequence[Tuple[float, float]], right: Sequence[Tuple[float, float]],
              degree: int) -> float:
    """Where least-squares polynomials (of degree 1 or 2) through two sets of points cross,
    the crossing nearest 0."""
    fits = []
    for points in (left, right):
        xs, ys = zip(*points)
        if degree == 1:
            n, sx, sy = len(xs), sum(xs), sum(ys)
            sxx, sxy = sum(x * x for x in xs), sum(x * y for x, y in points)
            slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
            fits.append([(sy - slope * sx) / n, slope, 0.0])
        else:
            fits.append(_fit2(xs, ys))
    (a0, a1, a2), (b0, b1, b2) = fits
    c2, c1, c0 = a2 - b2, a1 - b1, a0 - b0
    if abs(c2) < 1e-12:
        return -c0 / c1
    root = math.sqrt(c1 * c1 - 4 * c2 * c0)
    return min(((-c1 + root) / (2 * c2), (-c1 - root) / (2 * c2)), key=abs)


def _kink(cp: _CoolProp, p: float, near: float, guess: float) -> float:
    """Where the switch curve's slope changes near a dew point: CoolProp's own switch at every
    0.02 K within 0.5 K, the crossing of quadratics fitted to it from 0.1 K either side of its
    sharpest bend; then at every 0.001 K within 0.012 K of that, the crossing of lines fitted
    from 0.003 K either side."""
    xs = [near - 0.5 + 0.02 * n for n in range(51)]
    ys = []
    for x in xs:
        guess = _jump(cp, x, p, guess)
        ys.append(guess)
    bend = max(range(1, 50), key=lambda n: abs(ys[n - 1] - 2 * ys[n] + ys[n + 1]))
    centre = xs[bend]
    left = [(x - centre, y) for x, y in zip(xs, ys) if x < centre - 0.1]
    right = [(x - centre, y) for x, y in zip(xs, ys) if x > centre + 0.1]
    if len(left) < 6 or len(right) < 6:
        raise ValueError(f"the switch's kink near {near} degC, {p} Pa is not where expected")
    centre += _crossing(left, right, 2)
    xs = [centre - 0.012 + 0.001 * n for n in range(25)]
    ys = []
    guess = ys_guess = _jump(cp, centre, p, guess)
    for x in xs:
        ys_guess = _jump(cp, x, p, ys_guess)
        ys.append(ys_guess)
    left = [(x - centre, y) for x, y in zip(xs, ys) if x < centre - 0.003]
    right = [(x - centre, y) for x, y in zip(xs, ys) if x > centre + 0.003]
    return centre + _crossing(left, right, 1)


def _switch_plane(cp: _CoolProp, p: float) -> Tuple[List[float], List[float]]:
    """The kinks of CoolProp's switch curve at one pressure, and the curve at the nodes of each
    range of dew point, the two ends of each range its own (the curve on the range's side of a
    kink, extrapolated from inside: a kink a hair off its fit would otherwise hand a range the
    other's value)."""
    coarse = []
    guess = None
    for m in range(1, int((TRIPLE_C - SWITCH_LOW) / 0.25) + 1):
        dew = TRIPLE_C - 0.25 * m
        guess = _jump(cp, dew, p, guess)
        coarse.append((dew, guess))
    bends = [coarse[n - 1][1] - 2 * coarse[n][1] + coarse[n + 1][1]
             for n in range(1, len(coarse) - 1)]
    # a kink stands out of the curvature around it: the second difference less the median of
    # those a kelvin around (the colder kink bends the curve down, the warmer one up)
    outlier = []
    for n in range(4, len(bends) - 4):
        around = sorted(bends[n - 4:n - 1] + bends[n + 2:n + 5])
        outlier.append((coarse[n + 1][0], bends[n] - (around[2] + around[3]) / 2))
    first = min((o for o in outlier if o[0] < -2.5), key=lambda o: o[1])
    second = max((o for o in outlier if o[0] > -2.5), key=lambda o: o[1])
    if not (first[1] < -0.003 and second[1] > 0.003):
        raise ValueError(f"CoolProp's switch has no kinks at {p} Pa: the table's model of it no "
                         f"longer holds")
    kinks = []
    for dew, _ in (first, second):
        near = min(coarse, key=lambda c: abs(c[0] - dew))[1]
        kinks.append(_kink(cp, p, dew, near))
    nodes: List[float] = []
    ends = (SWITCH_LOW, kinks[0], kinks[1], TRIPLE_C)
    guess = None
    for s, n in enumerate(SWITCH_NODES):
        lo, hi = ends[s], ends[s + 1]
        inner = []
        for m in range(0 if s == 0 else 1, n):
            guess = _jump(cp, lo + (hi - lo) * m / n, p, guess)
            inner.append(guess)
        # the ends at a kink, and at 0.01 degC (where the switch's depression reaches 0 and
        # CoolProp's jump sits on the dew point): the range's own curve, cubic from inside
        if s > 0:
            inner.insert(0, _extrapolate(inner[:4], -1.0))
        inner.append(_extrapolate(inner[:-5:-1], -1.0))
        nodes += inner
    return kinks, nodes


def _extrapolate(values: Sequence[float], at: float) -> float:
    """The Lagrange polynomial through (0, values[0]), (1, values[1]), ... at `at`."""
    n = len(values)
    out = 0.0
    for a in range(n):
        w = 1.0
        for b in range(n):
            if b != a:
                w *= (at - b) / (a - b)
        out += w * values[a]
    return out


def _kelvin(name: str, i: int, c: int) -> Tuple[float, float]:
    """(dry bulb, dew point) in kelvin at row i, column c of a piece."""
    if name == "water":                         # dew point 0.01 degC + i (row 0 just above)
        dew_k = ZERO_K + TRIPLE_C + (i if i else 1e-9)
        return dew_k + c, dew_k
    t_c = T_RANGE[0] + c
    if name == "ice":                           # depression i
        return ZERO_K + t_c, ZERO_K + (t_c - i)
    return ZERO_K + t_c, ZERO_K + (TRIPLE_C - i)  # mixed: dew point 0.01 degC - i (on ice)


def _own(cp: _CoolProp, name: str, i: int, c: int, p: float) -> Optional[float]:
    """CoolProp's wet bulb at a grid point of a piece when the point lies in the piece (on its
    sides of both switches), else None."""
    t_k, dew_k = _kelvin(name, i, c)
    if name == "water":
        return cp(t_k, dew_k, p)
    if dew_k >= TRIPLE_K or t_k < dew_k:
        return None                             # a dew point on water, or supersaturated
    value = cp(t_k, dew_k, p)
    return value if _on_ice(value) == (name == "ice") else None


def _value(cp: _CoolProp, name: str, i: int, c: int, p: float) -> Tuple[float, bool]:
    """(the piece's value at a grid point, whether it is CoolProp's own): CoolProp's, or the
    piece's continuation along the dry bulb from its five nearest own points in the row."""
    own = _own(cp, name, i, c, p)
    if own is not None:
        return own, True
    if name == "water":                         # pragma: no cover - every point is its own
        raise ValueError("a grid point of the water piece off it")
    toward = -1 if name == "ice" else 1         # where the piece's own points are
    first = c + toward
    while _own(cp, name, i, first, p) is None:
        first += toward
        if abs(first - c) > 12:
            raise ValueError(f"no own point of the {name} piece near row {i}, column {c}, {p} Pa")
    values = []
    for n in range(GHOST_POINTS):
        v = _own(cp, name, i, first + toward * n, p)
        if v is None:
            raise ValueError(f"the {name} piece is not contiguous at row {i}, {p} Pa")
        values.append(v)
    return _extrapolate(values, (c - first) * toward), False


def _reach(switch_table: dict) -> Dict[str, Dict[int, Tuple[int, int]]]:
    """The rows and columns of each piece that lookups use: every state of a lattice of the
    domain (each 0.25 K of dry bulb and depression, each 2.5 kPa), with a column more toward
    the switch for the pieces it bounds (a sliver of a cell between lattice points)."""
    used: Dict[str, Dict[int, set]] = {"ice": {}, "mixed": {}, "water": {}}
    step = 4
    pressures = [float(p) for p in range(P_RANGE[0], P_RANGE[1] + 1, SWITCH_P_STEP)]
    for tn in range(T_RANGE[0] * step, T_RANGE[1] * step + 1):
        t = tn / step
        for dn in range(D_RANGE[0] * step, D_RANGE[1] * step + 1):
            d = dn / step
            for p in pressures:
                name, i, _, j, _ = _locate(switch_table, t, t - d, d, p)
                rows = used[name]
                for a in range(3):
                    rows.setdefault(i + a, set()).update((j, j + 1, j + 2))
    out = {}
    for name, rows in used.items():
        margin = {"ice": (0, 1), "mixed": (1, 0), "water": (0, 0)}[name]
        out[name] = {i: (min(cols) - margin[0], max(cols) + margin[1])
                     for i, cols in rows.items()}
    return out


def _pieces(cp: _CoolProp, switch_table: dict) -> Tuple[Dict[str, dict], Dict[str, int]]:
    """The three pieces on the rows and columns lookups reach, each grid point with its value
    at every pressure plane, and how many of those values are a continuation (not CoolProp's
    own)."""
    pressures = [float(p) for p in range(P_RANGE[0], P_RANGE[1] + 1, P_STEP)]
    out, continued = {}, {}
    for name, rows in _reach(switch_table).items():
        if sorted(rows) != list(range(len(rows))):
            raise ValueError(f"the {name} piece's rows are not contiguous from 0")
        starts = [rows[i][0] for i in range(len(rows))]
        grid = []
        count = 0
        for i in range(len(rows)):
            row = []
            for c in range(rows[i][0], rows[i][1] + 1):
                point = []
                for p in pressures:
                    value, own = _value(cp, name, i, c, p)
                    count += not own
                    point.append(round(value, ROUND))
                row.append(point)
            grid.append(row)
        out[name] = {"start": starts, "rows": grid}
        continued[name] = count
    return out, continued


def stencils_outside(tab: dict, states) -> List[tuple]:
    """The states of the domain whose stencil would reach past the rows and columns stored
    for their piece (there must be none: a negative column would silently read the row's
    other end)."""
    bad = []
    for t, dew, p in states:
        depression = max(t - dew, 0.0)
        if not (T_RANGE[0] <= t <= T_RANGE[1] and depression <= D_RANGE[1]
                and P_RANGE[0] <= p <= P_RANGE[1]):
            continue
        name, i, _, j, _ = _locate(tab, t, dew, depression, p)
        start, rows = tab[name]["start"], tab[name]["rows"]
        if i + 2 >= len(rows) or not all(0 <= j - start[i + a] <= len(rows[i + a]) - 3
                                         for a in range(3)):
            bad.append((t, dew, p))
    return bad


def generate(cp: Optional[Callable] = None) -> dict:
    """The table from CoolProp (imports it; about 7 minutes)."""
    import CoolProp.CoolProp as CP  # noqa: N813

    cp = cp or _CoolProp()
    kinks, nodes = [], []
    for k in range(_N_SWITCH):
        ks, ns = _switch_plane(cp, float(P_RANGE[0] + SWITCH_P_STEP * k))
        kinks.append([round(v, ROUND + 2) for v in ks])
        nodes.append([round(v, ROUND + 2) for v in ns])
    switch_table = {"switch": {"kinks": kinks, "t": nodes}}
    pieces, continued = _pieces(cp, switch_table)
    bad = stencils_outside({**switch_table, **pieces}, random_states(200000, 1))
    if bad:
        raise ValueError(f"stencils past the stored grid at {bad[:3]}")
    return {"source": f"CoolProp {CP.get_global_param_string('version')} HAPropsSI('Twb', 'T', "
                      f"T, 'P', p, 'Tdp', Tdp) in degC, rounded to 1e-{ROUND} K; values that "
                      f"are a piece's continuation, not CoolProp's: "
                      + ", ".join(f"{n} {c}" for n, c in continued.items()),
            "t": list(T_RANGE), "d": list(D_RANGE), "p": [P_RANGE[0], P_RANGE[1], P_STEP],
            **switch_table, **pieces}


def measure(states, table: Optional[dict] = None, cp: Optional[Callable] = None) -> dict:
    """The table against CoolProp at (dry bulb, dew point, pressure) states inside it: how many,
    the worst error (and where) but for the states given the other root than CoolProp's, and
    those (their distance in dry bulb from CoolProp's own switch, the error, the state)."""
    cp = cp or _CoolProp()
    tab = table or _table()
    worst: Tuple[float, Optional[tuple]] = (0.0, None)
    other = []
    count = 0
    for t, dew, p in states:
        dew = min(dew, t)
        got = _lookup(tab, t, dew, p)
        if got is None:
            continue
        count += 1
        want = cp(t + ZERO_K, dew + ZERO_K, p)
        err = abs(got - want)
        piece = _locate(tab, t, dew, max(t - dew, 0.0), p)[0]
        if (piece == "ice") != _on_ice(want):
            other.append((abs(t - _jump(cp, dew, p, switch(dew, p, tab))), err, (t, dew, p)))
        elif err > worst[0]:
            worst = (err, (t, dew, p))
    return {"states": count, "worst": worst, "other_root": sorted(other, reverse=True)}


def switch_error(dew_points_and_pressures, table: Optional[dict] = None,
                 cp: Optional[Callable] = None) -> Tuple[float, Optional[tuple]]:
    """The worst distance (K of dry bulb) between the table's switch and CoolProp's, and
    where: a state between the two gets the other root."""
    cp = cp or _CoolProp()
    tab = table or _table()
    worst: Tuple[float, Optional[tuple]] = (0.0, None)
    for dew, p in dew_points_and_pressures:
        ours = switch(dew, p, tab)
        err = abs(ours - _jump(cp, dew, p, ours))
        if err > worst[0]:
            worst = (err, (dew, p))
    return worst


def random_states(count: int, seed: int):
    """`count` states spread evenly over the domain (dry bulb, dew point, pressure)."""
    import random

    rnd = random.Random(seed)
    for _ in range(count):
        t = rnd.uniform(*T_RANGE)
        yield t, t - rnd.uniform(*D_RANGE), rnd.uniform(*P_RANGE)


def states_near_the_switch(count: int, seed: int, within: float = 0.02):
    """`count` states of the domain within `within` K of dry bulb from the table's switch
    (where its pieces meet and their continuations serve)."""
    import random

    rnd = random.Random(seed)
    made = 0
    while made < count:
        dew, p = rnd.uniform(SWITCH_LOW, TRIPLE_C), rnd.uniform(*P_RANGE)
        t = switch(dew, p) + rnd.uniform(-within, within)
        if t - dew <= D_RANGE[1]:
            made += 1
            yield t, dew, p


def _measure_main(argv) -> int:
    """python -m astral_dsl.analyses.wetbulb_table --measure [STATES [NEAR [SWITCHES]]] [FILE...]:
    the shipped table against CoolProp on every hour of the stdlib's climate files (and the
    files named), at STATES random states (40,000), at NEAR states within 0.02 K of its switch
    (10,000), and its switch at SWITCHES random dew points and pressures (3,000)."""
    import random

    from astral_dsl.analyses import climate, climate_table

    numbers = [int(a) for a in argv if a.isdigit()] + [40000, 10000, 3000][len(
        [a for a in argv if a.isdigit()]):]
    paths = [Path(a) for a in argv if not a.isdigit()]
    cp = _CoolProp()

    def report(what: str, states) -> None:
        result = measure(states, cp=cp)
        print(f"{what}: {result['states']} in the table, worst error {result['worst'][0]:.2e} K "
              f"at {result['worst'][1]}; {len(result['other_root'])} on the other root "
              f"(distance from CoolProp's switch, error, state: {result['other_root'][:3]})")

    for path in [*climate_table.files(), *paths]:
        parsed = climate.parse(path.read_bytes(), path.name)
        report(f"{path.name}, {parsed.hours} hours",
               zip(parsed.dry_bulb, parsed.dew_point, parsed.pressure))
    report(f"{numbers[0]} random states", random_states(numbers[0], 2026))
    report(f"{numbers[1]} states within 0.02 K of the switch",
           states_near_the_switch(numbers[1], 2026))
    rnd = random.Random(2026)
    err, where = switch_error(((rnd.uniform(SWITCH_LOW, TRIPLE_C), rnd.uniform(*P_RANGE))
                               for _ in range(numbers[2])), cp=cp)
    print(f"the switch at {numbers[2]} random dew points and pressures: within {err:.2e} K of "
          f"CoolProp's (worst at {where})")
    return 0


def main(argv=None) -> int:
    import sys

    from astral_dsl.analyses.fluid_table import compare_or_write

    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--measure"]:
        return _measure_main(args[1:])
    return compare_or_write(args, "python -m astral_dsl.analyses.wetbulb_table", generate, PATH,
                            lambda table: json.dumps(table, separators=(",", ":")),
                            "CoolProp's wet bulbs (and their continuations)")


if __name__ == "__main__":
    raise SystemExit(main())
