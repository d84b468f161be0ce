"""No silent zeros: every datum an analysis needs and a design leaves out is reported (W620-W630,
W641-W644, W648-W658, W690, and the switch power W606; the network's other warnings are in
test_network_fabric.py), with the quantity that was taken as zero or left unchecked computed by
hand below; a design that declares everything gets none of them; fields no analysis reads are
errors (E630-E632); and `feeds` / `loop` on racks decide what a feeder / loop supplies (E629,
E648 when they contradict `serves`)."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl

# A small design that declares everything the analyses use: no warning at all.
COMPLETE = """
import stdlib.power { HVDC240, AC400, LeadAcid, Transformer }
import stdlib.network { DAC_400G_CR4 }
fluid Water { coolprop = "Water" }
cdu Cdu { capacity = 300 kW, max_flow = 500 L/min, approach = 3 K }
gpu G { power = 700 W, max_supply = 45 degC }
nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }
switch Sw { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW, liquid_share = 75 %, units = 8 U }
rack R { hosts = 4 x H, units = 42 U }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s,
              medium = DAC_400G_CR4, length = 2 m }      // passive copper: no optics, 0 W
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s, medium = DAC_400G_CR4,
               length = 2 m }
}
row Row {
  racks = 4 x R                     // 160 kW: 120 kW to cold plates, 40 kW to air
  feeder a {
    current = dc, voltage = 240 V, standard = HVDC240, side = A, capacity = 200 kW
    efficiency = 96 %, battery = LeadAcid(autonomy = 10 min, string_capacity = 300 Ah, strings = 4) {
      recharge_rate = 0.1                   // stated: not the stdlib's assumed rate (W216)
    }
    conductors = 2, conductor_area = 240 mm^2, material = copper, length = 20 m, ampacity = 600 A
    conductor_temperature = 90 degC
    serves = racks
  }
  feeder b {
    current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, standard = AC400, side = B
    capacity = 200 kW, efficiency = 97 %
    conductor_area = 240 mm^2, material = copper, length = 20 m, ampacity = 500 A
    conductor_temperature = 90 degC, reactance = 0.08 ohm/km
    serves = racks
  }
  loop plates {
    fluid = Water, supply = 35 degC, rise = 10 K, cdu = Cdu, cdus = 2, redundancy = n_plus_1
    pump_head = 150 kPa, pump_efficiency = 60 %
  }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %@COIL@ }
}
site S {
  rows = 2 x Row
  fabric = F
  utilization = 75 %
  altitude = 100 m
  auxiliary = 5 kW
  // the losses from the units' test report and their 2N: not the stdlib's assumed split (W216)
  transformer mv = Transformer(rating = 500 kVA, units = 2, redundancy = two_n) {
    no_load_loss = 0.82 kW, load_loss = 3.27 kW
  }
  air netroom { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, network = true@COIL@ }
  feeder net { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, standard = AC400,
               capacity = 20 kW, count = 2, efficiency = 97 %, network = true
               conductor_area = 16 mm^2, material = copper, length = 20 m, ampacity = 60 A
               conductor_temperature = 90 degC, reactance = 0.08 ohm/km }
  facility water { water_class = W17, supply = 14 degC, free_cooling = 6000 h, chiller_cop = 6,
                   rejection_fan_ratio = 2 % @WATER@}
  feeder mech { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, standard = AC400,
                capacity = 100 kW, count = 2, efficiency = 100 %, mechanical = true
                conductor_area = 70 mm^2, material = copper, length = 20 m, ampacity = 200 A
                conductor_temperature = 90 degC, reactance = 0.08 ohm/km }
}
""".replace("@COIL@", ", approach = 10 K, dew_point = 10 degC").replace(
    "@WATER@", "\n                   rise = 6 K, pump_head = 200 kPa, pump_efficiency = 75 % ")
ROOM = "air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, approach = 10 K, " \
    "dew_point = 10 degC }"


def check(text: str):
    ws = astral_dsl.compiles(text, name="design.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    return astral_dsl.check(ws)


def found(text: str, code: str):
    return [d for d in check(text).diagnostics if d.code == code]


def only(text: str, code: str):
    (d,) = found(text, code)
    assert d.span is not None and d.span.file == "design.astral", d
    assert d.hint, d
    return d


def test_a_complete_design_has_no_warning():
    result = check(COMPLETE)
    assert result.diagnostics == (), [f"{d.code} {d.message}" for d in result.diagnostics]


# ---- power -------------------------------------------------------------------------------------------
def test_w620_a_feeder_that_serves_nothing():
    d = only(COMPLETE.replace("site S {", "site S {\n  feeder spare { current = dc, "
                              "voltage = 48 V, capacity = 20 kW }"), "W620")
    assert "`S.spare` serves nothing: it carries 0 kW" in d.message


def test_w621_no_conductor():
    text = COMPLETE.replace("    conductors = 2, conductor_area = 240 mm^2, material = copper, "
                            "length = 20 m, ampacity = 600 A\n", "")
    d = only(text, "W621")
    assert "`S.rows[0].a` declares no conductor" in d.message


def test_w621_no_length_no_ampacity_no_material():
    text = COMPLETE.replace("conductors = 2, conductor_area = 240 mm^2, material = copper, "
                            "length = 20 m, ampacity = 600 A",
                            "conductors = 2, conductor_area = 240 mm^2")
    msgs = sorted(d.message for d in found(text, "W621"))
    assert any("declares no `ampacity` or `cable`" in m for m in msgs), msgs
    assert any("declares no `length`: its voltage drop is not computed" in m for m in msgs), msgs


def test_w621_material_assumed_copper():
    text = COMPLETE.replace("conductor_area = 240 mm^2, material = copper, length = 20 m, "
                            "ampacity = 500 A", "conductor_area = 240 mm^2, length = 20 m, "
                                                "ampacity = 500 A")
    d = only(text, "W621")
    assert "conductor material of `S.rows[0].b` is not declared: copper is assumed" in d.message


def test_w623_no_capacity():
    text = COMPLETE.replace("capacity = 200 kW, efficiency = 97 %", "efficiency = 97 %")
    d = only(text, "W623")
    # with side A failed, B carries the whole row: 4 racks x 4 hosts x 10 kW = 160 kW, at its
    # 97 % efficiency 160 / 0.97 = 164.9 kW through its conductors
    assert "`S.rows[0].b` declares no `capacity`: the 164.9 kW it carries" in d.message


def test_w624_no_efficiency():
    d = only(COMPLETE.replace("capacity = 200 kW, efficiency = 97 %", "capacity = 200 kW"),
             "W624")
    assert "`S.rows[0].b` declares no conversion `efficiency`" in d.message


def test_w625_battery_without_string_capacity():
    text = COMPLETE.replace("LeadAcid(autonomy = 10 min, string_capacity = 300 Ah, strings = 4)",
                            "LeadAcid(autonomy = 10 min)")
    d = only(text, "W625")
    # IEEE 485 on the bus, upstream of the feeder's 96 %: 160 kW / 0.96 = 166.67 kW;
    # / (120 x 1.75 V) = 793.65 A; x 1/6 h = 132.28 Ah; x 1.25 x 1.1 = 181.9 Ah
    assert round(160_000 / 0.96 / 210 / 6 * 1.25 * 1.1, 1) == 181.9
    assert d.message == ("battery `LeadAcid` of `S.rows[0].a` declares no `string_capacity`: the "
                         "181.9 Ah its autonomy needs (IEEE 485: aging 1.25 x design margin 1.1) "
                         "are not checked against what it holds")


def test_w625_factors_assumed():
    text = COMPLETE.replace("LeadAcid(autonomy = 10 min, string_capacity = 300 Ah, strings = 4)",
                            "Strings").replace(
        "fluid Water", "battery Strings { autonomy = 10 min, cells = 120, end_voltage = 1.75 V,"
                       " string_capacity = 300 Ah, strings = 4, chemistry = lithium_ion }\n"
                       "fluid Water")
    d = only(text, "W625")
    assert "aging_factor = 1.25, design_factor = 1.1, temperature_factor = 1.0 are assumed" \
        in d.message
    assert "lead-acid figures and this battery is lithium-ion" in d.message


def test_w626_racks_without_feeder():
    text = COMPLETE.replace("site S {", "site S {\n  spare = 3 x R")
    d = only(text, "W626")
    # 3 racks x 4 hosts x 10 kW = 120 kW with no feeder
    assert d.message.startswith("3 rack(s) (120 kW) have no feeder")


ROWS_FED_APART = """
gpu G { power = 700 W }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 4 x H }
row Paired {
  racks = 4 x R
  feeder a { current = ac, voltage = 400 V, phases = 3, capacity = 500 kW, serves = racks, side = A }
  feeder b { current = ac, voltage = 400 V, phases = 3, capacity = 500 kW, serves = racks, side = B }
}
row Shared {
  racks = 2 x R
  feeder m { current = ac, voltage = 400 V, phases = 3, capacity = 500 kW, serves = racks, count = 2 }
}
row Bare { racks = 3 x R }
site S { rows = 2 x Paired, shared = Shared, utilization = 70 % }
"""


def test_w626_counts_racks_fed_by_no_side_beside_racks_fed_by_a_and_b():
    """One rack template fed by an A/B pair in two rows and by `count = 2` feeders of no side
    in a third: the rack's 8 replicas on each side and 2 on no side were counted as the larger
    alone, and W626 said the 2 racks of the third row had no feeder."""
    assert found(ROWS_FED_APART, "W626") == []
    d = only(ROWS_FED_APART.replace("shared = Shared,", "shared = Shared, bare = Bare,"), "W626")
    assert d.message.startswith("3 rack(s) (120 kW) have no feeder")


ROWS_ON_ONE_SIDE_EACH = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
row OnA {
  racks = 4 x R
  feeder a { current = dc, voltage = 240 V, capacity = 400 kW, side = A, serves = racks }
}
row OnB {
  racks = 2 x R
  feeder b { current = dc, voltage = 240 V, capacity = 400 kW, side = B, serves = racks }
}
row Bare { racks = 3 x R }
site S { one = OnA, two = OnB, utilization = 70 % }
"""


