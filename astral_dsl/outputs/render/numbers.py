"""How the pictures write numbers: counts with thousands separators, powers, link speeds,
flows, temperatures, shares and currents, each `?` when unknown (outputs/render/style.py holds
the colours and the canvas, labels.py the labels)."""
from __future__ import annotations

from typing import Optional

from astral_dsl.units import readable


def n(x) -> str:
    """A count with thousands separators: 8,192."""
    x = float(x)
    if x == int(x):
        return f"{int(x):,}"
    return f"{x:,.1f}"


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def watts(w: Optional[float]) -> str:
    return "?" if w is None else readable.power_compact(w)


def speed(q) -> str:
    """400 Gb/s -> 400G, 1.6 Tb/s -> 1.6T."""
    if q is None:
        return "?"
    si = q.si if hasattr(q, "si") else float(q)
    if si >= 1e12:
        return _trim(f"{si / 1e12:.2f}") + "T"
    if si >= 1e9:
        return _trim(f"{si / 1e9:.2f}") + "G"
    if si >= 1e6:
        return _trim(f"{si / 1e6:.2f}") + "M"
    return _trim(f"{si:.0f}") + " b/s"


def links(count, q) -> str:
    """`64 x 400G`."""
    return f"{n(count)} x {speed(q)}"


def litres_per_min(m3s: Optional[float]) -> str:
    return "?" if m3s is None else f"{n(round(m3s * 60000))} L/min"


def m3s(v: Optional[float]) -> str:
    return "?" if v is None else f"{n(round(v, 1) if v < 100 else round(v))} m³/s"


def celsius(c: Optional[float]) -> str:
    return "?" if c is None else _trim(f"{c:.1f}") + " °C"


def percent(ratio: Optional[float]) -> str:
    return "?" if ratio is None else _trim(f"{ratio * 100:.1f}") + " %"


def amps(a: Optional[float]) -> str:
    return "?" if a is None else f"{n(round(a))} A"


def plane_name(i: int) -> str:
    return chr(ord("A") + i) if 0 <= i < 26 else str(i)
