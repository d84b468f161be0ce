"""The power chain above and around the feeders (issue 26): transformers at the utility point,
the facility's own consumers on their feeders, lighting, every component of the PUE; the DC bus's
end of discharge against its equipment's minimum (E633); rectifiers sized for the batteries'
recharge; air flows as humid air at the site's altitude; and limits never printed equal to what
exceeds them. Every expected value is computed by hand in the comments (CoolProp gives the air's
and water's properties, as it does to the analyses)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses import fluids, formulas

def _errors(checked):
    return [(d.code, d.message) for d in checked.diagnostics if d.is_error]


# ---- the power chain and every component of the PUE --------------------------------------------------
CHAIN = """
import stdlib.power { HVDC240, AC400, Rectifier, LeadAcid }
host H { power = 10 kW, liquid_share = 50 % }
rack R { hosts = 10 x H }
fluid W { coolprop = "Water" }
cdu C { capacity = 200 kW, approach = 3 K, power = 1 kW }
battery B = LeadAcid(time = 15 min, string_capacity = 200 Ah, strings = 6) { end_voltage = @END@ }
site S {
  racks = 3 x R
  utilization = 100 %
  altitude = 0 m
  auxiliary = 5 kW
  transformer mv {
    capacity = 500 kVA, count = 2, redundancy = two_n, no_load_loss = 1 kW, load_loss = 4 kW
  }
  feeder hvdc {
    current = dc, voltage = 240 V, standard = HVDC240, capacity = 400 kW, serves = racks
    rectifier = Rectifier(rating = 50 kW)
    battery = B
    conductors = 2, conductor_area = 240 mm^2, material = copper, length = 20 m
    ampacity = 1000 A, conductor_temperature = 70 degC
  }
  feeder mech {
    current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, standard = AC400
    capacity = 200 kW, efficiency = 100 %, mechanical = true
    conductor_area = 95 mm^2, material = copper, length = 20 m, ampacity = 400 A
    conductor_temperature = 70 degC
  }
  loop plates {
    fluid = W, supply = 35 degC, rise = 10 K, cdu = C, cdus = 2, redundancy = n_plus_1
    pump_head = 200 kPa, pump_efficiency = 70 %
  }
  air room {
    supply = 27 degC, rise = 12 K, approach = 10 K, dew_point = 12 degC, fan_power_ratio = 3 %
  }
  facility water {
    supply = 15 degC, rise = 10 K, fluid = W, pump_head = 200 kPa, pump_efficiency = 75 %
    free_cooling = 6000 h, chiller_cop = 5, rejection_fan_ratio = 2 %
  }
}
"""


def _chain(end="1.63 V"):
    ws = astral_dsl.compiles(CHAIN.replace("@END@", end), name="chain.astral")
    design = ws.design
    assert design.valid, [(d.code, d.message) for d in design.diagnostics]
    return astral_dsl.check(ws)


RHO70 = formulas.COPPER_RHO20_OHM_M * (1 + formulas.COPPER_ALPHA_PER_K * 50)
LOOP_R = 2 * 20 * RHO70 / (240e-6 * 2)        # out and back, 2 conductor sets of 240 mm^2


def test_end_of_discharge_below_the_bus_minimum_is_e633():
    # 120 cells x 1.60 V = 192 V: 300 kW draw 1,562.5 A there, 781.25 A per conductor set;
    # drop = 2 x 781.25 A x 20 m x rho_70 / 240 mm^2 = 2.686 V: the equipment sees 189.31 V,
    # below HVDC240's 192 V. The end voltage that holds: V - R P / V >= 192 with R = 1.719 mohm:
    # V = (192 + sqrt(192^2 + 4 x 0.0017190 x 300,000)) / 2 = 194.65 V = 1.6221 V per cell: 1.63
    checked = _chain("1.60 V")
    (e,) = [d for d in checked.diagnostics if d.code == "E633"]
    drop = 300_000 / 192 * LOOP_R
    assert drop == pytest.approx(2.686, abs=1e-3)
    v = (192 + math.sqrt(192 ** 2 + 4 * LOOP_R * 300_000)) / 2
    assert v == pytest.approx(194.65, abs=0.01)
    assert math.ceil(v / 120 * 100) / 100 == 1.63
    assert e.message == (f"feeder `S.hvdc`: its batteries end their discharge at 120 x 1.6 V = "
                         f"192 V, and after the {round(drop, 2)} V drop the equipment sees "
                         f"{round(192 - drop, 2)} V, below the 192 V it accepts (`HVDC240`'s "
                         f"minimum)")
    assert e.hint.startswith("end the discharge at 1.63 V per cell or above (120 x 1.63 V = "
                             "195.6 V)")
    (f,) = [x for x in checked.engineering.power.feeders if x.path == "S.hvdc"]
    assert f.equipment_v == pytest.approx(192 - drop)
    # the drop is a share of the voltage its current is computed at (192 V), not of 240 V
    assert f.drop_ratio == pytest.approx(drop / 192)


def test_the_end_voltage_it_names_holds():
    # 1.63 V per cell: 195.6 V, 1,533.7 A, a 2.637 V drop: 192.96 V at the equipment
    checked = _chain("1.63 V")
    assert not [d for d in checked.diagnostics if d.code == "E633"]
    (f,) = [x for x in checked.engineering.power.feeders if x.path == "S.hvdc"]
    assert f.equipment_v == pytest.approx(195.6 - 300_000 / 195.6 * LOOP_R)
    assert f.equipment_v > 192


def test_rectifiers_carry_the_load_and_the_recharge():
    # 6 strings x 200 Ah = 1,200 Ah recharged at 0.1 C (stdlib LeadAcid): 120 A at 240 V =
    # 28.8 kW; modules of 50 kW: ceil((300 + 28.8) / 50) = 7, N+1 = 8 (7 without the recharge)
    checked = _chain()
    (f,) = [x for x in checked.engineering.power.feeders if x.path == "S.hvdc"]
    assert f.recharge_w == pytest.approx(0.1 * 1200 * 240)
    assert math.ceil(300 / 50) + 1 == 7
    assert f.rectifier_modules_needed == math.ceil((300 + 28.8) / 50) + 1 == 8
    # and the modules' no-load draw, 0.5 % of 50 kW each: 8 x 250 W = 2 kW
    assert f.no_load_w == pytest.approx(2000)


def test_too_few_modules_says_what_they_carry_and_points_at_the_users_file():
    """E627 said only "needs 8 ... has 7": the hint now gives what the modules carry (the load
    and the recharge, 300 + 28.8 kW), the count the load needs (7) and what the redundancy
    makes of it (8). A stdlib rectifier whose `modules` the user cannot write (PowerShelf's
    `6 * shelves`) is pointed at where the user names it, not inside stdlib/power.astral."""
    ws = astral_dsl.compiles(CHAIN.replace("@END@", "1.63 V").replace(
        "Rectifier(rating = 50 kW)", "Rectifier(rating = 50 kW, modules = 7)"), name="chain.astral")
    (e,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "E627"]
    assert e.message == "`S.hvdc` needs 8 rectifier modules of 50 kW (n_plus_1) but `Rectifier` has 7"
    assert e.hint == ("use at least 8 modules: 328.8 kW (28.8 kW of it the batteries' recharge) "
                      "on 50 kW modules need 7, and n_plus_1 makes 8")
    shelf = CHAIN.replace("@END@", "1.63 V").replace(
        "import stdlib.power { HVDC240, AC400, Rectifier, LeadAcid }",
        "import stdlib.power { HVDC240, AC400, Rectifier, LeadAcid, PowerShelf }").replace(
        "rectifier = Rectifier(rating = 50 kW)\n    battery = B",
        "rectifier = PowerShelf(shelves = 8)")
    ws = astral_dsl.compiles(shelf, name="shelf.astral")
    (e,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "E627"]
    # 300 kW on 5.5 kW modules: 55, doubled (two_n): 110 of the 48 installed
    assert e.hint == "use at least 110 modules: 300 kW on 5.5 kW modules need 55, and two_n makes 110"
    assert e.span.file == "shelf.astral" and e.span.start.line == shelf[:shelf.index(
        "PowerShelf(shelves")].count("\n") + 1


def test_every_component_of_the_pue_by_hand():
    checked = _chain()
    assert not _errors(checked)
    assert not [d for d in checked.diagnostics if d.code in ("W629", "W630", "W644", "W648")]
    eng = checked.engineering
    avg, peak = eng.cooling.average, eng.cooling.peak
    it = 300_000                                    # 30 hosts at 100 %
    losses = it * (1 / 0.96 - 1) + 2000             # the rectifier (96 %) and its no-load draw
    cdus = 1000                                     # N+1 of 2: one running, 1 kW
    w40 = fluids.properties("Water", 40.0)          # the loop at 35-45 degC
    pumps = 150_000 / (w40.density * w40.cp * 10) * 200_000 / 0.7
    fans = 0.03 * 150_000
    aux = 5000
    # one circuit takes the loop's heat with its pumps and CDU, the air's with its fans, and the
    # losses and lighting: its flow at 10 K (water at 20 degC) moved at 200 kPa / 75 %
    water = 150_000 + pumps + cdus + 150_000 + fans + losses + aux
    w20 = fluids.properties("Water", 20.0)
    fpumps = water / (w20.density * w20.cp * 10) * 200_000 / 0.75
    # the pumps' work heats the water: the chillers and the dry coolers reject it with the load
    water += fpumps
    # chillers (COP 5) the 2,760 h a year without free cooling, all the heat at the peak; the
    # dry coolers' fans 2 % of what they reject (the heat and the chillers' work)
    chillers = water / 5 * 2760 / 8760
    reject = 0.02 * (water + chillers)
    reject_peak = 0.02 * (water + water / 5)
    # 2 transformers of 500 kVA share the site's load L, in apparent power L / 0.95 (the power
    # factor the mechanical feeder declares, the only one): 2 x (1 kW + 4 kW x (L / 0.95 / 1 MVA)^2)
    site = it + losses + cdus + pumps + fans + fpumps + chillers + reject + aux
    trafo = 2 * (1000 + 4000 * (site / 0.95 / 1e6) ** 2)
    site_peak = it + losses + cdus + pumps + fans + fpumps + water / 5 + reject_peak + aux
    trafo_peak = 2 * (1000 + 4000 * (site_peak / 0.95 / 1e6) ** 2)
    expected = {"it_w": it, "losses_w": losses, "cdus_w": cdus, "pumps_w": pumps,
                "facility_pumps_w": fpumps, "fans_w": fans, "chillers_w": chillers,
                "rejection_w": reject, "auxiliary_w": aux, "transformers_w": trafo}
    for name, value in expected.items():
        assert getattr(avg, name) == pytest.approx(value, rel=1e-9), name
    assert eng.cooling.facility_w == pytest.approx(site + trafo, rel=1e-9)
    assert eng.cooling.pue == pytest.approx((site + trafo) / it, rel=1e-9)
    assert peak.chillers_w == pytest.approx(water / 5, rel=1e-9)
    assert peak.transformers_w == pytest.approx(trafo_peak, rel=1e-9)
    assert peak.total_w == pytest.approx(site_peak + trafo_peak, rel=1e-9)
    # the mechanical feeder carries the facility's consumers at the peak
    (mech,) = eng.cooling.facility.feeders
    assert mech.load_w == pytest.approx(site_peak - it - losses, rel=1e-9)
    (tr,) = eng.cooling.facility.transformers
    assert tr.peak_load_w == pytest.approx(site_peak, rel=1e-9)


def test_transformers_short_of_the_peak_with_one_side_lost_are_e634():
    # 2N of 2 x 300 kVA: one side holds 300 kW, the site draws about 420 kW at the peak
    text = CHAIN.replace("@END@", "1.63 V").replace("capacity = 500 kVA", "capacity = 300 kVA")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E634"]
    assert "their 1 unit(s) left in service (two_n) hold 300 kVA" in e.message
    assert e.hint == "4 transformers of 300 kVA are needed (two_n: half on each side)"


@pytest.mark.parametrize("count, rating, left, held", [
    (1, "600 kVA", 0, "0 VA"),        # one unit has no other side: nothing is left
    (3, "300 kVA", 1, "300 kVA"),     # sides of 2 and 1: losing the 2 leaves 1 x 300 < ~420 kW
])
def test_a_single_or_odd_count_under_2n_leaves_its_smaller_side_e634(count, rating, left, held):
    text = CHAIN.replace("@END@", "1.63 V").replace(
        "capacity = 500 kVA, count = 2", f"capacity = {rating}, count = {count}")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E634"]
    assert f"their {left} unit(s) left in service (two_n) hold {held}" in e.message


def test_units_left_after_the_failure_each_scheme_covers():
    from astral_dsl.analyses.chain import units_left
    assert [units_left(n, "two_n") for n in (1, 2, 3, 4, 5)] == [0, 1, 1, 2, 2]
    assert [units_left(n, "n_plus_1") for n in (1, 2, 3)] == [0, 1, 2]
    assert [units_left(n, "n") for n in (1, 2)] == [1, 2]


def _transformer(text):
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    (tr,) = checked.engineering.cooling.facility.transformers
    return checked, tr


def test_a_transformer_rating_holds_apparent_power_kw_over_the_power_factor():
    # the site's peak load is 401,612.95 W (test_every_component_of_the_pue_by_hand); the only
    # feeder declaring a power factor, `mech`, declares 95 %: the transformers carry
    # 401,612.95 / 0.95 = 422,750.5 VA. Units of 410 kVA hold the kW (401.6 < 410) but not the
    # kVA: 2N leaves 1 unit of 410 kVA < 422.75 kVA, E634; 422.75 / 410 -> 2 per side, 4 in all
    text = CHAIN.replace("@END@", "1.63 V").replace("capacity = 500 kVA", "capacity = 410 kVA")
    checked, tr = _transformer(text)
    assert tr.peak_load_w == pytest.approx(401_612.95, abs=0.01)
    assert (tr.power_factor, tr.power_factor_from) == (pytest.approx(0.95), "feeders")
    assert not [d for d in checked.diagnostics if d.code == "W631"]
    (e,) = [d for d in checked.diagnostics if d.code == "E634"]
    assert e.message == ("transformers `S.mv` carry 422.75 kVA (401.613 kW at power factor 0.95, "
                         "the feeders' lowest) at the peak, but their 1 unit(s) left in service "
                         "(two_n) hold 410 kVA")
    assert e.hint == "4 transformers of 410 kVA are needed (two_n: half on each side)"
    # load losses on the apparent power: x = 422,750.5 / (2 x 410 kVA) = 0.515549, each unit
    # 1 kW + 4 kW x 0.515549^2 = 2,063.16 W, the two 4,126.33 W (4,126.33 at PF 1 would be
    # 3,919.01: x = 401,612.95 / 820,000 = 0.489772)
    assert tr.peak_loss_w == pytest.approx(4126.33, abs=0.01)
    # no power factor anywhere: taken as 1 with W631, and the kW fit the 410 kVA
    checked, tr = _transformer(text.replace("power_factor = 95 %, ", ""))
    assert (tr.power_factor, tr.power_factor_from) == (1.0, "assumed")
    (w,) = [d for d in checked.diagnostics if d.code == "W631"]
    assert "`S.mv` declares no `power_factor` and no feeder of its site does" in w.message
    assert w.span is not None and w.hint
    assert not [d for d in checked.diagnostics if d.code == "E634"]
    assert tr.peak_loss_w == pytest.approx(3919.01, abs=0.01)
    # the transformer's own power factor wins over the feeders' (e.g. corrected at its bus):
    # 401,612.95 / 0.99 = 405,669.6 VA within 410 kVA
    checked, tr = _transformer(text.replace("load_loss = 4 kW\n",
                                            "load_loss = 4 kW, power_factor = 99 %\n"))
    assert (tr.power_factor, tr.power_factor_from) == (pytest.approx(0.99), "declared")
    assert not [d for d in checked.diagnostics if d.code in ("W631", "E634")]


def _site(name: str, racks: int, feeder: str) -> str:
    return (f"site {name} {{\n  racks = {racks} x R\n  utilization = 100 %\n  transformer mv = T\n"
            f"  feeder f {{ {feeder}, capacity = 1 MW, efficiency = 100 %, serves = racks }}\n}}\n")


TWO_SITES = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
transformer T { capacity = 2500 kVA, count = 2, redundancy = two_n, no_load_loss = 1 kW,
  load_loss = 4 kW }
""" + _site("A", 10, "current = ac, voltage = 400 V, phases = 3, power_factor = 90 %") \
    + _site("B", 10, "current = ac, voltage = 400 V, phases = 3, power_factor = 98 %") \
    + _site("C", 1, "current = dc, voltage = 240 V")


