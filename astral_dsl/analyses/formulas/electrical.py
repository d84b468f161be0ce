"""Electrical formulas: currents, redundancy, batteries and conductors.

Part of astral_dsl/analyses/formulas/ (see its __init__ for units and conventions); sources are
cited per function.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence, Tuple

from astral_dsl.analyses.formulas._checks import (SIZING_REL_TOL, _ceil_tol, _finite, _fraction,
                                                  _non_negative, _positive)

SQRT3 = math.sqrt(3.0)

#: Annealed copper at 20 degC: 1/58 = 0.017241 ohm*mm^2/m = 1.7241e-8 ohm*m (IEC 60028:1925,
#: International standard of resistance for copper, the value its tables give).
COPPER_RHO20_OHM_M = 0.017241e-6
#: Temperature coefficient of copper resistance at 20 degC, per K (IEC 60028).
COPPER_ALPHA_PER_K = 0.00393


# --------------------------------------------------------------------------- power: currents

def dc_current(power_w: float, voltage_v: float) -> float:
    """DC current I = P / V  [A].

    Source: DC power P = V I.  Worked values: 1 MW at 54 V = 18.5 kA, 400 V = 2.5 kA,
    800 V = 1.25 kA.
    The sign of the voltage is ignored (a -48 V telecom bus carries the same current)."""
    return _non_negative("power_w", power_w) / _positive("|voltage_v|", abs(_finite("voltage_v", voltage_v)))


def ac3_current(power_w: float, v_line_line: float, power_factor: float) -> float:
    """Balanced three-phase line current I = P / (sqrt(3) * V_LL * PF)  [A].

    P is real power in W, V_LL the line-to-line voltage.  Source: the standard three-phase power
    relation P = sqrt(3) V I cos(phi).  Worked value: 1 MW at 415 V, PF 0.95 = 1,464 A."""
    return (_non_negative("power_w", power_w)
            / (SQRT3 * _positive("v_line_line", v_line_line) * _fraction("power_factor", power_factor)))


def feed_available_power(voltage_v: float, amperage_a: float, max_utilisation: float = 1.0,
                         three_phase: bool = False) -> float:
    """Power a feed may deliver: |V| * A * max_util, times sqrt(3) for three-phase (V line-line)  [W].

    Source: NetBox documentation, power feed model (available power).  For AC this is
    apparent power (VA); it equals real power only at unity power factor."""
    p = abs(_finite("voltage_v", voltage_v)) * _non_negative("amperage_a", amperage_a) \
        * _fraction("max_utilisation", max_utilisation)
    return p * SQRT3 if three_phase else p


# --------------------------------------------------------------------------- power: redundancy

def modules_needed(load_w: float, module_w: float, derate: float = 1.0) -> int:
    """Number of modules to carry a load: N = ceil(P_load / (P_module * derate)).

    A ratio within SIZING_REL_TOL of an integer counts as that integer, so 132 kW on 5.5 kW modules
    gives exactly 24 despite floating point.  A zero load needs zero modules.
    Source: Uptime Institute tier terminology (N: the capacity the load needs).  Worked value:
    132 kW on 5.5 kW modules -> 24, +1 = 25."""
    load = _non_negative("load_w", load_w)
    per_module = _positive("module_w", module_w) * _fraction("derate", derate)
    return _ceil_tol(load / per_module)


_SCHEMES = {"n": "n", "n_plus_1": "n_plus_1", "two_n": "two_n",
            "n+1": "n_plus_1", "2n": "two_n"}


def with_redundancy(n: int, scheme: str) -> int:
    """Installed module count for a redundancy scheme, given N modules needed for the load.

    "n" -> N; "n_plus_1" -> N + 1 (one spare); "two_n" -> 2N (two full paths, each able to carry
    the whole load when the other fails).  "N+1" and "2N" are accepted as spellings.
    Source: Uptime Institute tier terminology (Tier Standard: Topology)."""
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


def units_left(count: int, redundancy: str) -> int:
    """The units left in service after the failure a redundancy scheme covers: all of them (n),
    one fewer (n_plus_1), or one side of a 2N pair, whose sides are halves of the units: the
    smaller half of an odd count, and none of a single unit (it has no other side).
    Source: Uptime Institute tier terminology (N+1: one component out of service; 2N: one of
    two independent paths, each carrying the whole load)."""
    if redundancy == "two_n":
        return count // 2
    return count - 1 if redundancy == "n_plus_1" else count


def capacity_after_failures(installed: int, module_w: float, derate: float = 1.0,
                            failed: int = 1) -> float:
    """Capacity left when `failed` of `installed` modules are lost: (installed - failed) * P_module * derate  [W].

    Use it to check the N+1 rule "the load is still carried with one module (or CDU) failed".
    Source: Uptime Institute tier terminology (N+1: the load is carried with one component out of
    service)."""
    if int(installed) != installed or installed < 0 or int(failed) != failed or failed < 0:
        raise ValueError(f"module counts must be non-negative integers, got {installed!r}, {failed!r}")
    left = max(0, int(installed) - int(failed))
    return left * _positive("module_w", module_w) * _fraction("derate", derate)


# --------------------------------------------------------------------------- power: batteries

def battery_current(power_w: float, efficiency: float, end_voltage_v: float) -> float:
    """Battery discharge current at end of discharge: I = P / (eta * V_end)  [A].

    eta is the efficiency of the conversion between battery and load (1 for batteries floating on
    the DC bus that feeds the load).  Sizing at the end voltage gives the largest current.
    Source: IEEE Std 485, sizing lead-acid batteries for stationary applications (constant-power
    load)."""
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
    against the cell's discharge curve).  Worked example (hand-computed):
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

    Defaults: rho_20 = 0.017241 ohm*mm^2/m, alpha = 0.00393 /K (IEC 60028 annealed copper).
    Source: IEC 60028 (rho_20, alpha); IEC 60228 / IEC 60364-5-52 Annex G use the same relation."""
    rho = _positive("rho20", rho20) * (1.0 + _finite("alpha", alpha) * (_finite("temp_c", temp_c) - 20.0))
    if rho <= 0.0:
        raise ValueError(f"temperature {temp_c!r} degC gives a non-positive resistivity")
    return rho


