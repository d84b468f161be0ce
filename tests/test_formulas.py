"""Engineering formulas against hand-computed values and the worked examples of their docstrings.

The worked values are hand-computed from the formulas and standards cited in
astral_dsl/analyses/formulas (IEC 60028 and IEC 60364-5-52, IEEE 485, ASHRAE, The Green Grid,
NetBox, Uptime Institute, Al-Fares et al. 2008, the topology inferred from Meng et al. 2025).
Tolerances follow the precision to which each value is stated (a value stated as 1,464 A is checked
to +/- 0.5 A, 5.16 V to +/- 0.005 V, ...); hand computations are checked tightly (rel 1e-12).
"""
from __future__ import annotations

import math

import pytest

from astral_dsl.analyses import formulas as f

MW = 1e6
KW = 1e3
MM2 = 1e-6
F20_IN_K = 20.0 / 1.8          # a 20 F difference is 11.11 K (often written "11.1 K (20 F)")


# --------------------------------------------------------------------------- DC / AC current

@pytest.mark.parametrize("volts, amps, abs_tol", [
    (54.0, 18.5e3, 0.05e3),     # I = P / V: 1 MW at 54 V = 18.5 kA (18,518.5 A)
    (400.0, 2.5e3, 0.05e3),     # 1 MW at 400 V = 2.5 kA
    (800.0, 1.25e3, 0.005e3),   # 1 MW at 800 V = 1.25 kA
])
def test_dc_current_by_hand(volts, amps, abs_tol):
    assert f.dc_current(1 * MW, volts) == pytest.approx(amps, abs=abs_tol)


def test_dc_current_hand():
    assert f.dc_current(1 * MW, 54.0) == pytest.approx(18518.518518518518, rel=1e-12)   # 1e6/54
    assert f.dc_current(10.2 * KW, 54.0) == pytest.approx(188.888888888889, rel=1e-12)  # 10,200/54
    assert f.dc_current(1 * MW, -48.0) == pytest.approx(20833.333333333332, rel=1e-12)  # sign ignored
    assert f.dc_current(0.0, 400.0) == 0.0


def test_ac3_current_by_hand():
    # P = sqrt(3) V I PF: 1 MW at 415 V, PF 0.95 = 1,464 A; hand: 1e6 / (1.7320508 * 415 * 0.95)
    # = 1464.41
    assert f.ac3_current(1 * MW, 415.0, 0.95) == pytest.approx(1464.0, abs=0.5)
    assert f.ac3_current(1 * MW, 415.0, 0.95) == pytest.approx(1e6 / (math.sqrt(3) * 415 * 0.95), rel=1e-12)


def test_ac3_current_unity_pf_hand():
    # 100 kW at 400 V, PF 1: 1e5 / (sqrt(3) * 400) = 144.3376 A
    assert f.ac3_current(100 * KW, 400.0, 1.0) == pytest.approx(144.33756729740645, rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: f.dc_current(1e6, 0.0),
    lambda: f.dc_current(-1.0, 400.0),
    lambda: f.ac3_current(1e6, 415.0, 0.0),
    lambda: f.ac3_current(1e6, 415.0, 1.2),
    lambda: f.ac3_current(1e6, -415.0, 0.9),
    lambda: f.dc_current(float("nan"), 400.0),
])
def test_current_bad_inputs(call):
    with pytest.raises(ValueError):
        call()


def test_feed_available_power_netbox():
    # NetBox power feed: available power |V| * A * max_util (x sqrt(3) for three-phase)
    assert f.feed_available_power(-48.0, 100.0, 0.8) == pytest.approx(3840.0, rel=1e-12)
    # 415 V x 63 A x 0.8 x sqrt(3) = 20,916 x 1.7320508 = 36,227.57 VA
    assert f.feed_available_power(415.0, 63.0, 0.8, three_phase=True) == \
        pytest.approx(415 * 63 * 0.8 * math.sqrt(3), rel=1e-12)
    assert f.feed_available_power(415.0, 63.0, 0.8, three_phase=True) == pytest.approx(36227.57, abs=0.01)


# --------------------------------------------------------------------------- redundancy