def test_each_sites_transformers_take_the_power_factor_of_its_own_feeders():
    # A's only AC feeder declares 0.90, B's 0.98, C's feeder none (DC): A's stage takes 0.90,
    # B's 0.98 (not the design's lowest, 0.90), C's 1 with W631 naming C alone
    checked = astral_dsl.check(astral_dsl.compiles(TWO_SITES, name="sites.astral"))
    pf = {t.path: (t.power_factor, t.power_factor_from)
          for t in checked.engineering.cooling.facility.transformers}
    assert pf == {"A.mv": (pytest.approx(0.90), "feeders"), "B.mv": (pytest.approx(0.98), "feeders"),
                  "C.mv": (1.0, "assumed")}
    (w,) = [d for d in checked.diagnostics if d.code == "W631"]
    assert w.message.startswith("transformer `C.mv` declares no `power_factor` and no feeder "
                                "of its site does")


def test_each_sites_transformers_carry_their_own_site_not_the_design():
    # IT: A and B 10 racks x 4 x 10 kW = 400 kW each, C 40 kW: 840 kW, nothing else drawn (no
    # cooling, feeders at 100 %). Each site's stage carries its site: A 400 kW / 0.90 =
    # 444.44 kVA on 2 x 2,500 kVA, x = 0.0888889, 2 x (1 kW + 4 kW x x^2) = 2,063.21 W; B 400 kW
    # / 0.98 = 408.16 kVA, x = 0.0816327, 2,053.31 W; C 40 kW at PF 1, x = 0.008, 2,000.51 W.
    # (Before: each carried all 840 kW, A's at 933.33 kVA.)
    checked = astral_dsl.check(astral_dsl.compiles(TWO_SITES, name="sites.astral"))
    stages = {t.path: t for t in checked.engineering.cooling.facility.transformers}
    assert {p: t.peak_load_w * t.replicas for p, t in stages.items()} == {
        "A.mv": pytest.approx(400e3), "B.mv": pytest.approx(400e3), "C.mv": pytest.approx(40e3)}
    assert {p: t.peak_loss_w for p, t in stages.items()} == {
        "A.mv": pytest.approx(2063.21, abs=0.01), "B.mv": pytest.approx(2053.31, abs=0.01),
        "C.mv": pytest.approx(2000.51, abs=0.01)}
    peak = checked.engineering.cooling.peak
    assert peak.transformers_w == pytest.approx(2063.21 + 2053.31 + 2000.51, abs=0.03)
    # the hours all alike (no climate): the average losses are the peak's
    assert checked.engineering.cooling.average.transformers_w == pytest.approx(
        peak.transformers_w, rel=1e-9)


