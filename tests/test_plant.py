"""The facility side (issue 26): facility water and its heat rejection over a climate file
(EPW and TMY3, dry coolers and cooling towers, economisers, the chillers' COP from the lift, the
per-user cache of what follows from a file), the approach of every heat exchanger, and air flows
as humid air at the site's altitude. Every expected value is computed by hand in the comments
(CoolProp gives the air's and water's properties, as it does to the analyses). The power chain:
tests/test_power_chain.py."""
from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from CoolProp.HumidAirProp import HAPropsSI

import astral_dsl
from astral_dsl.analyses import climate as climates
from astral_dsl.analyses import climate_formats
from astral_dsl.analyses import formulas, humid_air, wetbulb_table

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "climate"

# One rack of 100 kW: 50 kW to cold plates (a loop whose CDU hands it to facility water through a
# 3 K approach), 50 kW to air (a coil 7 K above the water). Nothing else draws: no fans, pumps,
# losses or lighting, and an ideal transformer, so the circuit's heat is the rack's 100 kW.
PLANT = """
host H { power = 10 kW, liquid_share = 50 % }
rack R { hosts = 10 x H }
fluid W { coolprop = "Water" }
cdu C { capacity = 200 kW, approach = 3 K }
site S {
  racks = 1 x R
  utilization = 100 %
  climate = "@CLIMATE@"
  altitude = 500 m
  auxiliary = 0 W
  transformer mv { capacity = 1 MW, no_load_loss = 0 W, load_loss = 0 W }
  loop plates {
    fluid = W, supply = @LOOP@, rise = 10 K, cdu = C, cdus = 1, redundancy = n
    pump_head = 0 Pa, pump_efficiency = 100 %, facility = warm
  }
  air room {
    supply = @AIR@, rise = 12 K, approach = 7 K, dew_point = 12 degC, fan_power_ratio = 0 %
    facility = warm
  }
  facility warm {
    supply = 20 degC, rise = 10 K, pump_head = 0 Pa, pump_efficiency = 100 %
    rejection = @REJECTION@, rejection_approach = 5 K, economiser = @ECONOMISER@
    @CHILLER@, rejection_fan_ratio = 0 %
  }
}
"""


def _plant(loop="25 degC", air="27 degC", rejection="dry_cooler", economiser="integrated",
           chiller="chiller_cop = 5", climate="sample.epw", extra=""):
    text = (PLANT.replace("@CLIMATE@", climate).replace("@LOOP@", loop).replace("@AIR@", air)
            .replace("@REJECTION@", rejection).replace("@ECONOMISER@", economiser)
            .replace("@CHILLER@", chiller)) + extra
    ws = astral_dsl.compiles(text, name="plant.astral", root=FIXTURES)
    design = ws.design
    assert design.valid, [(d.code, d.message) for d in design.diagnostics]
    return astral_dsl.check(ws)


def _errors(checked):
    return [(d.code, d.message) for d in checked.diagnostics if d.is_error]


def _circuit(checked):
    (cy,) = checked.engineering.cooling.facility.circuits
    return cy


# ---- the climate files ---------------------------------------------------------------------------
DRY = [5, 10, 15, 16, 20, 24.9, 25, 30, 10, 12, 14, 15]
DEW = [2, 5, 10, 12, 14, 16, 18, 22, 4, 6, 8, 9]


def test_both_formats_read_the_same_hours():
    epw = climate_formats.parse((FIXTURES / "sample.epw").read_bytes(), "sample.epw")
    tmy = climate_formats.parse((FIXTURES / "sample_tmy3.csv").read_bytes(), "sample_tmy3.csv")
    for c in (epw, tmy):
        assert list(c.dry_bulb) == DRY and list(c.dew_point) == DEW
        assert list(c.pressure) == [95000.0] * 12           # 950 mbar in the TMY3 file
        assert c.elevation_m == 500.0
        assert c.stamps[0] == "07-01 01:00" and c.stamps[-1] == "07-01 12:00"
    assert (epw.format, tmy.format) == ("EPW", "TMY3")
    assert tmy.place == "SAMPLE STATION, XX"


