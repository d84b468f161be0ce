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
from functools import lru_cache
from pathlib import Path
from typing import Optional, Tuple

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
    shipped file (reading it is a millisecond; parsing it, ten), remembered per user while the
    file is unchanged (filedigest.py, for start-up)."""
    from astral_dsl import filedigest

    def compute() -> str:
        import hashlib      # here: remembered, the digest needs no hashing (for start-up)

        return hashlib.sha256(PATH.read_bytes()).hexdigest()

    return filedigest.sha256(PATH, compute)[:16]


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


def main(argv=None) -> int:
    """Compare the shipped table with CoolProp, `--write` it again, or `--measure` it
    (analyses/wetbulb_build.py, which imports CoolProp)."""
    from astral_dsl.analyses import wetbulb_build

    return wetbulb_build.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
