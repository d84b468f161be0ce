"""Engineering checks and sizing against golden vectors and hand calculations.

Every expected number below is computed by hand in a comment, from the formulas and reference
numbers of the sources cited in astral_dsl/analyses/formulas:
- network: NVIDIA DGX SuperPOD B200 reference architecture golden vectors, the Astral reference
  (k^3/4 of Al-Fares et al. 2008, R*k^2/2 inferred from Meng et al. 2025), single_pod;
- power: 2N normal/failover loads, I = P/V, I = P/(sqrt(3) V PF), rectifier N+1, IEEE 485
  battery sizing, DC voltage drop;
- cooling: liquid/air split, V = Q/(rho cp dT) with CoolProp properties at the mean loop
  temperature, CDUs N+1 on heat and flow, air flow in m^3/h and CFM, pump power, PUE;
- `astral size --format json` of examples/astral.astral, the examples' scenarios, and
  byte-identical output."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
from CoolProp.HumidAirProp import HAPropsSI

import astral_dsl
from astral_dsl.analyses import fluids, formulas
from astral_dsl.analyses.engineering import analyse

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ASTRAL = EXAMPLES / "astral.astral"
SINGLE_POD = EXAMPLES / "single_pod.astral"
DGX = EXAMPLES / "dgx_superpod.astral"
# the examples this suite covers (the brief's list); a new example should be added here
ALL_EXAMPLES = ["astral.astral", "dgx_superpod.astral", "single_pod.astral",
                "tutorial_rack.astral"]

# constants used in the hand calculations (IEC 60028 copper, ASHRAE air, the international foot)
RHO20 = 0.017241         # ohm*mm^2/m, copper at 20 degC (1/58)
ALPHA = 0.00393          # 1/K
AIR_RHO, AIR_CP = 1.2, 1006.0     # kg/m^3, J/(kg K)
CFM_PER_M3H = 1 / (0.3048 ** 3 * 60)   # 0.588578 (often rounded to 0.5886)
SQRT3 = math.sqrt(3)


def _cli_here(args) -> subprocess.CompletedProcess:
    """`astral ARGS` in this process (tests/clirun.py): the command's code path without the
    ~0.25 s of CPU a new interpreter takes; the determinism tests below run processes (a hash
    seed each)."""
    from clirun import astral

    return astral(*args, text=False)




def _tiers(eng):
    (fabric,) = eng.fabrics
    return {t.name: t for t in fabric.tiers}


def _errors(diags):
    return [f"{d.code} {d.message}" for d in diags if d.is_error]


# =================================================================================================
# Network
# =================================================================================================

# ---- DGX SuperPOD B200 (golden vectors of NVIDIA's reference architecture) ----------------------
# One scalable unit (SU) = 32 DGX B200 = 256 GPUs, 8 rails, one 400G NDR port per GPU.
# Leaf (per rail per SU): 32 node ports of its rail -> ceil(32 / 32 down) = 1 leaf per rail per SU
#   -> leaves = 8 x SUs; node-leaf cables = 32 nodes x 8 ports x SUs = 256 x SUs.
# Leaf uplinks: 32 per leaf (non-blocking) -> 8 x SUs x 32 = 256 x SUs leaf-spine cables;
# spines = ceil(256 x SUs / 64 down) = 4 x SUs.
#   2 SUs: 16 leaf, 8 spine, 512, 512;  4 SUs: 32 leaf, 16 spine, 1,024, 1,024.
@pytest.mark.parametrize("sus, leaf, spine, node_leaf, leaf_spine", [
    ("2", 16, 8, 512, 512),
    ("4", 32, 16, 1024, 1024),
])
def test_dgx_superpod_golden_vectors(sus, leaf, spine, node_leaf, leaf_spine):
    design = astral_dsl.load(DGX, overrides={"scalable_units": sus})
    assert design.valid, design.diagnostics
    eng = analyse(design)
    assert not _errors(eng.diagnostics)
    t = _tiers(eng)
    assert list(t) == ["leaf", "spine"]
    assert t["leaf"].switches == leaf
    assert t["spine"].switches == spine
    assert t["leaf"].down_links == node_leaf
    assert t["spine"].down_links == leaf_spine
    assert t["leaf"].up_links == leaf_spine          # both ends of the same cables
    assert t["leaf"].oversubscription == 1.0         # 32 x 400G down / 32 x 400G up
    assert eng.fabrics[0].host_ports == 256 * int(sus)
    assert astral_dsl.summary(design)["gpus"] == 256 * int(sus)


def test_dgx_superpod_radix_limit():
    # Two tiers of 64-port switches: a spine reaches 64 leaves = 8 rails x 8 SUs, so 8 SUs
    # (2,048 GPUs = 64 x 32 ports) is the largest non-blocking two-tier pod; 16 SUs is E604.
    ok = analyse(astral_dsl.load(DGX, overrides={"scalable_units": "8"}))
    t = _tiers(ok)
    assert (t["leaf"].switches, t["spine"].switches) == (64, 32)   # 2,048 / 64 = 32 spines
    assert not _errors(ok.diagnostics)
    assert ok.fabrics[0].capacity_gpus == 2048        # 32 down x 64 spine ports x 8 GPUs / 8
    big = analyse(astral_dsl.load(DGX, overrides={"scalable_units": "16"}))
    assert [d.code for d in big.diagnostics if d.is_error] == ["E604"]


# ---- the Astral reference (examples/astral.astral) -----------------------------------------------
@pytest.fixture(scope="module")
def astral_ws():
    return astral_dsl.compile(ASTRAL)


@pytest.fixture(scope="module")
def astral_design(astral_ws):
    design = astral_ws.design
    assert design.valid, design.diagnostics
    return design


@pytest.fixture(scope="module")
def astral_eng(astral_design):
    return analyse(astral_design)


@pytest.fixture(scope="module")
def astral_checked(astral_ws):
    return astral_dsl.check(astral_ws, all_scenarios=True)


K = 128          # Switch51T: 128 x 400G ports (256 x 200G with breakout)
R = 8            # rails
PODS = 8


def test_astral_switch_counts(astral_eng):
    # Per pod: 128 rows x 16 racks x 4 hosts = 8,192 hosts; per (rail, plane) group each host
    # has exactly one 200G port (NIC of that rail, port of that plane): 8,192 ports.
    #   ToRs per group = 8,192 / 128 down = 64; 16 groups -> 1,024 ToRs per pod.
    #   Aggs per group = 64 ToRs x 64 up / 64 down = 64; 16 groups -> 1,024 Aggs per pod.
    #   Cores = 8 pods x 1,024 Aggs x 64 up / 128 down = 4,096.
    # Total 8 x 1,024 + 8 x 1,024 + 4,096 = 8,192 + 8,192 + 4,096 = 20,480.
    t = _tiers(astral_eng)
    assert list(t) == ["tor", "agg", "core"]
    assert t["tor"].per_group == 64 and t["tor"].groups == PODS * R * 2
    assert t["agg"].per_group == 64 and t["agg"].groups == PODS * R * 2
    assert t["tor"].switches // PODS == 1024
    assert t["agg"].switches // PODS == 1024
    assert (t["tor"].switches, t["agg"].switches, t["core"].switches) == (8192, 8192, 4096)
    assert astral_eng.fabrics[0].switches == 20480


def test_astral_capacity_is_k_cubed_over_4(astral_eng, astral_design):
    # k^3/4 with k = 128: 128^3 / 4 = 2,097,152 / 4 = 524,288 GPUs.
    assert K ** 3 // 4 == 524_288 == formulas.fat_tree_hosts(K)
    assert astral_eng.fabrics[0].capacity_gpus == 524_288
    assert astral_dsl.summary(astral_design)["gpus"] == 524_288


def test_astral_pod_is_r_k_squared_over_2(astral_eng, astral_design):
    # Pod = R * k^2 / 2 = 8 x 16,384 / 2 = 65,536 GPUs; pods = k / (2R) = 128 / 16 = 8.
    assert R * K ** 2 // 2 == 65_536 == formulas.astral_pod_gpus(R, K)
    assert formulas.astral_pods(R, K) == PODS
    assert astral_dsl.summary(astral_design)["gpus"] // PODS == 65_536
    t = _tiers(astral_eng)
    # the pod is exactly as big as the radix reaches: every ToR downlink is used, and each Agg
    # reaches all 64 ToRs of its group with its 64 downlinks
    assert t["tor"].down_used == t["tor"].down_ports == 128
    assert t["tor"].per_group == t["agg"].down_ports == 64
    # the core joins 8 pods x 16 (rail, plane) groups = 128 groups with its 128 downlinks
    assert t["agg"].groups == t["core"].down_ports == 128
    assert t["core"].down_used == 128


def test_astral_non_blocking(astral_eng):
    # ToR: 128 x 200G = 25.6T down, 64 x 400G = 25.6T up -> 1.0; Agg: 64 x 400G both ways -> 1.0.
    t = _tiers(astral_eng)
    assert t["tor"].oversubscription == 1.0
    assert t["agg"].oversubscription == 1.0
    assert t["core"].oversubscription is None        # top tier: no uplinks, ratio undefined
    assert t["core"].up_ports == 0


def test_astral_hops(astral_eng):
    # same ToR: 1; same rail, same pod: ToR-Agg-ToR = 3; cross-rail: rails meet only at the core,
    # ToR-Agg-Core-Agg-ToR = 5; cross-pod: also through the core = 5.
    hops = dict(astral_eng.fabrics[0].hops)
    assert hops["same ToR"] == 1
    assert hops["same rail, same pod"] == 3
    assert hops["cross-rail"] == 5
    assert hops["cross-pod"] == 5


def test_astral_nic_ports_and_links(astral_eng):
    # 65,536 hosts x 8 NICs x 2 ports = 1,048,576 NIC ports (= host-ToR links);
    # ToR-Agg links = 8,192 ToRs x 64 = 524,288; Agg-Core = 8,192 x 64 = 524,288.
    f = astral_eng.fabrics[0]
    t = _tiers(astral_eng)
    assert f.host_ports == 1_048_576
    assert (f.rails, f.planes) == (8, 2)
    assert t["tor"].down_links == 1_048_576
    assert t["agg"].down_links == 524_288
    assert t["core"].down_links == 524_288
    # every switch carries 64 OSFP modules (ToR: 128 x 200G / 4 + 64 x 400G / 2; Agg: 64 / 2 +
    # 64 / 2; Core: 128 / 2) at 15 W (param module_power) besides its 1 kW (param switch_power):
    # 20,480 x (1,000 + 64 x 15) W = 20,480 x 1,960 W = 40,140.8 kW
    assert astral_eng.network_w == pytest.approx(20_480 * 1960.0)
    assert not _errors(astral_eng.diagnostics)


# ---- examples/single_pod.astral, by hand --------------------------------------------------------------
def test_single_pod_network_by_hand():
    eng = analyse(astral_dsl.load(SINGLE_POD))
    t = _tiers(eng)
    f = eng.fabrics[0]
    # hosts = 16 rows x 8 racks x 4 hosts = 512; GPUs = 512 x 8 = 4,096.
    # NIC ports = 512 hosts x 8 NICs x 2 ports = 8,192; groups = 8 rails x 2 planes = 16,
    # 8,192 / 16 = 512 ports (one per host) per (rail, plane) group.
    assert f.host_ports == 8192
    # ToR (Switch25T, 64 x 200G down, 32 x 400G up): ceil(512 / 64) = 8 per group, x 16 = 128.
    assert (t["tor"].groups, t["tor"].per_group, t["tor"].switches) == (16, 8, 128)
    assert t["tor"].down_used == 64.0
    # Agg (32 x 400G down, 32 up): 8 ToRs x 32 up = 256 links per group / 32 = 8, x 16 = 128.
    assert (t["agg"].groups, t["agg"].per_group, t["agg"].switches) == (16, 8, 128)
    # Core (64 x 400G down), pod scope: 128 Aggs x 32 up = 4,096 links / 64 = 64.
    assert (t["core"].groups, t["core"].switches) == (1, 64)
    # Total 128 + 128 + 64 = 320 switches.
    assert f.switches == 320
    # Links: host-ToR 8,192; ToR-Agg 128 x 32 = 4,096; Agg-Core 128 x 32 = 4,096.
    assert (t["tor"].down_links, t["agg"].down_links, t["core"].down_links) == (8192, 4096, 4096)
    # Oversubscription: ToR 64 x 200G / 32 x 400G = 1.0; Agg 32 x 400 / 32 x 400 = 1.0.
    assert t["tor"].oversubscription == 1.0 and t["agg"].oversubscription == 1.0
    # Radix bound with k = 64 (400G ports): k^3/4 = 262,144 / 4 = 65,536 GPUs.
    assert f.capacity_gpus == 65_536 == formulas.fat_tree_hosts(64)
    # Hops: same ToR 1, same rail 3 (ToR-Agg-ToR), cross-rail 5 (through the core); a single pod
    # has no cross-pod path.
    assert dict(f.hops) == {"same ToR": 1, "same rail, same pod": 3, "cross-rail": 5}
    assert not _errors(eng.diagnostics)


# =================================================================================================
# Power, on a small hand-made design
# =================================================================================================
POWER_SRC = """
import stdlib.power { HVDC240, AC415, Rectifier, LeadAcid }

