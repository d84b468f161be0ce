"""What a facility pays for, on one basis (issue: a twin you can trust, sections 3 and 4): the IT
at each part's `utilization`, conversion losses, CDUs, pumps, fans, chillers on all the heat that
ends in the water, and the dry coolers' fans, as an annual average and at the peak; switches on
their own feeders (`network = true`) with their liquid share on a loop. Every expected value is
computed by hand in the comments."""
from __future__ import annotations

import pytest

import astral_dsl

# 2 rows x 4 racks x 4 hosts x 10 kW = 320 kW; 8 leaves + 4 spines of 1 kW (copper: no optics)
BASE = """
import stdlib.network { DAC_400G_CR4 }
fluid Water { coolprop = "Water" }
cdu Cdu { capacity = 300 kW, max_flow = 500 L/min, power = 2 kW }
gpu G { power = 700 W, max_supply = 45 degC }
nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }
switch Sw { ports = 64, port_speed = 400 Gb/s, power = 1 kW @SWITCH@ }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW, liquid_share = 75 % }
rack R { hosts = 4 x H @RACK@ }
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s,
              medium = DAC_400G_CR4, length = 2 m }
  tier spine { switch = Sw, scope = site, down = 64 x 400 Gb/s, medium = DAC_400G_CR4,
               length = 2 m }
}
row Row {
  racks = 4 x R
  feeder a { current = dc, voltage = 400 V, side = A, capacity = 200 kW, efficiency = 96 %,
             serves = racks }
  feeder b { current = dc, voltage = 400 V, side = B, capacity = 200 kW, efficiency = 98 %,
             serves = racks }
  loop plates { fluid = Water, supply = 35 degC, rise = 10 K, cdu = Cdu, cdus = 2,
                redundancy = n_plus_1, pump_head = 150 kPa, pump_efficiency = 60 % }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 % }
}
site S {
  rows = 2 x Row
  fabric = F
  utilization = 75 %
  feeder net { current = dc, voltage = 400 V, capacity = 20 kW, efficiency = 95 %,
               network = true }
  air netroom { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, network = true }
  @SITE@
  facility water { free_cooling = 6000 h, chiller_cop = 5, rejection_fan_ratio = 2 % }
}
"""


