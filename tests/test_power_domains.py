"""The domains of the power chain's values: a power factor below any plausible load's (W632),
an AC feeder that is neither single- nor three-phase (E636), and E309's hint on a value outside
a field's declared range."""
from __future__ import annotations

import pytest

import astral_dsl

SITE = """
host H {{ power = 10 kW }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 2 x R
  transformer mv {{
    capacity = 1000 kVA, count = 1, no_load_loss = 0.2 kW, load_loss = 1 kW{transformer}
  }}
  feeder a {{
    current = ac, voltage = 400 V, phases = {phases}, capacity = 100 kW, efficiency = 97 %
    power_factor = {pf}, serves = racks
    conductor_area = 95 mm^2, length = 20 m, ampacity = 300 A, material = copper
    conductor_temperature = 70 degC, reactance = 0.08 ohm/km
  }}
}}
"""


def _check(pf="95 %", phases="3", transformer=""):
    design = astral_dsl.compiles(SITE.format(pf=pf, phases=phases, transformer=transformer),
                                 name="pf.astral")
    return astral_dsl.check(design)


def _codes(checked, code):
    return [d for d in checked.diagnostics if d.code == code]


def test_a_power_factor_of_one_percent_warns():
    checked = _check(pf="1 %")
    (w,) = _codes(checked, "W632")
    assert w.span is not None and w.span.start.line == 11 and w.hint   # the text opens with \n
    # 1 / 0.01: its current is 100 times that at power factor 1
    assert "`S.a` declares a power factor of 0.01" in w.message and "100 times" in w.message
    (f,) = checked.engineering.power.feeders
    # the value is used as declared: 80 kW / 0.97 / (sqrt(3) x 400 V x 0.01) = 11,904.4 A
    assert f.current_a == pytest.approx(80e3 / 0.97 / (3 ** 0.5 * 400 * 0.01))


def test_a_transformer_power_factor_below_half_warns_and_a_plausible_one_does_not():
    (w,) = _codes(_check(transformer=", power_factor = 40 %"), "W632")
    assert "`S.mv` declares a power factor of 0.4" in w.message and "2.5 times" in w.message
    assert not _codes(_check(pf="50 %", transformer=", power_factor = 85 %"), "W632")


def test_power_factor_outside_zero_to_one_is_an_error():
    for pf, code in (("0 %", "E315"), ("110 %", "E309")):
        design = astral_dsl.loads(SITE.format(pf=pf, phases="3", transformer=""),
                                  name="pf.astral")
        assert [d.code for d in design.diagnostics if d.is_error] == [code]


def test_two_phases_is_an_error_with_a_hint():
    (e,) = _codes(_check(phases="2"), "E636")
    assert e.is_error and e.span.start.line == 10
    assert "`phases = 1`" in e.hint
    for phases in ("1", "3"):
        assert not _codes(_check(phases=phases), "E636")


def test_e309_says_the_range_and_the_percent_slip():
    design = astral_dsl.loads(SITE.format(pf="95", phases="3", transformer=""),
                              name="pf.astral")
    (e,) = [d for d in design.diagnostics if d.code == "E309"]
    assert e.message == "`power_factor` must be at most 100 %, not 95"
    assert e.hint.startswith("a plain number is a fraction: write `95 %` for a percent")
    design = astral_dsl.loads(SITE.format(pf="95 %", phases="4", transformer=""),
                              name="pf.astral")
    (e,) = [d for d in design.diagnostics if d.code == "E309"]
    assert e.hint.startswith("it takes values from 1 to 3")


BATTERY_SITE = """
battery Bat {{ autonomy = 10 min, chemistry = {chem}, cells = 120, end_voltage = 1.75 V,
              aging_factor = 1.25, design_factor = 1.1, temperature_factor = {tf},
              recharge_rate = {rate} }}
rectifier Rect {{ module = 50 kW, redundancy = n_plus_1, efficiency = 97 %,
                 no_load_loss = {no_load} }}
host H {{ power = 10 kW }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 4 x R
  feeder a {{ current = dc, voltage = {bus}, capacity = 200 kW, rectifier = Rect, battery = Bat,
             serves = racks }}
  feeder b {{ current = dc, voltage = {bus}, capacity = 200 kW, rectifier = Rect, battery = Bat,
             serves = racks }}
}}
"""