def test_w626_counts_racks_per_path_not_the_larger_side():
    """One rack template fed only by side A in one row (4 racks) and only by side B in another
    (2 racks): all 6 are fed (each by one feeder, which W635 tells), but the larger side alone
    was counted and W626 said 2 racks (80 kW) had no feeder."""
    assert found(ROWS_ON_ONE_SIDE_EACH, "W626") == []
    d = only(ROWS_ON_ONE_SIDE_EACH.replace("two = OnB,", "two = OnB, three = Bare,"), "W626")
    assert d.message.startswith("3 rack(s) (120 kW) have no feeder")
    # the site's feeder serving row one's racks and row one's own feed the same racks: the
    # bare row's 3 are still unfed (counted apart, the two feeders would have covered them)
    site_fed = ROWS_ON_ONE_SIDE_EACH.replace(
        "two = OnB,", "two = Bare,\n  feeder s { current = dc, voltage = 240 V, capacity = "
                      "400 kW, side = B, serves = one.racks }\n")
    d = only(site_fed, "W626")
    assert d.message.startswith("3 rack(s) (120 kW) have no feeder")


def test_w627_no_utilization():
    d = only(COMPLETE.replace("  utilization = 75 %\n", ""), "W627")
    assert "site `S` declares no `utilization`" in d.message