def _eng(switch="", rack="", site=""):
    text = BASE.replace("@SWITCH@", switch).replace("@RACK@", rack).replace("@SITE@", site)
    ws = astral_dsl.compiles(text, name="facility.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    checked = astral_dsl.check(ws)
    assert checked.valid, [(d.code, d.message) for d in checked.diagnostics if d.is_error]
    return checked.engineering, checked.diagnostics


@pytest.fixture(scope="module")
def base():
    return _eng()[0]


def test_every_component_on_the_annual_average(base):
    # IT: 320 kW x 75 % + 12 kW switches (full power) = 252 kW
    # losses: each row's feeders share 160 kW (80 kW each), at 75 %: 60 kW each;
    #   2 x 60 x (1/0.96 - 1) + 2 x 60 x (1/0.98 - 1) = 5.0 + 2.449 = 7.449 kW;
    #   the switches' feeder: 12 x (1/0.95 - 1) = 0.632 kW -> 8.081 kW
    # CDUs: 2 per row, N+1: 1 running x 2 kW x 2 rows = 4 kW
    # pumps: V = 120 kW / (rho cp 10 K) per row, x 150 kPa / 0.6, all year
    # fans: 3 % of the average air heat: rows 25 % x 240 kW = 60 kW, switches 12 kW -> 2.16 kW
    # water: 252 + 8.081 + 4 + pumps + 2.16; chillers: water / 5 x 2,760 / 8,760;
    # dry coolers: 2 % x (water + chillers)
    c = base.cooling
    avg = c.average
    assert avg.it_w == pytest.approx(252_000)
    losses = 2 * 60_000 * (1 / 0.96 - 1) + 2 * 60_000 * (1 / 0.98 - 1) + 12_000 * (1 / 0.95 - 1)
    assert avg.losses_w == pytest.approx(losses)
    assert avg.cdus_w == pytest.approx(4_000)
    (loop,) = c.loops
    assert avg.pumps_w == pytest.approx(2 * loop.flow_m3s * 150_000 / 0.6)
    assert avg.fans_w == pytest.approx(0.03 * (0.25 * 240_000 + 12_000))
    water = 252_000 + losses + 4_000 + avg.pumps_w + avg.fans_w
    assert avg.chillers_w == pytest.approx(water / 5 * 2760 / 8760)
    assert avg.rejection_w == pytest.approx(0.02 * (water + avg.chillers_w))
    # no transformer declared (W630): 0.47 % of everything the site draws (99.53 %, the DOE
    # minimum for a 2,500 kVA liquid-immersed transformer at half load)
    site = water + avg.chillers_w + avg.rejection_w
    assert avg.transformers_w == pytest.approx(site * (1 / 0.9953 - 1))
    assert c.facility_w == pytest.approx(site / 0.9953)
    assert c.pue == pytest.approx(c.facility_w / 252_000)


def test_the_peak_the_utility_connection_supplies(base):
    # at full load on the hottest hour: IT 332 kW; losses at the peak shares (80 kW per row
    # feeder): 2 x 80 x (1/0.96 - 1) + 2 x 80 x (1/0.98 - 1) + 12 x (1/0.95 - 1) = 10.564 kW;
    # fans on the peak air heat 80 + 12 kW: 2.76 kW; chillers on all the water's heat / 5;
    # dry coolers 2 % of water + chillers
    peak = base.cooling.peak
    losses = 2 * 80_000 * (1 / 0.96 - 1) + 2 * 80_000 * (1 / 0.98 - 1) + 12_000 * (1 / 0.95 - 1)
    assert peak.it_w == pytest.approx(332_000)
    assert peak.losses_w == pytest.approx(losses)
    assert peak.fans_w == pytest.approx(0.03 * 92_000)
    water = 332_000 + losses + 4_000 + peak.pumps_w + 0.03 * 92_000
    assert peak.chillers_w == pytest.approx(water / 5)
    assert peak.total_w == pytest.approx(water * 1.2 * 1.02 / 0.9953)     # and the transformer


def test_utilization_on_a_rack_reaches_the_site_and_the_pue():
    # every rack at 50 % inside the 75 % site: hosts 320 kW x 50 % = 160 kW, + 12 kW switches
    eng, _ = _eng(rack=", utilization = 50 %")
    assert eng.power.it_average_w == pytest.approx(172_000)
    levels = {(lv.kind, lv.path): lv for lv in eng.power.levels}
    assert levels[("rack", "S.rows[0].racks[0]")].average_w == pytest.approx(20_000)
    assert levels[("host", "S.rows[0].racks[0].hosts[0]")].average_w == pytest.approx(5_000)
    assert levels[("site", "S")].average_w == pytest.approx(160_000)
    # losses at the racks' 50 %: 2 x 40 x (1/0.96 - 1) + 2 x 40 x (1/0.98 - 1) + 0.632 kW
    assert eng.power.conversion_loss_w == pytest.approx(
        2 * 40_000 * (1 / 0.96 - 1) + 2 * 40_000 * (1 / 0.98 - 1) + 12_000 * (1 / 0.95 - 1))
    # the rooms' fans on 25 % x 160 kW = 40 kW, the switches' room on 12 kW
    assert eng.cooling.average.fans_w == pytest.approx(0.03 * (40_000 + 12_000))
    assert eng.cooling.pue == pytest.approx(eng.cooling.facility_w / 172_000)


def test_utilization_on_some_parts_only():
    # one of the two row templates at 40 %, the other at the site's 75 %:
    #   160 x 75 % + 160 x 40 % = 184 kW of hosts + 12 kW
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", "").replace("@SITE@", "").replace(
        "row Row {", "row Slow = Row { utilization = 40 % }\nrow Row {", 1).replace(
        "rows = 2 x Row", "rows = [Row, Slow]")
    ws = astral_dsl.compiles(text, name="facility.astral")
    design = ws.design
    eng = astral_dsl.check(ws).engineering
    assert eng.power.it_average_w == pytest.approx(184_000 + 12_000)


def test_liquid_cooled_switches_send_their_share_to_a_loop():
    # 50 % of each switch's own 1 kW on cold plates: 6 kW of the 12 kW to a loop with
    # `network = true`, 6 kW to the switch room's air
    loop = ("loop netplates { fluid = Water, supply = 35 degC, rise = 10 K, network = true, "
            "pump_head = 150 kPa, pump_efficiency = 60 %, cdu = Cdu, cdus = 2, "
            "redundancy = n_plus_1 }")
    eng, diags = _eng(switch=", liquid_share = 50 %", site=loop)
    assert not [d for d in diags if d.code == "W647"]
    loops = {lp.path: lp for lp in eng.cooling.loops}
    assert loops["S.netplates"].heat_w == pytest.approx(6_000)
    assert loops["S.netplates"].network_heat_w == pytest.approx(6_000)
    air = {a.path: a for a in eng.cooling.air}
    assert air["S.netroom"].heat_w == pytest.approx(6_000)
    # liquid: 75 % of 320 kW + 6 kW; air: the rest of 332 kW
    assert eng.cooling.liquid_heat_w == pytest.approx(246_000)
    assert eng.cooling.air_heat_w == pytest.approx(86_000)


