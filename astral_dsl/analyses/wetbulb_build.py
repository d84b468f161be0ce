"""Building and measuring the shipped wet-bulb table (analyses/wetbulb_table.py): CoolProp's
HAPropsSI on the table's grids, its ice/water switch found by bisection on CoolProp itself, the
continuations past each piece's switch, and the measurement of the shipped table against
CoolProp (`python -m astral_dsl.analyses.wetbulb_table --write` / `--measure`). Imports
CoolProp; a check never imports this module."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from astral_dsl.analyses.wetbulb_table import (
    D_RANGE, GHOST_POINTS, P_RANGE, P_STEP, PATH, ROUND, SWITCH_LOW, SWITCH_NODES, SWITCH_P_STEP,
    SWITCH_TOL, T_RANGE, TRIPLE_C, TRIPLE_K, ZERO_K, _N_SWITCH, _locate, _lookup, _table, switch)


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
