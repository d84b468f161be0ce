"""Coolant properties (density, specific heat) at a temperature, from CoolProp.

Fluid properties should come from a well-kept library at run time rather than from
silently hard-coded numbers; CoolProp (Bell et al., Ind. Eng. Chem. Res. 53 (2014) 2498-2508) is it.
Water uses the IAPWS-95 equation of state (HEOS backend); glycol mixtures use CoolProp's
incompressible library, e.g. "INCOMP::MPG[0.25]" = propylene glycol 25 % by mass (PG25).

The stdlib's coolants at atmospheric pressure (water from 1 to 99 degC, PG25 from -9 to 100 degC)
come from a table of CoolProp's own values shipped with the package (fluid_table.py: within 1e-6
of CoolProp), so the common path never imports CoolProp (~0.3 s of a `check`). Anything else
goes to CoolProp, imported lazily, inside the first call that needs it, never when this module is
imported.  Results are cached (functools.lru_cache) by (CoolProp name, temperature rounded to
TEMP_RESOLUTION_C, pressure rounded to 1 Pa). CoolProp's high-level calls are not thread-safe:
they run one at a time (the language server analyses in several threads).

CoolProp is a dependency (any release from 6.8); should it be missing from an installation,
the shipped table still serves the stdlib's coolants, and any other fluid or state is a
ValueError (CoolPropMissing) saying how to install it, which the loop analysis reports
(E646). Import times (this project's machine, Python 3.11.7, 2 cores, warm file cache,
``import CoolProp.CoolProp`` in a fresh interpreter): 6.8.0 0.13-0.25 s, 7.2.0 0.83-0.87 s,
8.0.0 1.8-2.8 s; they return identical values to all printed digits for the cases used here
(water at 30 degC: rho 995.6495 kg/m^3, cp 4179.82 J/kg/K; PG25 at 35 degC: rho 1012.479
kg/m^3, cp 3956.67 J/kg/K). The tests install 6.8.0 (the `test` extra), the fastest to import.

Every failure (unknown fluid, temperature outside the fluid's range, not liquid at that
temperature and pressure, CoolProp not installed) is raised as ValueError with a message fit
for a diagnostic.
"""
from __future__ import annotations

import functools
import math
import re
import threading
from typing import NamedTuple

from astral_dsl.model.fluid_names import check_fluid_name
from astral_dsl.stdio import library_output

__all__ = [
    "ATMOSPHERIC_PA", "TEMP_RESOLUTION_C", "ZERO_CELSIUS_K",
    "CoolPropMissing", "FluidProperties", "OutOfRange", "unavailable_notes", "resolve_name", "properties", "density", "specific_heat",
    "cache_info", "cache_clear", "coolprop_version",
]

ATMOSPHERIC_PA = 101325.0
ZERO_CELSIUS_K = 273.15
#: Temperatures are rounded to this many degC before lookup and caching (0.01 K).
TEMP_RESOLUTION_C = 0.01
_TEMP_DECIMALS = 2

#: Short names used in datacenter practice -> CoolProp names. "PGnn"/"EGnn" (nn = mass percent of
#: propylene / ethylene glycol in water) are handled by _GLYCOL below.
_ALIASES = {"water": "Water"}
_GLYCOL = re.compile(r"^(PG|EG)\s*(\d{1,2})$", re.IGNORECASE)
_GLYCOL_CODES = {"PG": "MPG", "EG": "MEG"}

_LIQUID_PHASES = ("liquid", "supercritical_liquid")
_COOLPROP_LOCK = threading.Lock()


class FluidProperties(NamedTuple):
    fluid: str            # the CoolProp name used
    temp_c: float         # temperature the properties were evaluated at (rounded), degC
    pressure_pa: float    # absolute pressure, Pa
    density: float        # kg/m^3
    cp: float             # specific heat at constant pressure, J/(kg K)


class CoolPropMissing(ValueError):
    """The fluid or state is not in the shipped table, and CoolProp is not installed."""


class OutOfRange(ValueError):
    """CoolProp has no properties of the fluid at the state asked: the message in this
    project's words (what is out of which range, in degC), `detail` CoolProp's own text."""

    def __init__(self, message: str, detail: str):
        super().__init__(message)
        self.detail = detail


