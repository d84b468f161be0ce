"""The shipped table of CoolProp's humid-air properties for air units, so that a first check of a
design with air units does not import CoolProp (0.15-0.35 s with numpy and its library).

An air unit needs, at its supply dry bulb T, its dew point Tdp and the site's pressure p, the
specific volume and enthalpy per kilogram of dry air and the humidity ratio (HAPropsSI "Vda", "H"
and "W"), and the enthalpy again at the leaving dry bulb. The table holds CoolProp's values in
two parts, as CoolProp computes them (the dew point sets the water's mole fraction, whatever the
dry bulb; the dry bulb, pressure and moisture then set the rest):

- the humidity ratio HAPropsSI("W", "T", Tdp, "P", p, "Tdp", Tdp) at every whole degree of dew
  point from 1 to 30 degC and every 5 kPa from 65 to 105 kPa (it does not depend on "T");
- HAPropsSI("Vda" and "H", "T", T, "P", p, "W", W) at every 5 K of dry bulb from 0 to 80 degC,
  the same pressures, and every 0.005 of humidity ratio from 0 to 0.045 (more than the 0.0437
  of a 30 degC dew point at 65 kPa).

Between grid points a value is interpolated by cubics (Lagrange, through the four nearest grid
points on each axis, one axis after the other) in quantities nearly linear there: the log of
x = p W / (EPSILON + W), the water vapour's partial pressure, for the humidity ratio (then
W = EPSILON x / (p - x)); Vda times p, and H.

The file is JSON: the axes, and each of the three grids as the base64 of its doubles
(little-endian, in the order of its indices, the last fastest), CoolProp's very numbers, which a
check reads without parsing 3,330 numbers as text (10 million instructions of a check's start).

The domain is a dew point of 1-30 degC (above water's triple point, where CoolProp's saturation
changes from ice to water), at most the dry bulb of 0-80 degC, at 65-105 kPa (sea level to about
3,500 m); over it the table is within 1.2e-8 of CoolProp for W (relative), 1.3e-9 for Vda
(relative) and 1.4e-3 J/kg for H (1.3e-8 of H), measured at 40,000 random states and 441 on its
edges (tests/test_humid_air.py checks 2,150 more). A state outside goes to CoolProp.

    python -m astral_dsl.analyses.humid_air_table          # compare the shipped table with CoolProp
    python -m astral_dsl.analyses.humid_air_table --write  # regenerate it (after a CoolProp update)
"""
from __future__ import annotations

import base64
import json
import math
import sys
from array import array
from functools import lru_cache
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

PATH = Path(__file__).with_name("humid_air_table.json")
# CoolProp's ratio of the molar masses of water and dry air (HumidAirProp.cpp's epsilon: its
# W = epsilon psi_w / (1 - psi_w)); here only a change of variable, exact both ways
EPSILON = 0.621945
DEW_C = (1, 30, 1)                  # dew point: first, last, step (degC)
TEMP_C = (0, 80, 5)                 # dry bulb (degC)
PRESSURE_PA = (65000, 105000, 5000)
HUMIDITY = (0.0, 0.045, 0.005)      # humidity ratio (kg/kg)
ZERO_CELSIUS_K = 273.15


def _count(axis) -> int:
    return round((axis[1] - axis[0]) / axis[2]) + 1


def _pressures() -> List[float]:
    return [float(p) for p in range(PRESSURE_PA[0], PRESSURE_PA[1] + 1, PRESSURE_PA[2])]


def _encode(grid) -> str:
    """A grid (nested lists of floats) as the base64 of its doubles, little-endian, row-major."""
    def flat(x):
        return [v for item in x for v in flat(item)] if isinstance(x, list) else [x]
    values = array("d", flat(grid))
    if sys.byteorder != "little":                  # pragma: no cover - depends on the machine
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def _rows(data: str, width: int) -> List[List[float]]:
    """The doubles of an encoded grid, `width` to a row."""
    values = array("d", base64.b64decode(data, validate=True))
    if sys.byteorder != "little":                  # pragma: no cover - depends on the machine
        values.byteswap()
    return [values[i:i + width].tolist() for i in range(0, len(values), width)]


@lru_cache(maxsize=1)
def _grids():
    """(log of the vapour pressure [dew][p], Vda p [T][p][W], H [T][p][W]) from the file."""
    table = json.loads(PATH.read_text(encoding="utf-8"))
    pressures = _pressures()
    n_p, n_w = len(pressures), _count(HUMIDITY)
    vapour = [[math.log(p * w / (EPSILON + w)) for p, w in zip(pressures, row)]
              for row in _rows(table["w"], n_p)]
    vda, h = _rows(table["vda"], n_w), _rows(table["h"], n_w)
    volume = [[[v * p for v in row] for p, row in zip(pressures, vda[k:k + n_p])]
              for k in range(0, len(vda), n_p)]
    return vapour, volume, [h[k:k + n_p] for k in range(0, len(h), n_p)]


