"""The shipped table of the stdlib coolants' properties, so that the common path (a loop of water
or PG25 between 1 and 99 degC at atmospheric pressure) does not import CoolProp (~0.3 s).

The table holds CoolProp's density and specific heat (PropsSI "D" and "C") at every whole degree
Celsius of each fluid's range at 101,325 Pa: water (IAPWS-95, HEOS) from 1 to 99 degC, PG25
(INCOMP::MPG[0.25]) from -9 degC (it freezes at -9.8 degC) to 100 degC (the top of CoolProp's
MPG range). Between grid points the value is the cubic through the four nearest (Lagrange): on
a 1 K grid of these smooth curves that is within 1e-6 of CoolProp (tests/test_fluids.py checks
0.1 % at every 0.01 K of both ranges against CoolProp itself). Anything else (another fluid,
pressure or temperature) goes to CoolProp as before.

    python -m astral_dsl.analyses.fluid_table           # compare the shipped table with CoolProp
    python -m astral_dsl.analyses.fluid_table --write   # regenerate it (after a CoolProp update)
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Tuple

PATH = Path(__file__).with_name("fluid_table.json")
PRESSURE_PA = 101325.0
# CoolProp name -> (first, last) whole degrees Celsius of the table
RANGES: Dict[str, Tuple[int, int]] = {"Water": (1, 99), "INCOMP::MPG[0.25]": (-9, 100)}


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


def lookup(name: str, temp_c: float, pressure_pa: float) -> Optional[Tuple[float, float]]:
    """(density kg/m^3, cp J/(kg K)) from the table, or None when it does not cover the state."""
    if pressure_pa != PRESSURE_PA:
        return None
    entry = _table()["fluids"].get(name)
    if entry is None:
        return None
    t0, rho, cp = entry["t0"], entry["density"], entry["cp"]
    x = temp_c - t0
    last = len(rho) - 1
    if not (0.0 <= x <= last) or not math.isfinite(x):
        return None
    k = min(max(int(math.floor(x)) - 1, 0), last - 3)    # the four points around x
    return _cubic(rho, k, x), _cubic(cp, k, x)


def _cubic(ys, k: int, x: float) -> float:
    """The Lagrange cubic through (k, ys[k]) .. (k + 3, ys[k + 3]) at x."""
    out = 0.0
    for i in range(k, k + 4):
        w = 1.0
        for j in range(k, k + 4):
            if j != i:
                w *= (x - j) / (i - j)
        out += w * ys[i]
    return out


def generate() -> dict:
    """The table from CoolProp (imports it)."""
    import CoolProp.CoolProp as CP  # noqa: N813

    fluids = {}
    for name, (lo, hi) in RANGES.items():
        temps = range(lo, hi + 1)
        fluids[name] = {
            "t0": float(lo),
            "density": [CP.PropsSI("D", "T", t + 273.15, "P", PRESSURE_PA, name) for t in temps],
            "cp": [CP.PropsSI("C", "T", t + 273.15, "P", PRESSURE_PA, name) for t in temps],
        }
    return {"source": f"CoolProp {CP.get_global_param_string('version')} PropsSI('D'|'C', 'T', "
                      f"T, 'P', {PRESSURE_PA:g}, name) at every whole degree Celsius",
            "pressure_pa": PRESSURE_PA, "fluids": fluids}


def main(argv=None) -> int:
    return compare_or_write(argv, "python -m astral_dsl.analyses.fluid_table", generate, PATH,
                            lambda table: json.dumps(table, indent=1))


def compare_or_write(argv, prog: str, generate, path: Path, dumps,
                     reference: str = "CoolProp's values") -> int:
    """The command line of a table shipped with the package: compare it with a fresh
    generation, `reference` saying what that is made of (exit 1 when they differ), or
    regenerate it with `--write`."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--write", action="store_true", help="regenerate the shipped table")
    args = parser.parse_args(argv)
    fresh = generate()
    if args.write:
        path.write_text(dumps(fresh) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        return 0
    same = fresh == json.loads(path.read_text(encoding="utf-8"))
    print(f"{path.name}: the shipped table {'equals' if same else 'differs from'} a fresh "
          f"generation from {reference}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