host H { power = 10 kW }
rack R { hosts = 10 x H }           // 100 kW
host H11 { power = 11 kW }
rack R132 { hosts = 12 x H11 }      // 132 kW

row Pair {                          // a 2N pair: HVDC side A, utility AC side B
  racks = 10 x R                    // 1 MW
  feeder hvdc {
    current = dc, voltage = 240 V, standard = HVDC240, side = A, capacity = 1.2 MW
    battery = LeadAcid(autonomy = 15 min)
    serves = racks
  }
  feeder utility {
    current = ac, voltage = 415 V, phases = 3, power_factor = 95 %, standard = AC415, side = B
    capacity = 1.2 MW
    serves = racks
  }
}

row Bus800 {
  racks = 10 x R                    // 1 MW
  feeder dc800 {
    current = dc, voltage = 800 V, capacity = 1.2 MW
    conductor_area = 500 mm^2, length = 50 m, conductor_temperature = 70 degC
    max_voltage_drop = 1 %
    serves = racks
  }
}

row Cabinet {
  racks = 1 x R132                  // 132 kW
  feeder hvdc {
    current = dc, voltage = 240 V, capacity = 200 kW
    rectifier = Rectifier           // 5.5 kW modules, N+1, 96 %
    serves = racks
  }
}

row Shared {
  racks = 4 x R                     // 400 kW on 4 identical feeders
  feeder bus { current = dc, voltage = 400 V, count = 4, capacity = 150 kW, serves = racks }
}