# ---- cooling -----------------------------------------------------------------------------------------
def test_w648_no_pump_data():
    d = only(COMPLETE.replace("    pump_head = 150 kPa, pump_efficiency = 60 %\n", ""), "W648")
    assert "its pumps count as 0 W" in d.message


def test_w648_no_pump_data_though_the_cdu_declares_its_own_draw():
    """A CDU's `power` is its own draw besides the loop's pumps (docs/language.md, stdlib's
    RowCDU: 1 % of its rating): it had silenced W648, the pumps then at 0 W unsaid."""
    text = COMPLETE.replace("    pump_head = 150 kPa, pump_efficiency = 60 %\n", "").replace(
        "cdu Cdu { capacity = 300 kW,", "cdu Cdu { capacity = 300 kW, power = 3 kW,")
    d = only(text, "W648")
    assert d.message.endswith("its pumps count as 0 W in the facility power and the PUE (its "
                              "CDU's `power`, 3 kW each, is the CDU's own draw besides them)")


def test_w648_no_facility_pump_data():
    # the circuit's heat: 2 rows x 160 kW, 24 kW of switches, their fans and losses, all moved
    # by pumps whose power is not declared
    d = only(COMPLETE.replace("pump_head = 200 kPa, pump_efficiency = 75 % ", ""), "W648")
    assert d.message.startswith("facility water `S.water` declares no `pump_head` and "
                                "`pump_efficiency`: its pumps, which move ")
    # the hint asks for what the circuit lacks, not for its `supply` and `rise` declared
    assert d.hint == ("declare `pump_head` and `pump_efficiency` (what it lacks of `supply`, "
                      "`rise`, `pump_head` and `pump_efficiency`)")
    d = only(COMPLETE.replace("rise = 6 K, pump_head = 200 kPa, pump_efficiency = 75 % ", ""),
             "W648")
    assert d.hint.startswith("declare `rise`, `pump_head` and `pump_efficiency` (")


def test_w644_no_auxiliary_power():
    d = only(COMPLETE.replace("  auxiliary = 5 kW\n", ""), "W644")
    assert "lighting, offices, security and building services count as 0 W" in d.message


