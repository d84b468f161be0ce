"""The plant formulas (astral_dsl/analyses/formulas/plant.py) against hand-computed values, and
their refusals of meaningless inputs."""
from __future__ import annotations

import math

import pytest

from astral_dsl.analyses import formulas


def test_pressure_at_altitude():
    # ASHRAE Fundamentals (2017) ch. 1: 101.325 kPa at sea level, 89.88 kPa at 1,000 m
    assert formulas.pressure_at_altitude(0) == 101325.0
    assert formulas.pressure_at_altitude(1000) == pytest.approx(89875, abs=1)
    # 273 m (Greensboro): 101,325 x (1 - 2.25577e-5 x 273)^5.2559 = 98,088 Pa
    assert formulas.pressure_at_altitude(273) == pytest.approx(98088, abs=1)
    assert formulas.pressure_at_altitude(-430) > 101325          # the Dead Sea


def test_humid_air_flow():
    # 1 kW at 11.111 K with v = 1 / 1.2 m^3/kg and dh = 1,006 x 11.111 J/kg: the sea-level rule's
    # 268.4 m^3/h (formulas.air_flow)
    flow = formulas.humid_air_flow(1000, 1 / 1.2, 1006 * 100 / 9)
    assert flow * 3600 == pytest.approx(268.4, abs=0.05)
    with pytest.raises(ValueError):
        formulas.humid_air_flow(1000, 0.85, 0)


@pytest.mark.parametrize("leaving, mode, share", [
    (15, "integrated", 0.0), (20, "integrated", 0.0),          # at or below the supply: free
    (22.5, "integrated", 0.25), (29.99, "integrated", 0.999),  # (x - 20) / (30 - 20)
    (30, "integrated", 1.0), (35, "integrated", 1.0),          # from the return up: all of it
    (22.5, "switchover", 1.0), (20, "switchover", 0.0),
    (10, "none", 1.0),
])
def test_chiller_share(leaving, mode, share):
    assert formulas.chiller_share(leaving, 20, 30, mode) == pytest.approx(share)


def test_chiller_share_refuses():
    with pytest.raises(ValueError):
        formulas.chiller_share(25, 20, 20)                     # no rise
    with pytest.raises(ValueError):
        formulas.chiller_share(25, 20, 30, "sometimes")


def test_carnot_and_chiller_cop():
    # Carnot between 6.7 and 29.4 degC: 279.85 / 22.7 = 12.328
    assert formulas.carnot_cop(6.7, 29.4) == pytest.approx(279.85 / 22.7)
    assert math.isinf(formulas.carnot_cop(20, 20))
    # the rating point itself: its COP
    assert formulas.chiller_cop(6.28, 6.7, 29.4, 6.7, 29.4, 10) == pytest.approx(6.28)
    # 18 degC chilled water from 30 degC condenser water: 6.28 x (291.15 / 12) / 12.328 = 12.36,
    # capped at 10
    assert formulas.chiller_cop(6.28, 6.7, 29.4, 18, 30) == pytest.approx(12.359, abs=1e-3)
    assert formulas.chiller_cop(6.28, 6.7, 29.4, 18, 30, 10) == 10
    # a larger lift, 18 to 45 degC: 6.28 x (291.15 / 27) / 12.328 = 5.493
    assert formulas.chiller_cop(6.28, 6.7, 29.4, 18, 45, 10) == pytest.approx(5.493, abs=1e-3)
    with pytest.raises(ValueError):
        formulas.chiller_cop(6.28, 6.7, 29.4, 18, 18)          # no lift, no cap


def test_transformer_losses():
    # 2 units of 1 MW sharing 1 MW: x = 0.5 each, 2 x (1 kW + 0.25 x 8 kW) = 6 kW
    assert formulas.transformer_losses(1e6, 2, 1e6, 1000, 8000) == pytest.approx(6000)
    # no load: the no-load losses alone
    assert formulas.transformer_losses(0, 3, 1e6, 1000, 8000) == pytest.approx(3000)
    # stdlib.power.Transformer at half load: 99.53 % (US DOE, 2,500 kVA liquid-immersed)
    e = 1 / 0.9953 - 1
    p0, pk = 0.5 * 2.5e6 * e / 2, 0.5 * 2.5e6 * e * 2
    loss = formulas.transformer_losses(1.25e6, 1, 2.5e6, p0, pk)
    assert 1.25e6 / (1.25e6 + loss) == pytest.approx(0.9953)
    with pytest.raises(ValueError):
        formulas.transformer_losses(1e6, 0, 1e6, 1000, 8000)


def test_rectifier_losses_and_recharge():
    # 132 kW at 96 %: 5.5 kW, and 25 modules of 5.5 kW at 0.5 % no-load: 687.5 W
    assert formulas.rectifier_losses(132e3, 0.96, 687.5) == pytest.approx(6187.5)
    # 0.1 C of 1,200 Ah at 240 V: 120 A x 240 V = 28.8 kW (issue 26: the reference's strings)
    assert formulas.recharge_power(0.1, 1200, 240) == pytest.approx(28_800)
    with pytest.raises(ValueError):
        formulas.rectifier_losses(1e3, 0, 0)


def test_end_voltage_needed():
    # no resistance: the minimum itself
    assert formulas.end_voltage_needed(192, 652_800, 0) == pytest.approx(192)
    # 652.8 kW through 0.5 mohm: (192 + sqrt(36,864 + 1,305.6)) / 2 = 193.685 V, and the load
    # then sees exactly 192 V
    v = formulas.end_voltage_needed(192, 652_800, 0.0005)
    assert v == pytest.approx(193.685, abs=1e-3)
    assert v - 0.0005 * 652_800 / v == pytest.approx(192)
