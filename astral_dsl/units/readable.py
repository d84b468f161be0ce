"""Numbers for people: thousands separators and the unit that suits the magnitude (MW for a
site, kW for a rack, W for a NIC), deterministic so that reports are byte-identical."""
from __future__ import annotations


def grouped(x: float, digits: int = 0) -> str:
    """`1,048,576`, `1,068.6`: thousands separators, at most `digits` decimals, no trailing
    zeros (and no `-0`)."""
    text = f"{x:,.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def count(n) -> str:
    """A count for a message: `1,048,576`, or `1.00e308` when absurd (an int beyond a float's
    range too: its digits, never float())."""
    if abs(n) < 10**15:
        return f"{n:,}"
    digits = str(abs(int(n)))
    return ("-" if n < 0 else "") + f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def _scaled(x: float, units, digits: int) -> str:
    for factor, unit in units:
        if abs(x) >= factor:
            return f"{grouped(x / factor, digits)} {unit}"
    factor, unit = units[-1]
    return f"{grouped(x / factor, digits)} {unit}"


def power(watts: float, digits: int = 1) -> str:
    """`699.19 MW`, `40.8 kW`, `25 W`: MW from 1 MW up (two decimals), kW from 1 kW."""
    if abs(watts) >= 1e6:
        return f"{grouped(watts / 1e6, max(digits, 2))} MW"
    return _scaled(watts, ((1e3, "kW"), (1.0, "W")), digits)


def current(amps: float) -> str:
    """`3,108.6 A`; `31.09 kA` from 10 kA up."""
    if abs(amps) >= 1e4:
        return f"{grouped(amps / 1e3, 2)} kA"
    return f"{grouped(amps, 1)} A"
