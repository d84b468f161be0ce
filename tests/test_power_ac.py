"""Three-phase feeders: current and voltage drop with the conductor's declared reactance
(IEC 60364-5-52 Annex G: dV = sqrt(3) * I * L * (R cos phi + X sin phi))."""
from __future__ import annotations

import math

import pytest

import astral_dsl
from astral_dsl.analyses.engineering import analyse

DESIGN = """\
host H { power = 10 kW }
rack R { hosts = 1 x H }
row W {
  racks = 10 x R
  feeder b {
    current = ac, voltage = 400 V, phases = 3, power_factor = 90 %, capacity = 200 kW
    conductor_area = 95 mm^2, length = 60 m, conductor_temperature = 70 degC
    reactance = 0.08 ohm/km, max_voltage_drop = 1 %
    serves = racks
  }
}
site S { rows = 1 x W }
"""


def test_three_phase_drop_with_reactance():
    d = astral_dsl.loads(DESIGN, name="ac.astral")
    assert d.valid, d.diagnostics
    eng = analyse(d)
    f = eng.power.feeders[0]
    # I = 100 kW / (sqrt(3) * 400 V * 0.9) = 160.375 A
    current = 100e3 / (math.sqrt(3) * 400 * 0.9)
    assert f.current_a == pytest.approx(current)
    # copper at 70 degC: rho = 0.01724 * (1 + 0.00393 * 50) = 0.020628 ohm mm^2/m
    r = 0.01724e-6 * (1 + 0.00393 * 50) / 95e-6          # ohm/m
    x = 0.08e-3                                           # ohm/m
    drop = math.sqrt(3) * current * 60 * (r * 0.9 + x * math.sin(math.acos(0.9)))
    assert f.voltage_drop_v == pytest.approx(drop)        # 3.84 V
    assert f.drop_ratio == pytest.approx(drop / 400)      # 0.96 %: within the declared 1 %
    assert not [x for x in eng.diagnostics if x.code == "E622"]


def test_reactance_can_push_the_drop_over_the_limit():
    d = astral_dsl.loads(DESIGN.replace("0.08 ohm/km", "0.5 ohm/km"), name="ac.astral")
    codes = [x.code for x in analyse(d).diagnostics if x.is_error]
    assert codes == ["E622"]
