"""Coolant properties from CoolProp: reference values, lazy import, caching and errors.

Reference values: water at 30 degC and 1 atm, IAPWS-95 / NIST webbook: rho 995.65 kg/m^3,
cp 4.1798 kJ/kg/K (the hand calculations of tests/test_formulas.py use 995.7 and 4.178 "near
30 degC").  PG25 (propylene glycol 25 % by mass) at 35 degC: those hand calculations use
cp ~3.93 kJ/kg/K and rho ~1018 kg/m^3 [approx];
manufacturer tables (e.g. Dow Dowfrost) give about 3.9-3.96 kJ/kg/K and 1,012-1,020 kg/m^3, so the
check is +/- 2 %.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from astral_dsl.analyses import fluid_table, fluids
from astral_dsl.analyses import formulas as f

REPO = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess:
    """`python -c code` on this checkout (not an installed copy), from the checkout."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)


@pytest.fixture(autouse=True)
def _fresh_cache():
    fluids.cache_clear()
    yield
    fluids.cache_clear()


def test_water_30c():
    p = fluids.properties("Water", 30.0)
    assert p.density == pytest.approx(995.65, abs=0.1)   # NIST: 995.65 kg/m^3
    assert p.cp == pytest.approx(4179.8, abs=2.0)        # NIST: 4.1798 kJ/kg/K
    assert p.fluid == "Water" and p.temp_c == 30.0 and p.pressure_pa == 101325.0
    assert fluids.density("water", 30.0) == p.density
    assert fluids.specific_heat("water", 30.0) == p.cp


def test_water_flow_per_kw_with_coolprop_matches_the_hand_rule():
    # V = Q / (rho cp dT): 1.44 L/min per kW at 10 K with water near 30 degC (hand value)
    p = fluids.properties("Water", 30.0)
    per_kw = f.m3s_to_l_per_min(f.liquid_flow(1e3, p.density, p.cp, 10.0))
    assert per_kw == pytest.approx(1.44, abs=0.005)


def test_pg25_35c():
    p = fluids.properties("INCOMP::MPG[0.25]", 35.0)
    assert p.cp == pytest.approx(3930.0, rel=0.02)       # hand value ~3.93 kJ/kg/K
    assert p.density == pytest.approx(1018.0, rel=0.02)  # hand value ~1018 kg/m^3
    # hand value: PG25 ~1.50 L/min per kW at 10 K
    per_kw = f.m3s_to_l_per_min(f.liquid_flow(1e3, p.density, p.cp, 10.0))
    assert per_kw == pytest.approx(1.50, abs=0.02)
    # PG25 carries less heat per litre than water: more flow for the same heat
    w = fluids.properties("Water", 35.0)
    assert p.density * p.cp < w.density * w.cp


def test_aliases():
    assert fluids.resolve_name("PG25") == "INCOMP::MPG[0.25]"
    assert fluids.resolve_name("eg30") == "INCOMP::MEG[0.30]"
    assert fluids.resolve_name("water") == "Water"
    assert fluids.resolve_name("R134a") == "R134a"
    assert fluids.properties("PG25", 35.0) == fluids.properties("INCOMP::MPG[0.25]", 35.0)


def test_pressure_keeps_water_liquid_above_100c():
    # 1 atm: water boils at 100 degC -> error; at 5 bar it is liquid (~917 kg/m^3 at 150 degC)
    with pytest.raises(ValueError, match="not liquid"):
        fluids.properties("Water", 150.0)
    assert fluids.density("Water", 150.0, 5e5) == pytest.approx(917.0, abs=1.0)


def test_gas_allowed_when_asked():
    # dry air at 25 degC, 1 atm: ideal gas 101325 / (287.05 x 298.15) = 1.184 kg/m^3, cp ~1006
    p = fluids.properties("Air", 25.0, require_liquid=False)
    assert p.density == pytest.approx(1.184, abs=0.005)
    assert p.cp == pytest.approx(1006.0, abs=3.0)


def test_cache_hits_on_rounded_temperature():
    before = fluids.cache_info()
    assert before.currsize == 0
    a = fluids.properties("Water", 30.0)
    b = fluids.properties("Water", 30.0001)   # rounds to 30.00 degC: same entry
    c = fluids.properties("water", 30.0)      # alias resolves to the same key
    info = fluids.cache_info()
    assert info.misses == 1 and info.hits == 2 and info.currsize == 1
    assert a is b is c
    fluids.properties("Water", 30.01)          # a different 0.01 K step: new entry
    assert fluids.cache_info().currsize == 2