def _battery(chem="lead_acid", tf="1", rate="0.1", no_load="1 %", bus="240 V"):
    text = BATTERY_SITE.format(chem=chem, tf=tf, rate=rate, no_load=no_load, bus=bus)
    return astral_dsl.check(astral_dsl.compiles(text, name="bat.astral"))


def test_a_no_load_loss_of_a_whole_module_is_e316_with_its_source():
    # 100 % had every installed module draw its whole rating all year (the colleague's audit)
    checked = _battery(no_load="100 %")
    (e,) = _codes(checked, "E316")
    assert "`no_load_loss`" in e.message and e.span is not None and e.span.start.line == 6
    assert "at most 10 %" in e.hint and "White Paper 113" in e.hint
    assert not _codes(_battery(no_load="10 %"), "E316")


def test_a_recharge_faster_than_the_cells_take_warns_w633_once_per_battery():
    # 5 C on lead-acid (at most 0.3 C): one W633 for the battery, not one per feeder
    checked = _battery(rate="5")
    (w,) = _codes(checked, "W633")
    assert "5 C" in w.message and "lead-acid" in w.message and "0.3 C" in w.message
    assert w.span is not None and w.span.start.line == 4 and "at most 0.3 C" in w.hint
    # lithium-ion takes 1 C: 0.5 C passes there, 0.3 C passes lead-acid; above 10 C, E316
    assert not _codes(_battery(chem="lithium_ion", rate="0.5"), "W633")
    assert not _codes(_battery(rate="0.3"), "W633")
    assert [w.message for w in _codes(_battery(chem="lithium_ion", rate="2"), "W633")] == [
        "battery `Bat` recharges at 2 C, faster than lithium-ion cells take (1 C): the rectifier "
        "modules of its feeders are sized for that recharge on top of the load"]
    assert _codes(_battery(rate="20"), "E316")


def test_a_string_with_too_few_cells_for_its_bus_warns_w633_per_feeder():
    # 120 lead-acid cells (a 240 V string) on an 800 V bus: 6.67 V a cell, which no cell is
    # charged at; the current was sized at their 210 V end of discharge with nothing said
    checked = _battery(bus="800 V")
    ws = _codes(checked, "W633")
    assert [w.message for w in ws] == [
        f"battery `Bat` of `S.{f}` has 120 cells on its 800 V bus, 6.67 V a cell: more than "
        f"lead-acid cells are charged at (2.4 V), and a string floats at its bus's voltage; its "
        f"end of discharge (210 V) and the current and Ah sized at it are not the bus's"
        for f in ("a", "b")]
    # at the feeder's `battery`, where the design gives the string its cells
    assert ws[0].span.start.line == 11 and "about 356 lead-acid cells" in ws[0].hint
    # 288 V is 120 x 2.4 V, the top of 240 V HVDC's range: held; lithium-ion cells take 4.2 V
    assert not _codes(_battery(bus="288 V"), "W633")
    assert _codes(_battery(bus="289 V"), "W633")
    assert not _codes(_battery(chem="lithium_ion", bus="500 V"), "W633")
    (li, _) = _codes(_battery(chem="lithium_ion", bus="800 V"), "W633")
    assert "lithium-ion cells are charged at (4.2 V)" in li.message
    assert "float voltage (their data sheet)" in li.hint


def test_a_temperature_factor_below_one_warns_w633_citing_ieee_485():
    checked = _battery(tf="0.8")
    (w,) = _codes(checked, "W633")
    assert "IEEE Std 485" in w.message and "0.8" in w.message
    assert w.span is not None and w.span.start.line == 3 and "temperature_factor = 1" in w.hint
    assert not _codes(_battery(tf="1.11"), "W633")     # IEEE 485: 1.11 at 15.6 degC (60 degF)