def test_modules_needed_132kw_by_hand():
    # hand: 132 kW on 5.5 kW modules -> 24, + 1 for N+1 (Uptime Institute) = 25
    n = f.modules_needed(132 * KW, 5.5 * KW)
    assert n == 24 and isinstance(n, int)
    assert f.with_redundancy(n, "n_plus_1") == 25
    # the same in MW: 0.132 / 0.0055 = 24.000000000000004 in floats, the quirk the tolerance is for
    assert 0.132 / 0.0055 > 24
    assert f.modules_needed(0.132, 0.0055) == 24


def test_modules_needed_rounds_up_and_derates():
    assert f.modules_needed(132.001 * KW, 5.5 * KW) == 25        # 24.0002 -> 25
    assert f.modules_needed(131.9 * KW, 5.5 * KW) == 24          # 23.98 -> 24
    assert f.modules_needed(132 * KW, 5.5 * KW, derate=0.9) == 27  # 132 / 4.95 = 26.67 -> 27
    assert f.modules_needed(0.0, 5.5 * KW) == 0
    assert f.modules_needed(1.0, 5.5 * KW) == 1
    # 0.3 / 0.1 = 2.9999999999999996 in floats: exactly 3 modules
    assert f.modules_needed(0.3, 0.1) == 3
    assert f.modules_needed(0.7, 0.1) == 7                       # 7.000000000000001


def test_modules_needed_bad_inputs():
    with pytest.raises(ValueError):
        f.modules_needed(1e5, 0.0)
    with pytest.raises(ValueError):
        f.modules_needed(-1.0, 5.5e3)
    with pytest.raises(ValueError):
        f.modules_needed(1e5, 5.5e3, derate=0.0)


def test_with_redundancy():
    assert f.with_redundancy(24, "n") == 24
    assert f.with_redundancy(24, "n_plus_1") == 25
    assert f.with_redundancy(24, "two_n") == 48
    assert f.with_redundancy(24, "N+1") == 25
    assert f.with_redundancy(24, "2N") == 48
    with pytest.raises(ValueError):
        f.with_redundancy(24, "n_plus_2")
    with pytest.raises(ValueError):
        f.with_redundancy(2.5, "n")
    with pytest.raises(ValueError):
        f.with_redundancy(-1, "n")


def test_capacity_after_failures():
    # N+1: 25 x 5.5 kW with one failed still carries 132 kW; with two failed it does not
    assert f.capacity_after_failures(25, 5.5 * KW) == pytest.approx(132 * KW)
    assert f.capacity_after_failures(25, 5.5 * KW, failed=2) < 132 * KW
    assert f.capacity_after_failures(3, 100.0, derate=0.5, failed=5) == 0.0


# --------------------------------------------------------------------------- batteries

def test_battery_ac_ups_by_hand():
    # IEEE 485-style sizing (AC UPS): 1 MW for 5 min, 240 cells (420 V end), eta 0.95
    # -> I = 2,506 A, 209 Ah raw, 287 Ah with AF 1.25 and DF 1.1.
    # hand: 240 x 1.75 = 420 V; 1e6 / (0.95 x 420) = 2506.27 A; x 5/60 h = 208.86 Ah; x 1.375 = 287.18 Ah
    i, raw, sized = f.battery_capacity_ah(1 * MW, 5 * 60, 0.95, 240, 1.75)
    assert i == pytest.approx(2506.0, abs=0.5)
    assert raw == pytest.approx(209.0, abs=0.5)
    assert sized == pytest.approx(287.0, abs=0.5)
    assert i == pytest.approx(1e6 / (0.95 * 420.0), rel=1e-12)
    assert sized == pytest.approx(raw * 1.25 * 1.1, rel=1e-12)
    assert f.battery_current(1 * MW, 0.95, 420.0) == pytest.approx(i, rel=1e-12)


def test_battery_hvdc_240v_by_hand():
    # IEEE 485-style sizing (240 V HVDC, batteries on the bus, eta 1): 120 cells (210 V end),
    # 1 MW for 15 min -> I = 4,762 A, 1,190 Ah raw, 1,637 Ah with AF and DF.
    # hand: 1e6 / 210 = 4761.90 A; x 0.25 h = 1190.48 Ah; x 1.375 = 1636.90 Ah
    i, raw, sized = f.battery_capacity_ah(1 * MW, 15 * 60, 1.0, 120, 1.75)
    assert i == pytest.approx(4762.0, abs=0.5)
    assert raw == pytest.approx(1190.0, abs=0.5)
    assert sized == pytest.approx(1637.0, abs=0.5)