def test_w629_w630_the_power_chain_not_declared():
    a = COMPLETE.index("  // the losses from the units' test report")
    d = only(COMPLETE[:a] + COMPLETE[COMPLETE.index("  air netroom"):], "W630")
    assert "taken as 0.47 % of the load" in d.message
    end = "conductor_temperature = 90 degC, reactance = 0.08 ohm/km }\n"
    a, b = COMPLETE.index("  feeder mech {"), COMPLETE.index(end + "}")
    d = only(COMPLETE[:a] + COMPLETE[b + len(end):], "W629")
    assert "are on no declared feeder" in d.message


def test_w649_gpu_without_coolant_limit():
    d = only(COMPLETE.replace("gpu G { power = 700 W, max_supply = 45 degC }",
                              "gpu G { power = 700 W }"), "W649")
    # per loop (one per row): 4 racks x 4 hosts x 8 GPUs = 128 cold plates
    assert "GPU `G` declares no coolant limit" in d.message
    assert "35 degC supply of loop `S.rows[0].plates`" in d.message
    assert "128 cold plates per loop" in d.message


def test_w650_a_unit_that_cools_nothing():
    d = only(COMPLETE.replace("  air netroom", "  air empty { supply = 25 degC, rise = 12 K, "
                                              "fan_power_ratio = 3 %, serves = [] }\n"
                                              "  air netroom"), "W650")
    assert "`S.empty` cools nothing" in d.message


def test_w651_cold_plate_heat_with_no_loop():
    text = COMPLETE.replace("""  loop plates {
    fluid = Water, supply = 35 degC, rise = 10 K, cdu = Cdu, cdus = 2, redundancy = n_plus_1
    pump_head = 150 kPa, pump_efficiency = 60 %
  }
""", "")
    d = only(text, "W651")
    # 2 rows x 4 racks = 8 racks, 75 % x 40 kW = 30 kW each: 240 kW
    assert d.message.startswith("240 kW of cold-plate heat (8 rack(s), e.g. `S.rows[0].racks[0]`)")
    assert d.message.endswith("reach no loop: that heat has no path out")
    assert d.hint == "declare a loop that serves them"


def test_w652_air_heat_with_no_air_unit():
    d = only(COMPLETE.replace(f"  {ROOM}\n", ""), "W652")
    # 8 racks x 25 % x 40 kW = 80 kW
    assert d.message.startswith("80 kW of air heat (8 rack(s)")
    assert d.message.endswith("reach no air unit: that heat has no path out")
    # not "a air unit"; the site's network-only unit is what the racks' heat missed
    assert d.hint == ("declare an air unit that serves them, or add `serves = racks` to "
                      "`S.netroom`: with `network = true` and no `serves` it removes the "
                      "switches' heat alone")
    # without a network-only unit the hint names none
    bare = "\n".join(line for line in COMPLETE.replace(f"  {ROOM}\n", "").splitlines()
                     if not line.startswith("  air netroom"))
    assert only(bare, "W652").hint == "declare an air unit that serves them"


def test_w653_no_cooling_at_all_and_no_pue():
    text = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
