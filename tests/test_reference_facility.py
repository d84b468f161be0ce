"""The reference's facility by hand (`astral size examples/astral.astral --format json`): its
feeders, rectifiers and batteries, its air flows, its two facility-water circuits over the
shipped typical year (Greensboro, NC: NREL TMY3), and every component of its facility power, its
PUE and the peak demand at the utility point, each computed here from the example's declared
values (the climate read with the csv module, the rules of formulas/ applied hour by hour)."""
from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

import pytest
from CoolProp.HumidAirProp import HAPropsSI

from astral_dsl.analyses import fluids, formulas, humid_air
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLIMATE = REPO / "stdlib" / "climate" / "723170TYA.CSV"

# examples/astral.astral
HOSTS = 8 * 128 * 16 * 4                    # 65,536 hosts of 10.2 kW
HOSTS_KW = HOSTS * 10.2                     # 668,467.2 kW
SWITCHES_KW = 20_480 * (1.0 + 64 * 0.015)   # 40,140.8 kW
IT_KW = HOSTS_KW + SWITCHES_KW              # 708,608.0 kW
IT_AVG_KW = 0.75 * HOSTS_KW + SWITCHES_KW   # 541,491.2 kW: hosts at 75 %, switches at full power
ROWS, ROW_KW = 1024, 652.8                  # each row: an HVDC side A, a utility side B
NET, NET_KW = 56, SWITCHES_KW / 56          # the network's feeders per side: 716.8 kW each
END_V = 120 * 1.65                          # 198 V: the batteries' end of discharge
STRING_AH = 190


@pytest.fixture(scope="module")
def size_json():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = _astral_cli("size", "examples/astral.astral", "--format", "json", env=env,
                       text=False)
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    assert doc["valid"] is True and doc["diagnostics"] == []
    return doc["summary"]


def _battery_ah(kw: float) -> float:
    # IEEE 485 at the end of discharge, 120 x 1.65 V = 198 V, eta 1, 15 min, AF 1.25, DF 1.1:
    # a row's 652.8 kW: 3,297.0 A, 1,133.3 Ah (6 strings of 190 Ah hold 1,140);
    # a network feeder's 716.8 kW: 3,620.2 A, 1,244.4 Ah (7 strings hold 1,330)
    return kw * 1000 / END_V * 0.25 * 1.25 * 1.1


def _modules(kw: float, strings: int) -> int:
    # the load and a 0.1 C recharge of the strings at 240 V, on 50 kW modules, N+1
    return math.ceil((kw + 0.1 * strings * STRING_AH * 240 / 1000) / 50 - 1e-9) + 1


def test_feeders_rectifiers_batteries(size_json):
    # feeders: 2 per row x 1,024 rows, the network's 56 per side: 2,160 (and the mechanical
    # switchboards' 72 per side, listed apart)
    assert size_json["feeders"] == 2 * ROWS + 2 * NET == 2160
    assert len(size_json["mechanical_feeders"]) == 2
    # rows: (652.8 + 0.1 x 1,140 Ah x 240 V = 27.36 kW) / 50 -> 14, N+1 = 15 (14 without the
    # recharge too); network: (716.8 + 31.92) / 50 -> 15, N+1 = 16
    assert _modules(ROW_KW, 6) == 15 and _modules(NET_KW, 7) == 16
    assert size_json["rectifier_modules"] == ROWS * 15 + NET * 16 == 16_256
    assert size_json["battery_ah"] == pytest.approx(ROWS * _battery_ah(ROW_KW)
                                                    + NET * _battery_ah(NET_KW), abs=0.06)
    assert _battery_ah(ROW_KW) <= 6 * STRING_AH and _battery_ah(NET_KW) <= 7 * STRING_AH
    by = {f["path"]: f for f in size_json["feeder_list"]}
    row = by["Astral.pods[0].rows[0].hvdc"]
    assert row["recharge_kw"] == pytest.approx(0.1 * 6 * STRING_AH * 240 / 1000)
    # 198 V less the drop (2 x 3,297 A / 4 sets x 30 m x rho_90 / 630 mm^2 = 1.73 V): the
    # equipment sees 196.3 V, above HVDC240's 192 V (YD/T 2378)
    rho90 = formulas.copper_resistivity(90) * 1e6                  # ohm mm^2 / m
    drop = 2 * ROW_KW * 1000 / END_V / 4 * 30 * rho90 / 630
    assert row["voltage_drop_v"] == pytest.approx(drop, abs=1e-4)
    assert row["equipment_v"] == pytest.approx(END_V - drop, abs=1e-4)
    assert row["voltage_drop_ratio"] == pytest.approx(drop / END_V, abs=1e-6)