def test_battery_temperature_factor_and_bad_inputs():
    # TC multiplies the sized capacity: 1.11 (a common value near 15 degC) -> 1636.90 x 1.11
    _, raw, sized = f.battery_capacity_ah(1 * MW, 15 * 60, 1.0, 120, 1.75, temperature=1.11)
    assert sized == pytest.approx(raw * 1.11 * 1.25 * 1.1, rel=1e-12)
    with pytest.raises(ValueError):
        f.battery_capacity_ah(1 * MW, 300, 0.95, 0, 1.75)
    with pytest.raises(ValueError):
        f.battery_capacity_ah(1 * MW, 300, 1.05, 240, 1.75)
    with pytest.raises(ValueError):
        f.battery_current(1 * MW, 0.95, 0.0)


# --------------------------------------------------------------------------- conductors

def test_copper_resistivity():
    # IEC 60028 annealed copper: rho_20 = 1/58 = 0.017241 ohm mm^2/m = 1.7241e-8 ohm m,
    # alpha 0.00393/K
    assert f.copper_resistivity(20.0) == pytest.approx(1.7241e-8, rel=1e-12)
    # 70 degC: 1.7241e-8 x (1 + 0.00393 x 50) = 1.7241e-8 x 1.1965 = 2.06288565e-8
    assert f.copper_resistivity(70.0) == pytest.approx(2.06288565e-8, rel=1e-9)
    # 90 degC: 1.7241e-8 x 1.2751 = 2.19839991e-8
    assert f.copper_resistivity(90.0) == pytest.approx(2.19839991e-8, rel=1e-9)
    # custom aluminium-like parameters: 2.826e-8 x (1 + 0.00403 x 30)
    assert f.copper_resistivity(50.0, rho20=2.826e-8, alpha=0.00403) == \
        pytest.approx(2.826e-8 * 1.1209, rel=1e-12)


def test_dc_voltage_drop_by_hand():
    # dV = 2 I L rho_T / A (IEC 60364-5-52 Annex G): 1,250 A, 50 m, 500 mm^2 at 70 degC
    # -> 5.16 V (0.64 % of 800 V)
    # hand: 2 x 1250 x 50 x 2.06288565e-8 / 5e-4 = 5.157214125 V; / 800 = 0.6447 %
    dv = f.dc_voltage_drop(1250.0, 50.0, 500 * MM2, 70.0)
    assert dv == pytest.approx(5.16, abs=0.005)
    assert dv == pytest.approx(5.157214125, rel=1e-9)
    assert 100 * f.drop_fraction(dv, 800.0) == pytest.approx(0.64, abs=0.005)


def test_dc_voltage_drop_scaling():
    base = f.dc_voltage_drop(100.0, 10.0, 50 * MM2, 20.0)
    # 2 x 100 x 10 x 1.7241e-8 / 5e-5 = 0.68964 V
    assert base == pytest.approx(0.68964, rel=1e-12)
    assert f.dc_voltage_drop(200.0, 10.0, 50 * MM2, 20.0) == pytest.approx(2 * base, rel=1e-12)
    assert f.dc_voltage_drop(100.0, 10.0, 100 * MM2, 20.0) == pytest.approx(base / 2, rel=1e-12)
    with pytest.raises(ValueError):
        f.dc_voltage_drop(100.0, 10.0, 0.0, 20.0)


def test_ac1_voltage_drop():
    # single-phase, over the loop: 2 * I * L * (R cos phi + X sin phi); 32 A over 50 m of 6 mm^2
    # copper at 70 degC: R = 0.017241e-6 * (1 + 0.00393 * 50) / 6e-6 = 3.43814e-3 ohm/m;
    # 2 * 32 * 50 * 3.43814e-3 = 11.0021 V at PF 1
    r = 0.017241e-6 * (1 + 0.00393 * 50) / 6e-6
    assert f.ac1_voltage_drop(32.0, 50.0, r, 0.08e-3, 1.0) == pytest.approx(11.00206, rel=1e-5)
    # PF 0.8: 2 * 200 * 100 * (1e-4 * 0.8 + 8e-5 * 0.6) = 5.12 V (sqrt(3)/2 of it three-phase)
    assert f.ac1_voltage_drop(200.0, 100.0, 1e-4, 8e-5, 0.8) == pytest.approx(5.12, rel=1e-9)


