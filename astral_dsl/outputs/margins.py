"""Margins as text (`astral check --margins`) and as the `margins` list of the check JSON."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from astral_dsl.units import Quantity, format_number
from astral_dsl.units.readable import grouped, memory_capacity

BITS_PER_BYTE = 8.0    # a memory limit's sides are in bits (SI: 1 GB = 8e9), its GiB in bytes


def _value(si: float, unit: str, point: bool = False) -> float:
    """`si` in `unit`: a temperature point with its offset, a difference (point=False) not."""
    from astral_dsl.units import parse_unit

    u = parse_unit(unit)
    if u.point and point:
        return float((si - float(u.offset)) / float(u.scale))
    return si / float(u.scale)


def _show(si: float, unit: str, point: bool = False, decimals: int = 4) -> str:
    if not point and unit in ("degC", "degF"):
        unit = "K" if unit == "degC" else "delta_degF"
    value = _value(si, unit, point) if unit else si
    return f"{grouped(value, decimals)} {unit}" if unit else grouped(value, decimals)


def _decimals(value: float) -> int:
    """The decimals a limit's figure is shown with: about four significant digits, one decimal
    at least and four at most (`672.9897 kW` is `673 kW`, `66.382 GB` `66.38 GB`, a 0.8716 %
    voltage drop keeps its four)."""
    whole = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    return min(4, max(1, 4 - whole))


def _figures(lim):
    """The limit's two sides and its margin as the head line shows them, in the limit's unit
    (`_decimals`; more while two sides that differ would read alike: `800 kW <= 800 kW` for
    799.96 kW); the memory of a GPU with its GiB beside, as W750 gives it."""
    lhs, rhs, margin = ((_value(v, lim.unit, point) if lim.unit else v) for v, point in
                        ((lim.lhs, lim.point), (lim.rhs, lim.point), (lim.margin, False)))
    dl, dr = _decimals(lhs), _decimals(rhs)
    while max(dl, dr) < 6 and lhs != rhs and grouped(lhs, dl) == grouped(rhs, dr):
        dl, dr = dl + 1, dr + 1
    shown = [_show(lim.lhs, lim.unit, lim.point, dl), _show(lim.rhs, lim.unit, lim.point, dr)]
    if lim.kind == "memory" and lim.unit == "GB":
        gib = memory_capacity(lim.rhs / BITS_PER_BYTE).partition(" GB")[2]
        shown[1] += gib                                   # ' (180 GiB)' or ''
    return shown[0], shown[1], _show(lim.margin, lim.unit, False, _decimals(margin))


def _param(report, name: str, si: Optional[float], toward: int = 0,
           exact: bool = False) -> Optional[str]:
    """`si` in the parameter's unit, to 4 decimals (6 without a unit). A bound is rounded
    toward the side where the limit holds (`toward` -1: down, for an upper bound; +1: up), so
    that the value printed is one where it does: 11.71875 W is `<= 11.7187 W`, not 11.7188, at
    which the limit is broken. `exact`: a symbolic bound, the float of an exact value, whose
    last-place noise (10.2 kW read as 10.200000000000001) is not a digit to round away from."""
    if si is None:
        return None
    q = report.params.get(name)
    if q is None or not q.unit:
        return format_number(_rounded(si, 6, toward, exact))
    v = Quantity(si, q.dims, q.unit, q.point)
    return f"{format_number(_rounded(v.magnitude, 4, toward, exact))} {q.unit}"


def _rounded(x: float, digits: int, toward: int, exact: bool) -> float:
    scaled = x * 10 ** digits
    nearest = round(scaled)
    if not toward or (exact and abs(scaled - nearest) <= 1e-9 * max(1.0, abs(scaled))):
        return round(x, digits)
    return (math.floor(scaled) if toward < 0 else math.ceil(scaled)) / 10 ** digits


def interval(report, p: str, low: Optional[float], high: Optional[float], low_open: bool,
             high_open: bool, exact: bool) -> Optional[str]:
    """`p <= 4`, `lim > 10.2 kW`, `2 <= p < 5`, `p = 4` (None when unbounded): each bound in
    the parameter's unit, rounded toward the side where the limit holds."""
    lo, hi = _param(report, p, low, 1, exact), _param(report, p, high, -1, exact)
    below = "<" if high_open else "<="
    if low is not None and low == high:
        return f"{p} = {_param(report, p, low)}"
    if lo is not None and hi is not None:
        return f"{lo} {'<' if low_open else '<='} {p} {below} {hi}"
    if hi is not None:
        return f"{p} {below} {hi}"
    if lo is not None:
        return f"{p} {'>' if low_open else '>='} {lo}"
    return None


def phrase(report, r) -> str:
    """`hosts_per_rack <= 4 [symbolic]`, `supply <= 47.2 degC [numeric bracket]`, ..."""
    p = r.param
    exact = r.method == "symbolic"
    span = interval(report, p, r.low, r.high, r.low_open, r.high_open, exact)
    tag = "symbolic" if exact else "numeric bracket"
    if r.empty:
        text = f"for no value of {p}"
    elif r.again_below is not None or r.again_above is not None:
        parts = []
        if r.again_below is not None:
            parts.append(f"{p} <= {_param(report, p, r.again_below, -1)}")
        if r.again_above is not None:
            parts.append(f"{p} >= {_param(report, p, r.again_above, 1)}")
        text = "again while " + " or ".join(parts)
    elif span is not None:
        text = f"only while {span}" if r.low is not None and r.low == r.high else \
            f"while {span}"
    elif r.method == "symbolic":
        text = f"for every {p}"
    else:
        lo = r.compiles_low if r.compiles_low is not None else r.searched[0]
        hi = r.compiles_high if r.compiles_high is not None else r.searched[1]
        text = f"for every {p} searched ({_param(report, p, lo)} .. {_param(report, p, hi)})"
    if r.note:
        text += f" ({r.note})"
    return f"{text} [{tag}]" + compiles(report, r)