_NUM = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
# CoolProp's texts of a state outside a fluid's range (temperatures in kelvin, without a unit)
_RANGE = re.compile(rf"Your temperature {_NUM} is not between {_NUM} and {_NUM}")
_FREEZES = re.compile(rf"Your temperature {_NUM} is below the freezing point of {_NUM}")
_MELTS = re.compile(rf"T \[{_NUM} K\] below Tmelt\(p\) \[{_NUM} K\]")
_MIX = re.compile(rf"Your composition {_NUM} is not between {_NUM} and {_NUM}")


def _c(kelvin: str) -> str:
    return f"{round(float(kelvin) - ZERO_CELSIUS_K, 3) + 0.0:g} degC"


def _out_of_range(name: str, temp_c: float, where: str, text: str) -> str:
    """Why CoolProp has no properties of `name` at `temp_c`, from its text `text`."""
    m = _RANGE.search(text)
    if m:
        return (f"outside the temperatures CoolProp has for {name!r}, {_c(m.group(2))} to "
                f"{_c(m.group(3))}")
    m = _FREEZES.search(text) or _MELTS.search(text)
    if m:
        return f"{name!r} is frozen at {where}: it freezes at {_c(m.group(2))} (CoolProp)"
    m = _MIX.search(text)
    if m:
        return (f"the concentration {float(m.group(1)):g} of {name!r} (the mass fraction in "
                f"its brackets) is outside the {float(m.group(2)):g} to "
                f"{float(m.group(3)):g} CoolProp has for that mixture")
    return f"CoolProp has no properties for {name!r} at {where}"


def unavailable_notes(exc: ValueError) -> tuple:
    """The notes of E646 for the error `properties` raised: CoolProp's own text, if any."""
    detail = getattr(exc, "detail", None)
    return (f"CoolProp: {detail}",) if detail else ()


def _coolprop():
    """Import CoolProp's PropsSI module on first use."""
    try:
        with library_output():
            import CoolProp.CoolProp as CP  # noqa: N813 - lazy on purpose (import cost)
    except ImportError:
        raise CoolPropMissing(
            "not in the shipped table (water 1-99 degC, PG25 -9-100 degC, at 1 atm): its "
            "properties need CoolProp, a dependency missing from this installation "
            "(pip install \"CoolProp>=6.8\")") from None
    return CP


def coolprop_version() -> str:
    """The CoolProp version in use (imports CoolProp)."""
    with _COOLPROP_LOCK:
        return _coolprop().get_global_param_string("version")


def resolve_name(fluid: str) -> str:
    """Map a fluid name to a CoolProp name: "water" -> "Water", "PG25" -> "INCOMP::MPG[0.25]",
    "EG30" -> "INCOMP::MEG[0.30]"; any other string is passed to CoolProp unchanged when it is
    in the accepted domain (model/fluid_names.py: plain names, HEOS::, INCOMP::), and refused
    with ValueError otherwise (REFPROP::, tabular backends, anything else)."""
    if not isinstance(fluid, str) or not fluid.strip():
        raise ValueError(f"fluid name must be a non-empty string, got {fluid!r}")
    name = fluid.strip()
    alias = _ALIASES.get(name.lower())
    if alias:
        return alias
    m = _GLYCOL.match(name)
    if m:
        return f"INCOMP::{_GLYCOL_CODES[m.group(1).upper()]}[{int(m.group(2)) / 100:.2f}]"
    problem = check_fluid_name(name)        # never hand CoolProp a backend it must not use
    if problem is not None:
        raise ValueError(problem[1])
    return name


@functools.lru_cache(maxsize=1024)
def _lookup(name: str, temp_c: float, pressure_pa: float, require_liquid: bool) -> FluidProperties:
    from astral_dsl.analyses import fluid_table

    shipped = fluid_table.lookup(name, temp_c, pressure_pa)
    if shipped is not None:             # liquid over the whole table: no phase to check
        return FluidProperties(name, temp_c, pressure_pa, shipped[0], shipped[1])
    with _COOLPROP_LOCK:
        return _coolprop_lookup(name, temp_c, pressure_pa, require_liquid)