def test_ac3_voltage_drop():
    # hand: 200 A, 100 m, R 0.1 mohm/m... use R = 1e-4 ohm/m, X = 8e-5 ohm/m, PF 0.8 (sin 0.6):
    # sqrt(3) x 200 x 100 x (1e-4 x 0.8 + 8e-5 x 0.6) = 34641.016 x 1.28e-4 = 4.434050 V
    assert f.ac3_voltage_drop(200.0, 100.0, 1e-4, 8e-5, 0.8) == pytest.approx(4.434050, rel=1e-6)
    # unity PF: reactance does not contribute: sqrt(3) x 200 x 100 x 1e-4 = 3.464102 V
    assert f.ac3_voltage_drop(200.0, 100.0, 1e-4, 8e-5, 1.0) == pytest.approx(3.464102, rel=1e-6)


def test_ampacity():
    # an illustrative table (IEC 60364-5-52 B.52.x-style rows, values only for the test)
    table = [(95 * MM2, 232.0), (120 * MM2, 269.0), (150 * MM2, 300.0), (185 * MM2, 341.0)]
    assert f.ampacity(table, 120 * MM2) == 269.0          # exact size
    assert f.ampacity(table, 0.00012) == 269.0            # same size via a different float path
    assert f.ampacity(table, 140 * MM2) == 269.0          # between sizes: the smaller size's rating
    assert f.ampacity(table, 500 * MM2) == 341.0          # above the largest: the largest rating
    assert f.ampacity(list(reversed(table)), 150 * MM2) == 300.0   # unsorted table
    with pytest.raises(ValueError, match="below the smallest"):
        f.ampacity(table, 70 * MM2)
    with pytest.raises(ValueError):
        f.ampacity([], 120 * MM2)


# --------------------------------------------------------------------------- cooling

WATER_RHO = 995.7     # water near 30 degC, rho 995.7 kg/m^3 (IAPWS-95: 995.65 at 30 degC)
WATER_CP = 4178.0     # cp 4.178 kJ/kg/K (IAPWS-95: 4.1798 at 30 degC)


def test_liquid_flow_water_per_kw_by_hand():
    # V = Q / (rho cp dT): 1.44 L/min per kW at dT = 10 K (2.89 at 5 K, 0.96 at 15 K)
    # hand: 1000 / (995.7 x 4178 x 10) x 60000 = 1.442296 L/min; at 5 K 2.884591; at 15 K 0.961531
    per_kw_10 = f.m3s_to_l_per_min(f.liquid_flow(1 * KW, WATER_RHO, WATER_CP, 10.0))
    assert per_kw_10 == pytest.approx(1.44, abs=0.005)
    assert per_kw_10 == pytest.approx(1.442296, rel=1e-6)
    # the exact hand value 2.8846 rounds to 2.88, so the rounded figure 2.89 is checked to +/-0.01
    per_kw_5 = f.m3s_to_l_per_min(f.liquid_flow(1 * KW, WATER_RHO, WATER_CP, 5.0))
    assert per_kw_5 == pytest.approx(2.89, abs=0.01)
    assert per_kw_5 == pytest.approx(2.884591, rel=1e-6)
    per_kw_15 = f.m3s_to_l_per_min(f.liquid_flow(1 * KW, WATER_RHO, WATER_CP, 15.0))
    assert per_kw_15 == pytest.approx(0.96, abs=0.005)


def test_liquid_flow_120kw_rack_by_hand():
    # 120 kW rack, water, dT 10 K -> 173 L/min (hand: 120 x 1.442296 = 173.08)
    q = f.liquid_flow(120 * KW, WATER_RHO, WATER_CP, 10.0)
    assert f.m3s_to_l_per_min(q) == pytest.approx(173.0, abs=0.5)
    assert q == pytest.approx(120e3 / (995.7 * 4178 * 10), rel=1e-12)


def test_liquid_flow_pg25_hand_values_by_hand():
    # PG25 with approximate properties cp ~3.93 kJ/kg/K, rho ~1018 kg/m^3 (CoolProp's real values:
    # tests/test_fluids.py) -> ~1.50 L/min per kW at 10 K
    # hand: 1000 / (1018 x 3930 x 10) x 60000 = 1.49972 L/min
    per_kw = f.m3s_to_l_per_min(f.liquid_flow(1 * KW, 1018.0, 3930.0, 10.0))
    assert per_kw == pytest.approx(1.50, abs=0.005)