site S {
  pair = 1 x Pair
  bus = 1 x Bus800
  cabinet = 1 x Cabinet
  shared = 1 x Shared
}

scenario hvdc_down {
  required = true
  fail S.pair[0].hvdc
}
"""


@pytest.fixture(scope="module")
def power_checked():
    ws = astral_dsl.compiles(POWER_SRC, name="power_design.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    return astral_dsl.check(ws, all_scenarios=True)


@pytest.fixture(scope="module")
def feeders(power_checked):
    return {f.path: f for f in power_checked.engineering.power.feeders}


def test_power_design_is_clean(power_checked):
    assert not _errors(power_checked.diagnostics)
    assert power_checked.valid


def test_2n_pair_normal_and_failover(feeders):
    # 2N: each side shares the load in normal operation and carries all of it when the other
    # fails. Load = 10 racks x 10 hosts x 10 kW = 1,000 kW.
    #   normal = 1,000 / 2 = 500 kW per side; failover = 1,000 kW.
    for path in ("S.pair[0].hvdc", "S.pair[0].utility"):
        f = feeders[path]
        assert f.load_w == pytest.approx(1_000_000)
        assert f.normal_w == pytest.approx(500_000)
        assert f.failover_w == pytest.approx(1_000_000)
        assert f.capacity_w == pytest.approx(1_200_000)
    assert (feeders["S.pair[0].hvdc"].side, feeders["S.pair[0].utility"].side) == ("A", "B")


def test_n_identical_feeders_share_and_lose_one(feeders):
    # count = 4 feeders share 400 kW: normal 400 / 4 = 100 kW; one failed: 400 / 3 = 133.33 kW
    # (<= 150 kW capacity: no E621).
    f = feeders["S.shared[0].bus"]
    assert f.normal_w == pytest.approx(100_000)
    assert f.failover_w == pytest.approx(400_000 / 3)


def test_dc_current(feeders):
    # I = P / V at the load the feeder must carry (failover for a 2N side), at the lowest voltage
    # the feeder runs at:
    #   the 240 V HVDC side has lead-acid batteries on its bus: 120 cells x 1.75 V (IEEE 485 end
    #   of discharge) = 210 V -> 1 MW / 210 V = 4,761.9 A (a seventh more than at 240 V);
    #   1 MW at 800 V with no standard or battery: at its nominal 800 V = 1,250 A (W622 says so);
    #   132 kW at 240 V, no standard or battery: 550 A (W622).
    hvdc = feeders["S.pair[0].hvdc"]
    assert (hvdc.low_voltage_v, hvdc.low_voltage_from) == (210.0, "battery end of discharge")
    assert hvdc.current_a == pytest.approx(1_000_000 / 210, rel=1e-9)
    assert round(hvdc.current_a) == 4762
    assert feeders["S.bus[0].dc800"].current_a == pytest.approx(1250.0)
    assert feeders["S.bus[0].dc800"].low_voltage_from == "nominal"
    assert feeders["S.cabinet[0].hvdc"].current_a == pytest.approx(550.0)


def test_three_phase_current(feeders):
    # I = P / (sqrt(3) * V_LL * PF) at the standard's minimum: AC415 (IEC 60038, -10 %) is
    # 373.5 V: 1,000,000 / (1.7320508 x 373.5 x 0.95) = 1,627.1 A (1,464.4 A at 415 V nominal)
    f = feeders["S.pair[0].utility"]
    assert f.current_type == "ac"
    assert (f.low_voltage_v, f.low_voltage_from) == (373.5, "standard minimum")
    assert f.current_a == pytest.approx(1_000_000 / (SQRT3 * 373.5 * 0.95), rel=1e-9)
    assert round(f.current_a) == 1627
    assert round(1_000_000 / (SQRT3 * 415 * 0.95)) == 1464       # the nominal figure


def test_rectifier_modules_n_plus_1(feeders, power_checked):
    # N = ceil(P / (P_module * derate)) = ceil(132 / 5.5) = 24; N+1 = 25 (Uptime Institute N+1).
    f = feeders["S.cabinet[0].hvdc"]
    assert f.rectifier_modules_needed == 25
    assert f.rectifier_modules is None               # the cabinet declares no module count
    assert power_checked.engineering.power.rectifier_modules == 25
    # its losses: 132 kW x (1 / 0.96 - 1) = 5.5 kW (the only feeder with an efficiency), and its
    # 25 installed modules at no load, 0.5 % of 5.5 kW each (stdlib.power.Rectifier):
    # 25 x 27.5 W = 687.5 W -> 6,187.5 W
    assert f.no_load_w == pytest.approx(687.5)
    assert power_checked.engineering.power.conversion_loss_w == pytest.approx(5500.0 + 687.5)


def test_battery_ieee485(feeders, power_checked):
    # 240 V HVDC bus, batteries on the bus (eta 1), 120 lead-acid cells x 1.75 V = 210 V end,
    # 1 MW for 15 min (IEEE 485: aging factor 1.25, design margin 1.1):
    #   I = P / (eta * V_end) = 1,000,000 / 210 = 4,761.9 A
    #   raw = I * t = 4,761.9 x 0.25 h = 1,190.5 Ah
    #   sized = raw * TC * AF * DF = 1,190.5 x 1.0 x 1.25 x 1.1 = 1,636.9 Ah
    f = feeders["S.pair[0].hvdc"]
    assert f.battery_current_a == pytest.approx(1_000_000 / 210, rel=1e-9)
    assert f.battery_required_ah == pytest.approx(1_000_000 / 210 * 0.25 * 1.25 * 1.1, rel=1e-9)
    assert round(f.battery_current_a) == 4762
    assert round(f.battery_required_ah) == 1637
    assert f.battery_available_ah is None            # no strings declared
    assert power_checked.engineering.power.battery_ah == pytest.approx(f.battery_required_ah)


def test_dc_voltage_drop(feeders):
    # dV = 2 * I * L * rho_T / A, rho_70 = 0.017241 x (1 + 0.00393 x (70 - 20)) = 0.0206289
    #   = 2 x 1,250 A x 50 m x 0.0206289 / 500 mm^2 = 5.157 V = 0.645 % of 800 V
    #   (rounded: 5.16 V, 0.64 %), within the declared 1 %.
    f = feeders["S.bus[0].dc800"]
    rho70 = RHO20 * (1 + ALPHA * (70 - 20))
    assert f.voltage_drop_v == pytest.approx(2 * 1250 * 50 * rho70 / 500, rel=1e-9)
    assert round(f.voltage_drop_v, 2) == 5.16
    assert f.drop_ratio == pytest.approx(f.voltage_drop_v / 800)
    assert round(f.drop_ratio * 100, 2) == 0.64


def test_power_levels(power_checked):
    # IT peak = 1,000 + 1,000 + 132 + 400 = 2,532 kW; no utilization declared: average = peak.
    p = power_checked.engineering.power
    assert p.it_peak_w == pytest.approx(2_532_000)
    assert p.it_average_w == pytest.approx(2_532_000)


def test_2n_scenario_partner_carries_everything(power_checked):
    (outcome,) = power_checked.scenarios
    assert outcome.name == "hvdc_down" and outcome.required
    assert outcome.notes == ("feeder S.pair[0].hvdc failed",)
    assert outcome.broken == ()
    by = {f.path: f for f in outcome.result.power.feeders}
    # the failed side carries nothing; the utility side carries the whole 1,000 kW (<= 1.2 MW)
    assert by["S.pair[0].hvdc"].normal_w == 0.0
    assert by["S.pair[0].utility"].normal_w == pytest.approx(1_000_000)
    assert by["S.pair[0].utility"].current_a == pytest.approx(
        1_000_000 / (SQRT3 * 373.5 * 0.95))


# =================================================================================================
# Cooling, on a small hand-made design
# =================================================================================================
COOLING_SRC = """
fluid Water { coolprop = "Water" }
cdu Cdu150 { capacity = 150 kW, max_flow = 120 L/min }