def test_every_sites_auxiliary_counts_and_each_site_without_one_is_w644():
    # A and D declare no `auxiliary`, B 30 kW and C 5 kW: the facility draws 35 kW (only the
    # first site's, A's, was read: 0 W, and no W644 since some site declared one); D's air unit
    # makes the design cooled; A and D are W644
    text = (TWO_SITES.replace("site C {", "site C {\n  auxiliary = 5 kW")
            .replace("site B {", "site B {\n  auxiliary = 30 kW")
            + "site D { racks = 1 x R\n  air room { supply = 25 degC, rise = 12 K, "
              "fan_power_ratio = 0 % } }\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="aux.astral"))
    assert checked.engineering.cooling.average.auxiliary_w == pytest.approx(35_000)
    assert [d.message.split("`")[1] for d in checked.diagnostics if d.code == "W644"] == ["A", "D"]


def test_another_sites_climate_or_altitude_is_w645_not_silently_dropped():
    # the facility is one model on the first site's climate and altitude: B's 1,500 m is not
    # used, and said so at its field; C declares none and silently took A's 0 m: said so at
    # C's declaration (line 5, column 1); D at the same 0 m as A is not
    base = "host H { power = 10 kW }\nrack R { hosts = 4 x H }\n"
    text = base + "".join(f"site {n} {{ racks = 1 x R, auxiliary = 1 kW{extra} }}\n" for n, extra in
                          (("A", ", altitude = 0 m"), ("B", ", altitude = 1500 m"), ("C", ""),
                           ("D", ", altitude = 0 m")))
    checked = astral_dsl.check(astral_dsl.compiles(text, name="alt.astral"))
    w, c = [d for d in checked.diagnostics if d.code == "W645"]
    assert w.message.startswith("site `B` declares its own `altitude`, which is not used")
    # `site B { racks = 1 x R, auxiliary = 1 kW, altitude = ` is 53 characters: 1500 at 54
    assert (w.span.start.line, w.span.start.column) == (4, 54) and w.hint
    assert c.message == ("site `C` declares no `altitude`: the facility's heat rejection, free "
                         "cooling and air are computed for it with the first site's (`A`): "
                         "`altitude` (0 m)")
    assert (c.span.start.line, c.span.start.column) == (5, 1)
    assert c.hint.startswith("declare the site's own `altitude`")


def test_a_later_site_without_the_first_sites_climate_is_w645_at_its_declaration():
    # A declares a climate file and 1,500 m, B neither: B's heat rejection and air are computed
    # on A's climate and 1,500 m, so one W645 naming both at B's `site` (line 4, column 1); no
    # W645 when A declares none either
    base = "host H { power = 10 kW }\nrack R { hosts = 4 x H }\n"
    text = (base + 'site A { racks = 1 x R, auxiliary = 1 kW, altitude = 1500 m, '
            'climate = "stdlib/climate/723170TYA.CSV" }\n'
            "site B { racks = 1 x R, auxiliary = 1 kW }\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="clim.astral",
                                                     root=Path(__file__).resolve().parents[1]))
    (w,) = [d for d in checked.diagnostics if d.code == "W645"]
    assert w.message.startswith("site `B` declares no `climate` and no `altitude`: ")
    assert w.message.endswith("(`A`): `climate` (stdlib/climate/723170TYA.CSV) and "
                              "`altitude` (1500 m)")
    assert (w.span.start.line, w.span.start.column) == (4, 1)
    plain = base + "".join(f"site {n} {{ racks = 1 x R, auxiliary = 1 kW }}\n" for n in "AB")
    checked = astral_dsl.check(astral_dsl.compiles(plain, name="plain.astral"))
    assert not [d for d in checked.diagnostics if d.code == "W645"]