def test_air_flow_by_hand():
    # ASHRAE sensible heat in SI, rho 1.2, cp 1.006: 1 kW at dT 11.1 K (20 F) -> 268.4 m^3/h
    # = 158.0 CFM
    # hand: 1000 / (1.2 x 1006 x 11.111) = 0.0745527 m^3/s = 268.390 m^3/h; x 0.588578 = 157.97 CFM
    q = f.air_flow(1 * KW, F20_IN_K)
    assert f.m3s_to_m3_per_h(q) == pytest.approx(268.4, abs=0.05)
    assert f.m3s_to_cfm(q) == pytest.approx(158.0, abs=0.05)
    assert q == pytest.approx(1000.0 / (1.2 * 1006.0 * F20_IN_K), rel=1e-12)


def test_air_flow_rule_of_thumb_by_hand():
    # imperial rule of thumb (ASHRAE standard air): CFM = 3412 * kW / (1.085 * dT_F) gives 157.2
    # for 1 kW at 20 F
    assert f.air_flow_cfm_rule_of_thumb(1 * KW, F20_IN_K) == pytest.approx(157.2, abs=0.05)


def test_air_flow_custom_air_and_bad_inputs():
    # thinner, warmer air: rho 1.1, cp 1007, 10 kW at 12 K -> 10000 / (1.1 x 1007 x 12)
    # = 10000 / 13292.4 = 0.7523096 m^3/s
    assert f.air_flow(10 * KW, 12.0, density=1.1, cp=1007.0) == pytest.approx(0.7523096, rel=1e-6)
    with pytest.raises(ValueError):
        f.air_flow(1 * KW, 0.0)
    with pytest.raises(ValueError):
        f.liquid_flow(1 * KW, WATER_RHO, WATER_CP, -5.0)


def test_flow_unit_helpers():
    assert f.m3s_to_l_per_min(1.0) == 60000.0
    assert f.m3s_to_m3_per_h(1.0) == 3600.0
    # 1 m^3/h = 0.5886 CFM (rounded); exact: 1 / (0.028316846592 m^3/ft^3 x 60) = 0.58857778
    assert f.m3s_to_cfm(1.0 / 3600.0) == pytest.approx(0.5886, abs=0.00005)
    assert f.CFM_PER_M3_PER_H == pytest.approx(0.58857778, rel=1e-8)


def test_pump_power():
    # hand: 173 L/min = 2.8833e-3 m^3/s at 200 kPa, eta 0.7 -> 2.8833e-3 x 2e5 / 0.7 = 823.81 W
    assert f.pump_power(173 / 60000, 200e3, 0.7) == pytest.approx(823.8095238, rel=1e-9)
    assert f.pump_power(0.01, 1e5, 1.0) == pytest.approx(1000.0, rel=1e-12)
    with pytest.raises(ValueError):
        f.pump_power(0.01, 1e5, 0.0)


# --------------------------------------------------------------------------- PUE

def test_pue():
    # The Green Grid: PUE = total / IT. 1.2 GWh total over 1.0 GWh IT -> 1.2
    assert f.pue(1.0e9, 1.2e9) == pytest.approx(1.2, rel=1e-12)
    assert f.pue(1.0, 1.0) == 1.0
    with pytest.raises(ValueError):
        f.pue(1.0e9, 0.9e9)
    with pytest.raises(ValueError):
        f.pue(0.0, 1.0)


def test_facility_power():
    # 1 MW IT through HVDC at 0.97 (Tencent reports above 97 % for its 240 V HVDC) + 100 kW cooling
    # + 10 kW other:
    # 1e6 / 0.97 + 1.1e5 = 1,030,927.835 + 110,000 = 1,140,927.835 W -> PUE 1.140928
    total = f.facility_power(1 * MW, 0.97, 100 * KW, 10 * KW)
    assert total == pytest.approx(1140927.8350515, rel=1e-12)
    assert f.pue(1 * MW, total) == pytest.approx(1.140928, rel=1e-6)
    assert f.facility_power(1 * MW, 1.0, 0.0) == 1 * MW