def _coolprop_lookup(name: str, temp_c: float, pressure_pa: float,
                     require_liquid: bool) -> FluidProperties:
    CP = _coolprop()
    t_k = temp_c + ZERO_CELSIUS_K
    where = f"{temp_c:g} degC, {pressure_pa:g} Pa"
    try:
        with library_output():         # whatever CoolProp prints goes to stderr, not stdout
            rho = CP.PropsSI("D", "T", t_k, "P", pressure_pa, name)
            cp = CP.PropsSI("C", "T", t_k, "P", pressure_pa, name)
    except ValueError as exc:
        msg = str(exc)
        if "Initialize failed" in msg or "was not found" in msg:
            raise ValueError(f"unknown fluid {name!r} (not a CoolProp fluid name; "
                             f"e.g. 'Water', 'INCOMP::MPG[0.25]' or 'PG25')") from None
        raise OutOfRange(_out_of_range(name, temp_c, where, msg.split(" : PropsSI(")[0]),
                         msg.split(" : PropsSI(")[0].strip()) from None
    if not (math.isfinite(rho) and math.isfinite(cp) and rho > 0.0 and cp > 0.0):
        raise ValueError(f"no valid properties for fluid {name!r} at {where} "
                         f"(density {rho!r}, cp {cp!r})")
    if require_liquid:
        # Only equation-of-state fluids report a phase; the incompressible (INCOMP::) backend is
        # liquid by construction and has already checked its freezing point and range above.
        try:
            with library_output():
                phase = CP.PhaseSI("T", t_k, "P", pressure_pa, name)
        except ValueError:
            phase = "unknown"
        if not phase.startswith("unknown") and phase not in _LIQUID_PHASES:
            raise ValueError(f"fluid {name!r} is not liquid at {where} (phase: {phase})")
    return FluidProperties(name, temp_c, pressure_pa, float(rho), float(cp))


def properties(fluid: str, temp_c: float, pressure_pa: float = ATMOSPHERIC_PA,
               require_liquid: bool = True) -> FluidProperties:
    """Density [kg/m^3] and specific heat cp [J/(kg K)] of a fluid at temp_c [degC] and absolute
    pressure [Pa], from CoolProp ``PropsSI('D'|'C', 'T', T_K, 'P', p, name)``.

    For a coolant loop, evaluate at the mean of supply and return temperature (the bulk mean
    temperature of internal flow, as in Incropera et al., Fundamentals of Heat and Mass Transfer).
    With require_liquid (default) a fluid that would boil or is gaseous at that state raises
    ValueError; pass False for e.g. "Air".  Cached per (name, rounded T, rounded p)."""
    name = resolve_name(fluid)
    try:
        t = float(temp_c)
        p = float(pressure_pa)
    except (TypeError, ValueError):
        raise ValueError(f"temperature and pressure must be numbers, got {temp_c!r}, {pressure_pa!r}") from None
    if not math.isfinite(t):
        raise ValueError(f"temperature must be finite, got {temp_c!r}")
    if not math.isfinite(p) or p <= 0.0:
        raise ValueError(f"pressure must be a positive absolute pressure in Pa, got {pressure_pa!r}")
    if t + ZERO_CELSIUS_K <= 0.0:
        raise ValueError(f"temperature {t:g} degC is below absolute zero")
    return _lookup(name, round(t, _TEMP_DECIMALS) + 0.0, float(round(p)), bool(require_liquid))


def density(fluid: str, temp_c: float, pressure_pa: float = ATMOSPHERIC_PA) -> float:
    """Liquid density in kg/m^3 at temp_c [degC] (see properties)."""
    return properties(fluid, temp_c, pressure_pa).density


def specific_heat(fluid: str, temp_c: float, pressure_pa: float = ATMOSPHERIC_PA) -> float:
    """Liquid specific heat cp in J/(kg K) at temp_c [degC] (see properties)."""
    return properties(fluid, temp_c, pressure_pa).cp


def unavailable_hint(exc: ValueError) -> str:
    """The hint of E646 for the error `properties` raised."""
    if isinstance(exc, CoolPropMissing):
        return 'pip install "CoolProp>=6.8"'
    return ("keep its supply and return where the fluid is liquid (water freezes at 0 degC: a "
            "glycol mix such as stdlib.cooling's PG25 for colder coolant), or name a CoolProp "
            "fluid (`coolprop = \"Water\"`, `\"INCOMP::MPG[0.25]\"`)")


def cache_info():
    """lru_cache statistics of the property lookups."""
    return _lookup.cache_info()


def cache_clear() -> None:
    """Empty the property cache."""
    _lookup.cache_clear()