@pytest.mark.parametrize("location, place", [
    # PVGIS's EPW names no place (/work/shared/climate/tmy_45.000_8.000_2005_2023.epw): its
    # coordinates and elevation stand for it, not "unknown, unknown"
    ("LOCATION,unknown,-,unknown,ECMWF/ERA,unknown,45.000000,8.000000,1,250", "45.00 N, 8.00 E, 250 m"),
    ("LOCATION,,-,,src,0,-33.8688,-151.2093,10,58.5", "33.87 S, 151.21 W, 58.5 m"),
    # a named place keeps its name, the placeholders dropped
    ("LOCATION,Turin,-,ITA,src,0,45.2,7.65,1,287", "Turin, ITA"),
    ("LOCATION,unknown,-,unknown,src,0,north,8,1,250", ""),          # not numbers: no place
])
def test_a_climate_file_without_a_place_name_is_placed_by_its_coordinates(location, place):
    hours = "".join(f"2024,7,1,{h},0,?,20,10,50,95000\n" for h in range(1, 3))
    c = climate_formats.parse((location + "\n" + "H\n" * 7 + hours).encode(), "x.epw")
    assert c.place == place


def test_the_shipped_climate_is_a_typical_year():
    c = climates.load("stdlib/climate/723170TYA.CSV", Path.cwd())
    assert c.hours == 8760 and c.format == "TMY3" and c.elevation_m == 273.0
    assert max(c.dry_bulb) == 35.6 and min(c.dry_bulb) == -16.7
    assert c.stamps[c.dry_bulb.index(35.6)] == "07-09 14:00"


@pytest.mark.parametrize("text, message", [
    (b"", "is empty"),
    (b"LOCATION,a,b,c\n", "LOCATION line has 4 fields"),
    (b"just,some\ncsv\n1,2\n", "neither an EPW file"),
    (b"LOCATION,S,-,X,t,0,45,8,1,500\n" + b"H\n" * 7 + b"2024,7,1,1,0,?,hot,2,50,95000\n",
     "line 9: the dry bulb `hot` is not a number"),
    (b"LOCATION,S,-,X,t,0,45,8,1,500\n" + b"H\n" * 7 + b"2024,7,1,1,0,?,99.9,2,50,95000\n",
     "line 9: the dry bulb is missing"),
    (b"LOCATION,S,-,X,t,0,45,8,1,500\n" + b"H\n" * 7 + b"2024,13,1,1,0,?,20,2,50,95000\n",
     "line 9: its date and hour are not"),
    (b"LOCATION,S,-,X,t,0,45,8,1,500\n" + b"H\n" * 7 + b"2024,7,1,1,0,?,20,2,50,9500\n",
     "line 9: a station pressure of 9500 is beyond"),
    (b"LOCATION,S,-,X,t,0,45,8,1,500\n" + b"H\n" * 7 + b"2024,7,1,1,0,?,20\n",
     "line 9: 7 fields"),
])
def test_a_malformed_climate_file_says_where(text, message):
    with pytest.raises(climate_formats.ClimateError) as err:
        climate_formats.parse(text, "bad.epw")
    assert message in str(err.value)


def test_a_climate_file_that_is_not_there_or_outside_is_e652(tmp_path):
    (tmp_path / "bad.epw").write_text("LOCATION,a\n")
    text = "host H { power = 1 kW }\nsite S { hosts = 1 x H, climate = \"@\" }\n"
    for name, code, words in (("nowhere.epw", "E652", "not found"),
                              ("../outside.epw", "E652", "outside the project"),
                              ("/etc/passwd", "E652", "inside the project"),
                              ("bad.epw", "E653", "LOCATION line has 2 fields")):
        ws = astral_dsl.compiles(text.replace("@", name), name="c.astral", root=tmp_path)
        design = ws.design
        found = [d for d in astral_dsl.check(ws).diagnostics if d.code == code]
        assert found and words in found[0].message, (name, found)


