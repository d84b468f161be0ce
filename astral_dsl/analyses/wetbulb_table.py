"""The shipped table of CoolProp's wet-bulb temperatures, so that a year of hourly weather (8,760
wet bulbs for a cooling tower) costs milliseconds instead of half a minute: CoolProp's
HAPropsSI takes about 4 ms for one wet bulb (it iterates on the psychrometric balance).

The table holds HAPropsSI("Twb", "T", T, "P", p, "Tdp", T - D) at every whole degree of dry
bulb T from -40 to 50 degC, every whole kelvin of dew-point depression D from 0 to 40 K, and
every 5 kPa of pressure from 65 to 105 kPa (sea level to about 3,500 m). Between grid points the
value is bilinear in (T, D) and linear in p: within 0.005 K of HAPropsSI (tests/test_humid_air.py
checks a sample of states and both climate files against CoolProp itself). A state outside the
table goes to CoolProp.

    python -m astral_dsl.analyses.wetbulb_table           # compare the shipped table with CoolProp
    python -m astral_dsl.analyses.wetbulb_table --write   # regenerate it (after a CoolProp update)
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Optional

PATH = Path(__file__).with_name("wetbulb_table.json")
T_RANGE = (-40, 50)             # dry bulb, whole degC
D_RANGE = (0, 40)               # dew-point depression, whole K
P_RANGE = (65000, 105000)       # pressure, Pa
P_STEP = 5000


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def source() -> str:
    """The table's identity for a cache key of values derived from it: the SHA-256 of the
    shipped file (reading it is a millisecond; parsing it, ten)."""
    import hashlib

    return hashlib.sha256(PATH.read_bytes()).hexdigest()[:16]


def lookup(dry_bulb_c: float, dew_point_c: float, pressure_pa: float) -> Optional[float]:
    """The wet bulb (degC) from the table, or None when the state lies outside it."""
    depression = max(dry_bulb_c - dew_point_c, 0.0)
    x = dry_bulb_c - T_RANGE[0]
    y = depression - D_RANGE[0]
    z = (pressure_pa - P_RANGE[0]) / P_STEP
    nt, nd = T_RANGE[1] - T_RANGE[0], D_RANGE[1] - D_RANGE[0]
    nz = (P_RANGE[1] - P_RANGE[0]) // P_STEP
    if not (0.0 <= x <= nt and 0.0 <= y <= nd and 0.0 <= z <= nz) or not \
            (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return None
    i, j, k = min(int(x), nt - 1), min(int(y), nd - 1), min(int(z), nz - 1)
    fx, fy, fz = x - i, y - j, z - k
    grid = _table()["twb"]
    out = 0.0
    for kk, wz in ((k, 1.0 - fz), (k + 1, fz)):
        if wz == 0.0:
            continue
        rows = grid[kk]
        a, b = rows[i], rows[i + 1]
        plane = ((1.0 - fx) * ((1.0 - fy) * a[j] + fy * a[j + 1])
                 + fx * ((1.0 - fy) * b[j] + fy * b[j + 1]))
        out += wz * plane
    return out


def generate() -> dict:
    """The table from CoolProp (imports it; about two minutes)."""
    import CoolProp.CoolProp as CP  # noqa: N813
    from CoolProp.HumidAirProp import HAPropsSI

    planes = []
    for p in range(P_RANGE[0], P_RANGE[1] + 1, P_STEP):
        rows = []
        for t in range(T_RANGE[0], T_RANGE[1] + 1):
            rows.append([round(HAPropsSI("Twb", "T", t + 273.15, "P", float(p), "Tdp",
                                         t - d + 273.15) - 273.15, 5)
                         for d in range(D_RANGE[0], D_RANGE[1] + 1)])
        planes.append(rows)
    return {"source": f"CoolProp {CP.get_global_param_string('version')} HAPropsSI('Twb', 'T', "
                      f"T, 'P', p, 'Tdp', T - D) in degC, rounded to 1e-5 K",
            "t": list(T_RANGE), "d": list(D_RANGE), "p": [P_RANGE[0], P_RANGE[1], P_STEP],
            "twb": planes}


def main(argv=None) -> int:
    from astral_dsl.analyses.fluid_table import compare_or_write

    return compare_or_write(argv, "python -m astral_dsl.analyses.wetbulb_table", generate, PATH,
                            lambda table: json.dumps(table, separators=(",", ":")))


if __name__ == "__main__":
    raise SystemExit(main())
