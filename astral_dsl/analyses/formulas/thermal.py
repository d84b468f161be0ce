"""Cooling formulas: liquid and air flow, flow-unit conversions, pump power and PUE.

Part of astral_dsl/analyses/formulas/ (see its __init__ for units and conventions); sources are
cited per function.
"""
from __future__ import annotations

from typing import Iterable, Tuple

from astral_dsl.analyses.formulas._checks import (SIZING_REL_TOL, _fraction, _non_negative,
                                                  _positive)

HOURS_PER_YEAR = 8760.0

#: Air near sea level and 20-25 degC: rho 1.2 kg/m^3 (ASHRAE standard air: 1.204 kg/m^3 at 20 degC)
#: and cp 1.006 kJ/kg/K (dry air, as in the moist-air enthalpy of ASHRAE Handbook, Fundamentals).
AIR_DENSITY_KG_M3 = 1.2
AIR_CP_J_KG_K = 1006.0

#: 1 m^3/h in ft^3/min, exact from the international foot (0.3048 m): 1 / (0.3048^3 * 60)
#: = 0.588578 CFM, often quoted rounded to 0.5886.
CFM_PER_M3_PER_H = 1.0 / (0.3048 ** 3 * 60.0)


# --------------------------------------------------------------------------- cooling

def liquid_flow(heat_w: float, density: float, cp: float, delta_t: float) -> float:
    """Coolant volume flow to carry heat Q at a temperature rise dT: V = Q / (rho * cp * dT)  [m^3/s].

    density in kg/m^3 and cp in J/(kg K) at the mean of supply and return temperature.
    Source: sensible-heat balance Q = m_dot cp dT (ASHRAE Handbook, Fundamentals).  Worked value
    (hand-computed): water near 30 degC with cp 4.178 kJ/kg/K and rho 995.7 kg/m^3 (IAPWS-95 gives
    4.1798 and 995.65 at 30 degC) needs 1.44 L/min per kW at 10 K."""
    return (_non_negative("heat_w", heat_w)
            / (_positive("density", density) * _positive("cp", cp) * _positive("delta_t", delta_t)))


def air_flow(heat_w: float, delta_t: float, density: float = AIR_DENSITY_KG_M3,
             cp: float = AIR_CP_J_KG_K) -> float:
    """Air volume flow to carry heat Q at a temperature rise dT: V = Q / (rho * cp * dT)  [m^3/s].

    Defaults rho = 1.2 kg/m^3, cp = 1006 J/(kg K).  Source: ASHRAE sensible-heat equation in SI
    (ASHRAE Handbook, Fundamentals).  Worked value (hand-computed): 1 kW at 11.1 K (20 F) ->
    268.4 m^3/h = 158.0 CFM."""
    return liquid_flow(heat_w, density, cp, delta_t)


def air_flow_cfm_rule_of_thumb(heat_w: float, delta_t: float) -> float:
    """Imperial rule of thumb CFM = 3.412 BTU/h per W * Q[W] / (1.085 * dT[F])  [ft^3/min].

    dT is given in K and converted (1 K = 1.8 F).  1.085 = 0.075 lb/ft^3 * 0.24 BTU/(lb F) * 60 min/h
    (standard air).  Kept as a cross-check of air_flow, not for sizing: it gives 157.2 CFM where the
    SI formula gives 158.0 for 1 kW at 20 F.  Source: ASHRAE Handbook, Fundamentals (standard air,
    I-P units)."""
    return 3.412 * _non_negative("heat_w", heat_w) / (1.085 * _positive("delta_t", delta_t) * 1.8)


def m3s_to_l_per_min(flow_m3s: float) -> float:
    """m^3/s -> L/min (x 60,000)."""
    return float(flow_m3s) * 60000.0


def m3s_to_m3_per_h(flow_m3s: float) -> float:
    """m^3/s -> m^3/h (x 3,600)."""
    return float(flow_m3s) * 3600.0


def m3s_to_cfm(flow_m3s: float) -> float:
    """m^3/s -> ft^3/min, via 1 m^3/h = 0.588578 CFM (exact from 1 ft = 0.3048 m; often 0.5886)."""
    return m3s_to_m3_per_h(flow_m3s) * CFM_PER_M3_PER_H


def pump_power(flow_m3s: float, head_pa: float, efficiency: float) -> float:
    """Pump shaft/electrical power P = V * dp / eta  [W].

    flow in m^3/s, head as a pressure rise in Pa (1 m of water = rho g = ~9.8 kPa), eta the
    combined pump-and-motor efficiency.  It counts in facility power (PUE).
    Source: hydraulic power P_h = V dp (ASHRAE Handbook, HVAC Systems and Equipment); pumps outside
    the IT equipment are facility load (The Green Grid, White Paper #49)."""
    return (_non_negative("flow_m3s", flow_m3s) * _non_negative("head_pa", head_pa)
            / _fraction("efficiency", efficiency))


# --------------------------------------------------------------------------- PUE

def pue(it_energy: float, total_energy: float) -> float:
    """Power Usage Effectiveness PUE = total facility energy / IT equipment energy (>= 1).

    Both in the same energy (or, for an instantaneous design value, power) unit, over the same
    period; the metric is defined over a year.  Source: The Green Grid, White Paper #49 (PUE);
    ISO/IEC 30134-2."""
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
    Source: The Green Grid, White Paper #49, and ISO/IEC 30134-2 (which loads count as IT and
    which as facility).  The efficiency ranges are typical published values (Tencent reports
    above 97 % for its 240 V HVDC)."""
    return (_non_negative("it_w", it_w) / _fraction("conversion_efficiency", conversion_efficiency)
            + _non_negative("cooling_w", cooling_w) + _non_negative("other_w", other_w))


def pue_over_modes(it_power_w: float, conversion_efficiency: float,
                   modes: Iterable[Tuple[float, float]], other_w: float = 0.0) -> float:
    """Energy-weighted PUE over operating modes, each (hours, cooling_w), at constant IT power.

    PUE = sum_m h_m * facility_power(IT, eta, cooling_m, other) / (IT * sum_m h_m).
    Use it for free-cooling / partial / mechanical hours from a site's weather bins.
    Source: The Green Grid PUE (annual energy ratio); ISO/IEC 30134-2."""
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
    Source: The Green Grid PUE over a year; ISO/IEC 30134-2 (hyperscale sites report 1.1-1.2)."""
    return pue_over_modes(it_power_w, conversion_efficiency,
                          ((free_cooling_hours, free_cooling_w),
                           (mechanical_hours, mechanical_cooling_w)),
                          other_w)