def test_without_a_transformer_the_sourced_default_with_w630():
    text = CHAIN.replace("@END@", "1.63 V")
    text = text[:text.index("  transformer mv")] + text[text.index("  feeder hvdc"):]
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W630"]
    avg = checked.engineering.cooling.average
    site = avg.total_w - avg.transformers_w
    assert avg.transformers_w == pytest.approx(site * (1 / 0.9953 - 1), rel=1e-9)


def test_the_facilitys_consumers_on_no_feeder_are_w629():
    text = CHAIN.replace("@END@", "1.63 V")
    text = text[:text.index("  feeder mech")] + text[text.index("  loop plates"):]
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W629"]
    assert "are on no declared feeder" in w.message


# ---- humid air --------------------------------------------------------------------------------------
def test_air_at_sea_level_without_an_altitude_is_w642():
    text = CHAIN.replace("@END@", "1.63 V").replace("  altitude = 0 m\n", "").replace(
        "dew_point = 12 degC, ", "")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="chain.astral"))
    found = sorted(d.message.split(":")[0] for d in checked.diagnostics if d.code == "W642")
    assert found == ["air unit `S.room` declares no `dew_point`",
                     "site `S` declares no `altitude` (nor a `climate` file with an elevation)"]
    (air,) = checked.engineering.cooling.air
    assert (air.pressure_pa, air.dew_point_c) == (101325.0, 15.0)


