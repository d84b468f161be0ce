"""Engineering formulas for network, power and cooling checks and sizing.

Pure functions on plain floats in SI units: W, V, A, m, m^2, s, kg/m^3, J/(kg K), m^3/s, Pa,
ohm*m and ohm/m.  Temperature *points* are in degC and named ``*_c``; temperature *differences* are
in K and named ``delta_t`` (``delta_t_f`` where a Fahrenheit difference is meant).  Nothing here
knows about the DSL, units or diagnostics: callers convert declared quantities to SI first and turn
the ``ValueError`` raised for physically meaningless inputs (zero voltage, efficiency above 1, ...)
into a diagnostic.

Sources are cited per function: the standard, handbook, paper or data sheet each formula comes
from (IEC, IEEE, ASHRAE, The Green Grid, Uptime Institute, Al-Fares et al. 2008, Meng et al. 2025,
...).  The worked examples in the docstrings are hand-computed from those formulas; the tests
check them.

Split by domain: ``electrical`` (currents, redundancy, batteries, conductors), ``thermal``
(liquid/air flow, pumps, PUE), ``plant`` (air at altitude, humid-air flow, economisers and
chillers, transformer and rectifier losses, battery recharge, a DC bus's end voltage), ``network`` (fat-tree capacity, oversubscription, even switch
counts, transceiver modules) and ``_checks`` (the input validators).  Every public name is
re-exported here, so ``from astral_dsl.analyses import formulas; formulas.dc_current(...)``
works as before.
"""
from __future__ import annotations

from astral_dsl.analyses.formulas._checks import SIZING_REL_TOL
from astral_dsl.analyses.formulas.electrical import (COPPER_ALPHA_PER_K, COPPER_RHO20_OHM_M, SQRT3,
                                                     ac1_voltage_drop, ac3_current, ac3_voltage_drop,
                                                     ampacity,
                                                     battery_capacity_ah, battery_current,
                                                     capacity_after_failures, copper_resistivity,
                                                     dc_current, dc_voltage_drop, drop_fraction,
                                                     feed_available_power, modules_needed,
                                                     units_left, with_redundancy)
from astral_dsl.analyses.formulas.network import (astral_pod_gpus, astral_pods,
                                                  even_upper_switches, fat_tree_hosts,
                                                  modules_for, oversubscription,
                                                  smallest_divisor_at_least)
from astral_dsl.analyses.formulas.plant import (SEA_LEVEL_PA, carnot_cop, chiller_cop,
                                                chiller_share, end_voltage_needed,
                                                humid_air_flow, pressure_at_altitude,
                                                recharge_power, rectifier_losses,
                                                transformer_losses)
from astral_dsl.analyses.formulas.thermal import (AIR_CP_J_KG_K, AIR_DENSITY_KG_M3,
                                                  CFM_PER_M3_PER_H, HOURS_PER_YEAR, air_flow,
                                                  air_flow_cfm_rule_of_thumb, annual_pue,
                                                  facility_power, liquid_flow, m3s_to_cfm,
                                                  m3s_to_l_per_min, m3s_to_m3_per_h, pue,
                                                  pue_over_modes, pump_power)

__all__ = [
    "SQRT3", "HOURS_PER_YEAR", "SIZING_REL_TOL",
    "COPPER_RHO20_OHM_M", "COPPER_ALPHA_PER_K",
    "AIR_DENSITY_KG_M3", "AIR_CP_J_KG_K", "CFM_PER_M3_PER_H",
    "dc_current", "ac3_current", "feed_available_power",
    "modules_needed", "with_redundancy", "units_left", "capacity_after_failures",
    "battery_current", "battery_capacity_ah",
    "copper_resistivity", "dc_voltage_drop", "ac1_voltage_drop", "ac3_voltage_drop", "drop_fraction", "ampacity",
    "liquid_flow", "air_flow", "air_flow_cfm_rule_of_thumb",
    "m3s_to_l_per_min", "m3s_to_m3_per_h", "m3s_to_cfm",
    "pump_power", "pue", "facility_power", "pue_over_modes", "annual_pue",
    "SEA_LEVEL_PA", "pressure_at_altitude", "humid_air_flow", "chiller_share", "carnot_cop",
    "chiller_cop", "transformer_losses", "rectifier_losses", "recharge_power",
    "end_voltage_needed",
    "fat_tree_hosts", "astral_pod_gpus", "astral_pods", "oversubscription",
    "smallest_divisor_at_least", "even_upper_switches", "modules_for",
]
