"""Humid air (analyses/humid_air.py): the shipped tables of CoolProp's values (humid air for air
units, wet bulbs for climates) against CoolProp itself, the states outside them going to
CoolProp, and results that do not depend on the per-user cache."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from CoolProp.HumidAirProp import HAPropsSI

from astral_dsl.analyses import (climate_formats, climate_table, humid_air, humid_air_table,
                                 wetbulb_build, wetbulb_switch, wetbulb_table)

REPO = Path(__file__).resolve().parents[1]
K = 273.15


def _coolprop(out: str, temp_c: float, dew_c: float, p: float) -> float:
    return HAPropsSI(out, "T", temp_c + K, "P", p, "Tdp", dew_c + K)


def _states():
    """2,000 random states of the table's domain, and its edges and corners (off the grid
    and on it)."""
    rnd = random.Random(2026)
    for _ in range(2000):
        dew = rnd.uniform(1.0, 30.0)
        yield rnd.uniform(dew, 80.0), dew, rnd.uniform(65000.0, 105000.0)
    for dew in (1.0, 1.4, 2.5, 17.0, 29.6, 30.0):
        for temp in (dew, dew + 0.7, 41.3, 79.8, 80.0):
            for p in (65000.0, 65321.0, 98088.09, 104950.0, 105000.0):
                yield temp, dew, p


def test_the_table_is_within_1e_6_of_coolprop():
    """Vda, H and W against HAPropsSI itself (what the air units used before the table).
    Measured worst over 40,000 random states: W 1.2e-8, Vda 1.3e-9 (relative), H 1.4e-3 J/kg
    (1.3e-8 of H)."""
    worst = {"Vda": 0.0, "W": 0.0, "H": 0.0, "H relative": 0.0}
    for temp, dew, p in _states():
        vda, h, w = humid_air_table.lookup(temp, dew, p)
        ref_h = _coolprop("H", temp, dew, p)
        worst["Vda"] = max(worst["Vda"], abs(vda / _coolprop("Vda", temp, dew, p) - 1))
        worst["W"] = max(worst["W"], abs(w / _coolprop("W", temp, dew, p) - 1))
        worst["H"] = max(worst["H"], abs(h - ref_h))
        worst["H relative"] = max(worst["H relative"], abs(h / ref_h - 1))
    assert max(worst["Vda"], worst["W"], worst["H relative"]) < 1e-6, worst   # the requirement
    assert worst["Vda"] < 1e-8 and worst["W"] < 5e-8, worst     # what the grid gives
    assert worst["H"] < 5e-3 and worst["H relative"] < 5e-8, worst


def test_an_air_units_enthalpy_rise_is_coolprops():
    """What a flow follows from: the rise over 1-30 K within 2e-6 of CoolProp's (0.005 J/kg of
    the 1 kJ/kg a kelvin of rise takes)."""
    rnd = random.Random(7)
    for _ in range(300):
        # inputs as humid_air rounds them (1e-6 K, 0.01 Pa)
        dew = round(rnd.uniform(1.0, 30.0), 6)
        temp, rise = round(rnd.uniform(dew, 50.0), 6), round(rnd.uniform(1.0, 30.0), 6)
        p = round(rnd.uniform(65e3, 105e3), 2)
        entering, dh = humid_air.heating(temp, rise, dew, p)
        ref = _coolprop("H", temp + rise, dew, p) - _coolprop("H", temp, dew, p)
        assert dh == pytest.approx(ref, rel=2e-6)
        assert entering.specific_volume == pytest.approx(_coolprop("Vda", temp, dew, p),
                                                         rel=1e-8)


def test_the_table_is_what_coolprop_gives():
    """The shipped table is the generator's output from the installed CoolProp (regenerate
    with `python -m astral_dsl.analyses.humid_air_table --write`)."""
    shipped = json.loads(humid_air_table.PATH.read_text(encoding="utf-8"))
    assert humid_air_table.generate() == shipped
    assert shipped["source"].startswith("CoolProp 6.8.0: HAPropsSI('W'")


def test_the_tables_doubles_are_read_back_bit_for_bit():
    """The file holds each grid as the base64 of its doubles: read back, every double is the one
    written (a sign of zero, a subnormal, the last digit of a CoolProp value), row by row."""
    import math
    import struct

    rnd = random.Random(22)
    grid = [[rnd.uniform(-1e6, 1e6) for _ in range(10)] for _ in range(9)]
    grid[0][:4] = [-0.0, 5e-324, 0.1 + 0.2, 101325.00000000001]
    rows = humid_air_table._rows(humid_air_table._encode(grid), 10)
    assert [[struct.pack("<d", v) for v in row] for row in rows] == \
        [[struct.pack("<d", v) for v in row] for row in grid]
    assert math.copysign(1.0, rows[0][0]) == -1.0


@pytest.mark.parametrize("temp, dew, p", [
    (27.0, 0.5, 98000.0),           # a dew point below the table's (ice below 0.01 degC)
    (20.0, -9.0, 101325.0),
    (35.0, 31.0, 98000.0),          # above it
    (85.0, 12.0, 98000.0),          # a dry bulb above 80 degC
    (27.0, 12.0, 60000.0),          # below 65 kPa (above about 3,500 m)
    (27.0, 12.0, 106000.0),         # above 105 kPa (below sea level)
])
def test_outside_the_table_coolprop_answers(temp, dew, p, tmp_path, monkeypatch):
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(humid_air, "_memo", {})
    monkeypatch.setitem(humid_air._state, "loaded", False)
    monkeypatch.setitem(humid_air._state, "dirty", False)
    assert humid_air_table.lookup(temp, dew, p) is None
    state = humid_air.air_state(temp, dew, p)
    assert state == (_coolprop("Vda", temp, dew, p), _coolprop("H", temp, dew, p),
                     _coolprop("W", temp, dew, p))
    assert humid_air.heating(temp, 10.0, dew, p)[1] == \
        _coolprop("H", temp + 10.0, dew, p) - state.enthalpy


def test_nothing_odd_is_in_the_table():
    for args in ((float("nan"), 12.0, 98000.0), (27.0, float("nan"), 98000.0),
                 (27.0, 12.0, float("inf")), (11.0, 12.0, 98000.0)):     # dew above dry bulb
        assert humid_air_table.lookup(*args) is None


def test_the_table_comes_before_the_cache(monkeypatch):
    """A state of the table is the table's whatever the per-user cache holds (a value cached
    from CoolProp, or a forged one) and never asks CoolProp: the results are the same with or
    without the cache."""
    def refuse(*args):
        raise AssertionError(f"CoolProp asked for {args}")

    shipped = humid_air.air_state(27.0, 12.0, 98088.09)
    forged = {f"{out}|27.000000|98088.09|12.000000": 1.0 for out in ("Vda", "H", "W")}
    monkeypatch.setattr(humid_air, "_memo", forged)
    monkeypatch.setitem(humid_air._state, "loaded", True)
    monkeypatch.setattr(humid_air, "_props", refuse)
    assert humid_air.air_state(27.0, 12.0, 98088.09) == shipped
    assert shipped == humid_air_table.lookup(27.0, 12.0, 98088.09)
    entering, dh = humid_air.heating(27.0, 12.0, 12.0, 98088.09)
    assert entering == shipped
    assert dh == humid_air_table.lookup(39.0, 12.0, 98088.09)[1] - shipped.enthalpy


_FRESH = """
import sys, astral_dsl
c = astral_dsl.check(astral_dsl.compile("examples/astral.astral"))
flows = [a.flow_m3s for a in c.engineering.cooling.air]
print("CoolProp" in sys.modules, "numpy" in sys.modules, repr(flows))
"""


def test_a_fresh_check_of_the_reference_needs_no_coolprop(tmp_path):
    """With an empty user cache the reference's air units and climate come from the shipped
    tables: CoolProp (nor numpy) is not imported and nothing of humid air is cached; a second
    run, with the cache the first wrote, gives the same flows to the last bit."""
    env = dict(os.environ, ASTRAL_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                           cwd=REPO, env=env, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stdout.startswith("False False [")
    cached = {p.name for p in (tmp_path / "cache").iterdir()}
    assert not any(n.startswith(("humid-air", "climate-")) for n in cached), cached


# --- the wet-bulb table (analyses/wetbulb_table.py) -----------------------------------------------

def _twb(t: float, dew: float, p: float) -> float:
    return HAPropsSI("Twb", "T", t + K, "P", p, "Tdp", dew + K) - K


def _on_ice(t: float, dew: float, p: float) -> bool:
    return _twb(t, dew, p) <= 0.01


def _assert_wet_bulbs(states) -> int:
    """Every state inside the table within the documented bound of HAPropsSI, but for a state
    CoolProp puts on the other root: that lies within the switch's documented bound of
    CoolProp's jump (CoolProp on ice that far below it and on water that far above). The
    number of states inside the table."""
    inside = 0
    for t, dew, p in states:
        got = wetbulb_table.lookup(t, dew, p)
        if got is None:
            continue
        inside += 1
        err = abs(got - _twb(t, dew, p))
        if err > wetbulb_table.WITHIN_K:
            near = wetbulb_table.SWITCH_WITHIN_K
            assert _on_ice(t - near, dew, p) and not _on_ice(t + near, dew, p), \
                (t, dew, p, got, err)
    return inside


@pytest.mark.parametrize("path", climate_table.files(), ids=lambda p: p.name)
def test_the_wet_bulb_table_is_coolprops_at_the_hours_of_the_stdlib_climate(path):
    """What the shipped climate columns are made of (analyses/climate_table.py): inside the
    table and within its bound of CoolProp at every hour whose wet bulb is within 2 K of 0 degC
    (where CoolProp switches between ice and water, the hard part) and at every 8th of the
    others (each distinct state once; every hour takes ~20 s of CoolProp: `python -m
    astral_dsl.analyses.wetbulb_table --measure` checks them all)."""
    parsed = climate_formats.parse(path.read_bytes(), path.name)
    hours = sorted(set(zip(parsed.dry_bulb, [min(d, t) for t, d in
                                             zip(parsed.dry_bulb, parsed.dew_point)],
                           parsed.pressure)))
    near = [h for h in hours if abs(wetbulb_table.lookup(*h)) <= 2.0]
    rest = [h for h in hours if abs(wetbulb_table.lookup(*h)) > 2.0][::8]
    assert len(near) > 200 and len(rest) > 500
    assert _assert_wet_bulbs(near + rest) == len(near) + len(rest)


def _edges():
    for t in (-40.0, -39.6, -0.4, 0.0, 0.005, 0.01, 0.3, 5.5, 49.4, 50.0):
        for d in (0.0, 0.004, 0.3, 1.0, 2.2, 39.7, 40.0):
            for p in (65000.0, 65321.0, 98088.09, 104950.0, 105000.0):
                yield t, t - d, p
    for dew in (0.0099999, 0.01, 0.0100001, -0.0001, -31.99, -32.0, -32.01):
        for t in (dew, dew + 0.5, dew + 3.0, dew + 20.0, min(dew + 40.0, 50.0)):
            yield t, dew, 85000.0


def test_the_wet_bulb_table_is_coolprops_over_its_domain():
    """2,000 random states, the domain's edges and corners, the triple point, and 300 states
    within 0.02 K of the table's switch between ice and water (where the pieces meet and
    their continuations serve)."""
    states = [*wetbulb_build.random_states(2000, 2031), *_edges(),
              *wetbulb_build.states_near_the_switch(300, 2031)]
    assert _assert_wet_bulbs(states) > 2500
    for outside in ((50.5, 20.0, 98000.0), (20.0, -20.5, 98000.0), (20.0, 10.0, 64000.0),
                    (20.0, 10.0, 106000.0), (float("nan"), 10.0, 98000.0),
                    (20.0, 10.0, float("nan"))):
        assert wetbulb_table.lookup(*outside) is None


def test_the_wet_bulb_tables_stencils_stay_on_its_grid():
    """No state's stencil reaches past the grid points stored for its piece (a negative index
    would read a row's other end without an error)."""
    table = json.loads(wetbulb_table.PATH.read_text(encoding="utf-8"))
    states = [*wetbulb_build.random_states(50000, 2034), *_edges(),
              *wetbulb_build.states_near_the_switch(20000, 2034, within=0.5)]
    assert wetbulb_build.stencils_outside(table, states) == []