def test_air_at_sea_level_is_w642_at_the_site_that_holds_the_air_units():
    """Two sites, neither with an altitude: the air units are in B, so W642 is B's (line 4);
    it named A, the first site, which holds none."""
    text = ("host H { power = 10 kW }\nrack R { hosts = 4 x H }\nsite A { racks = 1 x R }\n"
            "site B {\n  racks = 2 x R\n  air room { supply = 25 degC, rise = 12 K, "
            "fan_power_ratio = 3 %, dew_point = 10 degC }\n}\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="two.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W642"]
    assert w.message.startswith("site `B` declares no `altitude`") and w.span.start.line == 4
    assert w.hint


def test_a_limit_and_what_exceeds_it_never_print_equal():
    # issue 26: E622 printed a 0.6446 % drop as "0.64 %, above the declared 0.64 %"
    from astral_dsl.units import readable

    assert readable.percents_apart(0.006446, 0.0064) == ("0.645 %", "0.64 %")
    assert readable.percents_apart(0.0064001, 0.0064) == ("0.64001 %", "0.64 %")
    assert readable.percents_apart(0.0125, 0.01) == ("1.25 %", "1 %")
    assert readable.powers_apart(800_000.4, 800_000) == ("800.0004 kW", "800 kW")
    # 40 kW at 400 V: 100 A; 2 x 100 A x 7.478 m x 0.017241 ohm mm^2/m / 10 mm^2 = 2.5786 V,
    # 0.6446 % of 400 V
    ws = astral_dsl.compiles(
        "host H { power = 10 kW }\nrack R { hosts = 4 x H }\n"
        "row Row {\n  racks = 1 x R\n  feeder f {\n"
        "    current = dc, voltage = 400 V, capacity = 50 kW, serves = racks\n"
        "    conductor_area = 10 mm^2, material = copper, length = 7.478 m\n"
        "    conductor_temperature = 20 degC, max_voltage_drop = 0.64 %\n  }\n}\n"
        "site S { rows = 1 x Row }\n", name="drop.astral")
    design = ws.design
    (e,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "E622"]
    assert e.message.endswith("is 2.58 V (0.645 % of the 400 V it carries its current at), "
                              "above the declared 0.64 %")


# ---- batteries on the bus, upstream of the feeder's own conversion ---------------------------------
BATTERY_BEHIND_CONVERSION = """
host H { power = 10 kW }
rack R { hosts = 10 x H }
standard DC420 { nominal = 480 V, min = 400 V, max = 500 V, current = dc }
rectifier Rect { module = 50 kW, redundancy = n_plus_1, efficiency = 96 % }
battery Bat { autonomy = 5 min, chemistry = lead_acid, cells = 240, end_voltage = 1.75 V,
  aging_factor = 1.25, design_factor = 1.1, temperature_factor = 1.0, efficiency = 95 %,
  string_capacity = 100 Ah, strings = 3, recharge_rate = 0.1 }
row Row {
  racks = 10 x R
  feeder bus {
    current = dc, voltage = 480 V, standard = DC420, capacity = 1200 kW, efficiency = @EFF@
    rectifier = Rect, battery = Bat, serves = racks
    conductor_area = 500 mm^2, conductors = 4, material = copper, length = 50 m, ampacity = 1000 A
    conductor_temperature = 70 degC
  }
}
site S { rows = 1 x Row, utilization = 100 % }
"""


def test_batteries_supply_the_load_through_the_feeders_own_conversion():
    text = BATTERY_BEHIND_CONVERSION.replace("@EFF@", "90 %")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="bat.astral"))
    (f,) = checked.engineering.power.feeders
    # 1,000 kW of load at 90 %: the bus carries 1,111.1 kW; at the 240 x 1.75 V = 420 V end:
    # conductors 1,111,111 / 420 = 2,645.5 A; batteries 1,111,111 / (0.95 x 420) = 2,784.7 A
    # (more than the conductors they supply, by 1 / 0.95), 2,784.7 x 5/60 x 1.25 x 1.1 = 319.1 Ah
    assert f.current_a == pytest.approx(1e6 / 0.9 / 420)
    assert f.battery_current_a == pytest.approx(1e6 / 0.9 / (0.95 * 420))
    assert f.battery_required_ah == pytest.approx(1e6 / 0.9 / (0.95 * 420) * 5 / 60 * 1.25 * 1.1)
    assert f.battery_required_ah == pytest.approx(319.08, abs=0.01)
    (e,) = [d for d in checked.diagnostics if d.code == "E623"]   # 3 x 100 Ah < 319.1 Ah
    assert e.message == ("batteries of `S.rows[0].bus` hold 300 Ah but 5 min at 1.11 MW (1 MW "
                         "of load at 90 % efficiency) needs 319.1 Ah (IEEE 485: aging 1.25 x "
                         "design margin 1.1)")
    assert e.hint == "use at least 4 strings"