def test_unknown_fluid():
    with pytest.raises(ValueError, match="unknown fluid 'Unobtainium'"):
        fluids.properties("Unobtainium", 30.0)
    with pytest.raises(ValueError, match="unknown fluid"):
        fluids.properties("INCOMP::Nope[0.2]", 30.0)
    with pytest.raises(ValueError):
        fluids.properties("", 30.0)
    # failures are not cached
    assert fluids.cache_info().currsize == 0


@pytest.mark.parametrize("fluid, temp_c", [
    ("Water", -20.0),               # below freezing
    ("INCOMP::MPG[0.25]", 150.0),   # above the incompressible table's range (100 degC)
    ("INCOMP::MPG[0.25]", -30.0),   # below PG25's freezing point (about -10 degC)
    ("Water", float("nan")),
    ("Water", -300.0),              # below absolute zero
])
def test_out_of_range_temperature(fluid, temp_c):
    with pytest.raises(ValueError):
        fluids.properties(fluid, temp_c)


def test_bad_composition_and_pressure():
    with pytest.raises(ValueError):
        fluids.properties("INCOMP::MPG[0.9]", 30.0)    # CoolProp's MPG covers 0-60 %
    with pytest.raises(ValueError):
        fluids.properties("Water", 30.0, pressure_pa=0.0)


@pytest.mark.parametrize("fluid, temp_c, says, detail", [
    # CoolProp's text reached the user raw: "Your temperature 398.150000 is not between
    # 173.150000 and 373.150000." (kelvin, without a unit); it is a note now
    ("INCOMP::MPG[0.25]", 150.0, "outside the temperatures CoolProp has for "
     "'INCOMP::MPG[0.25]', -100 degC to 100 degC", "Your temperature 423.15"),
    ("INCOMP::MPG[0.25]", -30.0, "'INCOMP::MPG[0.25]' is frozen at -30 degC, 101325 Pa: it "
     "freezes at -9.785 degC (CoolProp)", "below the freezing point"),
    ("Water", -20.0, "'Water' is frozen at -20 degC, 101325 Pa: it freezes at 0.003 degC "
     "(CoolProp)", "Tmelt"),
    ("INCOMP::MEG[0.9]", 30.0, "the concentration 0.9 of 'INCOMP::MEG[0.9]' (the mass "
     "fraction in its brackets) is outside the 0 to 0.6 CoolProp has for that mixture",
     "Your composition 0.9"),
])
def test_a_state_outside_coolprops_range_is_said_in_our_words(fluid, temp_c, says, detail):
    fluids.cache_clear()
    with pytest.raises(fluids.OutOfRange) as caught:
        fluids.properties(fluid, temp_c)
    assert str(caught.value) == says
    assert "Your " not in str(caught.value) and "Tmelt" not in str(caught.value)
    (note,) = fluids.unavailable_notes(caught.value)
    assert note.startswith("CoolProp: ") and detail in note