def _humid_flow_m3h(heat_kw: float, p: float) -> float:
    # 27 degC supply, 12 degC dew point, 12 K rise, at the site's pressure (CoolProp)
    v = HAPropsSI("Vda", "T", 300.15, "P", p, "Tdp", 285.15)
    dh = (HAPropsSI("H", "T", 312.15, "P", p, "Tdp", 285.15)
          - HAPropsSI("H", "T", 300.15, "P", p, "Tdp", 285.15))
    return heat_kw * 1000 * v / dh * 3600


def test_air_flows_are_humid_air_at_the_sites_elevation(size_json):
    # no `altitude`: the climate file's 273 m, p = 101,325 x (1 - 2.25577e-5 x 273)^5.2559
    #   = 98,088 Pa; the pods' rooms 8 x 25 % x 83,558.4 kW, the network room 40,140.8 kW
    p = 101325 * (1 - 2.25577e-5 * 273) ** 5.2559
    assert p == pytest.approx(98088, abs=1)
    rooms = _humid_flow_m3h(0.25 * HOSTS_KW, p)
    netroom = _humid_flow_m3h(SWITCHES_KW, p)
    assert size_json["air_flow_m3_per_h"] == pytest.approx(rooms + netroom, rel=1e-6)
    (air,) = [a for a in size_json["air_units"] if a["path"] == "Astral.netroom"]
    assert air["pressure_pa"] == pytest.approx(p, abs=0.1)