def test_liquid_cooled_switches_with_no_loop_are_a_warning():
    _, diags = _eng(switch=", liquid_share = 50 %")
    (w,) = [d for d in diags if d.code == "W647"]
    assert w.message == ("the switches of `S.fabric` make 6 kW of cold-plate heat that no loop "
                         "removes")


def test_switches_on_their_feeder_get_its_checks():
    # 12 kW on a 10 kW feeder: E620 (it carries 12 / 0.95 = 12.632 kW through its efficiency)
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", "").replace("@SITE@", "").replace(
        "capacity = 20 kW, efficiency = 95 %", "capacity = 10 kW, efficiency = 95 %")
    ws = astral_dsl.compiles(text, name="facility.astral")
    design = ws.design
    (e,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "E620"]
    assert e.message.startswith("feeder `S.net` carries 12.632 kW in normal operation")


def test_no_cooling_no_pue():
    # 8 racks x 40 kW = 320 kW peak, 160 kW at 50 %: no cooling, no losses declared
    text = "host H { power = 10 kW }\nrack R { hosts = 4 x H }\n" \
        "site S { racks = 8 x R, utilization = 50 % }\n"
    eng = astral_dsl.check(astral_dsl.compiles(text, name="bare.astral")).engineering
    assert eng.cooling.pue is None
    assert eng.cooling.facility_w == pytest.approx(160_000)
    assert eng.cooling.peak.total_w == pytest.approx(320_000)


def test_utilization_stated_below_the_site_needs_no_site_figure():
    # every rack states its own: nothing is taken at its peak, no W627
    eng, diags = _eng(rack=", utilization = 50 %")
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", ", utilization = 50 %").replace(
        "@SITE@", "").replace("  utilization = 75 %\n", "")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="facility.astral"))
    assert not [d for d in checked.diagnostics if d.code == "W627"]
    assert checked.engineering.power.it_average_w == pytest.approx(eng.power.it_average_w)


def test_w627_says_how_much_load_is_taken_at_its_peak():
    # one row states 40 %, the other nothing (and the site nothing): that row's 160 kW count at
    # their peak, and the warning says so
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", "").replace("@SITE@", "").replace(
        "row Row {", "row Slow = Row { utilization = 40 % }\nrow Row {", 1).replace(
        "rows = 2 x Row", "rows = [Row, Slow]").replace("  utilization = 75 %\n", "")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="facility.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W627"]
    assert w.message == ("site `S` declares no `utilization` for 160 kW of its IT load (nor do "
                         "the parts inside it): the average IT load (facility power, PUE) is "
                         "taken as the peak there")
    assert checked.engineering.power.it_average_w == pytest.approx(160_000 + 64_000 + 12_000)


def test_a_loop_for_the_switches_only_cools_no_rack():
    # a `network = true` loop without `serves` takes the switches' share only: without the
    # rows' loops the racks' 240 kW of cold-plate heat still has no path out (W651)
    loop = ("loop netplates { fluid = Water, supply = 35 degC, rise = 10 K, network = true, "
            "pump_head = 150 kPa, pump_efficiency = 60 %, cdu = Cdu, cdus = 2, "
            "redundancy = n_plus_1 }")
    text = BASE.replace("@SWITCH@", ", liquid_share = 50 %").replace("@RACK@", "").replace(
        "@SITE@", loop).replace("""  loop plates { fluid = Water, supply = 35 degC, rise = 10 K, cdu = Cdu, cdus = 2,
                redundancy = n_plus_1, pump_head = 150 kPa, pump_efficiency = 60 % }
""", "")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="facility.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W651"]
    assert w.message.startswith("240 kW of cold-plate heat (8 rack(s)")


def test_utilization_where_it_cannot_be_stated_says_where_it_can():
    design = astral_dsl.loads("host H { power = 10 kW, utilization = 50 % }\n"
                              "rack R { hosts = 4 x H }\nsite S { racks = 2 x R }\n",
                              name="hostu.astral")
    (e,) = [d for d in design.diagnostics if d.is_error]
    assert (e.code, e.message) == ("E203", "a host has no field `utilization`")
    assert e.hint == "`utilization` is stated on a rack, row, block, pod, hall or site"


