"""CoolProp's wet bulb for building the shipped wet-bulb table (wetbulb_build.py), kept per
state, and the table's ice/water switch found on it: the dew point's jump between CoolProp's
two roots, located by bisection on CoolProp itself, and the switch plane's kinks and nodes at
one pressure. Imports CoolProp; a check never imports this module."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.analyses.wetbulb_table import SWITCH_LOW, SWITCH_NODES, SWITCH_TOL, TRIPLE_C, \
    ZERO_K


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
