"""Numbers for people: thousands separators and the unit that suits the magnitude (MW for a
site, kW for a rack, W for a NIC), deterministic so that reports are byte-identical. Messages,
reports and pictures all write quantities through these functions."""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

from astral_dsl.units.quantity import format_number

# (factor, unit, decimals): MW from 1 MW up with two decimals (668.47 MW), kW from 1 kW with one
# (652.8 kW), W below (25 W)
POWER_UNITS: Tuple[Tuple[float, str, int], ...] = ((1e6, "MW", 2), (1e3, "kW", 1), (1.0, "W", 1))


def grouped(x: float, digits: int = 0) -> str:
    """`1,048,576`, `1,068.6`: thousands separators, at most `digits` decimals, no trailing
    zeros (and no `-0`)."""
    text = f"{x:,.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def celsius(c: float) -> str:
    """A temperature in degC computed from kelvin, to the microkelvin (`0 degC`, `45 degC`):
    converting back from kelvin leaves float noise (-2.3e-14 for 0 degC) no one should read."""
    return f"{format_number(round(c, 6) + 0.0)} degC"


def count(n) -> str:
    """A count for a message: `1,048,576`, or `1.00e308` when absurd (an int beyond a float's
    range too: its digits, never float())."""
    if abs(n) < 10**15:
        return f"{n:,}"
    digits = str(abs(int(n)))
    return ("-" if n < 0 else "") + f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def memory_capacity(nbytes: float) -> str:
    """A memory's capacity in the decimal GB every other memory figure is written in, with the
    binary size beside it when it is a whole number of GiB, as GPUs are sold: an H100's
    85,899,345,920 bytes are `85.9 GB (80 GiB)`; 80e9 bytes are `80 GB`."""
    text = f"{grouped(nbytes / 1e9, 1)} GB"
    gib = nbytes / 2**30
    if gib >= 1 and abs(gib - round(gib)) <= 1e-9 * gib:      # GB -> bytes round trips
        text += f" ({round(gib):,} GiB)"
    return text


def _scaled(x: float, units, digits: int) -> str:
    for factor, unit in units:
        if abs(x) >= factor:
            return f"{grouped(x / factor, digits)} {unit}"
    factor, unit = units[-1]
    return f"{grouped(x / factor, digits)} {unit}"


def power_unit(watts: float) -> Tuple[float, str, int]:
    """The (factor, unit, decimals) that suits `watts`."""
    for unit in POWER_UNITS:
        if abs(watts) >= unit[0]:
            return unit
    return POWER_UNITS[-1]


def power(watts: float, digits: int = 1) -> str:
    """`699.19 MW`, `40.8 kW`, `25 W`: MW from 1 MW up (two decimals), kW from 1 kW."""
    if abs(watts) >= 1e6:
        return f"{grouped(watts / 1e6, max(digits, 2))} MW"
    return _scaled(watts, ((1e3, "kW"), (1.0, "W")), digits)


def apparent(said: str) -> str:
    """A power written by `power`, `powers_apart` or `power_compact` as an apparent power:
    `55.4 kW` -> `55.4 kVA` (a transformer's rating and the kVA it carries)."""
    return said[:-1] + "VA" if said.endswith("W") else said


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def power_compact(watts: float) -> str:
    """Three significant figures or so, for pictures: `708.6 MW`, `40.1 MW`, `2.88 MW`,
    `652.8 kW`, `1.8 kW`, `25 W`; GW from 1 GW."""
    a = abs(watts)
    for factor, unit in ((1e9, "GW"), (1e6, "MW"), (1e3, "kW")):
        if a >= factor:
            digits = 2 if a < 10 * factor or unit == "GW" else 1
            return _trim(f"{watts / factor:.{digits}f}") + f" {unit}"
    return _trim(f"{watts:.1f}") + " W"


def power_in(watts: float, unit: Tuple[float, str, int]) -> str:
    """`watts` in a given unit, with that unit's decimals kept (aligned in a column)."""
    factor, name, digits = unit
    text = f"{watts / factor:,.{digits}f}"
    return f"{'0' if text.strip('-0.,') == '' else text} {name}"


def powers(values: Sequence[Optional[float]], missing: str = "-") -> List[str]:
    """A column of powers written in one unit, the one that suits its largest value (so a
    column reads down at a glance), unless some value would read below 1 in it (`0.04 MW`):
    then each value takes its own unit (the power-by-level table: MW for the site, kW for a
    rack). `None` is `missing`."""
    present = [abs(v) for v in values if v is not None]
    if not present:
        return [missing for _ in values]
    unit = power_unit(max(present))
    shared = all(v == 0 or v >= unit[0] for v in present)
    return [missing if v is None else power_in(v, unit if shared else power_unit(v))
            for v in values]


def voltage(volts: float) -> str:
    """`1.31 V`, `198 V`, `1,000 V`: to the hundredth of a volt, as the voltage-drop checks
    (E622, E633) give a drop and the voltage it is a share of."""
    return f"{grouped(volts, 2)} V"


def current(amps: float) -> str:
    """`3,108.6 A`; `31.09 kA` from 10 kA up."""
    if abs(amps) >= 1e4:
        return f"{grouped(amps / 1e3, 2)} kA"
    return f"{grouped(amps, 1)} A"


def currents(values: Iterable[Optional[float]], missing: str = "-") -> List[str]:
    """A column of currents: whole amperes, or kA (two decimals) for the whole column when
    its largest is 10 kA or more."""
    values = list(values)
    big = any(v is not None and abs(v) >= 1e4 for v in values)
    return [missing if v is None else (f"{v / 1e3:,.2f} kA" if big else f"{v:,.0f} A")
            for v in values]


def apart(value: float, limit: float, write, digits: int) -> Tuple[str, str]:
    """`value` and the `limit` it is compared with, written by `write(x, digits)` with at least
    `digits` decimals and as many more (up to 12) as it takes for the two texts to differ when
    the numbers do: a drop of 0.6446 % is never printed "0.64 %, above the declared 0.64 %"."""
    a, b = write(value, digits), write(limit, digits)
    while a == b and value != limit and digits < 12:
        digits += 1
        a, b = write(value, digits), write(limit, digits)
    return a, b


def powers_apart(value: float, limit: float, digits: int = 3) -> Tuple[str, str]:
    """Two powers in a comparison (`readable.power`), never printed equal when they differ."""
    return apart(value, limit, power, digits)


def percents_apart(value: float, limit: float, digits: int = 2) -> Tuple[str, str]:
    """Two ratios as percents (`0.6446 %` against `0.64 %`), never printed equal when they
    differ."""
    return apart(value, limit, lambda x, d: f"{grouped(x * 100, d)} %", digits)


def percent(fraction: float) -> str:
    """A share as the language writes it, a space before the sign: 0.25 -> "25 %",
    0.125 -> "12.5 %"."""
    return f"{format_number(round(fraction * 100, 6))} %"


def whole_percent(fraction: float) -> str:
    """A share to the whole percent, a space before the sign as every output writes it:
    0.667 -> "67 %" (never "67%")."""
    return f"{fraction * 100:.0f} %"