def test_facility_water_below_freezing_is_e646_with_a_hint_and_no_empty_w648():
    # supply -30 degC, rise 10 K: water at its mean -25 degC is ice. E646 says so, on the
    # circuit, with a hint; W648 ("declares no ...") had followed with an empty list of fields
    # ("declares no : its pumps ..."): the circuit declares them all.
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", "").replace("@SITE@", "").replace(
        "facility water { free_cooling", "facility water { supply = -30 degC, rise = 10 K, "
        "pump_head = 200 kPa, pump_efficiency = 75 %, free_cooling")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="ice.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E646"]
    assert e.message.startswith("fluid properties of facility water `S.water` at -25 degC")
    assert e.span is not None and "glycol" in e.hint
    assert not [d for d in checked.diagnostics if d.code == "W648"]


def test_a_loop_whose_coolant_boils_is_e646_with_a_hint():
    text = BASE.replace("@SWITCH@", "").replace("@RACK@", "").replace("@SITE@", "").replace(
        "loop plates { fluid = Water, supply = 35 degC", "loop plates { fluid = Water, "
        "supply = 150 degC")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="boil.astral"))
    e = next(d for d in checked.diagnostics if d.code == "E646")
    assert "is not liquid at 155 degC" in e.message and e.span is not None
    assert e.hint.startswith("keep its supply and return where the fluid is liquid")