@pytest.mark.parametrize("elevation, altitude, w640", [
    (4000, "", True),               # the climate file's elevation is the one used: W640
    (3050, "", False),              # at the 3,050 m of ASHRAE's classes A1-A4: still inside
    (4000, ", altitude = 500 m", False),   # the declared altitude is the one used
])
def test_a_climate_files_elevation_above_3050_m_is_w640(tmp_path, elevation, altitude, w640):
    hours = "".join(f"2024,7,1,{h},0,?,20,10,50,60000\n" for h in range(1, 3))
    (tmp_path / "high.epw").write_text(
        f"LOCATION,High,-,X,t,0,-16.5,-68.1,-4,{elevation}\n" + "H\n" * 7 + hours)
    text = ("host H { power = 10 kW }\n"
            f"site S {{ hosts = 4 x H, climate = \"high.epw\"{altitude} }}\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="c.astral", root=tmp_path))
    found = [d for d in checked.diagnostics if d.code == "W640"]
    assert bool(found) == w640
    if w640:
        (w,) = found
        assert w.message.startswith("site `S` is at 4,000 m (the elevation of its climate file "
                                    "`high.epw`), above the 3,050 m")
        # `site S { hosts = 4 x H, climate = ` is 34 characters: the file name at column 35
        assert (w.span.start.line, w.span.start.column) == (2, 35) and w.hint


def test_each_sites_own_climate_file_is_read(tmp_path):
    """In a design of several sites, each site's climate file is read as the first's is (the
    facility is still computed on the first's: W645): site B's at 4,000 m is W640 at B's
    `climate` (only the first site's file had been read: no W640), a missing one E652 (the
    check had passed), and a file two sites name is read (and W643) once."""
    hours = "".join(f"2024,7,1,{h},0,?,20,10,50,60000\n" for h in range(1, 3))
    for name, elevation in (("low.epw", 200), ("high.epw", 4000)):
        (tmp_path / name).write_text(
            f"LOCATION,{name},-,X,t,0,-16.5,-68.1,-4,{elevation}\n" + "H\n" * 7 + hours)

    def codes(b, c):
        text = ("host H { power = 10 kW }\n"
                'site A { hosts = 4 x H, climate = "low.epw" }\n'
                f'site B {{ hosts = 4 x H, climate = "{b}" }}\n'
                f'site C {{ hosts = 4 x H, climate = "{c}" }}\n')
        checked = astral_dsl.check(astral_dsl.compiles(text, name="c.astral", root=tmp_path))
        return [d for d in checked.diagnostics if d.code in ("W640", "E652", "W643")]

    w640s = [d for d in codes("high.epw", "high.epw") if d.code == "W640"]
    assert [d.message[:32] for d in w640s] == ["site `B` is at 4,000 m (the elev",
                                               "site `C` is at 4,000 m (the elev"]
    # `site B { hosts = 4 x H, climate = ` is 34 characters: the file name at column 35
    assert (w640s[0].span.start.line, w640s[0].span.start.column) == (3, 35)
    # one W643 per file (low.epw, high.epw), not one per site naming it
    assert [d.code for d in codes("high.epw", "high.epw")].count("W643") == 2
    (e,) = [d for d in codes("low.epw", "nowhere.epw") if d.code == "E652"]
    assert "`nowhere.epw` not found" in e.message and e.span.start.line == 4 and e.hint
    assert not [d for d in codes("low.epw", "low.epw") if d.code != "W643"]


def test_a_sample_shorter_than_a_year_is_w643():
    checked = _plant()
    (w,) = [d for d in checked.diagnostics if d.code == "W643"]
    assert "holds 12 hours, not a year's 8,760" in w.message
    assert "each for 730 h" in w.message


# ---- chiller and free-cooling hours from the climate ------------------------------------------------
def test_dry_coolers_hours_by_hand():
    # supply 20 degC, return 30 degC; the water leaves the dry coolers 5 K above the dry bulb:
    #   10 15 20 21 25 29.9 30 35 15 17 19 20 degC
    # free (<= 20): 7 hours; integrated: 21 -> 0.1, 25 -> 0.5, 29.9 -> 0.99 of the heat on the
    # chillers (partial: 3 hours); 30 and 35 (>= the return): all of it (2 hours). Each of the 12
    # rows stands for 8,760 / 12 = 730 h: free 5,110 h, partial 2,190 h, chillers all 1,460 h.
    # The circuit carries 100 kW; COP 5: chillers = 100 kW x (0.1 + 0.5 + 0.99 + 1 + 1) / 12 / 5
    #   = 5.9833 kW on average; at the peak hour (the first of the two at 100 %) 20 kW.
    checked = _plant()
    assert not _errors(checked)
    cy = _circuit(checked)
    assert cy.circuit.average_w == pytest.approx(100_000)
    assert (cy.free_h, cy.partial_h, cy.mechanical_h) == pytest.approx((5110, 2190, 1460))
    assert cy.chillers_w == pytest.approx(100_000 * 3.59 / 12 / 5)
    assert cy.chillers_peak_w == pytest.approx(20_000)
    f = checked.engineering.cooling.facility
    assert f.peak_hour == "07-01 07:00"
    assert checked.engineering.cooling.average.chillers_w == pytest.approx(cy.chillers_w)


def test_a_switchover_economiser_has_no_partial_hours():
    # all or nothing: the 3 partial hours run the chillers fully: 5 hours x 100 kW / 5
    cy = _circuit(_plant(economiser="switchover"))
    assert (cy.free_h, cy.partial_h, cy.mechanical_h) == pytest.approx((5110, 0, 3650))
    assert cy.chillers_w == pytest.approx(100_000 * 5 / 12 / 5)


def test_no_economiser_runs_the_chillers_all_year():
    cy = _circuit(_plant(economiser="none"))
    assert (cy.free_h, cy.mechanical_h) == pytest.approx((0, 8760))
    assert cy.chillers_w == pytest.approx(100_000 / 5)


def test_the_tmy3_sample_gives_the_same_hours():
    a, b = _circuit(_plant()), _circuit(_plant(climate="sample_tmy3.csv"))
    assert (a.free_h, a.partial_h, a.chillers_w) == (b.free_h, b.partial_h, b.chillers_w)


def test_chiller_cop_follows_the_lift():
    # stdlib.cooling.Centrifugal: COP 6.28 at 6.7 degC chilled water / 29.4 degC condenser water,
    # at most 10; at 20 degC supply and condenser water x: 6.28 x (293.15 / (x - 20)) / (279.85 /
    # 22.7) = 149.33 / (x - 20): 21 -> 149.3, 25 -> 29.9, 29.9 -> 15.1, 30 -> 14.9 (all capped at
    # 10), 35 -> 9.955. Chillers: 100 kW x (0.1 / 10 + 0.5 / 10 + 0.99 / 10 + 1 / 10 + 1 / 9.955)
    # / 12 hours.
    checked = _plant(chiller="chiller = Centrifugal",
                     extra="import stdlib.cooling { Centrifugal }\n")
    cy = _circuit(checked)
    carnot = 149.33
    assert 6.28 * 293.15 / (279.85 / 22.7) == pytest.approx(carnot, abs=0.01)
    cop35 = 6.28 * (293.15 / 15) / (279.85 / 22.7)
    assert cop35 == pytest.approx(9.955, abs=1e-3)
    expected = 100_000 * ((0.1 + 0.5 + 0.99 + 1) / 10 + 1 / cop35) / 12
    assert cy.chillers_w == pytest.approx(expected, rel=1e-9)
    assert cy.chillers_peak_w == pytest.approx(100_000 / cop35)      # the hottest hour: 35 degC


def test_cooling_towers_follow_the_wet_bulb():
    # the towers leave the water 5 K above the wet bulb (CoolProp at 95,000 Pa, each hour's dry
    # bulb and dew point): the same rules on those temperatures
    checked = _plant(rejection="cooling_tower")
    assert not _errors(checked)
    wet = [HAPropsSI("Twb", "T", t + 273.15, "P", 95000, "Tdp", d + 273.15) - 273.15
           for t, d in zip(DRY, DEW)]
    shares = [formulas.chiller_share(w + 5, 20, 30) for w in wet]
    assert min(abs(w + 5 - edge) for w in wet for edge in (20, 30)) > 0.05   # no hour on an edge
    cy = _circuit(checked)
    assert cy.free_h == pytest.approx(730 * sum(1 for s in shares if s == 0))
    assert cy.mechanical_h == pytest.approx(730 * sum(1 for s in shares if s == 1))
    assert cy.chillers_w == pytest.approx(100_000 * sum(shares) / 12 / 5, rel=1e-3)
    assert cy.rejection == "cooling_tower"


def test_the_wet_bulb_table_is_coolprops():
    # the shipped table against HAPropsSI at states across its range (within 0.005 K)
    for t, d, p in ((-35.5, -40.2, 66000.0), (-3.3, -9.9, 81234.0), (12.7, 3.1, 99999.0),
                    (24.2, 18.8, 101325.0), (33.3, 12.0, 97500.0), (45.6, 30.1, 104000.0),
                    (38.0, 38.0, 90000.0), (20.0, -19.5, 70000.0)):
        ref = HAPropsSI("Twb", "T", t + 273.15, "P", p, "Tdp", d + 273.15) - 273.15
        assert wetbulb_table.lookup(t, d, p) == pytest.approx(ref, abs=0.005)
    assert wetbulb_table.lookup(60.0, 20.0, 101325.0) is None        # outside: CoolProp
    assert humid_air.wet_bulb(60.0, 20.0, 101325.0) == pytest.approx(
        HAPropsSI("Twb", "T", 333.15, "P", 101325, "Tdp", 293.15) - 273.15, abs=1e-6)


def test_the_hourly_arithmetic_is_the_formulas():
    # heat_rejection.series (8,760 hours at a time, no checks) against formulas.chiller_share and
    # chiller_cop hour by hour
    from astral_dsl.analyses import heat_rejection as hr

    plan = hr.Plan(18.0, 26.0, "dry_cooler", 6.0, "integrated",
                   hr.Chiller(6.28, 6.7, 29.4, 10.0), 0.02)
    temps = [x / 4 for x in range(-40, 160)]
    chillers, fans = hr.series(plan, temps, 1e6)
    for t, w, fan in zip(temps, chillers, fans):
        s = formulas.chiller_share(t + 6, 18, 26)
        cop = formulas.chiller_cop(6.28, 6.7, 29.4, 18, t + 6, 10)
        assert w == pytest.approx(s * 1e6 / cop if s else 0.0, rel=1e-12)
        assert fan == pytest.approx(0.02 * (1e6 + w), rel=1e-12)
    # and the hours it counts by mode
    p = hr.profile(plan, temps)
    shares = [formulas.chiller_share(t + 6, 18, 26) for t in temps]
    per_hour = 8760 / len(temps)
    assert p.free_h == pytest.approx(per_hour * sum(1 for x in shares if x == 0))
    assert p.mechanical_h == pytest.approx(per_hour * sum(1 for x in shares if x == 1))


def test_free_cooling_declared_with_a_climate_is_e654():
    checked = _plant(chiller="chiller_cop = 5, free_cooling = 7000 h")
    assert [c for c, _ in _errors(checked)] == ["E654"]


def test_e654_in_a_later_site_names_the_first_sites_climate():
    """The facility is computed on the first site's climate (W645): a circuit of site B, which
    declares none, is refused with A's, and E654 says whose it is; A's own circuit, the site's.
    B is written first among the circuits' sites' parts to show the order is the design's."""
    text = ("host H { power = 10 kW }\n"
            'site A {\n  hosts = 1 x H\n  climate = "sample.epw"\n'
            "  facility a { supply = 30 degC, chiller_cop = 5, free_cooling = 5000 h }\n}\n"
            "site B {\n  hosts = 1 x H\n"
            "  facility b { supply = 30 degC, chiller_cop = 5, free_cooling = 6000 h }\n}\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="two.astral", root=FIXTURES))
    a, b = sorted((d for d in checked.diagnostics if d.code == "E654"),
                  key=lambda d: d.span.start.line)
    assert a.message == ("facility water `A.a` declares 5,000 h of free cooling, but the "
                         "site's climate `sample.epw` gives its hours")
    assert b.message == ("facility water `B.b` declares 6,000 h of free cooling, but the first "
                         "site `A`'s climate `sample.epw` gives its hours (the facility of "
                         "every site is computed on it)")
    assert b.span.start.line == 9 and "`climate` of `A`" in b.hint


# ---- approaches ------------------------------------------------------------------------------------
def test_a_loop_colder_than_its_cdu_reaches_is_e651():
    # facility water at 20 degC, CDU approach 3 K: the loop's supply is at least 23 degC
    checked = _plant(loop="22 degC")
    (e,) = [d for d in checked.diagnostics if d.code == "E651"]
    assert e.message == ("loop `S.plates` supplies 22 degC, but its CDU on facility water "
                         "`S.warm` at 20 degC with a 3 K approach reaches 23 degC at best")
    assert not [d for d in _plant(loop="23 degC").diagnostics if d.code == "E651"]


def test_an_air_unit_colder_than_its_coil_reaches_is_e651():
    # coil approach 7 K above 20 degC water: 27 degC air at best
    checked = _plant(air="26.5 degC")
    (e,) = [d for d in checked.diagnostics if d.code == "E651"]
    assert e.message.startswith("air unit `S.room` supplies 26.5 degC, but its coil on facility "
                                "water `S.warm` at 20 degC with a 7 K approach reaches 27 degC")
    assert e.span.start.line == 18
    assert not [d for d in _plant(air="27 degC").diagnostics if d.code == "E651"]


def test_an_approach_not_declared_is_a_default_with_w641():
    text = PLANT.replace("cdu C { capacity = 200 kW, approach = 3 K }",
                         "cdu C { capacity = 200 kW }").replace(
        "approach = 7 K, ", "").replace("@CLIMATE@", "sample.epw").replace(
        "@LOOP@", "25 degC").replace("@AIR@", "30 degC").replace("@REJECTION@", "dry_cooler") \
        .replace("@ECONOMISER@", "integrated").replace("@CHILLER@", "chiller_cop = 5")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="plant.astral", root=FIXTURES))
    found = sorted(d.message.split(":")[0] for d in checked.diagnostics if d.code == "W641")
    assert found == ["CDU `C` declares no `approach`", "air unit `S.room` declares no `approach`"]
    # the defaults, 3 K and 10 K: 30 degC air on 20 degC water holds, 29 would not
    assert not _errors(checked)