def test_annual_pue():
    # IT 1 MW, eta 0.96; free cooling 6,000 h at 50 kW, mechanical 2,760 h at 200 kW; other 20 kW.
    # hand: per hour free = 1,041,666.667 + 70,000 = 1,111,666.667 W; mech = 1,261,666.667 W
    # energy = 6000 x 1,111,666.667 + 2760 x 1,261,666.667 = 6.67e9 + 3.4822e9 = 10.1522e9 Wh
    # IT energy = 8760 x 1e6 = 8.76e9 Wh -> PUE = 10.1522 / 8.76 = 1.158927
    p = f.annual_pue(1 * MW, 0.96, 6000.0, 50 * KW, 2760.0, 200 * KW, other_w=20 * KW)
    assert p == pytest.approx(10.1522e9 / 8.76e9, rel=1e-9)
    assert p == pytest.approx(1.158927, abs=5e-7)
    # all free cooling equals the instantaneous PUE of that mode
    assert f.annual_pue(1 * MW, 0.96, f.HOURS_PER_YEAR, 50 * KW, 0.0, 200 * KW) == \
        pytest.approx(f.facility_power(1 * MW, 0.96, 50 * KW) / (1 * MW), rel=1e-12)
    with pytest.raises(ValueError):
        f.annual_pue(1 * MW, 0.96, 0.0, 50 * KW, 0.0, 200 * KW)


def test_pue_over_modes_three_modes():
    # IT 500 kW, eta 1; 4000 h at 10 kW, 4000 h at 50 kW, 760 h at 150 kW
    # total = 4000 x 510k + 4000 x 550k + 760 x 650k = 2.04e9 + 2.2e9 + 0.494e9 = 4.734e9
    # IT = 8760 x 500k = 4.38e9 -> 1.080822
    p = f.pue_over_modes(500 * KW, 1.0, [(4000, 10 * KW), (4000, 50 * KW), (760, 150 * KW)])
    assert p == pytest.approx(4.734e9 / 4.38e9, rel=1e-12)


# --------------------------------------------------------------------------- network capacity

def test_fat_tree_and_astral_k128_by_hand():
    # reference topology inferred from Meng et al. 2025 (51.2T switches, k = 128, 8 rails,
    # 2 planes):
    # pod = 8 x 128^2 / 2 = 65,536 GPUs; cluster = 128^3 / 4 = 524,288; pods = 128 / 16 = 8
    assert f.astral_pod_gpus(8, 128) == 65536
    assert f.fat_tree_hosts(128) == 524288
    assert f.astral_pods(8, 128) == 8
    assert f.astral_pods(8, 128) * f.astral_pod_gpus(8, 128) == f.fat_tree_hosts(128)


def test_fat_tree_k64_by_hand():
    # inferred from Meng et al. 2025: the same rules with 25.6T switches (k = 64) give a 64K-GPU
    # cluster
    assert f.fat_tree_hosts(64) == 65536
    assert f.astral_pod_gpus(8, 64) == 16384      # 8 x 64^2 / 2
    assert f.astral_pods(8, 64) == 4              # 64 / 16
    assert f.astral_pods(8, 64) * f.astral_pod_gpus(8, 64) == 65536


def test_fat_tree_small_and_bad():
    assert f.fat_tree_hosts(4) == 16              # Al-Fares et al.: k = 4 -> 16 hosts
    assert f.fat_tree_hosts(48) == 27648          # 48^3 / 4
    assert f.astral_pods(3, 16) == 2              # 16 / 6 = 2.67 -> 2 (spare core ports unused)
    for bad in (0, 3, -4, 2.5):
        with pytest.raises(ValueError):
            f.fat_tree_hosts(bad)
    with pytest.raises(ValueError):
        f.astral_pod_gpus(0, 128)


def test_oversubscription():
    # oversubscription = down / up (Al-Fares et al. 2008); the ToR inferred from Meng et al. 2025:
    # 128 x 200G down, 64 x 400G up -> 1:1
    assert f.oversubscription(128 * 200e9, 64 * 400e9) == pytest.approx(1.0, rel=1e-12)
    assert f.oversubscription(48 * 100e9, 4 * 400e9) == pytest.approx(3.0, rel=1e-12)
    with pytest.raises(ValueError):
        f.oversubscription(1.0, 0.0)