def compiles(report, r) -> str:
    """Where the search met the edge of the values the parameter may take, which is not the
    limit breaking, and what stops it there: `; the design compiles only while max_os <= 1000
    (E316: `max_oversubscription` past its plausible range, at most 1000, at d.astral:3)`; with
    values in between that do not compile (a degree that no longer divides): `; among the
    values of tp that compile (up to 64; E316 from 65537; E316: ...)`."""
    p = r.param
    codes = ", ".join(r.edge_codes)
    why = "; ".join(dict.fromkeys(r.why_low + r.why_high))
    ends = []
    for edge, beyond, word, op in ((r.compiles_low, r.fails_below, "down to", ">="),
                                   (r.compiles_high, r.fails_above, "up to", "<=")):
        if edge is None:
            continue
        if r.gaps:
            tail = f"; {codes} from {_param(report, p, beyond)}" if beyond is not None else ""
            ends.append(f"{word} {_param(report, p, edge)}{tail}")
        else:
            ends.append(f"{p} {op} {_param(report, p, edge, 1 if op == '>=' else -1)}")
    subject = "the limit is evaluated" if r.absent else "the design compiles"
    if r.gaps:
        where = "where the limit is evaluated" if r.absent else "that compile"
        said = ", ".join(ends) + (f"; {why}" if why and ends else "")
        return f"; among the values of {p} {where}" + (f" ({said})" if ends else "")
    why = why or codes
    if ends:
        return f"; {subject} only while {' and '.join(ends)}" + (f" ({why})" if why else "")
    return ""


def render(report) -> str:
    lines = [f"margins of {report.file}:"]
    if report.note:
        return lines[0] + f" {report.note}\n"
    for m in report.margins:
        lim = m.limit
        state = "holds" if lim.holds else "BROKEN"
        if lim.truth:
            head = f"  {lim.label}: {state}"
        else:
            op = "==" if lim.op == "==" else "<" if lim.strict else "<="
            lhs, rhs, margin = _figures(lim)
            head = f"  {lim.label}: {lhs} {op} {rhs}"
            if lim.op == "==":
                head += f" ({state})"
            else:
                pct = f", {lim.margin / lim.rhs * 100:.1f} %" if lim.rhs and not lim.point \
                    else ""
                head += f" (margin {margin}{pct}; {state})"
        if lim.file:
            head += f"  [{lim.file}:{lim.line}]"
        lines.append(head)
        if m.ranges:
            lines.append("    holds " + phrase(report, m.ranges[0]))
            lines.extend("       or " + phrase(report, r) for r in m.ranges[1:])
        elif m.depends_on:
            lines.append("    depends on " + ", ".join(m.depends_on) +
                         " (bracketed by `astral check --margins`)")
        elif m.symbolic:
            lines.append("    depends on no parameter [symbolic]")
        elif lim.truth and not lim.operands:
            lines.append("    a truth value: no numeric parameter moves it")
        else:
            lines.append("    depends on no parameter: none of the values tried moved it")
        if m.condition:
            lines.append(f"    condition: {m.condition}")
        lines.extend(f"    note: {n}" for n in m.notes)
    lines.extend(f"  note: {n}" for n in report.notes)
    return "\n".join(lines) + "\n"


def _quantity_json(si: float, unit: str, point: bool = False) -> Dict[str, Any]:
    if not unit:
        return {"value": si, "unit": None}
    if not point and unit in ("degC", "degF"):
        unit = "K" if unit == "degC" else "delta_degF"
    return {"value": round(_value(si, unit, point), 9), "unit": unit}


def to_json(report) -> List[Dict[str, Any]]:
    out = []
    for m in report.margins:
        lim = m.limit
        ranges = []
        for r in m.ranges:
            q = report.params.get(r.param)
            unit = q.unit if q is not None and q.unit else None
            conv = (lambda si: None if si is None else
                    (Quantity(si, q.dims, q.unit, q.point).magnitude if unit else si))
            ranges.append({"param": r.param, "method": r.method, "unit": unit,
                           "low": conv(r.low), "high": conv(r.high),
                           "low_open": r.low_open, "high_open": r.high_open, "empty": r.empty,
                           "integer": r.integer, "holds_again_below": conv(r.again_below),
                           "holds_again_above": conv(r.again_above),
                           "searched": [conv(r.searched[0]), conv(r.searched[1])]
                           if r.method == "numeric" else None,
                           "exact": r.exact,
                           # where the design stops compiling (not the limit breaking), and
                           # the values between that do not compile (skipped)
                           "compiles_low": conv(r.compiles_low),
                           "compiles_high": conv(r.compiles_high),
                           "compile_errors": list(r.edge_codes),
                           "skipped": [conv(x) for x in r.gaps],
                           "text": phrase(report, r)})
        out.append({"limit": lim.label, "kind": lim.kind, "key": lim.key, "file": lim.file,
                    "line": lim.line, "column": lim.column, "op": lim.op,
                    "lhs": None if lim.truth else _quantity_json(lim.lhs, lim.unit, lim.point),
                    "rhs": None if lim.truth else _quantity_json(lim.rhs, lim.unit, lim.point),
                    "holds": lim.holds,
                    "margin": None if lim.truth else _quantity_json(lim.margin, lim.unit),
                    "margin_ratio": round(lim.margin / lim.rhs, 6)
                    if not lim.truth and lim.rhs and not lim.point else None,
                    "symbolic": m.symbolic, "condition": m.condition, "ranges": ranges,
                    "notes": list(m.notes)})
    return out
