"""Engineering formulas for network, power and cooling checks and sizing.

Pure functions on plain floats in SI units: W, V, A, m, m^2, s, kg/m^3, J/(kg K), m^3/s, Pa,
ohm*m and ohm/m.  Temperature *points* are in degC and named ``*_c``; temperature *differences* are
in K and named ``delta_t`` (``delta_t_f`` where a Fahrenheit difference is meant).  Nothing here
knows about the DSL, units or diagnostics: callers convert declared quantities to SI first and turn
the ``ValueError`` raised for physically meaningless inputs (zero voltage, efficiency above 1, ...)
into a diagnostic.

Sources are cited per function; "engineering.md" is ``shared/reference/engineering.md`` (formulas and
worked examples used by the tests), "astral-paper.md" the Astral reference topology.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence, Tuple

__all__ = [
    "SQRT3", "HOURS_PER_YEAR", "SIZING_REL_TOL",
    "COPPER_RHO20_OHM_M", "COPPER_ALPHA_PER_K",
    "AIR_DENSITY_KG_M3", "AIR_CP_J_KG_K", "CFM_PER_M3_PER_H",
    "dc_current", "ac3_current", "feed_available_power",
    "modules_needed", "with_redundancy", "capacity_after_failures",
    "battery_current", "battery_capacity_ah",
    "copper_resistivity", "dc_voltage_drop", "ac3_voltage_drop", "drop_fraction", "ampacity",
    "liquid_flow", "air_flow", "air_flow_cfm_rule_of_thumb",
    "m3s_to_l_per_min", "m3s_to_m3_per_h", "m3s_to_cfm",
    "pump_power", "pue", "facility_power", "pue_over_modes", "annual_pue",
    "fat_tree_hosts", "astral_pod_gpus", "astral_pods", "oversubscription",
]

SQRT3 = math.sqrt(3.0)
HOURS_PER_YEAR = 8760.0

#: Relative tolerance used when a ratio that should be an integer comes out a hair above it through
#: floating-point rounding (132e3 / 5.5e3 = 24.000000000000004). Ratios within this much of an
#: integer are taken as that integer; anything further is rounded up.
SIZING_REL_TOL = 1e-9

#: Annealed copper at 20 degC: 0.01724 ohm*mm^2/m = 1.724e-8 ohm*m (IEC 60028 standard value,
#: engineering.md "Voltage drop").
COPPER_RHO20_OHM_M = 0.01724e-6
#: Temperature coefficient of copper resistance at 20 degC, per K (IEC 60028; engineering.md).
COPPER_ALPHA_PER_K = 0.00393

#: Air near sea level and 20-25 degC (engineering.md "Air flow": rho 1.2 kg/m^3, cp 1.006 kJ/kg/K).
AIR_DENSITY_KG_M3 = 1.2
AIR_CP_J_KG_K = 1006.0

#: 1 m^3/h in ft^3/min, exact from the international foot (0.3048 m): 1 / (0.3048^3 * 60)
#: = 0.588578 CFM, quoted as 0.5886 in engineering.md.
CFM_PER_M3_PER_H = 1.0 / (0.3048 ** 3 * 60.0)


# --------------------------------------------------------------------------- input checks

def _finite(name: str, value: float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


def _positive(name: str, value: float) -> float:
    v = _finite(name, value)
    if v <= 0.0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return v


def _non_negative(name: str, value: float) -> float:
    v = _finite(name, value)
    if v < 0.0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return v


def _fraction(name: str, value: float) -> float:
    """A ratio in (0, 1]: efficiency, power factor, derating, utilisation."""
    v = _finite(name, value)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return v


def _ceil_tol(x: float) -> int:
    """ceil(x), except that x within SIZING_REL_TOL (relative) of an integer is that integer."""
    nearest = round(x)
    if abs(x - nearest) <= SIZING_REL_TOL * max(1.0, abs(x)):
        return int(nearest)
    return int(math.ceil(x))


# --------------------------------------------------------------------------- power: currents

def dc_current(power_w: float, voltage_v: float) -> float:
    """DC current I = P / V  [A].

    Source: engineering.md "Power" (1 MW at 54 V = 18.5 kA, 400 V = 2.5 kA, 800 V = 1.25 kA).
    The sign of the voltage is ignored (a -48 V telecom bus carries the same current)."""
    return _non_negative("power_w", power_w) / _positive("|voltage_v|", abs(_finite("voltage_v", voltage_v)))


def ac3_current(power_w: float, v_line_line: float, power_factor: float) -> float:
    """Balanced three-phase line current I = P / (sqrt(3) * V_LL * PF)  [A].

    P is real power in W, V_LL the line-to-line voltage.  Source: engineering.md "Power"
    (1 MW at 415 V, PF 0.95 = 1,464 A); standard three-phase power relation P = sqrt(3) V I cos(phi)."""
    return (_non_negative("power_w", power_w)
            / (SQRT3 * _positive("v_line_line", v_line_line) * _fraction("power_factor", power_factor)))


def feed_available_power(voltage_v: float, amperage_a: float, max_utilisation: float = 1.0,
                         three_phase: bool = False) -> float:
    """Power a feed may deliver: |V| * A * max_util, times sqrt(3) for three-phase (V line-line)  [W].

    Source: NetBox power-feed model, quoted in engineering.md "Data-model anchor".  For AC this is
    apparent power (VA); it equals real power only at unity power factor."""
    p = abs(_finite("voltage_v", voltage_v)) * _non_negative("amperage_a", amperage_a) \
        * _fraction("max_utilisation", max_utilisation)
    return p * SQRT3 if three_phase else p


# --------------------------------------------------------------------------- power: redundancy

def modules_needed(load_w: float, module_w: float, derate: float = 1.0) -> int:
    """Number of modules to carry a load: N = ceil(P_load / (P_module * derate)).

    A ratio within SIZING_REL_TOL of an integer counts as that integer, so 132 kW on 5.5 kW modules
    gives exactly 24 despite floating point.  A zero load needs zero modules.
    Source: engineering.md "Redundancy" (132 kW on 5.5 kW modules -> 24, +1 = 25)."""
    load = _non_negative("load_w", load_w)
    per_module = _positive("module_w", module_w) * _fraction("derate", derate)
    return _ceil_tol(load / per_module)


_SCHEMES = {"n": "n", "n_plus_1": "n_plus_1", "two_n": "two_n",
            "n+1": "n_plus_1", "2n": "two_n"}


def with_redundancy(n: int, scheme: str) -> int:
    """Installed module count for a redundancy scheme, given N modules needed for the load.

    "n" -> N; "n_plus_1" -> N + 1 (one spare); "two_n" -> 2N (two full paths, each able to carry
    the whole load when the other fails).  "N+1" and "2N" are accepted as spellings.
    Source: engineering.md "Redundancy"; Uptime Institute tier terminology."""
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise ValueError(f"module count must be a non-negative integer, got {n!r}")
    n = int(n)
    key = _SCHEMES.get(str(scheme).strip().lower())
    if key is None:
        raise ValueError(f"unknown redundancy scheme {scheme!r} (expected 'n', 'n_plus_1' or 'two_n')")
    if key == "n":
        return n
    if key == "n_plus_1":
        return n + 1
    return 2 * n


def capacity_after_failures(installed: int, module_w: float, derate: float = 1.0,
                            failed: int = 1) -> float:
    """Capacity left when `failed` of `installed` modules are lost: (installed - failed) * P_module * derate  [W].

    Use it to check the N+1 rule "the load is still carried with one module (or CDU) failed".
    Source: engineering.md "Redundancy" and "CDU"."""
    if int(installed) != installed or installed < 0 or int(failed) != failed or failed < 0:
        raise ValueError(f"module counts must be non-negative integers, got {installed!r}, {failed!r}")
    left = max(0, int(installed) - int(failed))
    return left * _positive("module_w", module_w) * _fraction("derate", derate)


# --------------------------------------------------------------------------- power: batteries

def battery_current(power_w: float, efficiency: float, end_voltage_v: float) -> float:
    """Battery discharge current at end of discharge: I = P / (eta * V_end)  [A].

    eta is the efficiency of the conversion between battery and load (1 for batteries floating on
    the DC bus that feeds the load).  Sizing at the end voltage gives the largest current.
    Source: IEEE 485 (constant-power load method) as summarised in engineering.md "Battery autonomy"."""
    return (_non_negative("power_w", power_w)
            / (_fraction("efficiency", efficiency) * _positive("end_voltage_v", end_voltage_v)))


def battery_capacity_ah(power_w: float, autonomy_s: float, efficiency: float, cells: int,
                        end_v_per_cell: float, aging: float = 1.25, design: float = 1.1,
                        temperature: float = 1.0) -> Tuple[float, float, float]:
    """Battery capacity for an autonomy time, returns (current_a, raw_ah, sized_ah).

    V_end = cells * end_v_per_cell (lead-acid: 1.75 V/cell); I = P / (eta * V_end);
    raw Ah = I * t[h]; sized Ah = raw * TC * AF * DF with temperature correction TC (1.0 at 25 degC),
    aging factor AF (1.25: replace at 80 % capacity) and design margin DF (1.1).
    Simplified constant-current approximation of IEEE 485 (the full method integrates a duty cycle
    against the cell's discharge curve); engineering.md "Battery autonomy":
    1 MW, 5 min, 240 cells, 420 V end, eta 0.95 -> 2,506 A, 209 Ah raw, 287 Ah sized."""
    if isinstance(cells, bool) or int(cells) != cells or cells <= 0:
        raise ValueError(f"cells must be a positive integer, got {cells!r}")
    end_v = int(cells) * _positive("end_v_per_cell", end_v_per_cell)
    current = battery_current(power_w, efficiency, end_v)
    raw = current * _non_negative("autonomy_s", autonomy_s) / 3600.0
    factor = (_positive("temperature", temperature) * _positive("aging", aging)
              * _positive("design", design))
    return current, raw, raw * factor


# --------------------------------------------------------------------------- power: conductors

def copper_resistivity(temp_c: float, rho20: float = COPPER_RHO20_OHM_M,
                       alpha: float = COPPER_ALPHA_PER_K) -> float:
    """Resistivity of copper at a conductor temperature: rho_T = rho_20 * (1 + alpha * (T - 20))  [ohm*m].

    Defaults: rho_20 = 0.01724 ohm*mm^2/m, alpha = 0.00393 /K (IEC 60028 annealed copper).
    Source: engineering.md "Voltage drop"; IEC 60228 / IEC 60364-5-52 Annex G use the same relation."""
    rho = _positive("rho20", rho20) * (1.0 + _finite("alpha", alpha) * (_finite("temp_c", temp_c) - 20.0))
    if rho <= 0.0:
        raise ValueError(f"temperature {temp_c!r} degC gives a non-positive resistivity")
    return rho


def dc_voltage_drop(current_a: float, length_m: float, area_m2: float, temp_c: float,
                    rho20: float = COPPER_RHO20_OHM_M, alpha: float = COPPER_ALPHA_PER_K) -> float:
    """Two-wire DC voltage drop dV = 2 * I * L * rho_T / A  [V].

    L is the one-way route length (out and back gives the factor 2), A the conductor cross-section
    per pole, rho_T from copper_resistivity at the conductor temperature.
    Source: engineering.md "Voltage drop" (1,250 A, 50 m, 500 mm^2, 70 degC -> 5.16 V);
    IEC 60364-5-52 Annex G."""
    rho = copper_resistivity(temp_c, rho20, alpha)
    return (2.0 * _non_negative("current_a", current_a) * _non_negative("length_m", length_m) * rho
            / _positive("area_m2", area_m2))


def ac3_voltage_drop(current_a: float, length_m: float, r_ohm_per_m: float, x_ohm_per_m: float,
                     power_factor: float) -> float:
    """Three-phase line-to-line voltage drop dV = sqrt(3) * I * L * (R cos(phi) + X sin(phi))  [V].

    R and X are per-conductor resistance (at operating temperature) and reactance per metre,
    cos(phi) = power_factor (lagging), sin(phi) = sqrt(1 - PF^2).
    Source: engineering.md "Voltage drop"; IEC 60364-5-52 Annex G (b = 1 for three-phase)."""
    pf = _fraction("power_factor", power_factor)
    sin_phi = math.sqrt(max(0.0, 1.0 - pf * pf))
    return (SQRT3 * _non_negative("current_a", current_a) * _non_negative("length_m", length_m)
            * (_non_negative("r_ohm_per_m", r_ohm_per_m) * pf
               + _finite("x_ohm_per_m", x_ohm_per_m) * sin_phi))


def drop_fraction(drop_v: float, nominal_v: float) -> float:
    """Voltage drop as a fraction of the nominal voltage, dV / |V| (0.0064 = 0.64 %).

    Source: engineering.md "Voltage drop" (5.16 V = 0.64 % of 800 V)."""
    return _finite("drop_v", drop_v) / _positive("|nominal_v|", abs(_finite("nominal_v", nominal_v)))


def ampacity(table: Iterable[Sequence[float]], area_m2: float) -> float:
    """Current rating from a table of (area_m2, amps) rows  [A].

    Returns the rating of the largest listed cross-section not above `area_m2` (a conductor between
    two standard sizes is rated as the smaller one: conservative).  Raises ValueError below the
    smallest listed size or for an empty table.  Sizes equal within SIZING_REL_TOL count as equal
    (500 * 1e-6 m^2 matches a 500 mm^2 row).  The table itself comes from the installation standard
    for the installation method and ambient (IEC 60364-5-52 Annex B tables B.52.x, NEC 310.16, a
    busbar datasheet, ...); it is data, not code.  Source: IEC 60364-5-52 Annex B."""
    area = _positive("area_m2", area_m2)
    rows = sorted((_positive("table area_m2", a), _non_negative("table amps", i)) for a, i in table)
    if not rows:
        raise ValueError("ampacity table is empty")
    best = None
    for a, amps in rows:
        if a <= area * (1.0 + SIZING_REL_TOL):
            best = amps
        else:
            break
    if best is None:
        raise ValueError(f"cross-section {area!r} m^2 is below the smallest size in the ampacity table "
                         f"({rows[0][0]!r} m^2)")
    return best


# --------------------------------------------------------------------------- cooling

def liquid_flow(heat_w: float, density: float, cp: float, delta_t: float) -> float:
    """Coolant volume flow to carry heat Q at a temperature rise dT: V = Q / (rho * cp * dT)  [m^3/s].

    density in kg/m^3 and cp in J/(kg K) at the mean of supply and return temperature.
    Source: sensible-heat balance Q = m_dot cp dT (ASHRAE Handbook, Fundamentals);
    engineering.md "Liquid flow" (water, cp 4.178 kJ/kg/K, rho 995.7 -> 1.44 L/min per kW at 10 K)."""
    return (_non_negative("heat_w", heat_w)
            / (_positive("density", density) * _positive("cp", cp) * _positive("delta_t", delta_t)))


def air_flow(heat_w: float, delta_t: float, density: float = AIR_DENSITY_KG_M3,
             cp: float = AIR_CP_J_KG_K) -> float:
    """Air volume flow to carry heat Q at a temperature rise dT: V = Q / (rho * cp * dT)  [m^3/s].

    Defaults rho = 1.2 kg/m^3, cp = 1006 J/(kg K).  Source: ASHRAE sensible-heat equation in SI;
    engineering.md "Air flow" (1 kW at 11.1 K (20 F) -> 268.4 m^3/h = 158.0 CFM)."""
    return liquid_flow(heat_w, density, cp, delta_t)


def air_flow_cfm_rule_of_thumb(heat_w: float, delta_t: float) -> float:
    """Imperial rule of thumb CFM = 3.412 BTU/h per W * Q[W] / (1.085 * dT[F])  [ft^3/min].

    dT is given in K and converted (1 K = 1.8 F).  1.085 = 0.075 lb/ft^3 * 0.24 BTU/(lb F) * 60 min/h
    (standard air).  Kept as a cross-check of air_flow, not for sizing: it gives 157.2 CFM where the
    SI formula gives 158.0 for 1 kW at 20 F.  Source: engineering.md "Air flow"; ASHRAE."""
    return 3.412 * _non_negative("heat_w", heat_w) / (1.085 * _positive("delta_t", delta_t) * 1.8)


def m3s_to_l_per_min(flow_m3s: float) -> float:
    """m^3/s -> L/min (x 60,000)."""
    return float(flow_m3s) * 60000.0


def m3s_to_m3_per_h(flow_m3s: float) -> float:
    """m^3/s -> m^3/h (x 3,600)."""
    return float(flow_m3s) * 3600.0


def m3s_to_cfm(flow_m3s: float) -> float:
    """m^3/s -> ft^3/min, via 1 m^3/h = 0.588578 CFM (exact from 1 ft = 0.3048 m; engineering.md: 0.5886)."""
    return m3s_to_m3_per_h(flow_m3s) * CFM_PER_M3_PER_H


def pump_power(flow_m3s: float, head_pa: float, efficiency: float) -> float:
    """Pump shaft/electrical power P = V * dp / eta  [W].

    flow in m^3/s, head as a pressure rise in Pa (1 m of water = rho g = ~9.8 kPa), eta the
    combined pump-and-motor efficiency.  It counts in facility power (PUE).
    Source: engineering.md "Pump power"; hydraulic power P_h = V dp (ASHRAE Handbook, HVAC Systems)."""
    return (_non_negative("flow_m3s", flow_m3s) * _non_negative("head_pa", head_pa)
            / _fraction("efficiency", efficiency))


# --------------------------------------------------------------------------- PUE

def pue(it_energy: float, total_energy: float) -> float:
    """Power Usage Effectiveness PUE = total facility energy / IT equipment energy (>= 1).

    Both in the same energy (or, for an instantaneous design value, power) unit, over the same
    period; the metric is defined over a year.  Source: The Green Grid, White Paper #49 (PUE);
    ISO/IEC 30134-2; engineering.md "PUE"."""
    it = _positive("it_energy", it_energy)
    total = _non_negative("total_energy", total_energy)
    if total < it * (1.0 - SIZING_REL_TOL):
        raise ValueError(f"total facility energy {total!r} is below IT energy {it!r}")
    return total / it


def facility_power(it_w: float, conversion_efficiency: float, cooling_w: float,
                   other_w: float = 0.0) -> float:
    """Total facility input power = IT / eta_conversion + cooling + other  [W].

    eta_conversion is the end-to-end efficiency of the power chain from utility to IT input
    (HVDC about 0.96-0.97, double-conversion UPS at low load 0.90-0.94); its losses are
    IT * (1/eta - 1).  cooling_w is all cooling electrical power (chillers, dry coolers, CDU and
    facility pumps, fans outside the IT equipment); other_w lighting, offices, security, ...
    Fans and pumps inside the IT equipment are IT load (The Green Grid).
    Source: engineering.md "PUE" and "Conversion efficiency"."""
    return (_non_negative("it_w", it_w) / _fraction("conversion_efficiency", conversion_efficiency)
            + _non_negative("cooling_w", cooling_w) + _non_negative("other_w", other_w))


def pue_over_modes(it_power_w: float, conversion_efficiency: float,
                   modes: Iterable[Tuple[float, float]], other_w: float = 0.0) -> float:
    """Energy-weighted PUE over operating modes, each (hours, cooling_w), at constant IT power.

    PUE = sum_m h_m * facility_power(IT, eta, cooling_m, other) / (IT * sum_m h_m).
    Use it for free-cooling / partial / mechanical hours from a site's weather bins.
    Source: The Green Grid PUE (annual energy ratio); engineering.md "PUE"."""
    it = _positive("it_power_w", it_power_w)
    total = 0.0
    hours = 0.0
    for h, cooling in modes:
        h = _non_negative("mode hours", h)
        total += h * facility_power(it, conversion_efficiency, cooling, other_w)
        hours += h
    if hours <= 0.0:
        raise ValueError("the operating modes must cover a positive number of hours")
    return pue(it * hours, total)


def annual_pue(it_power_w: float, conversion_efficiency: float,
               free_cooling_hours: float, free_cooling_w: float,
               mechanical_hours: float, mechanical_cooling_w: float,
               other_w: float = 0.0) -> float:
    """Annualised PUE with two cooling modes: free cooling (economiser / dry cooler only) and
    mechanical cooling (chillers running), each with its number of hours and cooling power.

    PUE = [h_free * (IT/eta + C_free + O) + h_mech * (IT/eta + C_mech + O)] / [IT * (h_free + h_mech)].
    The hours are weights: they normally sum to HOURS_PER_YEAR (8,760) but need not.
    Source: The Green Grid PUE over a year; engineering.md "PUE" (hyperscale 1.1-1.2)."""
    return pue_over_modes(it_power_w, conversion_efficiency,
                          ((free_cooling_hours, free_cooling_w),
                           (mechanical_hours, mechanical_cooling_w)),
                          other_w)


# --------------------------------------------------------------------------- network capacity

def _switch_radix(k: int) -> int:
    if isinstance(k, bool) or int(k) != k or k < 2 or int(k) % 2:
        raise ValueError(f"switch radix k must be an even integer >= 2, got {k!r}")
    return int(k)


def _rails(rails: int) -> int:
    if isinstance(rails, bool) or int(rails) != rails or rails < 1:
        raise ValueError(f"rails must be a positive integer, got {rails!r}")
    return int(rails)


def fat_tree_hosts(k: int) -> int:
    """End ports of a three-tier fat tree of k-port switches: k^3 / 4.

    Source: Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008;
    engineering.md "Network" (k = 128 -> 524,288; k = 64 -> 65,536)."""
    k = _switch_radix(k)
    return k ** 3 // 4


def astral_pod_gpus(rails: int, k: int) -> int:
    """GPUs in one Astral same-rail pod: R * k^2 / 2.

    Per rail and plane, k/2 ToRs (of the Agg's k/2 down ports) each serve k hosts, i.e. k^2/2 hosts
    with one GPU on that rail; the pod spans R rails.  Source: astral-paper.md "Reference topology"
    [inferred] (R = 8, k = 128 -> 65,536)."""
    return _rails(rails) * _switch_radix(k) ** 2 // 2


def astral_pods(rails: int, k: int) -> int:
    """Pods one k-port core layer can join: k / (2R), rounded down (2 planes, R rails).

    Source: astral-paper.md "Reference topology" [inferred] (R = 8, k = 128 -> 8 pods).  When 2R does
    not divide k the remaining core ports are unused, so the result is floored."""
    return _switch_radix(k) // (2 * _rails(rails))


def oversubscription(down_bw: float, up_bw: float) -> float:
    """Oversubscription ratio of a switch tier = downlink bandwidth / uplink bandwidth.

    1.0 is non-blocking; 3.0 means 3:1.  Raises ValueError without uplinks (top tier): the ratio is
    undefined there.  Source: engineering.md "Network" (non-blocking: up = down)."""
    return _non_negative("down_bw", down_bw) / _positive("up_bw", up_bw)
