"""Margins: for each user check and engineering limit, how far the design is from breaking it
now, and under which values of each top-level `param` it holds (`astral check --margins`).

    from astral_dsl.explore import margins
    report = margins.analyse("examples/astral.astral")
    for m in report.margins: m.limit.label, m.limit.margin, [r.phrase() for r in m.ranges]

shadow.py evaluates the design with sympy symbols beside the numbers, limits.py lists the limits
with both sides (equipment.py a feeder's and a loop's equipment, memory.py each job's memory),
symbolic.py and solve.py derive the ranges (symbolic.py: sympy where the sides are algebraic in
the parameters, verified against the compiler at a second point; solve.py: a numeric bracket
otherwise, by secant steps where it can and bisection where it must, marked as such)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import sympy

from astral_dsl import records
from astral_dsl.explore.margins.limits import Limit, by_key, collect
from astral_dsl.explore.margins.shadow import OPAQUE, NumericRecorder, Shadows, exact
from astral_dsl.explore.margins.solve import (Probed, Shown, Uncompiled, candidates, reasons,
                                              numeric_range)
from astral_dsl.explore.margins.symbolic import Range, depends, shadow_at, symbolic_range
from astral_dsl.semantics.overrides import Option, command_line
from astral_dsl.units import Quantity


@records.frozen
class Margin:
    limit: Limit
    ranges: tuple                     # Range per parameter the limit depends on
    symbolic: bool                    # both sides derived exactly (and verified)
    condition: Optional[str] = None   # the symbolic condition, parameters in their units
    notes: tuple = ()
    depends_on: tuple = ()            # the parameters that move either side


@records.frozen
class Report:
    file: str
    params: Dict[str, Quantity]       # the numeric top-level params and their current values
    margins: List[Margin]
    diagnostics: tuple
    note: Optional[str] = None
    notes: tuple = ()                 # per parameter: why some could not be bracketed


def literal(q: Quantity, si: float) -> str:
    """A `--set` literal for `si` in the unit of `q`."""
    v = Quantity(si, q.dims, q.unit, q.point)
    return str(v) if q.unit else repr(float(si)) if not float(si).is_integer() else str(int(si))


def analyse(path: str, overrides: Optional[Dict[str, str]] = None, params=None,
            numeric: bool = True, read=None, step=None,
            set_option: Option = command_line) -> Report:
    """`params`: only these parameters (default: every numeric top-level param); `numeric`:
    bracket the non-algebraic limits by evaluating the design again (False: symbolic only);
    `step(what)`: told what is being done (a progress line); `set_option`: how an override
    is named (semantics/overrides.py: the command's `--set NAME`, the API's from_python)."""
    step = step or (lambda what: None)
    from astral_dsl.pipeline import check, front_end_errors
    from astral_dsl.workspace import Workspace

    overrides = dict(overrides or {})
    ws = Workspace.open(path, overrides, option=set_option) if read is None else \
        Workspace.open(path, overrides, read, set_option)
    # a design with `?`: around the values sizing chose, held while each parameter moves
    chosen, sized_notes = _chosen(ws)
    if chosen is None:
        checked = check(ws)
        return Report(ws.design.file, {}, [], checked.diagnostics,
                      "no choice of the design's unknowns (`?`) holds: no margins")
    ev = Shadows()
    design = ws.compile(assignments=chosen, trace=ev)
    checked = check(ws, design)
    if front_end_errors(design) or not design.roots:     # (an empty file compiles)
        return Report(design.file, {}, [], checked.diagnostics,
                      "the design does not compile: no margins" if front_end_errors(design)
                      else "the design declares no site: no margins")
    limits = collect(ws, ev, checked)
    values = {n: q for n, q in _numeric_params(design).items()
              if params is None or n in params}
    asked, not_numeric = _not_moved(design, params, values)
    symbols = {n: s for n, (s, _) in ev.params.items()}
    current = ev.current()
    cache: Dict[tuple, object] = {}

    def probe(name: str, x: float):
        key = (name, x)
        if key not in cache:
            if len(cache) >= MAX_PROBES:
                raise _Spent()
            over = {**overrides, name: literal(values[name], x)}
            numbers = NumericRecorder()
            at_x = ws.compile(overrides=over, assignments=chosen, trace=numbers)
            if front_end_errors(at_x):
                cache[key] = Uncompiled(tuple(sorted({d.code for d in at_x.diagnostics
                                                      if d.is_error})),
                                        why=reasons(at_x.diagnostics))
            else:
                # the limits are the design's own: its required scenarios are checked at the
                # current values (above), not at every probe
                checked_x = check(ws, at_x, required=False)
                cache[key] = Probed(by_key(collect(ws, numbers, checked_x)),
                                    sorted({d.code for d in checked_x.diagnostics
                                            if d.is_error}), reasons(checked_x.diagnostics))
        return cache[key]

    ranges: Dict[str, List[Range]] = {lim.key: [] for lim in limits}
    demoted: Dict[str, List[str]] = {lim.key: [] for lim in limits}
    dependent: Dict[str, List[str]] = {lim.key: [] for lim in limits}
    report_notes: List[str] = []
    spent: Dict[str, List[str]] = {lim.key: [] for lim in limits}
    for name, q in values.items():
        step(f"the limits as `{name}` moves")
        integer = name in ev.counts
        x0 = q.si
        try:
            moved, x1, failed = _moved(name, x0, integer, q.point, probe)
        except _Spent:
            report_notes.append(f"`{name}`: {_spent_note()}: its limits are not bracketed")
            continue
        if moved is None:
            shown = ", ".join(f"{literal(q, x)} ({', '.join(f.codes) or 'no limits'})"
                              for x, f in failed[:4])
            report_notes.append(f"`{name}`: the design compiles at no other value tried "
                                f"({shown}{', ...' if len(failed) > 4 else ''}): its limits "
                                "are not bracketed")
            continue
        at_x1 = dict(current)
        if name in symbols:
            at_x1[symbols[name]] = exact(x1)
        far: List[object] = []       # the nearest value on the other side, probed when needed
        for lim in limits:
            other = moved.get(lim.key)
            dep = other is None or depends(lim, other)
            if not dep and not lim.symbolic:
                # a step (ceil, whole CDUs, an `if`) need not move one way: try the other
                try:
                    if not far:
                        far.append(_moved(name, x0, integer, q.point, probe,
                                          -1 if x1 > x0 else 1)[0])
                except _Spent:
                    far.append(None)
                beyond = far[0]
                dep = beyond is not None and (beyond.get(lim.key) is None or
                                              depends(lim, beyond.get(lim.key)))
            sym = lim.symbolic and name in symbols and \
                symbols[name] in (lim.lhs_shadow - lim.rhs_shadow).free_symbols
            if lim.symbolic and name in symbols:
                predicted = shadow_at(lim, at_x1)
                if other is None or predicted is None or not _same(predicted,
                                                                    (other.lhs, other.rhs)):
                    if dep or sym:
                        demoted[lim.key].append(name)
                    sym = False
            if dep or sym:
                dependent[lim.key].append(name)
            if sym and name not in demoted[lim.key]:
                r = symbolic_range(lim, name, symbols[name], current, integer,
                                   positive=not q.point)
                if r is not None:
                    ranges[lim.key].append(r)
                    continue
            if dep and numeric:
                try:
                    ranges[lim.key].append(numeric_range(
                        lim.key, name, x0, integer, lambda x, n=name: probe(n, x), lim.holds,
                        q.point, shown_as(q)))
                except _Spent:
                    spent[lim.key].append(name)
    out = []
    for lim in limits:
        symbolic = lim.symbolic and not demoted[lim.key]
        notes = tuple(f"the symbolic form did not match the compiler when `{n}` moved: "
                      f"bracketed numerically" for n in demoted[lim.key])
        notes += tuple(f"not bracketed in `{n}`: {_spent_note()}" for n in spent[lim.key])
        if lim.note:
            notes = (lim.note,) + notes
        out.append(Margin(lim, tuple(ranges[lim.key]), symbolic,
                          _condition(lim, ev, values) if symbolic else None, notes,
                          tuple(dependent[lim.key])))
    return Report(design.file, values, out, tuple(checked.diagnostics) + asked, None,
                  sized_notes + not_numeric + tuple(report_notes))


def _not_moved(design, params, values) -> Tuple[tuple, tuple]:
    """E213 for each name of `params` that is no top-level parameter of the design, named as
    the API's argument gives it (`params=['x']`: it was left out in silence, and its margins
    with it), and a note for each parameter that is not a number (its value is not moved)."""
    from astral_dsl.semantics.overrides import listed, unknown_parameter

    declared = [n for n, _ in design.params]
    unknown = tuple(unknown_parameter(listed("--set", "params"), name, declared, design.file)
                    for name in dict.fromkeys(params or ()) if name not in declared)
    return unknown, tuple(f"`{name}` is not a number: its margins are not bracketed"
                          for name in dict.fromkeys(params or ())
                          if name in declared and name not in values)


def _chosen(ws):
    """The values to compile the design with ({} when it has no `?`): those sizing chose, held
    while each parameter moves; None when no choice holds. With a note of what was chosen."""
    from astral_dsl.pipeline import front_end_errors

    design = ws.design
    if not design.needs_sizing or front_end_errors(design):
        return {}, ()
    from astral_dsl.outputs.size_json import chosen_fields

    sizing = ws.sizing()
    if sizing.diagnostics:
        return None, ()
    chosen = ", ".join((f"{c['path']}.{c['field']}" if c["path"] else
                        f"{c['file']}:{c['line']}:{c['column']}") + f" = {c['value']}"
                       for c in chosen_fields(sizing.design))
    return dict(sizing.assigned), (f"around the values sizing chose ({chosen}), held as each "
                                   f"parameter moves",)


MOVE_TRIES = 12          # values tried, nearest first, for one where the design compiles
# Each value a parameter is tried at is a compile and check of the whole design: one analysis
# tries at most this many (the reference design takes about 290), so that its work is the
# design's size times at most MAX_PROBES, not the number of parameters times the number of
# limits a file can hold. What the budget leaves unbracketed is said, per limit and parameter.
MAX_PROBES = 1000


def _spent_note() -> str:
    return f"the budget of {MAX_PROBES:,} evaluations of the design ran out first"


class _Spent(Exception):
    """The analysis tried MAX_PROBES values."""


def _moved(name, x0, integer, point, probe, direction: int = 0):
    """(the limits at the nearest other value where the design compiles, that value, the
    values tried before it with why they did not compile); above x0 only (`direction` 1) or
    below it (-1), else either side."""
    sides = (1, -1) if not direction else (direction,)
    tried = sorted(set().union(*(candidates(x0, integer, point, d)[:MOVE_TRIES]
                                 for d in sides)), key=lambda x: (abs(x - x0), -x))
    failed = []
    for x in tried[:MOVE_TRIES]:
        got = probe(name, x)
        if not isinstance(got, Uncompiled):
            return got, x, failed
        failed.append((x, got))
    return None, x0, failed


@records.frozen
class Feasible:
    """Where a parameter keeps every limit that holds now (`feasible`): SI bounds (None:
    unbounded), each open (`<`: a strict limit binds there) or closed."""
    low: Optional[float]
    high: Optional[float]
    binding: Tuple[str, ...]           # the limits at the bounds
    numeric_only: Tuple[str, ...]      # limits it moves that only a numeric bracket follows
    low_open: bool = False
    high_open: bool = False


def feasible(report: Report, name: str) -> Feasible:
    """Where `name` keeps every limit that holds now (the others at their current values)."""
    low = high = None
    low_open = high_open = False
    binding_low: List[str] = []
    binding_high: List[str] = []
    numeric_only: List[str] = []
    for m in report.margins:
        if not m.limit.holds or name not in m.depends_on:
            continue
        r = next((r for r in m.ranges if r.param == name), None)
        if r is None or r.method != "symbolic":
            numeric_only.append(m.limit.label)
            continue
        if r.empty:
            continue
        if r.low is not None and (low is None or r.low >= low):
            same = low is not None and r.low == low
            binding_low = binding_low + [m.limit.label] if same else [m.limit.label]
            low_open = (low_open and same) or r.low_open
            low = r.low
        if r.high is not None and (high is None or r.high <= high):
            same = high is not None and r.high == high
            binding_high = binding_high + [m.limit.label] if same else [m.limit.label]
            high_open = (high_open and same) or r.high_open
            high = r.high
    return Feasible(low, high, tuple(binding_low + binding_high), tuple(numeric_only),
                    low_open, high_open)


def _same(a, b) -> bool:
    return all(abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1e-300) for x, y in zip(a, b))


def _numeric_params(design) -> Dict[str, Quantity]:
    return {n: v for n, v in design.params if isinstance(v, Quantity)}


def _condition(lim: Limit, ev, values) -> Optional[str]:
    """`lhs <= rhs` with each parameter in its own unit and both sides in the limit's unit."""
    from astral_dsl.units import parse_unit

    lhs, rhs = lim.lhs_shadow, lim.rhs_shadow
    if not ((getattr(lhs, "free_symbols", set()) | getattr(rhs, "free_symbols", set()))):
        return None
    subs = {}
    for name, (s, q) in ev.params.items():
        if q.unit:
            scale = parse_unit(q.unit).scale
            subs[s] = s * sympy.Rational(scale.numerator, scale.denominator)
    scale = sympy.Integer(1)
    if lim.unit:
        u = parse_unit(lim.unit).scale
        scale = sympy.Rational(u.numerator, u.denominator)
    a = sympy.nsimplify(sympy.expand(lhs.subs(subs) / scale))
    b = sympy.nsimplify(sympy.expand(rhs.subs(subs) / scale))
    op = "==" if lim.op == "==" else "<" if lim.strict else "<="
    unit = f" (in {lim.unit})" if lim.unit else ""
    return f"{_decimal(a)} {op} {_decimal(b)}{unit}"


def _decimal(expr) -> str:
    """sympy's text with its rational numbers as decimals (10 significant digits)."""
    import re

    text = sympy.sstr(sympy.nfloat(expr, 10))
    text = re.sub(r"(\d+\.\d*?)0+\b", r"\1", text)
    return re.sub(r"(\d+)\.(?!\d)", r"\1", text)


def shown_as(q: Quantity) -> Shown:
    """How outputs/margins.py prints a bound of parameter `q`: 4 decimals in its unit (6
    without one); one unit is `scale` SI units from `offset`."""
    if not q.unit:
        return Shown(1.0, 0.0, 6)
    m0 = Quantity(0.0, q.dims, q.unit, q.point).magnitude
    m1 = Quantity(1.0, q.dims, q.unit, q.point).magnitude
    scale = 1.0 / (m1 - m0)
    return Shown(scale, -m0 * scale, 4)


__all__ = ["Margin", "Report", "analyse", "OPAQUE"]