def test_the_wet_bulb_tables_switch_is_coolprops_jump():
    """The table's switch against CoolProp's own (bisected) at random dew points and pressures
    and at its kinks."""
    rnd = random.Random(2032)
    table = json.loads(wetbulb_table.PATH.read_text(encoding="utf-8"))
    points = [(rnd.uniform(wetbulb_table.SWITCH_LOW, 0.01), rnd.uniform(65000.0, 105000.0))
              for _ in range(12)]
    for k in (0, 9, 16):
        p = 65000.0 + 2500.0 * k
        points += [(kink + step, p) for kink in table["switch"]["kinks"][k]
                   for step in (-0.01, 0.01)]
    worst = wetbulb_build.switch_error(points)
    assert worst[0] <= wetbulb_table.SWITCH_WITHIN_K, worst


def test_the_wet_bulb_tables_grid_is_a_regeneration():
    """A regeneration takes minutes (python -m astral_dsl.analyses.wetbulb_table compares the
    whole file): here, 80 random grid points of each piece at a random pressure each are what
    the generator makes of CoolProp's values there, CoolProp's own value where the point lies
    on the piece's side of both switches (checked against HAPropsSI directly) and the piece's
    continuation elsewhere."""
    table = json.loads(wetbulb_table.PATH.read_text(encoding="utf-8"))
    assert table["source"].startswith("CoolProp 6.8.0 HAPropsSI('Twb'")
    cp = wetbulb_switch._CoolProp()
    rnd = random.Random(2033)
    kinds = {"own": 0, "continued": 0}
    for name in ("ice", "mixed", "water"):
        piece = table[name]
        for _ in range(80):
            i = rnd.randrange(len(piece["rows"]))
            c = rnd.randrange(len(piece["rows"][i]))
            k = rnd.randrange(9)
            p = 65000.0 + 5000.0 * k
            value, own = wetbulb_build._value(cp, name, i, piece["start"][i] + c, p)
            assert piece["rows"][i][c][k] == round(value, wetbulb_table.ROUND)
            if own:
                t_k, dew_k = wetbulb_build._kelvin(name, i, piece["start"][i] + c)
                assert value == HAPropsSI("Twb", "T", t_k, "P", p, "Tdp", dew_k) - K
            kinds["own" if own else "continued"] += 1
    assert kinds["own"] > 150 and kinds["continued"] > 5, kinds