_CARNOT = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 8 x R
  climate = "weather.csv"
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, approach = 10 K,
             dew_point = 10 degC }
  facility water { supply = 14 degC, rise = 6 K, chiller_cop = @COP@, rejection = dry_cooler,
                   rejection_approach = 8 K, rejection_fan_ratio = 2 %, pump_head = 100 kPa,
                   pump_efficiency = 75 % }
}
"""


def test_a_chiller_cop_above_the_carnot_limit_is_w646(tmp_path):
    # a day of 12 hours at 10 degC and 12 at 30 degC (dew point 5 degC): the condenser water
    # is 18 or 38 degC (8 K approach) against 14 degC chilled water. Carnot: 287.15 / (18 - 14)
    # = 71.79 in the mild hours, 287.15 / (38 - 14) = 11.96 in the hot ones: a COP of 20 is
    # above it 12 h of 24, 12 x 365 = 4,380 h a year; a COP of 6 is below it all year.
    rows = ['1,"TEST",XX,0.0,36.0,-80.0,0',
            "Date (MM/DD/YYYY),Time (HH:MM),Dry-bulb (C),Dew-point (C),Pressure (mbar)"]
    rows += [f"07/01/1999,{h:02d}:00,{10.0 if h <= 12 else 30.0:.1f},5.0,1013"
             for h in range(1, 25)]
    (tmp_path / "weather.csv").write_text("\n".join(rows) + "\n")

    def w646(cop):
        ws = astral_dsl.compiles(_CARNOT.replace("@COP@", cop), name="carnot.astral",
                                 root=tmp_path)
        return [d for d in astral_dsl.check(ws).diagnostics if d.code == "W646"]
    (w,) = w646("20")
    assert w.message == (
        "the chillers of facility water `S.water`: a constant COP of 20 is above the Carnot "
        "limit between its 14 degC water and the condenser water (the outdoor air plus the 8 K "
        "approach) 4,380 h a year, down to 11.96 at the hottest hour (38 degC): no chiller "
        "does, and their draw is understated")
    assert w.span.start.line == 9 and w.hint
    assert w646("6") == []


def test_a_chiller_model_rated_above_carnot_is_w646_without_a_climate():
    # rated 20 at 6.7 degC chilled and 29.4 degC condenser water: Carnot 279.85 / 22.7 = 12.33;
    # the stdlib's Centrifugal (6.28 there) is not reported
    text = _CARNOT.replace('  climate = "weather.csv"\n', "").replace(
        "chiller_cop = @COP@, rejection = dry_cooler,", "chiller = Magic, free_cooling = 3000 h,"
    ).replace("rejection_approach = 8 K, ", "")
    magic = "chiller Magic { cop = 20, rated_supply = 6.7 degC, rated_condenser = 29.4 degC }\n"
    checked = astral_dsl.check(astral_dsl.compiles(magic + text, name="magic.astral"))
    (w,) = [d for d in checked.diagnostics if d.code == "W646"]
    assert w.message.startswith("chiller `Magic` declares a COP of 20 at 6.7 degC chilled and "
                                "29.4 degC condenser water, above the Carnot limit of 12.33")
    assert w.span.start.line == 1
    stdlib = "import stdlib.cooling { Centrifugal }\n" + text.replace("Magic", "Centrifugal")
    checked = astral_dsl.check(astral_dsl.compiles(stdlib, name="centrifugal.astral"))
    assert not [d for d in checked.diagnostics if d.code == "W646"]


def test_each_rows_feeder_carries_its_own_rows_average_of_a_shared_rack():
    # one rack template R (4 x 10 kW) in row A at 90 % and in row B at 50 %, each row's feeder
    # serving its own 2 racks (80 kW peak): A's feeder carries 72 kW on average, B's 40 kW. At
    # 96 % and 90 %: 72 x (1 / 0.96 - 1) + 40 x (1 / 0.9 - 1) = 3,000 + 4,444.4 = 7,444.4 W of
    # conversion losses. Before, each feeder carried the rack's mean over both rows, 56 kW:
    # 2,333.3 + 6,222.2 = 8,555.6 W.
    rows = "".join(f"row {name} {{ racks = 2 x R, utilization = {u} %, feeder f {{ current = ac, "
                   f"voltage = 400 V, capacity = 1 MW, efficiency = {eff} %, serves = racks }} }}\n"
                   for name, u, eff in (("A", 90, 96), ("B", 50, 90)))
    text = "host H { power = 10 kW }\nrack R { hosts = 4 x H }\n" + rows + \
        "site S { a = 1 x A, b = 1 x B }\n"
    power = astral_dsl.check(astral_dsl.compiles(text, name="rows.astral")).engineering.power
    assert {f.path: f.average_w for f in power.feeders} == {
        "S.a[0].f": pytest.approx(72e3), "S.b[0].f": pytest.approx(40e3)}
    assert power.conversion_loss_w == pytest.approx(72e3 * (1 / 0.96 - 1) + 40e3 * (1 / 0.9 - 1))
    assert power.conversion_loss_w == pytest.approx(7444.44, abs=0.01)


def test_each_rows_loop_air_unit_and_circuit_carry_their_own_rows_average_of_a_shared_rack():
    # the same rack template R (4 x 10 kW, 80 % to cold plates) in row A at 90 % and in row B
    # at 50 %, each row's loop and air unit serving its own 2 racks and drawing on its own
    # circuit. A: loop 64 kW x 0.9 = 57.6 kW, air 16 kW x 0.9 = 14.4 kW, circuit WA 72 kW;
    # B: 32 kW, 8 kW, WB 40 kW. Before, each took the rack's mean over both rows (70 %): loops
    # 44.8 kW, air units 11.2 kW, both circuits 56 kW (the totals right, the split wrong).
    rows = "".join(
        f"row {n} {{ racks = 2 x R, utilization = {u} %\n"
        f"  loop l {{ fluid = Water, supply = 40 degC, rise = 10 K, serves = racks, "
        f"facility = W{n} }}\n"
        f"  air a {{ supply = 25 degC, rise = 12 K, serves = racks, facility = W{n} }} }}\n"
        f"facility W{n} {{ supply = 12 degC, rise = 6 K }}\n" for n, u in (("A", 90), ("B", 50)))
    text = 'fluid Water { coolprop = "Water" }\nhost H { power = 10 kW, liquid_share = 80 % }\n' \
        "rack R { hosts = 4 x H }\n" + rows + "site S { a = 1 x A, b = 1 x B }\n"
    cooling = astral_dsl.check(astral_dsl.compiles(text, name="rows.astral")).engineering.cooling
    assert {lp.path: lp.average_heat_w for lp in cooling.loops} == {
        "S.a[0].l": pytest.approx(57.6e3), "S.b[0].l": pytest.approx(32e3)}
    assert {a.path: a.average_heat_w for a in cooling.air} == {
        "S.a[0].a": pytest.approx(14.4e3), "S.b[0].a": pytest.approx(8e3)}
    assert {c.circuit.path: c.circuit.average_w for c in cooling.facility.circuits} == {
        "WA": pytest.approx(72e3), "WB": pytest.approx(40e3)}


def test_a_row_template_in_two_halls_draws_on_each_halls_circuit_at_its_utilization():
    # one row template (2 racks of 4 x 10 kW, 80 % to cold plates, its own loop) in hall HA at
    # 90 % and hall HB at 50 %, each hall declaring its own facility water: each circuit carries
    # one row's loop, 64 kW at the peak, 64 x 0.9 = 57.6 kW (WA) and 64 x 0.5 = 32 kW (WB) on
    # average. Before, both replicas of the loop drew on one hall's circuit (128 kW peak, 89.6 kW
    # average), the other's had none.
    halls = "".join(f"hall H{n} {{ rows = 1 x Row, utilization = {u} %, facility W{n} {{ "
                    f"supply = 30 degC, rise = 6 K }} }}\n" for n, u in (("A", 90), ("B", 50)))
    text = 'fluid Water { coolprop = "Water" }\nhost H { power = 10 kW, liquid_share = 80 % }\n' \
        "rack R { hosts = 4 x H }\nrow Row { racks = 2 x R\n" \
        "  loop l { fluid = Water, supply = 40 degC, rise = 10 K, serves = racks } }\n" + halls + \
        "site S { a = 1 x HA, b = 1 x HB }\n"
    cooling = astral_dsl.check(astral_dsl.compiles(text, name="halls.astral")).engineering.cooling
    assert {c.circuit.path: (c.circuit.average_w, c.circuit.peak_w)
            for c in cooling.facility.circuits} == {
        "S.a[0].WA": (pytest.approx(57.6e3), pytest.approx(64e3)),
        "S.b[0].WB": (pytest.approx(32e3), pytest.approx(64e3))}


def test_the_sites_auxiliaries_are_heat_in_its_circuits_and_the_size_table_says_so(base):
    # the building's lighting and services end up as heat in the facility water (the rooms are
    # air-cooled): one circuit, so 30 kW of `auxiliary` is 30 kW more heat in it, average and
    # peak; the size table's title had named only the losses as the circuits' share
    with_aux, _ = _eng(site="auxiliary = 30 kW")
    (before,), (after,) = base.cooling.facility.circuits, with_aux.cooling.facility.circuits
    assert after.circuit.average_w - before.circuit.average_w == pytest.approx(30_000)
    assert after.circuit.peak_w - before.circuit.peak_w == pytest.approx(30_000)
    from astral_dsl.outputs.size_facility import _circuits

    assert "their share of the losses and of the lighting and auxiliaries" in \
        _circuits(with_aux.cooling.facility)[0].title


def test_a_stdlib_air_units_rack_limit_is_reported_where_the_user_sets_it():
    """`air doors = RearDoor(rated = 40 kW)` on 40.8 kW racks: E644 pointed inside
    stdlib/cooling.astral (`max_rack_heat = rated`), which the user does not edit; it points at
    the unit in the user's file. Its hint said to raise the air rise, which the limit does not
    depend on."""
    text = """import stdlib.cooling { RearDoor }