def test_without_a_feeder_efficiency_the_battery_is_engineering_md_s_example():
    # engineering.md: 1 MW for 5 min, 240 cells (420 V end), eta 0.95 -> 2,506 A, 287 Ah
    text = BATTERY_BEHIND_CONVERSION.replace("@EFF@", "100 %")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="bat.astral"))
    (f,) = checked.engineering.power.feeders
    assert f.battery_current_a == pytest.approx(1e6 / (0.95 * 420))          # 2,506.3 A
    assert f.battery_required_ah == pytest.approx(287.18, abs=0.01)
    assert not [d for d in checked.diagnostics if d.code == "E623"]


def test_the_stdlib_transformer_losses_are_kw_its_rating_kva():
    # Transformer(rating = 100 kVA): the DOE's efficiency at 50 % load, between its 75 kVA
    # (99.03 %) and 112.5 kVA (99.11 %) rows: 99.03 + 0.08 x 25 / 37.5 = 99.08333 %, is at
    # unity power factor, so the loss at half load is 0.5 x 100 kW x (1 / 0.9908333 - 1) =
    # 462.57 W = 2 P0 = Pk / 2: P0 = 231.29 W, Pk = 925.15 W, real power (an export or a diff
    # had written them in kVA)
    ws = astral_dsl.compiles(
        "import stdlib.power { Transformer }\n"
        "site S { transformer mv = Transformer(rating = 100 kVA) }\n", name="t.astral")
    (mv,) = [i for i in ws.design.instances if i.kind == "transformer"]
    assert (str(mv.field("capacity").unit), str(mv.field("load_loss").unit),
            str(mv.field("no_load_loss").unit)) == ("kVA", "kW", "kW")
    assert mv.field("load_loss").si == pytest.approx(925.15, abs=0.01)
    assert mv.field("no_load_loss").si == pytest.approx(231.29, abs=0.01)


