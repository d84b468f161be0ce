"""Plant formulas: air pressure at altitude, humid-air flow, economisers and chillers, the
losses of transformers and rectifiers, battery recharge and the end voltage a DC bus needs.

Part of astral_dsl/analyses/formulas/ (see its __init__ for units and conventions); sources are
cited per function.
"""
from __future__ import annotations

import math

from astral_dsl.analyses.formulas._checks import (_finite, _fraction, _non_negative,
                                                  _positive)

ZERO_CELSIUS_K = 273.15
#: Standard atmosphere at sea level, Pa (ASHRAE Handbook, Fundamentals 2017, ch. 1, Table 1).
SEA_LEVEL_PA = 101325.0

ECONOMISERS = ("integrated", "switchover", "none")


# --------------------------------------------------------------------------- air

def pressure_at_altitude(altitude_m: float) -> float:
    """Barometric pressure of the standard atmosphere at an altitude: p = 101.325 kPa x
    (1 - 2.25577e-5 Z)^5.2559, Z in metres  [Pa].

    Source: ASHRAE Handbook, Fundamentals (2017), ch. 1 "Psychrometrics", eq. (3); 0 m ->
    101,325 Pa, 1,000 m -> 89,875 Pa (ch. 1, Table 1: 89.88 kPa)."""
    z = _finite("altitude_m", altitude_m)
    base = 1.0 - 2.25577e-5 * z
    if base <= 0.0:
        raise ValueError(f"altitude {altitude_m!r} m is above the standard atmosphere")
    return SEA_LEVEL_PA * base ** 5.2559


def humid_air_flow(heat_w: float, specific_volume: float, enthalpy_rise: float) -> float:
    """Air volume flow that carries heat Q with a sensible rise: V = Q x v / (h_out - h_in)
    [m^3/s], v the specific volume of the entering air per kg of dry air (m^3/kg) and h the
    enthalpy per kg of dry air at the same humidity ratio (J/kg): the mass of dry air is
    Q / (h_out - h_in) and each kilogram of it fills v.

    Source: ASHRAE Handbook, Fundamentals (2017), ch. 1, sensible heating of moist air
    (q = m_da (h2 - h1)); with v = 1 / 1.2 m^3/kg and h2 - h1 = 1,006 J/kg/K x dT this is the
    sea-level rule of thermal.air_flow (1 kW at 11.1 K -> 268.4 m^3/h)."""
    return (_non_negative("heat_w", heat_w) * _positive("specific_volume", specific_volume)
            / _positive("enthalpy_rise", enthalpy_rise))


# --------------------------------------------------------------------------- heat rejection

def chiller_share(leaving_c: float, supply_c: float, return_c: float,
                  economiser: str = "integrated") -> float:
    """The share of a circuit's heat its chillers remove in an hour, from the temperature of the
    water leaving the heat rejection (outdoor dry bulb or wet bulb plus its approach):

    - 0 when that water is at or below the supply temperature (free cooling);
    - `integrated`: between supply and return, the heat rejection pre-cools the return water to
      `leaving_c` and the chillers take the rest, (leaving - supply) / (return - supply);
    - `switchover`: the chillers take everything as soon as free cooling alone falls short;
    - `none` (no economiser): the chillers run all year.

    Source: ASHRAE Standard 90.1-2019, section 6.5.1.2 (water economizers, integrated with
    mechanical cooling: the economiser pre-cools the return water in series with the
    chillers)."""
    if economiser not in ECONOMISERS:
        raise ValueError(f"unknown economiser {economiser!r} (expected one of {ECONOMISERS})")
    t = _finite("leaving_c", leaving_c)
    s = _finite("supply_c", supply_c)
    r = _finite("return_c", return_c)
    if r <= s:
        raise ValueError(f"the return ({r!r} degC) must be warmer than the supply ({s!r} degC)")
    if economiser == "none":
        return 1.0
    if t <= s:
        return 0.0
    if economiser == "integrated" and t < r:
        return (t - s) / (r - s)
    return 1.0


def carnot_cop(supply_c: float, condenser_c: float) -> float:
    """The Carnot COP of cooling between two temperatures: T_cold / (T_hot - T_cold), in kelvin;
    infinite when the condenser is not warmer.

    Source: ASHRAE Handbook, Fundamentals (2017), ch. 2 "Thermodynamics and refrigeration
    cycles": the COP of the Carnot refrigeration cycle is T_0 / (T_R - T_0)."""
    cold = _finite("supply_c", supply_c) + ZERO_CELSIUS_K
    hot = _finite("condenser_c", condenser_c) + ZERO_CELSIUS_K
    if cold <= 0.0:
        raise ValueError(f"supply {supply_c!r} degC is below absolute zero")
    return math.inf if hot <= cold else cold / (hot - cold)