host H { power = 10 kW, liquid_share = 75 % }
rack R { hosts = 4 x H }            // 40 kW: 30 kW to liquid, 10 kW to air

row Row {
  racks = 10 x R                    // 400 kW: 300 kW liquid, 100 kW air
  feeder main { current = dc, voltage = 400 V, capacity = 500 kW, efficiency = 97 %,
                serves = racks }
  loop secondary {
    fluid = Water, supply = 30 degC, rise = 10 K
    cdu = Cdu150, cdus = 5, redundancy = n_plus_1
    pump_head = 200 kPa, pump_efficiency = 70 %
    serves = racks
  }
  air room { supply = 25 degC, rise = 20 delta_degF, max_rack_heat = 15 kW,
             fan_power_ratio = 5 %, serves = racks }
}

site S {
  rows = 1 x Row
  utilization = UTILIZATION
  // cold enough for the air unit's coil (10 K approach by default) and the CDUs' (3 K)
  facility water { water_class = W32, supply = 15 degC, free_cooling = 6000 h, chiller_cop = 5 }
  // an ideal transformer: the losses below stop at the feeder (tests/test_facility.py and
  // test_plant.py count transformer losses)
  transformer mv { capacity = 1 MW, no_load_loss = 0 W, load_loss = 0 W }
}
"""


def _cooling(utilization: str):
    ws = astral_dsl.compiles(COOLING_SRC.replace("UTILIZATION", utilization),
                              name="cooling_design.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    checked = astral_dsl.check(ws, all_scenarios=True)
    assert not _errors(checked.diagnostics)
    return checked.engineering


@pytest.fixture(scope="module")
def cooling():
    return _cooling("100 %")


def test_liquid_air_split(cooling):
    # 400 kW x 75 % = 300 kW to cold plates; 400 - 300 = 100 kW to air.
    assert cooling.cooling.liquid_heat_w == pytest.approx(300_000)
    assert cooling.cooling.air_heat_w == pytest.approx(100_000)
    (loop,) = cooling.cooling.loops
    (air,) = cooling.cooling.air
    assert loop.heat_w == pytest.approx(300_000)
    assert air.heat_w == pytest.approx(100_000)
    assert air.max_rack_heat_w == pytest.approx(10_000)     # 40 kW x 25 % per rack


def test_loop_flow_with_coolprop_water(cooling):
    # Properties at the mean loop temperature: supply 30 degC + 10 K / 2 = 35 degC (CoolProp).
    # V = Q / (rho cp dT) = 300,000 / (994.03 x 4,179.3 x 10) = 7.2214e-3 m^3/s = 433.3 L/min
    # (the rounded rule for water near 30 degC, 1.44 L/min per kW at 10 K, gives 432 L/min).
    (loop,) = cooling.cooling.loops
    props = fluids.properties("Water", 35.0)
    assert loop.density == pytest.approx(props.density, rel=1e-9)
    assert loop.cp == pytest.approx(props.cp, rel=1e-9)
    expected = 300_000 / (props.density * props.cp * 10)
    assert loop.flow_m3s == pytest.approx(expected, rel=1e-9)
    assert formulas.m3s_to_l_per_min(loop.flow_m3s) == pytest.approx(1.44 * 300, rel=0.01)
    assert loop.fluid == "Water"
    assert loop.supply_c == pytest.approx(30.0)


def test_cdus_n_plus_1_on_heat_and_flow(cooling):
    # heat: ceil(300 / 150) = 2; flow: ceil(433.3 / 120 L/min) = 4; N = max = 4; N+1 = 5.
    (loop,) = cooling.cooling.loops
    assert math.ceil(300 / 150) == 2
    assert math.ceil(formulas.m3s_to_l_per_min(loop.flow_m3s) / 120) == 4
    assert loop.cdus_needed == 5
    assert loop.cdus == 5
    assert loop.cdu_capacity_w == pytest.approx(150_000)


def test_pump_power(cooling):
    # P = V * head / eta = 7.2214e-3 m^3/s x 200,000 Pa / 0.70 = 2,063 W.
    (loop,) = cooling.cooling.loops
    assert loop.pump_w == pytest.approx(loop.flow_m3s * 200_000 / 0.70, rel=1e-9)
    assert round(loop.pump_w) == 2063
    assert cooling.cooling.pump_w == pytest.approx(loop.pump_w)


def test_air_flow_m3h_and_cfm(cooling):
    # rise 20 F = 11.111 K; humid air (CoolProp) at the 25 degC supply, the default 15 degC dew
    # point and sea level (W642: no altitude): V = Q x v_da / (h(36.11 degC) - h(25 degC)) per kg
    # of dry air = 7.5288 m^3/s = 27,104 m^3/h = 15,953 CFM, 1 % above formulas.air_flow's rule
    # (1.2 kg/m^3, 1,006 J/kg/K: 268.4 m^3/h = 158.0 CFM per kW at 20 F)
    (air,) = cooling.cooling.air
    assert air.rise_k == pytest.approx(100 / 9)
    v = HAPropsSI("Vda", "T", 298.15, "P", 101325, "Tdp", 288.15)
    dh = (HAPropsSI("H", "T", 298.15 + 100 / 9, "P", 101325, "Tdp", 288.15)
          - HAPropsSI("H", "T", 298.15, "P", 101325, "Tdp", 288.15))
    flow = 100_000 * v / dh
    assert air.flow_m3s == pytest.approx(flow, rel=1e-6)
    m3h = formulas.m3s_to_m3_per_h(air.flow_m3s)
    assert m3h == pytest.approx(flow * 3600, rel=1e-6)
    rule = 100_000 / (AIR_RHO * AIR_CP * (100 / 9))
    assert rule * 3600 / 100 == pytest.approx(268.4, abs=0.05)
    assert m3h / 100 == pytest.approx(rule * 3600 / 100 * flow / rule, rel=1e-6)
    assert flow / rule == pytest.approx(1.01, abs=0.005)
    cfm = formulas.m3s_to_cfm(air.flow_m3s)
    assert cfm == pytest.approx(flow * 3600 * CFM_PER_M3H, rel=1e-6)
    assert rule * 3600 * CFM_PER_M3H / 100 == pytest.approx(158.0, abs=0.05)


def test_pue_with_chiller_and_free_cooling(cooling):
    # Utilization 100 %: average = peak = 400 kW IT.
    #   conversion losses = 400 x (1 / 0.97 - 1)            = 12.371 kW
    #   pump  = 2.063 kW (above);  fans = 5 % x 100 kW air   =  5.000 kW
    #   every watt drawn in the building ends in the facility water:
    #     400 + 12.371 + 2.063 + 5 = 419.434 kW
    #   chiller = water heat / COP x (8,760 - 6,000 h free) / 8,760
    #           = 419.434 / 5 x 2,760 / 8,760 = 26.430 kW
    #   heat rejection fans: no `rejection_fan_ratio` (W656): 0 W
    #   facility = 419.434 + 26.430 = 445.864 kW;  PUE = 445.864 / 400 = 1.1147
    c = cooling.cooling
    (loop,) = c.loops
    losses = 400_000 * (1 / 0.97 - 1)
    water = 400_000 + losses + loop.pump_w + 5_000
    chiller = water / 5 * (8760 - 6000) / 8760
    assert cooling.power.conversion_loss_w == pytest.approx(losses, rel=1e-9)
    assert c.fan_w == pytest.approx(5_000)
    assert c.chiller_w == pytest.approx(chiller, rel=1e-9)
    assert round(chiller) == 26_430
    facility = water + chiller
    assert c.facility_w == pytest.approx(facility, rel=1e-9)
    assert c.pue == pytest.approx(facility / 400_000, rel=1e-9)
    assert round(c.pue, 4) == 1.1147
    assert c.water_class == "W32"


@pytest.fixture(scope="module")
def cooling_half():
    return _cooling("50 %")


def test_pue_chiller_follows_the_average_heat(cooling_half):
    # PUE is an annual energy ratio (The Green Grid): at 50 % utilization, on average, the IT
    # emits 200 kW, the feeder loses 200 x (1 / 0.97 - 1) = 6.186 kW, the pumps (design flow) draw
    # 2.063 kW and the fans 5 % of the average air heat (50 % x 100 kW) = 2.5 kW: the water takes
    # 210.749 kW, and the chillers remove it during the mechanical hours:
    #   chiller = 210.749 / 5 x 2,760 / 8,760 = 13.280 kW (on one basis: the annual average)
    c = cooling_half.cooling
    (loop,) = c.loops
    assert cooling_half.power.it_average_w == pytest.approx(200_000)
    assert c.fan_w == pytest.approx(0.05 * 0.5 * 100_000)
    water = 200_000 + 200_000 * (1 / 0.97 - 1) + loop.pump_w + 2_500
    assert c.chiller_w == pytest.approx(water / 5 * 2760 / 8760, rel=1e-9)
    assert round(c.chiller_w) == 13_280


def test_pue_conversion_losses_follow_the_average_load(cooling_half):
    # at 50 % the feeder carries 200 kW on average: losses = 200 x (1 / 0.97 - 1) = 6.186 kW
    assert cooling_half.power.conversion_loss_w == pytest.approx(200_000 * (1 / 0.97 - 1),
                                                                 rel=1e-9)


# =================================================================================================
# `astral size examples/astral.astral --format json`
# =================================================================================================
SIZE_KEYS = {"gpus", "hosts", "racks", "it_power_kw", "facility_power_kw", "pue",
             "liquid_heat_kw", "air_heat_kw", "liquid_flow_l_per_min", "air_flow_m3_per_h",
             "cdus", "feeders", "rectifier_modules", "battery_ah", "switches",
             "switches_by_tier", "oversubscription", "it_power_avg_kw"}


@pytest.fixture(scope="module")
def size_json():
    proc = _cli_here(["size", "examples/astral.astral", "--format", "json"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["valid"] is True and doc["diagnostics"] == []
    return doc["summary"]


# Hand calculation for examples/astral.astral
HOSTS = 8 * 128 * 16 * 4                    # pods x rows x racks x hosts = 65,536
HOST_KW = 10.2
SWITCHES = 20_480
SWITCH_KW = 1.0 + 64 * 0.015               # param switch_power + 64 modules x param module_power
HOSTS_KW = HOSTS * HOST_KW                  # 668,467.2 kW
IT_KW = HOSTS_KW + SWITCHES * SWITCH_KW     # 668,467.2 + 40,140.8 = 708,608.0 kW
# annual average: the hosts at the site's 75 % utilisation, the switches at full power (they
# draw near their rating whatever the job): 501,350.4 + 40,140.8 = 541,491.2 kW
IT_AVG_KW = 0.75 * HOSTS_KW + SWITCHES * SWITCH_KW
POD_LIQUID_KW = 0.75 * HOSTS_KW / 8         # 62,668.8 kW per pod loop


def _pg25_flow_m3s(supply_c: float = 40.0) -> float:
    # PG25 properties at the mean loop temperature: 40 degC + 10 K / 2 = 45 degC (CoolProp)
    p = fluids.properties("INCOMP::MPG[0.25]", supply_c + 5.0)
    return POD_LIQUID_KW * 1000 / (p.density * p.cp * 10)


def test_size_json_has_the_summary_keys(size_json):
    assert SIZE_KEYS <= set(size_json), sorted(SIZE_KEYS - set(size_json))


def test_size_json_counts(size_json):
    assert size_json["gpus"] == HOSTS * 8 == 524_288
    assert size_json["hosts"] == HOSTS == 65_536
    assert size_json["racks"] == 8 * 128 * 16 == 16_384
    assert size_json["switches"] == SWITCHES
    assert size_json["switches_by_tier"] == {"tor": 8192, "agg": 8192, "core": 4096}
    assert size_json["oversubscription"] == {"tor": 1.0, "agg": 1.0}


def test_size_json_it_power(size_json):
    # it_power = 65,536 hosts x 10.2 kW + 20,480 switches x 1.96 kW = 708,608.0 kW
    assert size_json["it_power_kw"] == pytest.approx(IT_KW, abs=1e-3)
    assert size_json["it_power_kw"] == pytest.approx(708_608.0, abs=1e-3)
    # average: site utilization 75 % scales the hosts only (switch power is not scaled by GPU
    # utilisation): 0.75 x 668,467.2 + 40,140.8 = 541,491.2 kW (not 0.75 x 708,608.0)
    assert size_json["it_power_avg_kw"] == pytest.approx(IT_AVG_KW, abs=1e-3)
    assert size_json["it_power_avg_kw"] == pytest.approx(541_491.2, abs=1e-3)


def test_size_json_heat_split(size_json):
    # liquid = 75 % of host power = 0.75 x 668,467.2 = 501,350.4 kW; air = the rest of the IT
    # power (25 % of hosts + all switches) = 708,608.0 - 501,350.4 = 207,257.6 kW
    assert size_json["liquid_heat_kw"] == pytest.approx(0.75 * HOSTS_KW, abs=1e-3)
    assert size_json["air_heat_kw"] == pytest.approx(IT_KW - 0.75 * HOSTS_KW, abs=1e-3)


def test_size_json_flows(size_json):
    # liquid: 8 pod loops x 62,668.8 kW / (rho cp 10 K) with PG25 at 45 degC
    #   = 8 x 93,786.6 L/min = 750,292.4 L/min
    # (air flows, humid air at the site's elevation: tests/test_reference_facility.py)
    assert size_json["liquid_flow_l_per_min"] == pytest.approx(
        8 * _pg25_flow_m3s() * 60_000, abs=0.06)


def test_size_json_cdus(size_json):
    # CDU(capacity = 2 MW): max_flow = 2,000,000 / (995.7 x 4,178 x 10) = 0.048076 m^3/s
    #   = 2,884.6 L/min; heat: ceil(62,668.8 / 2,000) = 32; flow: ceil(93,786.6 / 2,884.6)
    #   = ceil(32.51) = 33; N = 33, N+1 = 34 per pod (declared 34); 8 pods -> 272.
    cdu_flow = 2_000_000 / (995.7 * 4178 * 10)
    assert math.ceil(POD_LIQUID_KW / 2000) == 32
    assert math.ceil(_pg25_flow_m3s() / cdu_flow) == 33
    assert size_json["cdus"] == 8 * 34 == 272


# the feeders, rectifiers and batteries, the pumps, every component of the facility power, the
# PUE and the peak at the utility point by hand: tests/test_reference_facility.py


def test_size_json_agrees_with_the_analysis(size_json, astral_eng):
    assert size_json["it_power_kw"] == pytest.approx(astral_eng.power.it_peak_w / 1e3, abs=1e-3)
    assert size_json["liquid_heat_kw"] == pytest.approx(astral_eng.cooling.liquid_heat_w / 1e3,
                                                        abs=1e-3)


# =================================================================================================
# Scenarios of every example
# =================================================================================================
@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_example_has_a_scenario(name):
    design = astral_dsl.load(EXAMPLES / name)
    assert design.valid, design.diagnostics
    assert len(design.scenarios) >= 1, f"examples/{name} declares no scenario"


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_example_holds_under_all_scenarios(name):
    ws = astral_dsl.compile(EXAMPLES / name)
    design = ws.design
    checked = astral_dsl.check(ws, all_scenarios=True)
    assert checked.valid, _errors(checked.diagnostics)
    assert not [d for d in checked.diagnostics if d.code in ("E680", "W680")]
    assert [o.name for o in checked.scenarios] == [s.template for s in design.scenarios]
    for o in checked.scenarios:
        assert o.broken == (), (o.name, [d.code for d in o.broken])


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_cli_check_all_scenarios(name):
    design = astral_dsl.load(EXAMPLES / name)
    proc = _cli_here(["check", f"examples/{name}", "--all-scenarios", "--color", "never"])
    out = proc.stdout.decode()
    assert b"Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 0, out
    for s in design.scenarios:
        req = " (required)" if s.field("required") is True else ""
        assert f"scenario {s.template}{req}: holds" in out


def test_astral_scenarios(astral_checked, astral_eng):
    by = {o.name: o for o in astral_checked.scenarios}
    assert set(by) == {"plane_b_down", "hvdc_lost", "hot_day"}
    assert [n for n, o in by.items() if o.required] == ["hvdc_lost"]
    assert all(o.broken == () for o in by.values())
    # plane B of every rail fails: named in the notes, with what it does: 65,536 hosts x 8
    # dual-port NICs keep port a; plane B's ToRs and aggs (4,096 each: 8 pods x 8 rails x 64) are
    # off, each 1 kW plus the modules in its 64 cages (tor: 32 breakout + 32 twin-port modules,
    # agg: 32 + 32; 15 W each): 4,096 x (1,000 + 64 x 15) W = 8,028.2 kW per tier
    assert by["plane_b_down"].notes == (
        "Astral.fabric.plane[B] failed",
        "524,288 NICs run on 1 of 2 ports (`Astral.fabric.plane[B]` failed)",
        "4,096 `tor` switches off: 8,028.2 kW less network power",
        "4,096 `agg` switches off: 8,028.2 kW less network power")
    assert by["plane_b_down"].result.network_w == pytest.approx(
        astral_eng.network_w - 2 * 4096 * (1000 + 64 * 15))


def test_astral_hvdc_lost_utility_carries_the_row(astral_checked):
    o = next(o for o in astral_checked.scenarios if o.name == "hvdc_lost")
    assert o.required
    assert o.notes == ("feeder Astral.pods[0].rows[0].hvdc failed",)
    feeders = {f.path: f for f in o.result.power.feeders}
    hvdc = feeders["Astral.pods[0].rows[0].hvdc"]
    utility = feeders["Astral.pods[0].rows[0].utility"]
    # the failed HVDC side carries nothing; the utility side carries the whole row:
    # 16 racks x 4 hosts x 10.2 kW = 652.8 kW of load; at its 97 % efficiency its conductors
    # carry 652.8 / 0.97 = 672.99 kW <= 800 kW, at AC400's minimum of 360 V (IEC 60038, -10 %):
    # 672,990 / (sqrt(3) x 360 x 0.95) = 1,136.1 A
    assert hvdc.normal_w == 0.0
    assert utility.normal_w == pytest.approx(652_800)
    assert utility.normal_w == pytest.approx(utility.load_w)
    assert utility.carried_w == pytest.approx(652_800 / 0.97)
    assert utility.carried_w <= utility.capacity_w
    assert utility.current_a == pytest.approx(652_800 / 0.97 / (SQRT3 * 360 * 0.95), rel=1e-9)
    assert round(utility.current_a, 1) == 1136.1
    assert not _errors(o.result.diagnostics)


def test_astral_hot_day_raises_supply(astral_checked, astral_eng):
    o = next(o for o in astral_checked.scenarios if o.name == "hot_day")
    assert not o.required
    assert o.notes == ("Astral.pods[0].secondary.supply = 45 degC",)
    (base,) = astral_eng.cooling.loops
    # the scenario names pod 0's loop: that one runs at 45 degC, the 7 other pods' at 40 degC
    hot, rest = sorted(o.result.cooling.loops, key=lambda lp: lp.replicas)
    assert (hot.path, hot.replicas) == ("Astral.pods[0].secondary", 1)
    assert (rest.path, rest.replicas) == ("Astral.pods[1].secondary", 7)
    assert rest.supply_c == pytest.approx(40.0)
    assert rest.flow_m3s == pytest.approx(base.flow_m3s, rel=1e-12)
    assert base.supply_c == pytest.approx(40.0)
    assert hot.supply_c == pytest.approx(45.0)
    # properties now at 45 + 5 = 50 degC; the flow is Q / (rho cp dT) there
    p50 = fluids.properties("INCOMP::MPG[0.25]", 50.0)
    assert hot.density == pytest.approx(p50.density, rel=1e-9)
    assert hot.flow_m3s == pytest.approx(_pg25_flow_m3s(45.0), rel=1e-9)
    assert o.broken == ()


def test_single_pod_tor_failure_in_notes():
    ws = astral_dsl.compile(SINGLE_POD)
    design = ws.design
    checked = astral_dsl.check(ws, all_scenarios=True)
    (o,) = checked.scenarios
    assert o.name == "tor_plane_a_rail_3" and not o.required
    # 512 hosts: NIC 3 of each keeps port b; rail 3's plane-A ToRs: 512 ports / 64 down = 8
    tor = checked.engineering.fabrics[0].tiers[0]
    assert o.notes == ("Lab.pods[0].fabric.rail[3].plane[A].tor failed",
                       "512 NICs run on 1 of 2 ports "
                       "(`Lab.pods[0].fabric.rail[3].plane[A].tor` failed)",
                       f"8 `tor` switches off: {8 * tor.switch_share_w / 1e3:,.1f} kW less "
                       f"network power")
    assert tor.switch_share_w == pytest.approx(600 + tor.optics_w / tor.switches)
    assert o.result.network_w == pytest.approx(checked.engineering.network_w
                                               - 8 * tor.switch_share_w)
    assert o.result.notes == o.notes
    assert o.broken == ()


def test_dgx_feed_failure_in_notes():
    ws = astral_dsl.compile(DGX)
    design = ws.design
    checked = astral_dsl.check(ws, all_scenarios=True)
    (o,) = checked.scenarios
    assert o.name == "feed_a_lost"
    assert o.notes == ("feeder SuperPOD.sus[0].a failed",)
    assert o.broken == ()


def test_required_scenarios_run_without_being_asked(astral_ws):
    checked = astral_dsl.check(astral_ws)
    assert [o.name for o in checked.scenarios] == ["hvdc_lost"]
    assert checked.valid


def test_size_under_a_scenario():
    proc = _cli_here(["size", "examples/astral.astral", "--scenario", "hvdc_lost",
                      "--format", "json"])
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    assert doc["scenario"]["name"] == "hvdc_lost"
    assert doc["scenario"]["failed"] == [{"target": "Astral.pods[0].rows[0].hvdc",
                                          "kind": "feeder", "replicas": 1}]
    assert doc["scenario"]["changed"] == []
    assert doc["scenario"]["notes"] == ["feeder Astral.pods[0].rows[0].hvdc failed"]
    assert doc["summary"]["feeders"] == 2160         # installed: a failure removes none
    assert doc["summary"]["it_power_kw"] == pytest.approx(IT_KW, abs=1e-3)


# =================================================================================================
# Determinism
# =================================================================================================
SIZE_FORMATS = ["json", "human"]


@pytest.fixture(scope="module")
def seeded():
    """`astral size` of the reference in each format under hash seeds 1 and 2 (NO_COLOR unset):
    a process per seed that runs both (tests/clirun.py's astral_runs), not one per format and
    seed (conftest.py puts this checkout first on their PYTHONPATH)."""
    from clirun import astral_runs

    commands = [["size", "examples/astral.astral", "--format", fmt, "--color", "never"]
                for fmt in SIZE_FORMATS]
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    runs = [astral_runs(commands, cwd=REPO, env=dict(env, PYTHONHASHSEED=seed), timeout=300)
            for seed in ("1", "2")]
    return dict(zip(SIZE_FORMATS, zip(*runs)))


@pytest.mark.parametrize("fmt", SIZE_FORMATS)
def test_size_is_byte_identical(fmt, seeded):
    first, second = seeded[fmt]
    assert first.returncode == 0 and second.returncode == 0
    assert first.stdout == second.stdout
    assert first.stderr == second.stderr == b""
    assert len(first.stdout) > 100


TWO_N_CDUS = """
fluid Water {{ coolprop = "Water" }}
cdu C {{ capacity = {cap} kW }}
host H {{ power = 10 kW, liquid_share = 80 % }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 2 x R
  loop plates {{ fluid = Water, supply = 30 degC, rise = 10 K, cdu = C, cdus = {n}
                 redundancy = {scheme} }}
}}
"""


@pytest.mark.parametrize("cap, n, scheme, left", [
    # 2 racks x 4 hosts x 10 kW x 80 % = 64 kW on the cold plates
    (25, 4, "two_n", 2),      # 2N: one side, 2 x 25 = 50 kW < 64 kW (3 x 25 = 75 kW passed)
    (30, 5, "two_n", 2),      # an odd count: the smaller half, 2 x 30 = 60 kW < 64 kW
    (25, 3, "n_plus_1", 2)])  # N+1: one fewer, 2 x 25 = 50 kW < 64 kW
def test_cdus_after_the_failure_their_redundancy_covers(cap, n, scheme, left):
    checked = astral_dsl.check(astral_dsl.compiles(TWO_N_CDUS.format(cap=cap, n=n, scheme=scheme),
                                                   name="cdus.astral"))
    (e,) = [d for d in checked.diagnostics if d.code == "E641"]
    what = f"one side of its 2N CDUs failed ({left} of {n} left)" if scheme == "two_n" else \
        "one CDU failed"
    assert e.message == f"with {what}, loop `S.plates` has {left * cap} kW for 64 kW"
    # the sizing agrees: 2N is 2 x ceil(64 / cap) (6 for 25 kW, 6 for 30 kW), N+1 ceil + 1 = 4
    (loop,) = checked.engineering.cooling.loops
    assert loop.cdus_needed == (2 * math.ceil(64 / cap) if scheme == "two_n" else 4) > n
    assert e.hint == f"{loop.cdus_needed} CDUs are needed ({scheme})"


def test_2n_cdus_whose_side_carries_the_heat_pass():
    # 5 x 35 kW, 2N: the smaller side, 2 x 35 = 70 kW >= 64 kW
    checked = astral_dsl.check(astral_dsl.compiles(TWO_N_CDUS.format(cap=35, n=5,
                                                                     scheme="two_n"),
                                                   name="cdus.astral"))
    assert not [d for d in checked.diagnostics if d.code in ("E640", "E641")]