BUS = """import stdlib.power {{ HVDC240, LeadAcid }}
host H {{ power = 10 kW }}
rack R {{ hosts = 10 x H }}
site S {{
  racks = 10 x R
  utilization = 100 %
  feeder hvdc {{
    current = dc, voltage = 240 V, standard = HVDC240, capacity = 1200 kW, serves = racks
    efficiency = 100 %
    battery = LeadAcid(autonomy = 15 min{args}) {{ string_capacity = 500 Ah, strings = 4{body} }}
  }}
}}
"""


@pytest.mark.parametrize("args, body, volts, column", [
    ("", ", end_voltage = 2.1 V", "120 x 2.1 V = 252 V", 98),      # at its `end_voltage`
    (", cells = 200", "", "200 x 1.75 V = 350 V", 51)])             # at its `cells` argument
def test_a_battery_that_ends_above_its_bus_is_e635(args, body, volts, column):
    checked = astral_dsl.check(astral_dsl.compiles(BUS.format(args=args, body=body),
                                                   name="bus.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E635"]
    assert e.message == (f"battery `LeadAcid` of `S.hvdc` ends its discharge at {volts}, above "
                         f"the 240 V of its bus: it would never discharge into it")
    assert (e.span.file, e.span.start.line, e.span.start.column) == ("bus.astral", 10, column)
    assert "per cell" in e.hint
    (f,) = checked.engineering.power.feeders
    assert f.battery_required_ah is None          # not sized on a voltage it never reaches


def test_a_battery_ending_at_its_bus_voltage_is_sized_and_its_margins_are_at_least_1():
    # 120 x 2.0 V = 240 V, the bus's own: I = 1 MW / 240 V = 4,166.7 A; 15 min x 1.25 x 1.1 x
    # 1.0 (IEEE 485) = 4,166.7 x 0.25 x 1.375 = 1,432.3 Ah
    checked = astral_dsl.check(astral_dsl.compiles(BUS.format(args="",
                                                              body=", end_voltage = 2 V"),
                                                   name="bus.astral"))
    assert not [d for d in checked.diagnostics if d.code == "E635"]
    (f,) = checked.engineering.power.feeders
    assert f.battery_required_ah == pytest.approx(1e6 / 240 * 0.25 * 1.375)
    # an aging or design factor below 1 would shrink the capacity: E309
    for field in ("aging_factor", "design_factor"):
        design = astral_dsl.loads(BUS.format(args="", body=f", {field} = 0.9"), name="bus.astral")
        (e,) = [d for d in design.diagnostics if d.code == "E309"]
        assert e.message == f"`{field}` must be at least 1, not 0.9"


@pytest.mark.parametrize("altitude, codes", [
    ("3050 m", []),                  # the top of ASHRAE's air-cooled classes A1-A4: no warning
    ("10000 ft", []),                # 3,048 m
    ("-430 m", []),                  # the Dead Sea's shore
    ("3051 m", ["W640"]),
    ("8000 m", ["W640"]),            # (was silently accepted, its air at 35.6 kPa)
    ("11000 m", ["W640"]),           # the top of the troposphere: still computed
    ("11001 m", ["E316"]),           # beyond the standard atmosphere's troposphere formula
    ("-501 m", ["E316"]),            # below ASHRAE's table and any land
])
def test_a_sites_altitude_has_a_physical_domain(altitude, codes):
    text = ("host H { power = 10 kW }\nrack R { hosts = 4 x H }\n"
            f"site S {{ racks = 1 x R, auxiliary = 1 kW, altitude = {altitude} }}\n")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="alt.astral"))
    found = [d for d in checked.diagnostics if d.code in ("W640", "E316")]
    assert [d.code for d in found] == codes
    for d in found:
        # `site S { racks = 1 x R, auxiliary = 1 kW, altitude = ` is 53 characters: the value
        # at column 54 of line 3
        assert (d.span.start.line, d.span.start.column) == (3, 54) and d.hint
    if codes == ["W640"]:
        assert found[0].message.startswith("site `S` is at ")
        assert "above the 3,050 m of ASHRAE TC 9.9's air-cooled classes A1-A4" in \
            found[0].message