def _stencil(x: float, n: int) -> Tuple[int, Tuple[float, float, float, float]]:
    """The first of the four grid points around x (in steps from the first of n) and their
    Lagrange weights at x."""
    k = min(max(int(math.floor(x)) - 1, 0), n - 4)
    s = x - k
    a, b, c, d = s, s - 1.0, s - 2.0, s - 3.0
    return k, (-b * c * d / 6.0, a * c * d / 2.0, -a * b * d / 2.0, a * b * c / 6.0)


def _plane(grid: Sequence[Sequence[float]], i: int, wi, j: int, wj) -> float:
    return sum(u * sum(v * x for v, x in zip(wj, grid[i + m][j:j + 4]))
               for m, u in enumerate(wi))


def lookup(temp_c: float, dew_point_c: float,
           pressure_pa: float) -> Optional[Tuple[float, float, float]]:
    """(Vda m^3/kg, H J/kg, W kg/kg) per kilogram of dry air from the table, or None when the
    state lies outside it."""
    d0, d1, dstep = DEW_C
    t0, t1, tstep = TEMP_C
    p0, p1, pstep = PRESSURE_PA
    if not (d0 <= dew_point_c <= d1 and t0 <= temp_c <= t1 and dew_point_c <= temp_c
            and p0 <= pressure_pa <= p1):                 # NaN fails every comparison
        return None
    vapour, volume, enthalpy = _grids()
    kp, wp = _stencil((pressure_pa - p0) / pstep, _count(PRESSURE_PA))
    kd, wd = _stencil((dew_point_c - d0) / dstep, _count(DEW_C))
    x = math.exp(_plane(vapour, kd, wd, kp, wp))
    w = EPSILON * x / (pressure_pa - x)
    # at most 0.0437 over the domain: inside the humidity axis
    kw, ww = _stencil((w - HUMIDITY[0]) / HUMIDITY[2], _count(HUMIDITY))
    kt, wt = _stencil((temp_c - t0) / tstep, _count(TEMP_C))
    vp = h = 0.0
    for m, u in enumerate(wt):
        vplane, hplane = volume[kt + m], enthalpy[kt + m]
        for n, v in enumerate(wp):
            uv = u * v
            vrow, hrow = vplane[kp + n][kw:kw + 4], hplane[kp + n][kw:kw + 4]
            vp += uv * sum(c * y for c, y in zip(ww, vrow))
            h += uv * sum(c * y for c, y in zip(ww, hrow))
    return vp / pressure_pa, h, w


def generate() -> dict:
    """The table from CoolProp (imports it; a second)."""
    import CoolProp.CoolProp as CP  # noqa: N813
    from CoolProp.HumidAirProp import HAPropsSI

    pressures = _pressures()
    dews = [d + ZERO_CELSIUS_K for d in range(DEW_C[0], DEW_C[1] + 1, DEW_C[2])]
    temps = [t + ZERO_CELSIUS_K for t in range(TEMP_C[0], TEMP_C[1] + 1, TEMP_C[2])]
    ratios = [HUMIDITY[0] + k * HUMIDITY[2] for k in range(_count(HUMIDITY))]

    def moist(out: str):
        return [[[HAPropsSI(out, "T", t, "P", p, "W", w) for w in ratios] for p in pressures]
                for t in temps]

    return {"source": f"CoolProp {CP.get_global_param_string('version')}: HAPropsSI('W', 'T', "
                      f"Tdp, 'P', p, 'Tdp', Tdp) [dew][p]; HAPropsSI('Vda' | 'H', 'T', T, 'P', "
                      f"p, 'W', W) [T][p][W]; temperatures in K (degC + 273.15); each grid "
                      f"the base64 of its doubles, little-endian, the last index fastest",
            "dew_c": list(DEW_C), "temp_c": list(TEMP_C), "pressure_pa": list(PRESSURE_PA),
            "humidity": list(HUMIDITY),
            "w": _encode([[HAPropsSI("W", "T", d, "P", p, "Tdp", d) for p in pressures]
                          for d in dews]),
            "vda": _encode(moist("Vda")), "h": _encode(moist("H"))}


def main(argv=None) -> int:
    from astral_dsl.analyses.fluid_table import compare_or_write

    return compare_or_write(argv, "python -m astral_dsl.analyses.humid_air_table", generate,
                            PATH, lambda table: json.dumps(table, separators=(",", ":")))


if __name__ == "__main__":
    raise SystemExit(main())