site S { racks = 8 x R, utilization = 50 % }
"""
    d = only(text, "W653")
    assert "320 kW of heat of `S` have no path out, and no PUE is computed" in d.message
    assert check(text).engineering.cooling.pue is None          # not "1.0"


@pytest.mark.parametrize("supply, cls, code", [
    ("30 degC", None, "W654"),      # above the recommended 27 degC
    ("16 degC", None, "W654"),      # below the recommended 18 degC
    ("35 degC", "A1", "W655"),      # above A1's allowable 32 degC
    ("35 degC", "A2", None),        # A2 allows 10-35 degC
    ("41 degC", "A3", "W655"),      # above A3's 40 degC
])
def test_w654_w655_air_supply_envelopes(supply, cls, code):
    # (a coil 2 K above the 14 degC water reaches 16 degC air)
    unit = f"supply = {supply}, rise = 12 K, fan_power_ratio = 3 %, approach = 2 K, " \
        f"dew_point = 10 degC" + (f", ashrae_class = {cls}" if cls else "")
    text = COMPLETE.replace(ROOM, f"air room {{ {unit} }}")
    assert text != COMPLETE
    codes = {d.code for d in check(text).diagnostics}
    assert codes == ({code} if code else set()), codes


def test_w656_no_facility_and_no_chiller():
    a = COMPLETE.index("  facility water {")
    b = COMPLETE.index("  feeder mech {")
    d = only(COMPLETE[:a] + COMPLETE[b:], "W656")
    assert "no `facility` is declared" in d.message
    d = only(COMPLETE.replace(", chiller_cop = 6,", ","), "W656")
    # 8,760 - 6,000 = 2,760 h a year without free cooling
    assert "its chillers count as 0 W for the 2,760 h a year" in d.message
    assert not found(COMPLETE.replace("free_cooling = 6000 h, chiller_cop = 6,",
                                      "free_cooling = 8760 h,"), "W656")


def test_w656_free_cooling_without_its_fans():
    # 6,000 h of dry coolers declared, and no fan power for them: a warning, not a silent 0 W
    d = only(COMPLETE.replace(",\n                   rejection_fan_ratio = 2 %", ""), "W656")
    assert d.message == ("facility water `S.water` declares 6,000 h of free cooling but no "
                         "`rejection_fan_ratio`: the fans of its dry coolers (or cooling towers) "
                         "count as 0 W in the facility power and the PUE")
    assert d.span.start.line == COMPLETE[:COMPLETE.index("free_cooling")].count("\n") + 1



def test_w656_chillers_all_year_without_their_towers_fans():
    """Chillers all year (no free cooling) reject their heat through towers or dry coolers whose
    fans a water-cooled chiller's rated COP leaves out (ASHRAE 90.1 rates them apart; the
    stdlib's chiller is water-cooled): with no `rejection_fan_ratio` they count as 0 W, said.
    This had been taken as covered by the chillers' COP, no warning, though the same circuit
    with a ratio declared counts its fans in every hour: one of the two readings was wrong."""
    all_year = COMPLETE.replace("free_cooling = 6000 h, ", "free_cooling = 0 h, ")
    d = only(all_year.replace(",\n                   rejection_fan_ratio = 2 %", ""), "W656")
    assert d.message == ("facility water `S.water` declares no `rejection_fan_ratio`: the fans "
                         "of the cooling towers (or dry coolers) that reject its chillers' heat "
                         "count as 0 W in the facility power and the PUE")
    assert "`rejection_fan_ratio = 0 %` where the chillers' COP includes their condenser " \
           "fans" in d.hint
    # stated (0 % for air-cooled chillers whose COP includes their fans): no word
    assert not found(all_year.replace("rejection_fan_ratio = 2 %", "rejection_fan_ratio = 0 %"),
                     "W656")
    assert not found(all_year, "W656")


def test_w656_free_cooling_hours_unknown():
    # no `free_cooling` and no climate: the hours are unknown, taken as none (chillers all year,
    # 8,760 h), which the warning says; `free_cooling = 0 h` states it (no warning, above)
    d = only(COMPLETE.replace("free_cooling = 6000 h, ", ""), "W656")
    assert d.message == ("facility water `S.water` declares no `free_cooling` hours (and the site "
                         "no `climate`): its chillers are taken to carry all its heat, 8,760 h "
                         "a year")
    assert d.hint.startswith("declare `free_cooling = ... h`")
    # the same circuit with its hours declared needs no word
    assert not found(COMPLETE, "W656")


def test_w659_loop_redundancy_assumed():
    d = only(COMPLETE.replace(", redundancy = n_plus_1", ""), "W659")
    assert d.message == ("loop `S.rows[0].plates` declares no `redundancy`: its CDUs are sized "
                         "N+1 (one spare)")


def test_w625_rectifier_redundancy_assumed():
    text = COMPLETE.replace("rack R {", "rectifier Rect { module = 50 kW, efficiency = 96 % }\n"
                                        "rack R {").replace(
        "efficiency = 96 %, battery = LeadAcid", "rectifier = Rect, battery = LeadAcid")
    d = only(text, "W625")
    assert d.message == ("rectifier `Rect` of `S.rows[0].a` declares no `redundancy`: N+1 (one "
                         "spare module) is assumed")
    # 160 kW (side A alone) / 50 kW = 4 modules, + 1 spare
    f = {x.path: x for x in check(text).engineering.power.feeders}["S.rows[0].a"]
    assert f.rectifier_modules_needed == 5
    assert not found(text.replace("module = 50 kW,", "module = 50 kW, redundancy = n_plus_1,"),
                     "W625")


def test_w621_conductor_temperature_assumed():
    text = COMPLETE.replace("ampacity = 600 A\n    conductor_temperature = 90 degC\n",
                            "ampacity = 600 A\n")
    d = only(text, "W621")
    assert d.message == ("feeder `S.rows[0].a` declares no `conductor_temperature`: its "
                         "resistance, and so its voltage drop, is taken at 90 degC, the "
                         "continuous limit of XLPE/EPR insulation (IEC 60502-1)")
    # the drop is the same as at a declared 90 degC: the assumption is the stated worst case
    a = {x.path: x for x in check(text).engineering.power.feeders}["S.rows[0].a"]
    b = {x.path: x for x in check(COMPLETE).engineering.power.feeders}["S.rows[0].a"]
    assert a.voltage_drop_v == pytest.approx(b.voltage_drop_v)
    cooler = {x.path: x for x in check(COMPLETE.replace(
        "ampacity = 600 A\n    conductor_temperature = 90 degC",
        "ampacity = 600 A\n    conductor_temperature = 20 degC")).engineering.power.feeders}
    # R scales with 1 + 0.00393 (T - 20): at 20 degC the drop is 1 / 1.2751 of the 90 degC one
    assert cooler["S.rows[0].a"].voltage_drop_v == pytest.approx(
        b.voltage_drop_v / (1 + 0.00393 * 70), rel=1e-9)


def test_w628_network_power_on_no_feeder():
    text = COMPLETE.replace(", network = true\n               conductor_area", "\n"
                            "               conductor_area")
    d = only(text, "W628")
    # 8 leaves + 4 spines at 1 kW (copper links: no optics) = 12 kW, counted with no losses
    assert d.message == ("the network's 12 kW (12 switches of `S.fabric`) are on no declared "
                         "feeder: their power path is not checked and they count without "
                         "conversion losses")
    eng = check(text).engineering
    assert eng.power.network_unfed_w == pytest.approx(12_000)
    net = {x.path: x for x in check(COMPLETE).engineering.power.feeders}["S.net"]
    # on the feeder: 12 kW shared by 2 feeders, 6 kW each, 12 kW on one with the other failed;
    # its losses at 97 %: 12 x (1 / 0.97 - 1) = 0.371 kW on top of the rows' (unchanged)
    assert (net.load_w, net.network_w, net.normal_w, net.failover_w) == (12_000, 12_000,
                                                                         6_000, 12_000)
    with_net = check(COMPLETE).engineering.power.conversion_loss_w
    assert with_net - eng.power.conversion_loss_w == pytest.approx(12_000 * (1 / 0.97 - 1))


def test_w657_no_fan_power():
    d = only(COMPLETE.replace(ROOM, ROOM.replace("fan_power_ratio = 3 %, ", "")), "W657")
    assert "`S.rows[0].room` declares no `fan_power_ratio`" in d.message


def test_w658_loop_without_cdu():
    d = only(COMPLETE.replace(", cdu = Cdu, cdus = 2", ""), "W658")
    # per row: 4 racks x 30 kW = 120 kW of cold-plate heat
    assert "`S.rows[0].plates` declares no `cdu`" in d.message and "120 kW" in d.message


# ---- general -----------------------------------------------------------------------------------------
def test_w690_parts_without_power():
    text = COMPLETE.replace("nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }",
                            "nic N { ports = 1, port_speed = 400 Gb/s }").replace(
        "power = 10 kW, liquid_share", "liquid_share")
    d = only(text, "W690")
    # the host no longer declares its power: its NICs count, 2 rows x 4 racks x 4 hosts x 8 = 256
    assert d.message == "nic `N` declares no `power`: its 256 replica(s) count as 0 W in the IT load"
    # and the host's power is then the sum of its GPUs: 8 x 700 W = 5.6 kW; IT peak =
    # 32 hosts x 5.6 kW + 12 switches x 1 kW = 179.2 + 12 = 191.2 kW
    assert check(text).engineering.power.it_peak_w == pytest.approx(32 * 5600 + 12 * 1000)


def test_w606_switch_power_not_declared():
    text = COMPLETE.replace("switch Sw { ports = 64, port_speed = 400 Gb/s, power = 1 kW }",
                            "switch Sw { ports = 64, port_speed = 400 Gb/s }")
    d = only(text, "W606")
    # 32 hosts x 8 NIC ports = 256 ports over 8 rails: 32 per rail -> 1 leaf each = 8 leaves;
    # 8 x 32 up = 256 links / 64 = 4 spines: 12 switches, all counted as 0 W
    assert d.message == "switch power not declared: the network's 12 switches are counted as 0 W"
    assert check(text).engineering.network_w == 0.0
    assert check(COMPLETE).engineering.network_w == pytest.approx(12 * 1000)


# ---- fields no analysis reads -----------------------------------------------------------------------
@pytest.mark.parametrize("old, new, what", [
    ("power = 10 kW, liquid_share", "power = 10 kW, idle_power = 3 kW, liquid_share",
     "`idle_power`"),
    ("  rows = 2 x Row\n", "  rows = 2 x Row\n  units = 42 U\n", "`units` of site"),
    ("current = dc, voltage = 240 V, standard = HVDC240, side = A, capacity = 200 kW",
     "current = dc, voltage = 240 V, standard = HVDC240, side = A, capacity = 200 kW, "
     "power_factor = 95 %", "`power_factor` of DC feeder"),
])
def test_e630_fields_no_analysis_reads(old, new, what):
    text = COMPLETE.replace(old, new)
    assert text != COMPLETE
    (d,) = [d for d in check(text).diagnostics if d.is_error]
    assert d.code == "E630" and what in d.message


def test_e631_feeder_and_standard_disagree():
    text = COMPLETE.replace("current = dc, voltage = 240 V, standard = HVDC240",
                            "current = dc, voltage = 240 V, standard = AC400")
    errors = {d.code for d in check(text).diagnostics if d.is_error}
    assert "E631" in errors


def test_e632_rack_space():
    # 5 x 8 U = 40 U fits 42 U; 6 x 8 U = 48 U does not
    assert not found(COMPLETE.replace("hosts = 4 x H", "hosts = 5 x H"), "E632")
    d = only(COMPLETE.replace("hosts = 4 x H", "hosts = 6 x H"), "E632")
    assert d.message == "rack `S.rows[0].racks[0]` holds 48 U of equipment but is 42 U tall"


# ---- feeds and loop on racks ---------------------------------------------------------------------------
FEEDS = """
host H { power = 10 kW }
rack R(f: feeder, g: feeder) { hosts = 4 x H, feeds = [f, g] }
row Row {
  feeder a { current = dc, voltage = 400 V, side = A, capacity = 200 kW }
  feeder b { current = dc, voltage = 400 V, side = B, capacity = 200 kW }
  racks = 4 x R(f = a, g = b)
}
power Site {
  feeder main { current = ac, voltage = 400 V, phases = 3, capacity = 2 MW }
}
rack Storage { power = 8 kW, feeds = [Site.main] }
site S {
  rows = 3 x Row
  storage = 5 x Storage
  electrical = Site
}
"""


def test_feeds_decide_what_a_feeder_without_serves_supplies():
    feeders = {f.path: f for f in check(FEEDS).engineering.power.feeders}
    # each row's A and B feed its 4 racks (4 x 40 kW = 160 kW): a 2N pair, 80 kW each normally
    a, b = feeders["S.rows[0].a"], feeders["S.rows[0].b"]
    assert a.load_w == b.load_w == pytest.approx(160_000)
    assert a.normal_w == pytest.approx(80_000) and a.failover_w == pytest.approx(160_000)
    assert a.replicas == 3
    # the site's feeder supplies the 5 storage racks that name it: 5 x 8 kW = 40 kW
    assert feeders["S.electrical.main"].load_w == pytest.approx(40_000)
    codes = {d.code for d in check(FEEDS).diagnostics}
    assert not codes & {"W620", "W626", "E629"}


def test_a_feeder_nobody_names_serves_nothing():
    text = FEEDS.replace("feeds = [Site.main]", "")
    feeders = {f.path: f for f in check(text).engineering.power.feeders}
    assert feeders["S.electrical.main"].load_w == 0
    codes = {d.code for d in check(text).diagnostics}
    assert {"W620", "W626"} <= codes


def test_e629_feeds_contradict_serves():
    text = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
rack Storage(f: feeder) { power = 8 kW, feeds = [f] }
row Row {
  feeder a { current = ac, voltage = 400 V, phases = 3, capacity = 500 kW, serves = racks }
  racks = 4 x R
  storage = 1 x Storage(f = a)
}
site S { rows = 1 x Row }
"""
    (d,) = found(text, "E629")
    assert d.message.startswith("rack `S.rows[0].storage[0]` names feeder `S.rows[0].a` in "
                                "`feeds`, but `S.rows[0].a` serves `S.rows[0].racks[0]`")
    assert (d.span.start.line, d.span.start.column) == (4, 49)     # the `feeds` value