def chiller_cop(rated_cop: float, rated_supply_c: float, rated_condenser_c: float,
                supply_c: float, condenser_c: float, max_cop: float = math.inf) -> float:
    """A chiller's COP at other water temperatures, at the same share of the Carnot COP as at its
    rating point: COP = COP_rated x Carnot(supply, condenser) / Carnot(rated), at most
    `max_cop` (a lift near zero does not make the compressor free).

    The chilled water leaving (`supply_c`) and the condenser water entering (`condenser_c`)
    stand for the refrigerant's evaporating and condensing temperatures; the approaches of the
    chiller's own heat exchangers are taken to be the same as at the rating point. Example: a
    centrifugal chiller of COP 6.28 rated at 6.7 degC chilled water and 29.4 degC condenser water
    (AHRI 550/590 standard rating conditions) makes chilled water at 18 degC from condenser water
    at 30 degC with COP 6.28 x (291.15 / 12) / (279.85 / 22.7) = 12.36.

    Source: the Carnot COP (carnot_cop); a constant second-law efficiency is the first-order
    chiller model of Gordon and Ng, Cool Thermodynamics (2000)."""
    rated = carnot_cop(rated_supply_c, rated_condenser_c)
    if math.isinf(rated):
        raise ValueError("the rating point needs a condenser warmer than the chilled water")
    cop = _positive("rated_cop", rated_cop) * carnot_cop(supply_c, condenser_c) / rated
    cap = math.inf if max_cop == math.inf else _positive("max_cop", max_cop)
    if math.isinf(cop) and math.isinf(cap):
        raise ValueError("no lift and no `max_cop`: the COP would be infinite")
    return min(cop, cap)


# --------------------------------------------------------------------------- power chain

def transformer_losses(load_w: float, units: int, capacity_w: float, no_load_w: float,
                       load_loss_w: float) -> float:
    """The losses of `units` identical transformers sharing a load: each runs at
    x = load / (units x rating) and loses P0 + x^2 Pk (no-load and load losses)  [W].

    Source: IEC 60076-1 (power transformers: the no-load loss, and the load loss at rated
    current, which scales with the square of the current); the same decomposition as Rasmussen, "Electrical
    Efficiency Modeling for Data Centers", Schneider Electric White Paper 113 (no-load,
    proportional and square-law losses)."""
    if isinstance(units, bool) or int(units) != units or units < 1:
        raise ValueError(f"units must be a positive integer, got {units!r}")
    x = _non_negative("load_w", load_w) / (int(units) * _positive("capacity_w", capacity_w))
    return int(units) * (_non_negative("no_load_w", no_load_w)
                         + x * x * _non_negative("load_loss_w", load_loss_w))


def rectifier_losses(load_w: float, efficiency: float, no_load_w: float = 0.0) -> float:
    """A rectifier's (or UPS's) losses at a load: what its running modules draw at no load plus
    the load-proportional part, load x (1 / efficiency - 1)  [W].

    Source: Rasmussen, "Electrical Efficiency Modeling for Data Centers", Schneider Electric
    White Paper 113 (a UPS's losses: no-load, proportional and square-law parts; the square-law
    part of a rectifier is small and left in `efficiency`)."""
    return (_non_negative("no_load_w", no_load_w)
            + _non_negative("load_w", load_w) * (1.0 / _fraction("efficiency", efficiency) - 1.0))


def recharge_power(rate_per_h: float, capacity_ah: float, voltage_v: float) -> float:
    """The power a battery's recharge takes from its rectifiers: a current of `rate` C (the
    capacity in Ah times the rate per hour, 0.1 C = 120 A for 1,200 Ah) at the bus voltage  [W].
    Example: 0.1 C of 1,200 Ah on a 240 V bus: 120 A x 240 V = 28.8 kW.

    Source: the C-rate convention (a current as a multiple of the rated capacity per hour);
    chargers sized for the continuous load plus the recharge current, IEEE Std 946 (design of
    DC power systems for stationary applications)."""
    return (_positive("rate_per_h", rate_per_h) * _non_negative("capacity_ah", capacity_ah)
            * _positive("voltage_v", voltage_v))


def end_voltage_needed(min_input_v: float, power_w: float, resistance_ohm: float) -> float:
    """The lowest source voltage V that still delivers `power_w` through a conductor loop of
    `resistance_ohm` with at least `min_input_v` at the load: V - R P / V >= V_min, so
    V = (V_min + sqrt(V_min^2 + 4 R P)) / 2  [V] (the current P / V is computed at the source,
    as a battery at its end of discharge sets it).

    Example: 192 V at the load, 652.8 kW through 0.5 milliohm: (192 + sqrt(192^2 + 4 x 0.0005
    x 652,800)) / 2 = 193.68 V. Source: Ohm's law; the two-wire drop 2 I L rho / A (IEC 60364-5-52
    Annex G, b = 2)."""
    v = _positive("min_input_v", min_input_v)
    return (v + math.sqrt(v * v + 4.0 * _non_negative("resistance_ohm", resistance_ohm)
                          * _non_negative("power_w", power_w))) / 2.0
