"""The limits a design must respect, measured at one point: every user `check` that compares
two quantities (each comparison of a conjunction; a truth value as such), and the engineering
limits (rack and row power limits, feeder capacity in normal operation and with one feeder
failed, the facility's own feeders included, the transformer stages' rating with the units
their redundancy leaves in service, CDU capacity with and without a failed CDU, the
coolant supply against the GPUs' cold plates, fabric oversubscription; equipment.py:
batteries, rectifier modules, ampacity, voltage drop, coolant flow; heat_paths.py: heat to air
per rack, the supply reachable from the facility water; memory.py: the memory of
each job). Each
limit is `lhs <= rhs` (or `lhs == rhs`) in SI units, with sympy shadows of both sides when the
quantities are algebraic in the parameters."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import sympy

from astral_dsl import records
from astral_dsl.explore.margins.shadow import OPAQUE, Shadows
from astral_dsl.units import Quantity, format_number, readable, same_amount

@records.frozen
class Limit:
    key: str                  # stable across points: what and where
    kind: str                 # check | power_limit | feeder | feeder_failover | transformer |
    #                           cdu | cdu_n1 | coolant | oversubscription | memory | battery |
    #                           rectifier | ampacity | voltage_drop | flow | cdu_flow |
    #                           cdu_flow_n1 (equipment.py) | air_rack | approach
    #                           (heat_paths.py)
    label: str
    lhs: float                # SI
    rhs: float
    op: str                   # "<=" (lhs <= rhs holds) or "=="
    unit: str                 # display unit of both sides ("" for numbers)
    file: str = ""
    line: int = 0
    column: int = 0
    lhs_shadow: Any = OPAQUE
    rhs_shadow: Any = OPAQUE
    strict: bool = False      # `<` rather than `<=`
    point: bool = False       # temperature points (the margin is a difference, in K)
    operands: Tuple[float, ...] = ()    # "bool" limits: the numbers their truth depends on
    note: Optional[str] = None

    @property
    def truth(self) -> bool:
        """A condition that is not one comparison (`a or b`, a truth value): op "bool", its
        truth as lhs (1 or 0) against rhs 1."""
        return self.op == "bool"

    @property
    def holds(self) -> bool:
        if self.truth:
            return self.lhs == 1.0
        same = same_amount(self.lhs, self.rhs)
        if self.op == "==":
            return same
        return self.lhs < self.rhs and not same if self.strict else self.lhs <= self.rhs or same

    @property
    def margin(self) -> Optional[float]:
        """How far from breaking, in SI: rhs - lhs (<= limits); -|lhs - rhs| (equalities);
        None for a truth value."""
        if self.truth:
            return None
        return -abs(self.lhs - self.rhs) if self.op == "==" else self.rhs - self.lhs

    @property
    def symbolic(self) -> bool:
        return self.lhs_shadow is not OPAQUE and self.rhs_shadow is not OPAQUE


def where_of(span):
    return (span.file, span.start.line, span.start.column) if span is not None else ("", 0, 0)


def collect(ws, ev: Shadows, checked) -> List[Limit]:
    """The limits of a design compiled in workspace `ws` with the trace `ev` (Shadows or
    NumericRecorder) and its check result (`checked.engineering`)."""
    out: List[Limit] = []
    sources = {m.source.name: m.source for m in ws.modules.values() if m.source is not None}
    out.extend(_checks(ev, ev.scopes, sources))
    roots, paths, mult = ev.layout()
    frames = {paths[id(f)]: f for f in ev.frames if id(f) in paths and mult.get(id(f))}
    out.extend(_power_limits(ev, frames))
    eng = checked.engineering
    if eng is not None:
        from astral_dsl.explore.margins.equipment import feeder_equipment, loop_flows
        from astral_dsl.explore.margins.heat_paths import air_per_rack, approaches

        out.extend(_feeders(ev, frames, eng))
        out.extend(feeder_equipment(eng, checked.design))
        out.extend(_transformers(eng))
        out.extend(_loops(eng, frames))
        out.extend(_coolant(eng, checked.design))
        out.extend(loop_flows(eng, checked.design))
        out.extend(air_per_rack(eng, checked.design))
        out.extend(approaches(eng, checked.design))
        out.extend(_fabrics(eng, checked.design))
    from astral_dsl.explore.margins.memory import job_memory

    out.extend(job_memory(checked))
    return out


def _snippet(sources, span) -> str:
    src = sources.get(span.file)
    if src is None or span.start.line != span.end.line:
        return "..."
    return src.line(span.start.line)[span.start.column - 1:span.end.column - 1]


def _checks(ev, scopes, sources) -> List[Limit]:
    out = []
    for r in ev.check_records(scopes):
        msg = r.check.message.value if r.check.message else None
        label = f"check \"{msg}\"" if msg else f"check `{_snippet(sources, r.check.cond.span)}`"
        file, line, col = where_of(r.check.cond.span)
        key = f"check:{file}:{line}:{col}:{r.path}"
        if r.op == "":
            out.append(Limit(key, "check", f"{label} in {r.path}", 1.0 if r.passed else 0.0,
                             1.0, "bool", "", file, line, col,
                             operands=tuple(q.si for q in r.operands),
                             note="not a conjunction of comparisons: bracketed on its truth"
                             if r.operands else "a truth value: no quantity to measure"))
            continue
        a, b, sa, sb = r.left, r.right, r.left_shadow, r.right_shadow
        if a.dims != b.dims or a.point != b.point:
            continue                      # the compiler reports it (E3xx): no margin to take
        if r.op in (">=", ">"):
            a, b, sa, sb = b, a, sb, sa
        negated = r.op != r.expr.op
        if r.parts > 1:
            key += f":{r.part}"
            label += f" (part {r.part + 1} of {r.parts}: " + \
                ("not " if negated else "") + f"`{_snippet(sources, r.expr.span)}`)"
        elif negated:
            label += f" (negated: not `{_snippet(sources, r.expr.span)}`)"
        unit = r.right.unit or r.left.unit
        out.append(Limit(key, "check", f"{label} in {r.path}", a.si, b.si,
                         "==" if r.op == "==" else "<=", unit, file, line, col, sa, sb,
                         r.op in ("<", ">"), r.left.point))
    return out


def _power_limits(ev, frames) -> List[Limit]:
    from astral_dsl.model.rollup import power_of

    out = []
    for path, f in frames.items():
        if not f.spec.physical or "power_limit" not in f.defs:
            continue
        limit = f.values.get("power_limit")
        if not isinstance(limit, Quantity):
            continue
        peak = power_of(f, ev.rollups, ev.evaluator.view)     # a frame: as the compile sees it
        span = f.defs["power_limit"].name_span
        file, line, col = where_of(span)
        lhs = ev.power_shadow(f) if ev.symbolic else OPAQUE
        out.append(Limit(f"power_limit:{path}", "power_limit", f"{f.kind} power of {path}",
                         peak.si, limit.si, "<=", "kW", file, line, col, lhs, ev.shadow(limit)))
    return out


def _feeders(ev, frames, eng) -> List[Limit]:
    """A feeder's conductors carry its share of the load divided by its own efficiency
    (analyses/feeders.py: E620, E621 compare that with the capacity). The IT feeders and the
    facility's own (`mechanical = true`, analyses/chain.py: the same checks on the load of the
    CDUs, pumps, fans and chillers)."""
    out = []
    facility = eng.cooling.facility
    mechanical = facility.feeders if facility is not None else ()
    for fr in tuple(eng.power.feeders) + tuple(mechanical):
        if fr.capacity_w is None:
            continue
        frame = frames.get(fr.path)
        span = frame.defs["capacity"].name_span if frame is not None and \
            "capacity" in frame.defs else None
        file, line, col = where_of(span)
        cap_sym = ev.shadow(frame.values.get("capacity")) if frame is not None else OPAQUE
        pf = frame.values.get("power_factor") if frame is not None and fr.rating_pf else None
        if isinstance(pf, Quantity) and cap_sym is not OPAQUE:   # a kVA rating: kW = kVA x pf
            pf_sym = ev.shadow(pf)
            cap_sym = OPAQUE if pf_sym is OPAQUE else cap_sym * pf_sym
        load_sym = _served_power(ev, frame) if frame is not None and ev.symbolic else OPAQUE
        count = frame.values.get("count") if frame is not None else None
        if count is not None and getattr(ev.shadow(count), "free_symbols", True):
            load_sym = OPAQUE                        # the share depends on a parameter
        if load_sym is not OPAQUE and not _close(ev, load_sym, fr.load_w):
            load_sym = OPAQUE                        # the analysis counts something else
        through = _through(ev, frame, fr.input_ratio)
        note = None
        if fr.input_ratio != 1.0:
            note = (f"through its own {format_number(round(100 / fr.input_ratio, 4))} % "
                    "efficiency: the conductors carry the load divided by it")
        if fr.rating_pf:
            stated = readable.apparent(readable.power(fr.rating))
            rated = (f"its rating of {stated} holds kVA x power factor "
                     f"{format_number(round(fr.rating_pf, 4))} of kW")
            note = f"{note}; {rated}" if note else rated
        for kind, value, what in (("feeder", fr.normal_w, "normal operation"),
                                  ("feeder_failover", fr.failover_w, "one feeder failed")):
            if kind == "feeder_failover" and not value:
                continue
            carried = value * fr.input_ratio
            sym = OPAQUE
            if load_sym is not OPAQUE and through is not OPAQUE and fr.load_w:
                sym = load_sym * sympy.nsimplify(value / fr.load_w) * through
                if not _close(ev, sym, carried):
                    sym = OPAQUE                     # the share is not an exact ratio
            out.append(Limit(f"{kind}:{fr.path}", kind, f"feeder {fr.path} ({what})", carried,
                             fr.capacity_w, "<=", "kW", file, line, col, sym, cap_sym,
                             note=note))
    return out


def _through(ev, frame, ratio: float):
    """1 / the feeder's efficiency as a shadow: exact when the efficiency is (a constant or
    algebraic in the parameters), OPAQUE otherwise; 1 without one."""
    eff = frame.values.get("efficiency") if frame is not None else None
    if not isinstance(eff, Quantity):
        return sympy.Integer(1) if ratio == 1.0 else OPAQUE
    sym = ev.shadow(eff) if ev.symbolic else OPAQUE
    if sym is OPAQUE or sym == 0:
        return OPAQUE
    return 1 / sym


def _served_power(ev, frame):
    from astral_dsl.model.values import Group

    served = frame.values.get("serves")
    if not isinstance(served, Group):
        return OPAQUE
    total = sympy.Integer(0)
    for count, item in ev.group_runs(served):
        sub = OPAQUE if count is OPAQUE else ev.power_shadow(item)
        if sub is OPAQUE:
            return OPAQUE
        total += count * sub
    return total


def _close(ev, sym, number: float) -> bool:
    try:
        got = float(sym.subs(ev.current()))
    except (TypeError, ValueError):
        return False
    return abs(got - number) <= 1e-9 * max(abs(number), 1e-300)


def _transformers(eng) -> List[Limit]:
    """A transformer stage carries its site's load at the peak hour in apparent power (kW over
    the power factor), each replica its share, on the units its redundancy leaves in service
    (analyses/chain.py: E634): numeric sides, bracketed."""
    from astral_dsl.analyses.chain import units_left

    facility = eng.cooling.facility
    out = []
    for t in facility.transformers if facility is not None else ():
        left = units_left(t.count, t.redundancy)
        file, line, col = where_of(t.inst.span_of("count") if t.inst is not None else None)
        note = None
        if t.power_factor != 1.0:
            note = (f"{readable.power(t.peak_load_w, 3)} at power factor "     # as E634
                    f"{format_number(round(t.power_factor, 4))} ({t.power_factor_from})")
        out.append(Limit(f"transformer:{t.path}", "transformer",
                         f"transformers {t.path} ({left} of {t.count} unit(s) in service, "
                         f"{t.redundancy})", t.peak_load_w / t.power_factor,
                         left * t.capacity_w, "<=", "kVA", file, line, col, note=note))
    return out


def _loops(eng, frames) -> List[Limit]:
    out = []
    for lp in eng.cooling.loops:
        if not lp.cdu_capacity_w or lp.cdus is None:
            continue
        frame = frames.get(lp.path)
        span = frame.defs["cdus"].name_span if frame is not None and "cdus" in frame.defs \
            else None
        out.extend(cdus_limits(lp, "cdu", f"CDU capacity of loop {lp.path}", lp.heat_w,
                               lp.cdu_capacity_w, "kW", where_of(span)))
    return out


def cdus_limits(lp, kind: str, label: str, need: float, per_cdu: float, unit: str,
                where) -> List[Limit]:
    """`need` against what a loop's CDUs give (`per_cdu` each): all of them, and those left
    after the failure its redundancy covers, as E640, E641 and E643 check it (none for `n`)."""
    from astral_dsl.analyses.formulas import units_left
    from astral_dsl.analyses.loops import failure

    out = [Limit(f"{kind}:{lp.path}", kind, label, need, lp.cdus * per_cdu, "<=", unit, *where)]
    if lp.cdus > 1 and lp.redundancy != "n":
        out.append(Limit(f"{kind}_n1:{lp.path}", f"{kind}_n1",
                         f"{label} with {failure(lp.redundancy, lp.cdus)}", need,
                         units_left(lp.cdus, lp.redundancy) * per_cdu, "<=", unit, *where))
    return out


def _coolant(eng, design) -> List[Limit]:
    """A loop's supply against the coldest limit (`max_supply`) of the GPUs on the cold
    plates it cools (analyses/loops.py: E642)."""
    from astral_dsl.analyses.loops import liquid_heat
    from astral_dsl.analyses.served import Served
    from astral_dsl.analyses.walk import Resolver, multiplicities
    from astral_dsl.model.rollup import group_of

    mult = multiplicities(design)
    cache: dict = {}
    served = Served(design, mult, Resolver(design), cache)
    by_path = {inst.path: inst for _, inst in mult.values() if inst.kind == "loop"}
    out = []
    for lp in eng.cooling.loops:
        inst = by_path.get(lp.path)
        if inst is None:
            continue
        limit = None
        for _, part in served.of(inst):
            for _, host in group_of(part, ("host",), cache).flat() or [(1, part)]:
                if liquid_heat(host, cache) <= 0:
                    continue
                for _, gpu in group_of(host, ("gpu",), cache).flat():
                    t = gpu.field("max_supply")
                    if isinstance(t, Quantity) and (limit is None or t.si < limit.si):
                        limit = t
        if limit is None:
            continue
        supply = inst.field("supply")
        file, line, col = where_of(inst.span_of("supply"))
        out.append(Limit(f"coolant:{lp.path}", "coolant",
                         f"coolant supply of loop {lp.path} (the GPUs' cold plates accept at "
                         f"most {limit})", supply.si if isinstance(supply, Quantity) else
                         lp.supply_c + 273.15, limit.si, "<=", "degC", file, line, col,
                         point=True))
    return out


def _fabrics(eng, design) -> List[Limit]:
    by_path = {i.path: i for i in design.instances}
    out = []
    for fc in eng.fabrics:
        fabric = by_path.get(fc.fabric)
        limit = fabric.field("max_oversubscription") if fabric is not None else None
        if not isinstance(limit, Quantity):
            continue
        file, line, col = where_of(fabric.span_of("max_oversubscription"))
        for tc in fc.tiers:
            if tc.oversubscription is None:
                continue
            out.append(Limit(f"oversubscription:{fc.owner}:{tc.name}", "oversubscription",
                             f"oversubscription of tier {tc.name} of {fc.fabric}",
                             tc.oversubscription, limit.si, "<=", "", file, line, col))
    return out


def by_key(limits: List[Limit]) -> Dict[str, Limit]:
    return {lim.key: lim for lim in limits}
