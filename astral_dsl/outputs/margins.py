"""Margins as text (`astral check --margins`) and as the `margins` list of the check JSON."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from astral_dsl.units import Quantity, format_number


def _value(si: float, unit: str, point: bool = False) -> float:
    """`si` in `unit`: a temperature point with its offset, a difference (point=False) not."""
    from astral_dsl.units import parse_unit

    u = parse_unit(unit)
    if u.point and point:
        return float((si - float(u.offset)) / float(u.scale))
    return si / float(u.scale)


def _show(si: float, unit: str, point: bool = False) -> str:
    if not unit:
        return format_number(round(si, 6))
    if not point and unit in ("degC", "degF"):
        unit = "K" if unit == "degC" else "delta_degF"
    return f"{format_number(round(_value(si, unit, point), 4))} {unit}"


def _param(report, name: str, si: Optional[float]) -> Optional[str]:
    if si is None:
        return None
    q = report.params.get(name)
    if q is None or not q.unit:
        return format_number(round(si, 6))
    v = Quantity(si, q.dims, q.unit, q.point)
    return f"{format_number(round(v.magnitude, 4))} {q.unit}"


def phrase(report, r) -> str:
    """`hosts_per_rack <= 4 [symbolic]`, `supply <= 47.2 degC [numeric bracket]`, ..."""
    p = r.param
    low, high = _param(report, p, r.low), _param(report, p, r.high)
    tag = "symbolic" if r.method == "symbolic" else "numeric bracket"
    if r.empty:
        text = f"for no value of {p}"
    elif r.again_below is not None or r.again_above is not None:
        parts = []
        if r.again_below is not None:
            parts.append(f"{p} <= {_param(report, p, r.again_below)}")
        if r.again_above is not None:
            parts.append(f"{p} >= {_param(report, p, r.again_above)}")
        text = "again while " + " or ".join(parts)
    elif low is not None and high is not None:
        text = f"only while {p} = {low}" if low == high else f"while {low} <= {p} <= {high}"
    elif high is not None:
        text = f"while {p} <= {high}"
    elif low is not None:
        text = f"while {p} >= {low}"
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
    limit breaking: `; the design compiles only while max_os <= 1000 (E316)`; with values in
    between that do not compile (a degree that no longer divides): `; among the values of tp
    that compile (up to 64; E316 from 65537)`."""
    p = r.param
    codes = ", ".join(r.edge_codes)
    ends = []
    for edge, beyond, word, op in ((r.compiles_low, r.fails_below, "down to", ">="),
                                   (r.compiles_high, r.fails_above, "up to", "<=")):
        if edge is None:
            continue
        if r.gaps:
            tail = f"; {codes} from {_param(report, p, beyond)}" if beyond is not None else ""
            ends.append(f"{word} {_param(report, p, edge)}{tail}")
        else:
            ends.append(f"{p} {op} {_param(report, p, edge)}")
    subject = "the limit is evaluated" if r.absent else "the design compiles"
    if r.gaps:
        where = "where the limit is evaluated" if r.absent else "that compile"
        return f"; among the values of {p} {where}" + (f" ({', '.join(ends)})" if ends else "")
    if ends:
        return f"; {subject} only while {' and '.join(ends)}" + (f" ({codes})" if codes else "")
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
            head = (f"  {lim.label}: {_show(lim.lhs, lim.unit, lim.point)} {op} "
                    f"{_show(lim.rhs, lim.unit, lim.point)}")
            if lim.op == "==":
                head += f" ({state})"
            else:
                pct = f", {lim.margin / lim.rhs * 100:.1f} %" if lim.rhs and not lim.point \
                    else ""
                head += f" (margin {_show(lim.margin, lim.unit)}{pct}; {state})"
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
                           "low": conv(r.low), "high": conv(r.high), "empty": r.empty,
                           "integer": r.integer, "holds_again_below": conv(r.again_below),
                           "holds_again_above": conv(r.again_above),
                           "searched": [conv(r.searched[0]), conv(r.searched[1])]
                           if r.method == "numeric" else None,
                           "exact": r.exact, "text": phrase(report, r)})
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