host H { power = 10.2 kW }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  air doors = RearDoor(rated = 40 kW) { dew_point = 12 degC }
}
"""
    ws = astral_dsl.compiles(text, name="doors.astral")
    (e,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "E644"]
    assert (e.span.file, e.span.start.line) == ("doors.astral", 6)
    assert e.message == "a rack sends 40.8 kW to air, more than `S.doors` removes per rack " \
                        "(40 kW at a 12 K rise)"
    assert "air rise" not in e.hint and "`max_rack_heat`" in e.hint


def test_the_size_json_gives_an_air_units_limit_and_its_worst_rack_apart():
    """`max_rack_heat_kw` in `astral size --format json` (and the review's "max rack heat"
    column) held the most heat one rack sends to air, not the unit's `max_rack_heat`: rear
    doors rated 45 kW on 40.8 kW racks read 40.8, a room without a limit 0.0. The limit is
    `max_rack_heat_kw` (null without one), the worst rack `rack_air_heat_kw`."""
    from astral_dsl.outputs.size_json import air_json

    text = """import stdlib.cooling { RearDoor }
host H { power = 10.2 kW, liquid_share = 25 % }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  air doors = RearDoor(rated = 45 kW) { dew_point = 12 degC }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, dew_point = 12 degC }
}
"""
    eng = astral_dsl.check(astral_dsl.compiles(text, name="doors.astral")).engineering
    got = {a.path: air_json(a) for a in eng.cooling.air}
    assert (got["S.doors"]["max_rack_heat_kw"], got["S.doors"]["rack_air_heat_kw"]) == \
        (45.0, 30.6)                                     # 40.8 kW x 75 % to air
    assert (got["S.room"]["max_rack_heat_kw"], got["S.room"]["rack_air_heat_kw"]) == (None, 30.6)