# ---- the facility, hour by hour --------------------------------------------------------------------
def _climate():
    with open(CLIMATE, newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[1]
    t, d, p = (head.index(n) for n in ("Dry-bulb (C)", "Dew-point (C)", "Pressure (mbar)"))
    return [(float(r[t]), min(float(r[d]), float(r[t])), float(r[p]) * 100) for r in rows[2:]]


def _pg25_flow_m3s() -> float:
    # a pod's loop: 62,668.8 kW of cold-plate heat, PG25 at 45 degC, 10 K
    props = fluids.properties("INCOMP::MPG[0.25]", 45.0)
    return 0.75 * HOSTS_KW / 8 * 1000 / (props.density * props.cp * 10)


def _water_pumps_kw(heat_kw: float, supply: float, rise: float) -> float:
    props = fluids.properties("Water", supply + rise / 2)
    return heat_kw * 1000 / (props.density * props.cp * rise) * 300_000 / 0.8 / 1000


def hand():
    """Every component (kW) on average and at the peak hour, by hand."""
    each_a, each_b = 1 / 0.96 - 1, 1 / 0.97 - 1
    no_load = 0.005 * 50                       # 0.5 % of each 50 kW module: 0.25 kW
    losses = (ROWS * (0.75 * ROW_KW / 2 * (each_a + each_b) + 15 * no_load)
              + NET * (NET_KW / 2 * (each_a + each_b) + 16 * no_load))
    losses_peak = (ROWS * (ROW_KW / 2 * (each_a + each_b) + 15 * no_load)
                   + NET * (NET_KW / 2 * (each_a + each_b) + 16 * no_load))
    pumps = 8 * _pg25_flow_m3s() * 250_000 / 0.70 / 1000
    fans = 0.03 * (0.25 * 0.75 * HOSTS_KW + SWITCHES_KW)
    fans_peak = 0.03 * (0.25 * HOSTS_KW + SWITCHES_KW)
    aux = 3500.0
    # circuits: the warm water takes the loops (and their pumps); the chilled water the air units
    # (with their fans) and, the electrical rooms being air-cooled, the losses and the lighting
    warm = (0.75 * 0.75 * HOSTS_KW + pumps, 0.75 * HOSTS_KW + pumps)
    chilled = (0.25 * 0.75 * HOSTS_KW + SWITCHES_KW + fans + losses + aux,
               0.25 * HOSTS_KW + SWITCHES_KW + fans_peak + losses_peak + aux)
    # each circuit's pumps, sized for the flow of its load, and their heat in its water, which
    # its heat rejection and chillers reject with the load
    warm_pumps, chilled_pumps = _water_pumps_kw(warm[1], 32, 10), _water_pumps_kw(chilled[1], 18, 8)
    fpumps = warm_pumps + chilled_pumps
    warm = (warm[0] + warm_pumps, warm[1] + warm_pumps)
    chilled = (chilled[0] + chilled_pumps, chilled[1] + chilled_pumps)
    climate = _climate()
    hours = []
    for t, d, p in climate:
        wet = humid_air.wet_bulb(t, d, p)
        hour = []
        for (q, q_peak), water, supply, ret, ratio in (
                (warm, t + 6, 32, 42, 0.02), (chilled, wet + 5.6, 18, 26, 0.01)):
            share = formulas.chiller_share(water, supply, ret)
            cop = formulas.chiller_cop(6.28, 6.7, 29.4, supply, water, 10) if share else 1
            w, w_peak = share * q / cop, share * q_peak / cop
            hour.append((w, ratio * (q + w), w_peak, ratio * (q_peak + w_peak)))
        hours.append(hour)
    n = len(hours)
    chillers = sum(c[0] for h in hours for c in h) / n
    reject = sum(c[1] for h in hours for c in h) / n
    base = pumps + fpumps + aux
    peak_mech = [base + fans_peak + sum(c[2] + c[3] for c in h) for h in hours]
    hot = max(range(n), key=lambda i: (peak_mech[i], -i))
    # 720 transformers of 2,500 kVA: P0 = 0.5 x 2,500 x (1 / 0.9953 - 1) / 2, Pk = 4 P0, each at
    # x = (L / 0.95) / (720 x 2,500 kVA) of the site's load L hour by hour, in apparent power at
    # the feeders' power factor (all declare 95 %)
    p0 = 0.5 * 2500 * (1 / 0.9953 - 1) / 2
    pk = 4 * p0

    def trafo(load_kw):
        return 720 * (p0 + pk * (load_kw / 0.95 / (720 * 2500)) ** 2)

    it_in = IT_AVG_KW + losses
    trafo_avg = sum(trafo(it_in + base + fans + sum(c[0] + c[1] for c in h)) for h in hours) / n
    site_peak = IT_KW + losses_peak + peak_mech[hot]
    average = {"it": IT_AVG_KW, "transformers": trafo_avg, "losses": losses, "cdus": 0.0,
               "pumps": pumps, "facility_pumps": fpumps, "fans": fans, "chillers": chillers,
               "rejection": reject, "auxiliary": aux}
    peak = {"it": IT_KW, "transformers": trafo(site_peak), "losses": losses_peak, "cdus": 0.0,
            "pumps": pumps, "facility_pumps": fpumps, "fans": fans_peak,
            "chillers": sum(c[2] for c in hours[hot]), "rejection": sum(c[3] for c in hours[hot]),
            "auxiliary": aux}
    return average, peak, hot


@pytest.fixture(scope="module")
def by_hand():
    return hand()


def test_every_component_by_hand(size_json, by_hand):
    average, peak, _ = by_hand
    fac = size_json["facility"]
    for name, kw in average.items():
        assert fac["average"][f"{name}_kw"] == pytest.approx(kw, rel=1e-6, abs=1e-3), name
    for name, kw in peak.items():
        assert fac["peak"][f"{name}_kw"] == pytest.approx(kw, rel=1e-6, abs=1e-3), name


def test_pue_within_0_2_percent_of_the_hand_calculation(size_json, by_hand):
    average, _, _ = by_hand
    pue = sum(average.values()) / IT_AVG_KW
    assert size_json["pue"] == pytest.approx(pue, rel=0.002)
    assert size_json["facility"]["pue"] == pytest.approx(pue, rel=1e-6)
    assert size_json["facility_power_kw"] == pytest.approx(sum(average.values()), rel=1e-6)


def test_the_peak_demand_at_the_utility_point(size_json, by_hand):
    _, peak, hot = by_hand
    fac = size_json["facility"]
    assert fac["utility_peak_kw"] == pytest.approx(sum(peak.values()), rel=1e-6)
    assert size_json["facility_power_peak_kw"] == fac["utility_peak_kw"]
    # the hottest hour of the file at full load: 9 July, 14:00 (35.6 degC dry bulb)
    climate = _climate()
    assert fac["peak_hour"] == "07-09 14:00" and climate[hot][0] == 35.6


def test_circuit_hours_by_hand(size_json):
    # each circuit's hours without chillers, sharing the heat with them, and with them on alone
    climate = _climate()
    counts = {}
    for name, water, supply, ret in (
            ("Warm", [t + 6 for t, _, _ in climate], 32, 42),
            ("Chilled", [humid_air.wet_bulb(t, d, p) + 5.6 for t, d, p in climate], 18, 26)):
        shares = [formulas.chiller_share(x, supply, ret) for x in water]
        counts[name] = (sum(1 for s in shares if s == 0), sum(1 for s in shares if 0 < s < 1),
                        sum(1 for s in shares if s == 1))
    got = {c["path"]: (c["free_cooling_h"], c["partial_h"], c["mechanical_h"])
           for c in size_json["facility"]["circuits"]}
    assert got == {k: tuple(float(x) for x in v) for k, v in counts.items()}
    # the warm water's dry coolers carry it alone whenever the dry bulb is at most 26 degC
    assert counts["Warm"][0] == sum(1 for t, _, _ in climate if t + 6 <= 32)


def test_pump_power(size_json):
    # the loops: 8 x V x 250 kPa / 0.70; the circuits: their design flow x 300 kPa / 0.80
    assert size_json["pump_power_kw"] == pytest.approx(
        8 * _pg25_flow_m3s() * 250_000 / 0.70 / 1000, abs=1e-3)