def test_a_ups_battery_on_an_ac_feeder_is_sized_at_its_own_end_of_discharge():
    """The AC UPS of the engineering notes: 1 MW for 5 min, 240 cells (420 V end), eta 0.95 ->
    I = 2,506 A, 287 Ah with the aging and design factors. On a 415 V AC feeder its 420 V end
    was compared with the AC line voltage (E635: "it would never discharge into it") and the
    battery was not sized; the battery of a UPS is behind its inverter, on its DC link."""
    text = """import stdlib.power { LeadAcid, AC415 }
host H { power = 10 kW }
rack R { hosts = 10 x H }
row Row {
  racks = 10 x R
  feeder ups {
    current = ac, voltage = 415 V, phases = 3, power_factor = 95 %, standard = AC415
    capacity = 1.2 MW, efficiency = 100 %, serves = racks
    battery = LeadAcid(autonomy = 5 min, cells = 240, efficiency = 95 %)
  }
}
site S { rows = 1 x Row }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="ups.astral"))
    assert not [d for d in checked.diagnostics if d.code == "E635"]
    (f,) = checked.engineering.power.feeders
    assert f.battery_current_a == pytest.approx(1e6 / (0.95 * 420), abs=0.1)    # 2,506.3 A
    assert f.battery_required_ah == pytest.approx(2506.27 * 5 / 60 * 1.25 * 1.1, abs=0.1)
    assert round(f.battery_required_ah) == 287
    # on a DC bus the same battery is E635: it would float above a 400 V bus
    dc = text.replace("current = ac, voltage = 415 V, phases = 3, power_factor = 95 %, "
                      "standard = AC415", "current = dc, voltage = 400 V")
    checked = astral_dsl.check(astral_dsl.compiles(dc, name="dc.astral"))
    assert [d.code for d in checked.diagnostics if d.code == "E635"] == ["E635"]
