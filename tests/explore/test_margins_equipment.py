"""The margins of a feeder's and a loop's equipment, as their checks measure them: batteries
(E623), rectifier modules (E627), ampacity (E625), voltage drop (E622) and coolant flow (E643,
E641), in the check's units, against numbers worked by hand."""
from __future__ import annotations

import textwrap

import pytest

from astral_dsl.explore import margins
from astral_dsl.outputs.margins import render

DESIGN = """
import stdlib.power { Rectifier, LeadAcid }
param n = 2
fluid Water { coolprop = "Water" }
cdu C { capacity = 100 kW, max_flow = 150 L/min }
gpu G { power = 1000 W, source = "test" }
host H { gpus = 10 x G, power = 10 kW, liquid_share = 80 %, source = "test" }
rack R { hosts = 10 x H }
site S {
  racks = n x R
  utilization = 100 %
  feeder hvdc {
    current = dc, voltage = 240 V, capacity = 1200 kW, serves = racks, efficiency = 100 %
    rectifier = Rectifier(module = 50 kW) { modules = 8 }
    battery = LeadAcid(autonomy = 15 min) { string_capacity = 500 Ah, strings = 4 }
    conductor_area = 300 mm^2, conductors = 2, material = copper, length = 20 m
    ampacity = 600 A, conductor_temperature = 70 degC, max_voltage_drop = 2 %
  }
  loop plates { fluid = Water, supply = 30 degC, rise = 10 K, cdu = C, cdus = 3
                redundancy = n_plus_1, max_flow = 300 L/min }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 0 %, dew_point = 12 degC }
}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("equipment") / "eq.astral"
    path.write_text(textwrap.dedent(DESIGN))
    return margins.analyse(str(path))


def _of(report, kind):
    found = [m for m in report.margins if m.limit.kind == kind]
    assert len(found) == 1, kind
    return found[0]


def _high(m):
    (r,) = m.ranges
    assert r.param == "n"
    return r.high


# n = 2 racks of 10 hosts x 10 kW: 200 kW on the feeder. Its current is taken at the batteries'
# end of discharge, 120 cells x 1.75 V = 210 V: 200 kW / 210 V = 952.381 A.


def test_battery_margin_is_ieee_485_ah(report):
    m = _of(report, "battery")
    # 952.381 A x 0.25 h x aging 1.25 x design 1.1 x temperature 1.0 = 327.381 Ah, against
    # 4 strings x 500 Ah = 2,000 Ah
    assert m.limit.unit == "Ah"
    assert m.limit.lhs / 3600 == pytest.approx(200e3 / 210 * 0.25 * 1.25 * 1.1)
    assert m.limit.rhs / 3600 == pytest.approx(2000)
    # 2,000 Ah hold n x 100 kW while n x 100 kW / 210 V x 0.34375 h <= 2,000 Ah: n <= 12.2
    assert _high(m) == 12
    assert m.limit.line == 15          # `strings`, where E623 points (the text opens with \n)


def test_rectifier_margin_counts_modules(report):
    m = _of(report, "rectifier")
    # load 200 kW + the recharge 0.1 C x 2,000 Ah x 240 V = 48 kW: ceil(248 / 50) + 1 spare = 6
    # of the 8 installed
    assert (m.limit.lhs, m.limit.rhs, m.limit.unit) == (6, 8, "")
    # n = 3: ceil(348 / 50) + 1 = 8 holds; n = 4: ceil(448 / 50) + 1 = 10 does not
    assert _high(m) == 3


def test_ampacity_margin_is_amperes_per_set(report):
    m = _of(report, "ampacity")
    # 952.381 A over 2 conductor sets = 476.19 A against 600 A
    assert m.limit.unit == "A"
    assert m.limit.lhs == pytest.approx(200e3 / 210 / 2) and m.limit.rhs == 600
    # 476.19 A x n / 2 <= 600 A: n <= 2.52
    assert _high(m) == 2


def test_voltage_drop_margin_is_a_share_of_the_voltage(report):
    m = _of(report, "voltage_drop")
    # copper at 70 degC: 0.017241 x (1 + 0.00393 x 50) = 0.0206289 ohm mm^2/m; out and back:
    # 2 x 476.19 A x 20 m x 0.0206289 / 300 mm^2 = 1.30977 V, 0.6237 % of 210 V, against 2 %
    drop = 2 * (200e3 / 210 / 2) * 20 * 0.017241e-6 * (1 + 0.00393 * 50) / 300e-6
    assert m.limit.unit == "%"
    assert m.limit.lhs == pytest.approx(drop / 210) and m.limit.rhs == pytest.approx(0.02)
    # 0.31186 % x n <= 2 %: n <= 6.41
    assert _high(m) == 6
    # in the readable units of the check that fires (E622: 1.31 V of 210 V), not to 4 decimals
    assert m.limit.note.startswith("1.31 V of the 210 V it carries its current at")


def test_flow_margins_in_litres_per_minute(report):
    # 200 kW x 80 % = 160 kW of cold-plate heat at a 10 K rise, water at 35 degC (IAPWS-95:
    # 994.03 kg/m^3, 4.1793 kJ/kg/K): 160 kW / (994.03 x 4179.3 x 10) = 231.08 L/min
    flow = 160e3 / (994.03 * 4179.3 * 10) * 60000
    loop = _of(report, "flow")
    assert loop.limit.unit == "L/min"
    assert loop.limit.lhs * 60000 == pytest.approx(flow, rel=1e-4)
    assert loop.limit.rhs * 60000 == pytest.approx(300)
    # 115.54 L/min x n <= 300 L/min: n <= 2.6
    assert _high(loop) == 2
    cdus = _of(report, "cdu_flow")
    assert cdus.limit.rhs * 60000 == pytest.approx(3 * 150)        # 3 CDUs x 150 L/min
    assert _high(cdus) == 3                                        # n <= 3.9
    failed = _of(report, "cdu_flow_n1")
    # N+1: with one CDU failed, 2 x 150 = 300 L/min
    assert failed.limit.rhs * 60000 == pytest.approx(300) and _high(failed) == 2
    assert failed.limit.label == "coolant flow through the CDUs of loop S.plates with one " \
                                 "CDU failed"


def test_the_text_shows_them_in_the_checks_units(report):
    text = render(report)
    # about four significant digits, thousands grouped, as the other outputs write them
    assert "battery capacity of feeder S.hvdc (IEEE 485, for its autonomy): 327.4 Ah <= " \
           "2,000 Ah (margin 1,672.6 Ah, 83.6 %; holds)" in text
    assert "rectifier modules of feeder S.hvdc (needed <= installed): 6 <= 8 (margin 2, " \
           "25.0 %; holds)" in text
    assert "voltage drop of feeder S.hvdc: 0.6237 % <= 2 % (margin 1.376 %" in text


def test_readable_voltage_is_to_the_hundredth_with_thousands_grouped():
    from astral_dsl.units import readable

    assert [readable.voltage(v) for v in (1.30977, 198.0, 1000.0, 0.004)] == \
        ["1.31 V", "198 V", "1,000 V", "0 V"]
