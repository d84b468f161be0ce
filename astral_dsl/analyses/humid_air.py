"""Humid air from CoolProp's HAPropsSI (real-gas moist air: Hyland and Wexler's virial
formulation as CoolProp implements it; Bell et al., Ind. Eng. Chem. Res. 53 (2014) 2498-2508):
the specific volume and enthalpy per kilogram of dry air and the humidity ratio of an air unit's
supply, the enthalpy where it leaves, and the wet bulbs of a year of weather.

Every state is taken at its inputs rounded to 1e-6 K and 0.01 Pa, and comes from one place
chosen by those inputs alone, never by what the per-user cache holds:

- an air unit's state inside the shipped table's domain (analyses/humid_air_table.py: a dew
  point of 1-30 degC, at most the dry bulb of 0-80 degC, at 65-105 kPa; every air unit of the
  examples) is interpolated from CoolProp's own values shipped with the package, within 1.2e-8
  of CoolProp for "W", 1.3e-9 for "Vda" and 1.4e-3 J/kg for "H". Neither the per-user cache
  nor CoolProp is consulted;
- a wet bulb inside the wet-bulb table's domain comes from it (analyses/wetbulb_table.py);
- any other state is exact CoolProp for the rounded inputs. Its values are kept in the per-user
  cache (astral_dsl/usercache.py: JSON, verified, never shared), so that a check that has seen
  the state before does not import CoolProp; a cached value is the very number CoolProp returned,
  so the results do not depend on whether the cache was there. CoolProp's calls run one at a
  time (its high-level interface is not thread-safe; the language server analyses in threads)."""
from __future__ import annotations

import functools
import math
import os
import threading
from typing import Dict, NamedTuple, Tuple

from astral_dsl import usercache
from astral_dsl.analyses import humid_air_table, wetbulb_table
from astral_dsl.stdio import library_output

ZERO_CELSIUS_K = 273.15
_LOCK = threading.Lock()
_CACHE_NAME = "humid-air-1"
_MAX_ENTRIES = 20000
_memo: Dict[str, float] = {}
_state = {"loaded": False, "dirty": False}


class AirState(NamedTuple):
    specific_volume: float      # m^3 per kg of dry air (HAPropsSI "Vda")
    enthalpy: float             # J per kg of dry air (HAPropsSI "H")
    humidity_ratio: float       # kg of water per kg of dry air (HAPropsSI "W")


def _key() -> str:
    """What the cached states were computed by: the CoolProp installation (its package's path
    and modification time; finding it imports nothing), else "" (nothing is cached)."""
    try:
        from importlib.util import find_spec

        spec = find_spec("CoolProp")
        origin = spec.origin if spec is not None else None
        if not origin:
            return ""
        return f"humid-air 1 {origin} {os.stat(origin).st_mtime_ns}"
    except (ImportError, ValueError, OSError):      # pragma: no cover - depends on the system
        return ""


def _load() -> None:
    if _state["loaded"]:
        return
    _state["loaded"] = True
    key = _key()
    stored = usercache.read(_CACHE_NAME, key) if key else None
    if isinstance(stored, dict):
        for k, v in stored.items():
            if isinstance(k, str) and isinstance(v, float) and math.isfinite(v):
                _memo.setdefault(k, v)


def flush() -> None:
    """Write the states computed in this process to the per-user cache (once, at the end of an
    analysis)."""
    with _LOCK:
        if not _state["dirty"]:
            return
        _state["dirty"] = False
        key = _key()
        if key and len(_memo) <= _MAX_ENTRIES:
            usercache.write(_CACHE_NAME, key, dict(sorted(_memo.items())))


def _props(output: str, temp_c: float, pressure_pa: float, dew_point_c: float) -> float:
    name = f"{output}|{temp_c:.6f}|{pressure_pa:.2f}|{dew_point_c:.6f}"
    with _LOCK:
        _load()
        hit = _memo.get(name)
        if hit is not None:
            return hit
        try:
            with library_output():
                from CoolProp.HumidAirProp import HAPropsSI

                value = HAPropsSI(output, "T", round(temp_c, 6) + ZERO_CELSIUS_K, "P",
                                  round(pressure_pa, 2), "Tdp",
                                  round(dew_point_c, 6) + ZERO_CELSIUS_K)
        except ImportError as exc:    # pragma: no cover - depends on the installation
            raise ValueError("humid-air properties need CoolProp, a dependency missing "
                             "from this installation (pip install \"CoolProp>=6.8\")") from exc
        except ValueError as exc:
            raise ValueError(f"no humid-air properties at {temp_c:g} degC, dew point "
                             f"{dew_point_c:g} degC, {pressure_pa:g} Pa: "
                             f"{str(exc).split(' : ')[0]}") from None
        if not math.isfinite(value):
            raise ValueError(f"no humid-air properties at {temp_c:g} degC, dew point "
                             f"{dew_point_c:g} degC, {pressure_pa:g} Pa")
        _memo[name] = value
        _state["dirty"] = True
        return value


def _shipped(temp_c: float, dew_point_c: float, pressure_pa: float):
    """(Vda, H, W) from the shipped table at the rounded inputs, or None outside it."""
    return _table(round(temp_c, 6), round(dew_point_c, 6), round(pressure_pa, 2))


@functools.lru_cache(maxsize=1024)
def _table(temp_c: float, dew_point_c: float, pressure_pa: float):
    """humid_air_table.lookup, kept per state: a design's air units mostly share their supply,
    rise and pressure (a generated 1 MB design has 656 units of one state: 0.1 s of CPU)."""
    return humid_air_table.lookup(temp_c, dew_point_c, pressure_pa)


def air_state(temp_c: float, dew_point_c: float, pressure_pa: float) -> AirState:
    """Moist air at a dry bulb, a dew point (at most the dry bulb) and a pressure."""
    if dew_point_c > temp_c:
        raise ValueError(f"the dew point ({dew_point_c:g} degC) is above the dry bulb "
                         f"({temp_c:g} degC)")
    shipped = _shipped(temp_c, dew_point_c, pressure_pa)
    if shipped is not None:
        return AirState(*shipped)
    return AirState(_props("Vda", temp_c, pressure_pa, dew_point_c),
                    _props("H", temp_c, pressure_pa, dew_point_c),
                    _props("W", temp_c, pressure_pa, dew_point_c))


def heating(temp_c: float, rise_k: float, dew_point_c: float,
            pressure_pa: float) -> Tuple[AirState, float]:
    """(the entering state, the enthalpy rise per kg of dry air) of air warmed by `rise_k` at
    the same moisture: what an air unit's flow follows from (formulas.humid_air_flow)."""
    entering = air_state(temp_c, dew_point_c, pressure_pa)
    shipped = _shipped(temp_c + rise_k, dew_point_c, pressure_pa)
    leaving = shipped[1] if shipped is not None else \
        _props("H", temp_c + rise_k, pressure_pa, dew_point_c)
    return entering, leaving - entering.enthalpy


def wet_bulb(dry_bulb_c: float, dew_point_c: float, pressure_pa: float) -> float:
    """The wet bulb (degC): the shipped table of CoolProp's values, else CoolProp itself."""
    dew_point_c = min(dew_point_c, dry_bulb_c)
    shipped = wetbulb_table.lookup(dry_bulb_c, dew_point_c, pressure_pa)
    if shipped is not None:
        return shipped
    return _props("Twb", dry_bulb_c, pressure_pa, dew_point_c) - ZERO_CELSIUS_K

