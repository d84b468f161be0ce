"""Building and measuring the shipped wet-bulb table (analyses/wetbulb_table.py): CoolProp's
HAPropsSI on the table's grids, its ice/water switch found by bisection on CoolProp itself
(wetbulb_switch.py), the continuations past each piece's switch, and the measurement of the
shipped table against CoolProp (`python -m astral_dsl.analyses.wetbulb_table --write` /
`--measure`). Imports CoolProp; a check never imports this module."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from astral_dsl.analyses.wetbulb_switch import _CoolProp, _extrapolate, _jump, _on_ice, \
    _switch_plane
from astral_dsl.analyses.wetbulb_table import (
    D_RANGE, GHOST_POINTS, P_RANGE, P_STEP, PATH, ROUND, SWITCH_LOW, SWITCH_P_STEP, T_RANGE,
    TRIPLE_C, TRIPLE_K, ZERO_K, _N_SWITCH, _locate, _lookup, _table, switch)


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

    from astral_dsl.analyses import climate_formats, climate_table

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
        parsed = climate_formats.parse(path.read_bytes(), path.name)
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