def test_two_circuits_and_a_unit_that_names_none_is_e655():
    text = ("host H { power = 10 kW }\nrack R { hosts = 2 x H }\n"
            "site S { racks = 1 x R\n"
            "  air room { supply = 27 degC, rise = 12 K }\n"
            "  facility a { supply = 15 degC }\n  facility b { supply = 30 degC }\n}\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="two.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E655"]
    assert "declares 2 circuits (`a`, `b`)" in e.message


def test_the_cached_climate_is_the_parsed_one(tmp_path, monkeypatch):
    # the per-user cache keeps a climate's hours as the bytes of their doubles: read back, they
    # are the very numbers parsed (and the wet bulbs computed) without it. (A project's copy of
    # the stdlib's file with a blank line more: the stdlib's own comes parsed with the package.)
    data = (Path(__file__).resolve().parents[1] / "stdlib" / "climate" / "723170TYA.CSV")
    (tmp_path / "greensboro.csv").write_bytes(data.read_bytes() + b"\n")
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    climates._parsed.clear()
    first = climates.load("greensboro.csv", tmp_path)
    assert list((tmp_path / "cache").glob("climate-*.json"))
    climates._parsed.clear()
    again = climates.load("greensboro.csv", tmp_path)
    assert again is not first and again == first
    parsed = climates.with_wet_bulbs(climate_formats.parse(data.read_bytes(), "greensboro.csv"))
    assert parsed == attrs.evolve(first, digest="")
    climates._parsed.clear()


def test_the_cached_profile_is_the_computed_one(tmp_path, monkeypatch):
    # a circuit's hours per watt, kept in the per-user cache when its hours are named: read back
    # in a fresh process they are the very numbers computed
    from astral_dsl.analyses import heat_rejection as hr

    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    plan = hr.Plan(18.0, 26.0, "cooling_tower", 5.6, "integrated",
                   hr.Chiller(6.28, 6.7, 29.4, 10.0), 0.01)
    temps = tuple(x / 10 for x in range(-100, 300))
    computed = hr.profile(plan, temps, "test-hours")
    hr._PROFILES.clear()
    stored = hr.profile(plan, list(temps), "test-hours")
    assert stored == computed and stored is not computed
    assert list((tmp_path / "cache").glob("rejection-*.json"))



def test_a_designs_hours_are_kept_by_their_inputs():
    # the circuits' chillers and fans hour by hour (site_loads.hourly) of a design compiled
    # again with the same cooling (a margins probe, a sweep's point) are the same hours, not
    # computed again; other inputs (a heat, -0.0 for 0.0, another k's tuple) are computed
    from astral_dsl.analyses import site_loads

    computed = []
    real = site_loads._hourly
    site_loads._HOURS.clear()
    k, j = tuple(x / 1000 for x in range(8760)), tuple(x / 2000 for x in range(8760))
    try:
        site_loads._hourly = lambda *a: computed.append(a) or real(*a)
        first = site_loads.hourly(10.0, [(5e5, k, 0.02), (2e5, j, 0.01)])
        assert site_loads.hourly(10.0, [(5e5, k, 0.02), (2e5, j, 0.01)]) is first
        assert len(computed) == 1
        assert list(first) == [10.0 + 5e5 * 0.02 + 2e5 * 0.01 + 5e5 * 1.02 * x + 2e5 * 1.01 * y
                               for x, y in zip(k, j)]
        assert site_loads.hourly(10.0, [(5e5, tuple(k), 0.02), (2e5, j, 0.01)]) is first
        site_loads.hourly(10.0, [(5e5, k, 0.02), (2e5, tuple(list(j)), 0.01)])
        site_loads.hourly(11.0, [(5e5, k, 0.02), (2e5, j, 0.01)])
        one = (0.5,)
        site_loads.hourly(-0.0, [(1.0, one, 0.0)])
        site_loads.hourly(0.0, [(1.0, one, 0.0)])
        assert len(computed) == 5
        square = site_loads.mean_square(3.0, first)
        assert square == sum([(3.0 + h) ** 2 for h in first]) / len(first)
        assert site_loads.mean_square(3.0, first) is square
    finally:
        site_loads._hourly = real
        site_loads._HOURS.clear()


# ---- humid air --------------------------------------------------------------------------------------
def test_air_flow_is_humid_air_at_the_sites_altitude():
    # 50 kW of air heat at 27 degC, 12 K rise, dew point 12 degC, 500 m: p = 101,325 x (1 -
    # 2.25577e-5 x 500)^5.2559 = 95,461 Pa (ASHRAE Fundamentals ch. 1). V = Q x v_da / (h(39 degC)
    # - h(27 degC)), v and h per kg of dry air from HAPropsSI at that pressure and dew point.
    checked = _plant()
    (air,) = checked.engineering.cooling.air
    p = 101325 * (1 - 2.25577e-5 * 500) ** 5.2559
    assert p == pytest.approx(95461, abs=1)
    assert air.pressure_pa == pytest.approx(p)
    v = HAPropsSI("Vda", "T", 300.15, "P", p, "Tdp", 285.15)
    dh = (HAPropsSI("H", "T", 312.15, "P", p, "Tdp", 285.15)
          - HAPropsSI("H", "T", 300.15, "P", p, "Tdp", 285.15))
    assert air.flow_m3s == pytest.approx(50_000 * v / dh, rel=1e-6)
    w = HAPropsSI("W", "T", 300.15, "P", p, "Tdp", 285.15)
    assert air.density == pytest.approx((1 + w) / v, rel=1e-6)
    # thinner air than air_flow's 1.2 kg/m^3 and 1,006 J/kg/K (ASHRAE): 7.95 % more flow than that
    # rule here: 1.7 % of it at sea level (moist air at 27 degC), the rest the altitude's
    rule = formulas.air_flow(50_000, 12)
    assert air.flow_m3s / rule == pytest.approx(1.0795, abs=1e-3)
    v0 = HAPropsSI("Vda", "T", 300.15, "P", 101325, "Tdp", 285.15)
    dh0 = (HAPropsSI("H", "T", 312.15, "P", 101325, "Tdp", 285.15)
           - HAPropsSI("H", "T", 300.15, "P", 101325, "Tdp", 285.15))
    assert 50_000 * v0 / dh0 / rule == pytest.approx(1.017, abs=1e-3)


def test_a_cooling_towers_cached_hours_are_keyed_by_the_wet_bulb_table(monkeypatch):
    """The per-user cache of a circuit's hourly profile (facility.ambient's key) names the
    wet-bulb table a cooling tower's hours come from: a new table is not served old hours
    (found when the table was rebuilt: stale `rejection-*` entries kept the old PUE)."""
    from astral_dsl.analyses import facility

    climate = climates.load("stdlib/climate/723170TYA.CSV", Path(__file__).resolve().parents[1])
    hours, key = facility.ambient(climate, "cooling_tower")
    assert tuple(hours) == climate.wet_bulb and wetbulb_table.source() in key
    dry_hours, dry_key = facility.ambient(climate, "dry_cooler")
    assert tuple(dry_hours) == climate.dry_bulb and wetbulb_table.source() not in dry_key
    monkeypatch.setattr(wetbulb_table, "source", lambda: "another-table")
    assert facility.ambient(climate, "cooling_tower")[1] != key


def test_a_circuit_without_supply_cannot_follow_the_climate_and_says_so():
    # the outdoor hours are compared with the supply: without one, the circuit gets no free
    # hour of the climate, its chillers carry all of its heat all 8,760 h (as `economiser =
    # none` would), and W656 says so where it was silent (only W648 spoke, of its pumps)
    ws = astral_dsl.compiles(PLANT.replace("@CLIMATE@", "sample.epw")
                             .replace("@LOOP@", "25 degC").replace("@AIR@", "27 degC")
                             .replace("@REJECTION@", "dry_cooler")
                             .replace("@ECONOMISER@", "integrated")
                             .replace("@CHILLER@", "chiller_cop = 5")
                             .replace("supply = 20 degC, rise = 10 K, pump_head", "rise = 10 K, "
                                      "pump_head"), name="plant.astral", root=FIXTURES)
    checked = astral_dsl.check(ws)
    cy = _circuit(checked)
    assert (cy.free_h, cy.partial_h, cy.mechanical_h) == (0, 0, 8760)
    (w,) = [d for d in checked.diagnostics if d.code == "W656"]
    assert w.message == ("facility water `S.warm` declares no `supply`, so its free-cooling hours "
                         "over the site's climate cannot be found: its chillers are taken to "
                         "carry all its heat, 8,760 h a year")
    assert w.hint == "declare `supply` (and `rise`)"
    assert w.span.start.line == PLANT[:PLANT.index("facility warm")].count("\n") + 1


def test_chillers_without_an_economiser_and_a_max_cop_say_their_hours_without_lift():
    # No economiser: the chillers carry the 100 kW every hour. M: COP 6 at 7/30 degC, so COP =
    # 6 / (280.15 / 23) x 293.15 / lift = 144.41 / lift at 20 degC chilled water, lift = the
    # dry bulb + 5 K - 20 degC. 7 of the 12 sample hours (5, 10, 15, 10, 12, 14, 15 degC) have
    # none: 7 x 730 = 5,110 h a year at an unbounded COP, 0 W, said (W656); the others (16, 20,
    # 24.9, 25, 30 degC: lifts 1, 5, 9.9, 10, 15 K) draw 1 / COP per watt: 1/144.41 + 1/28.88 +
    # 1/14.59 + 1/14.44 + 1/9.627 = 0.283217, 100 kW x 0.283217 / 12 = 2.360 kW on average.
    m = "chiller M { cop = 6, rated_supply = 7 degC, rated_condenser = 30 degC@CAP@ }\n"
    checked = _plant(economiser="none", chiller="chiller = M", extra=m.replace("@CAP@", ""))
    assert _circuit(checked).chillers_w == pytest.approx(100e3 * 0.283217 / 12, rel=1e-4)
    (w,) = [d for d in checked.diagnostics if d.code == "W656"]
    assert w.message == ("facility water `S.warm` runs its chillers without an economiser, 5,110 "
                         "h a year with no lift (condenser water at or below its 20 degC "
                         "supply): chiller `M` declares no `max_cop`, so its COP is unbounded "
                         "there and those hours count as 0 W")
    # at M's `cop` (the line after the design's 26), where `max_cop` belongs
    assert (w.span.start.line, w.span.start.column) == (27, 19) and "max_cop" in w.hint
    # max_cop = 10: those 7 hours and the 4 above COP 10 at 1/10, the lift of 15 K at 1/9.627:
    # (11 x 0.1 + 0.103874) / 12 = 0.100323 per watt, 10.03 kW; nothing to say
    checked = _plant(economiser="none", chiller="chiller = M",
                     extra=m.replace("@CAP@", ", max_cop = 10"))
    assert _circuit(checked).chillers_w == pytest.approx(100e3 * 1.203874 / 12, rel=1e-4)
    assert not [d for d in checked.diagnostics if d.code == "W656"]


def test_a_climate_file_that_cannot_be_read_is_not_said_to_be_undeclared():
    """`climate = "nope.epw"`, a file not found: E652 says so, and W656 (the chillers then
    carry the heat all year) said the site declared no `climate`, which it did."""
    ws = astral_dsl.compiles(PLANT.replace("@CLIMATE@", "nope.epw")
                             .replace("@LOOP@", "25 degC").replace("@AIR@", "27 degC")
                             .replace("@REJECTION@", "dry_cooler")
                             .replace("@ECONOMISER@", "integrated")
                             .replace("@CHILLER@", "chiller_cop = 5"),
                             name="plant.astral", root=FIXTURES)
    checked = astral_dsl.check(ws)
    assert "E652" in [d.code for d in checked.diagnostics]
    (w,) = [d for d in checked.diagnostics if d.code == "W656"]
    assert w.message == ("facility water `S.warm` declares no `free_cooling` hours (and the "
                         "site's `climate` file could not be read): its chillers are taken to "
                         "carry all its heat, 8,760 h a year"), w.message