LOOPS = """
fluid Water { coolprop = "Water" }
cdu Cdu { capacity = 500 kW }
host H { power = 10 kW, liquid_share = 75 % }
rack R(l: loop) { hosts = 4 x H, loop = l }
row Row {
  loop plates { fluid = Water, supply = 35 degC, rise = 10 K, cdu = Cdu, cdus = 2 }
  racks = 4 x R(l = plates)
}
site S { rows = 2 x Row }
"""


def test_loop_named_by_racks():
    (loop,) = check(LOOPS).engineering.cooling.loops
    # 4 racks x 40 kW x 75 % = 120 kW per row's loop
    assert loop.heat_w == pytest.approx(120_000)
    assert not found(LOOPS, "E648") and not found(LOOPS, "W651")


def test_e648_loop_contradicts_serves():
    text = LOOPS.replace("cdus = 2 }", "cdus = 2, serves = other }").replace(
        "  racks = 4 x R(l = plates)\n", "  racks = 4 x R(l = plates)\n  other = 1 x Other\n").replace(
        "row Row {", "rack Other { hosts = 1 x H }\nrow Row {")
    (d,) = found(text, "E648")
    assert "names loop `S.rows[0].plates` in `loop`" in d.message


# ---- the stdlib fills what it can from data sheets ---------------------------------------------------
@pytest.mark.parametrize("gpu, kw, units", [
    ("A100_80GB", 6.5, 6),      # NVIDIA DGX A100 data sheet: 6.5 kW max, 6U
    ("H100_SXM", 10.2, 8),      # DGX H100: ~10.2 kW max, 8U
    ("H800", 10.2, 8),          # DGX H800: ~10.2 kW max, 8U
    ("H200", 10.2, 8),          # DGX H200: ~10.2 kW max, 8U
    ("B200", 14.3, 10),         # DGX B200: ~14.3 kW max, 10U
])
def test_hgx8_host_power_follows_the_gpu(gpu, kw, units):
    design = astral_dsl.loads(f"""
import stdlib.hardware {{ {gpu}, CX7_400G, HGX8 }}
host Node = HGX8(gpu = {gpu}, nic = CX7_400G)
site S {{ hosts = 1 x Node }}
""", name="hgx.astral")
    assert design.valid, design.diagnostics
    host = design.instance("S.hosts[0]")
    assert host.field("power").si == pytest.approx(kw * 1000)
    assert host.field("units").si == pytest.approx(units * 0.04445)      # 1 U = 44.45 mm


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).resolve().parents[1]
                                                        / "examples").glob("*.astral")))