def dc_voltage_drop(current_a: float, length_m: float, area_m2: float, temp_c: float,
                    rho20: float = COPPER_RHO20_OHM_M, alpha: float = COPPER_ALPHA_PER_K) -> float:
    """Two-wire DC voltage drop dV = 2 * I * L * rho_T / A  [V].

    L is the one-way route length (out and back gives the factor 2), A the conductor cross-section
    per pole, rho_T from copper_resistivity at the conductor temperature.
    Source: IEC 60364-5-52 Annex G (b = 2 for a two-wire circuit).  Worked value: 1,250 A, 50 m,
    500 mm^2, 70 degC -> 5.16 V."""
    rho = copper_resistivity(temp_c, rho20, alpha)
    return (2.0 * _non_negative("current_a", current_a) * _non_negative("length_m", length_m) * rho
            / _positive("area_m2", area_m2))


def ac1_voltage_drop(current_a: float, length_m: float, r_ohm_per_m: float, x_ohm_per_m: float,
                     power_factor: float) -> float:
    """Single-phase voltage drop over the loop (out and back) dV = 2 * I * L * (R cos(phi) + X
    sin(phi))  [V], R and X per conductor per metre as in ac3_voltage_drop.
    Source: IEC 60364-5-52 Annex G (b = 2 for single-phase circuits). Worked value: 32 A over
    50 m of 6 mm^2 copper at 70 degC (R = 0.017241e-6 x (1 + 0.00393 x 50) / 6e-6 = 3.438e-3
    ohm/m) at PF 1: 2 x 32 x 50 x 3.438e-3 = 11.0 V."""
    pf = _fraction("power_factor", power_factor)
    sin_phi = math.sqrt(max(0.0, 1.0 - pf * pf))
    return (2.0 * _non_negative("current_a", current_a) * _non_negative("length_m", length_m)
            * (_non_negative("r_ohm_per_m", r_ohm_per_m) * pf
               + _finite("x_ohm_per_m", x_ohm_per_m) * sin_phi))


def ac3_voltage_drop(current_a: float, length_m: float, r_ohm_per_m: float, x_ohm_per_m: float,
                     power_factor: float) -> float:
    """Three-phase line-to-line voltage drop dV = sqrt(3) * I * L * (R cos(phi) + X sin(phi))  [V].

    R and X are per-conductor resistance (at operating temperature) and reactance per metre,
    cos(phi) = power_factor (lagging), sin(phi) = sqrt(1 - PF^2).
    Source: IEC 60364-5-52 Annex G (b = 1 for three-phase)."""
    pf = _fraction("power_factor", power_factor)
    sin_phi = math.sqrt(max(0.0, 1.0 - pf * pf))
    return (SQRT3 * _non_negative("current_a", current_a) * _non_negative("length_m", length_m)
            * (_non_negative("r_ohm_per_m", r_ohm_per_m) * pf
               + _finite("x_ohm_per_m", x_ohm_per_m) * sin_phi))


def drop_fraction(drop_v: float, nominal_v: float) -> float:
    """Voltage drop as a fraction of the nominal voltage, dV / |V| (0.0064 = 0.64 %).

    Source: IEC 60364-5-52 Annex G (relative drop 100 u / U0).  Worked value: 5.16 V = 0.64 % of
    800 V."""
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