def test_e646_carries_coolprops_text_as_a_note_only(tmp_path):
    import astral_dsl

    text = _ETHANOL_LOOP.replace('Spirit { coolprop = "Ethanol" }',
                                'Hot { coolprop = "INCOMP::MPG[0.25]" }').replace(
        "fluid = Spirit, supply = 35 degC", "fluid = Hot, supply = 120 degC")
    assert "INCOMP" in text and "120 degC" in text
    checked = astral_dsl.check(astral_dsl.compiles(text, name="hot.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E646"]
    assert e.message == ("fluid properties of `Hot` at 125 degC: outside the temperatures "
                         "CoolProp has for 'INCOMP::MPG[0.25]', -100 degC to 100 degC")
    assert e.notes == ("CoolProp: Your temperature 398.150000 is not between 173.150000 and "
                       "373.150000.",)


def test_coolprop_imported_lazily():
    """The table serves water and PG25 at 1 atm; CoolProp is imported for anything else."""
    code = ("import sys; import astral_dsl.analyses.fluids as fl; "
            "assert 'CoolProp' not in sys.modules, 'imported at module import'; "
            "fl.density('Water', 30.0); fl.density('PG25', -5.0); fl.density('PG25', 100.0); "
            "assert 'CoolProp' not in sys.modules, 'imported for the table'; "
            "fl.density('Water', 150.0, 5e5); assert 'CoolProp' in sys.modules; print('ok')")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_reference_is_checked_without_coolprop():
    code = ("import sys, astral_dsl; "
            "ws = astral_dsl.compile('examples/astral.astral'); d = ws.design; "
            "c = astral_dsl.check(ws); "
            "assert d.valid and 'CoolProp' not in sys.modules, sorted(sys.modules); print('ok')")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("name", sorted(fluid_table.RANGES))
def test_the_table_is_within_0_1_percent_of_coolprop(name):
    """At every 0.01 K of the table's range (between its 1 K grid points too): the cubic
    through the four nearest grid points against CoolProp itself. Measured worst: 1.7e-8."""
    import CoolProp.CoolProp as CP

    lo, hi = fluid_table.RANGES[name]
    worst = 0.0
    for i in range((hi - lo) * 100 + 1):
        t = lo + i / 100
        rho, cp = fluid_table.lookup(name, t, 101325.0)
        worst = max(worst, abs(rho / CP.PropsSI("D", "T", t + 273.15, "P", 101325.0, name) - 1),
                    abs(cp / CP.PropsSI("C", "T", t + 273.15, "P", 101325.0, name) - 1))
    assert worst < 1e-3            # the requirement: 0.1 %
    assert worst < 1e-6            # what cubic interpolation on a 1 K grid gives


def test_the_table_is_what_coolprop_gives():
    """The shipped table is the generator's output from the installed CoolProp (regenerate
    with `python -m astral_dsl.analyses.fluid_table --write`)."""
    shipped = json.loads(fluid_table.PATH.read_text(encoding="utf-8"))
    assert fluid_table.generate() == shipped


def test_the_table_commands_say_what_they_compare(tmp_path, capsys):
    """`python -m astral_dsl.analyses.<table>` names the file and what a fresh generation is
    made of (the climate table is not CoolProp's), and exits 1 when they differ."""
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"a": 1}), encoding="utf-8")
    assert fluid_table.compare_or_write([], "prog", lambda: {"a": 1}, path, json.dumps,
                                        "a parse of the climate files") == 0
    assert capsys.readouterr().out == ("table.json: the shipped table equals a fresh generation "
                                       "from a parse of the climate files\n")
    assert fluid_table.compare_or_write([], "prog", lambda: {"a": 2}, path, json.dumps) == 1
    assert capsys.readouterr().out == ("table.json: the shipped table differs from a fresh "
                                       "generation from CoolProp's values\n")
    assert fluid_table.compare_or_write(["--write"], "prog", lambda: {"a": 2}, path,
                                        json.dumps) == 0
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": 2}


def test_outside_the_table_coolprop_answers():
    assert fluid_table.lookup("Water", 0.5, 101325.0) is None            # below 1 degC
    assert fluid_table.lookup("Water", 30.0, 2e5) is None                # another pressure
    assert fluid_table.lookup("INCOMP::MEG[0.30]", 30.0, 101325.0) is None
    p = fluids.properties("Water", 0.5)                                  # CoolProp: liquid
    assert p.density == pytest.approx(999.87, abs=0.05)


def test_coolprop_version_reported():
    assert fluids.coolprop_version().count(".") >= 1


_NO_COOLPROP = """
import sys
sys.modules["CoolProp"] = None              # `import CoolProp` fails: not installed
from astral_dsl.analyses import fluids
from astral_dsl.cli import main
print("PG25", fluids.properties("PG25", 35.0).cp == {pg25})
try:
    fluids.properties("Ethanol", 40.0)
except fluids.CoolPropMissing as exc:
    print("Ethanol:", exc)
sys.exit(main(["check", sys.argv[1]]))
"""
_ETHANOL_LOOP = """
gpu G { power = 700 W }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 % }
rack R { hosts = 4 x H }
fluid Spirit { coolprop = "Ethanol" }
pod P {
  racks = 4 x R
  loop secondary { fluid = Spirit, supply = 35 degC, rise = 10 K }
}
site S { pods = 2 x P }
"""


def test_without_coolprop_the_table_serves_and_other_fluids_say_how_to_install(tmp_path):
    """Should CoolProp be missing from an installation (a dependency): the stdlib's
    coolants still come from the shipped table, and a loop of another fluid is E646 at its
    `fluid`, saying how to install it (no traceback, no internal error)."""
    design = tmp_path / "ethanol.astral"
    design.write_text(_ETHANOL_LOOP)
    pg25 = fluids.properties("PG25", 35.0).cp
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _NO_COOLPROP.format(pg25=repr(pg25)),
                           str(design)], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PG25 True" in proc.stdout
    assert "Ethanol: not in the shipped table" in proc.stdout
    assert '= hint: pip install "CoolProp>=6.8"' in proc.stdout
    assert "error[E646]" in proc.stdout and "ethanol.astral:8:28" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr and "E000" not in proc.stdout