def test_every_example_passes_strict(name):
    """The reference design and every example declare what the analyses need (with a source or
    an `[assumed]` comment): `astral check --strict --all-scenarios` finds nothing."""
    import json

    from test_cli import REPO, run

    proc = run(["check", f"examples/{name}", "--strict", "--all-scenarios", "--format", "json"],
               REPO)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, [f"{d['code']} {d['message']}" for d in doc["diagnostics"]]
    assert doc["valid"] is True and doc["diagnostics"] == []


def test_w656_with_partial_hours_says_they_are_on_both_sides():
    """Over a climate, the hours the heat rejection and the chillers share the heat are free
    cooling for the fans' warning and chiller hours for the chillers': the two said 5,867 h
    "of free cooling" and 6,098 h "without free cooling", which add up to 11,965 h of a
    8,760 h year. Each now splits its hours."""
    text = """gpu G { power = 700 W, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10.2 kW, liquid_share = 75 % }
rack R { hosts = 4 x H }
fluid Water { coolprop = "Water" }
facility W { supply = 30 degC, rise = 10 K, rejection = dry_cooler, rejection_approach = 8 K
             pump_head = 300 kPa, pump_efficiency = 80 % }
site S {
  racks = 20 x R
  auxiliary = 5 kW
  climate = "stdlib/climate/723170TYA.CSV"
  loop plates { fluid = Water, supply = 36 degC, rise = 10 K, pump_head = 200 kPa
                pump_efficiency = 70 %, facility = W }
}
"""
    ws = astral_dsl.compiles(text, name="partial.astral")
    w656 = sorted(d.message for d in astral_dsl.check(ws).diagnostics if d.code == "W656")
    (cy,) = astral_dsl.check(ws).engineering.cooling.facility.circuits
    free, partial, mech = (round(h) for h in (cy.free_h, cy.partial_h, cy.mechanical_h))
    assert partial > 0 and free + partial + mech == 8760
    g = "{:,}".format
    assert w656 == [
        f"facility water `W` declares no `chiller` (or `chiller_cop`): its chillers count as 0 W "
        f"for the {g(partial + mech)} h a year without full free cooling ({g(partial)} h sharing "
        f"the heat with the heat rejection, {g(mech)} h carrying all of it)",
        f"facility water `W` has {g(free + partial)} h of free cooling ({g(free)} h with the "
        f"chillers off, {g(partial)} h sharing the heat with them) but no `rejection_fan_ratio`: "
        f"the fans of its dry coolers (or cooling towers) count as 0 W in the facility power and "
        f"the PUE"]
