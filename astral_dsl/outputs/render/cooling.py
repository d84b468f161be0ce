"""`--view cooling`: the heat path, left to right: facility water to the CDUs of each liquid
loop, the loop (fluid, supply and return temperatures, flow, pumps) to the racks it serves, and
the air path, with the heat each carries; the racks show their split between liquid and air."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.analyses.cooling import liquid_heat
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import power_of
from astral_dsl.model.values import Group, Symbol
from astral_dsl.outputs.render.numbers import celsius, litres_per_min, m3s, n, percent, watts
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import AMBER, Canvas
from astral_dsl.outputs.render.tree import Tree, counted, held_ids, power_line, summary, \
    whole_design


def _si(v) -> Optional[float]:
    return v.si if hasattr(v, "si") else None


def _served(ctx, inst: Instance, owner: Instance) -> List[Tuple[int, Instance]]:
    value = inst.field("serves")
    out: List[Tuple[int, Instance]] = []
    if value is None and inst.field("network") is True:
        return []               # an air unit for the switches only (see analyses/cooling.py)
    if isinstance(value, Group):
        for c, item in value.flat():
            target = ctx.resolve(item)
            if target is not None:
                out.append((c, target))
    elif value is not None:
        target = ctx.resolve(value)
        if target is not None:
            out.append((1, target))
    return out or [(1, owner)]


def build(ctx, located) -> Canvas:
    top = located.instance
    eng = ctx.eng
    title = [f"{located.text} — cooling view"]
    if eng is not None and whole_design(ctx, top):
        c = eng.cooling
        title.append(f"heat: liquid {watts(c.liquid_heat_w)} · air {watts(c.air_heat_w)}"
                     + (f" (with {watts(eng.network_w)} of switches)" if eng.network_w else ""))
        bits = [f"secondary pumps {watts(c.pump_w)}"]
        if c.average is not None and c.average.facility_pumps_w:
            bits.append(f"facility-water pumps {watts(c.average.facility_pumps_w)}")
        if c.cdu_w:
            bits.append(f"CDUs {watts(c.cdu_w)}")
        if c.fan_w:
            bits.append(f"fans {watts(c.fan_w)}")
        if c.chiller_w:
            bits.append(f"chillers {watts(c.chiller_w)}")
        if c.average is not None and c.average.rejection_w:
            bits.append(f"heat rejection fans {watts(c.average.rejection_w)}")
        title.append(" · ".join(bits) + " (annual average)")
        if c.peak is not None:
            title.append(f"facility {watts(c.facility_w)} average, {watts(c.peak.total_w)} peak"
                         + (f" · PUE {c.pue:.3f}" if c.pue else ""))
    else:
        title.append(summary(ctx, top) + f" · {power_line(ctx, top, 1)}")
    canvas = Canvas(ctx, "cooling", "LR", title)
    canvas.g.graph_attr.update(ranksep="0.7", nodesep="0.3")
    tree = Tree(canvas, ctx)
    facilities: List[str] = []
    loops: List[Tuple[str, Instance, str, str]] = []     # (cluster, loop, cdu node, loop node)
    airs: List[Tuple[str, Instance, str]] = []
    network_drawn: List[bool] = []

    def on_cluster(key, inst, count):
        anchor = None
        if inst is top and eng is not None and eng.cooling.facility is not None:
            for i, (cy, shared) in enumerate(_circuits_of(ctx, top, eng.cooling.facility)):
                facilities.append((cy, _facility(canvas, ctx, cy, f"{key}_facility{i}",
                                                 shared)))
                anchor = anchor or facilities[-1][1]
        if inst is top and eng is not None and eng.network_w and top is ctx.design.roots[0]:
            cooled = any(i.kind == "air" and i.field("network") is True
                         for i in ctx.design.instances)
            network_drawn.append(True)
            canvas.node("network", ["network switches", Line(
                f"{watts(eng.network_w)} of heat to air"
                + ("" if cooled else " (no unit removes it: W647)"), small=True)], theme="air",
                tooltip="switch power ends as heat in the air")
        for m in inst.members:
            v = m.value
            if not isinstance(v, Instance):
                continue
            if v.kind == "loop":
                cdu, node = _loop(canvas, ctx, v, key)
                loops.append((key, v, cdu, node))
                anchor = anchor or cdu
            elif v.kind == "air":
                airs.append((key, v, _air(canvas, ctx, v, key)))
                anchor = anchor or airs[-1][2]
        return anchor

    def leaf(key, inst, count):
        total = power_of(inst, ctx.cache).si
        liquid = liquid_heat(inst, ctx.cache)
        lines = []
        if total:
            lines.append(Line(f"{watts(liquid)} to liquid ({percent(liquid / total)}) · "
                              f"{watts(total - liquid)} to air" + (" each" if count > 1 else ""),
                              small=True))
        return "compute", lines

    def title_of(inst, count):
        head = f"{inst.kind} {inst.template}" if inst is top else \
            counted(count, inst.kind, inst.template)
        total = power_of(inst, ctx.cache).si
        liquid = liquid_heat(inst, ctx.cache)
        return [head, Line(f"{watts(total)} of heat" + (" each" if count > 1 else "") +
                           (f": {watts(liquid)} liquid, {watts(total - liquid)} air"
                            if liquid else ""), small=True)]

    tree.draw(top, title=title_of, on_cluster=on_cluster, leaf=leaf,
              theme=lambda i: "site" if i is top else "group")
    # each facility-water circuit to the CDUs and the air units' coils that draw on it
    for cy, fac in facilities:
        on = {d.path for d in cy.circuit.draws}
        units = [(key, loop, cdu, ctx.loops.get(loop.path),
                  "heat the CDUs hand to facility water (per loop)")
                 for key, loop, cdu, _ in loops] + \
                [(key, air, node, ctx.air.get(air.path),
                  "heat the air unit's coils hand to facility water") for key, air, node in airs]
        for key, unit, target, r, tooltip in units:
            if unit.path not in on:
                continue
            reps = tree.count_within(key, None)
            text = (f"{n(reps)} x {watts(r.heat_w)}" if reps > 1 else watts(r.heat_w)) \
                if r else ""
            canvas.edge(fac, target, text, theme="facility", tooltip=tooltip)
    for key, loop, cdu, node in loops:
        r = ctx.loops.get(loop.path)
        for c, inst in _served(ctx, loop, tree.drawn[key].inst):
            _to(canvas, tree, key, inst, node, "liquid",
                f"{watts(c * liquid_heat(inst, ctx.cache))}" if r else "",
                f"{loop.template} cools {n(c)} x {inst.kind} {inst.template}")
    for key, air, node in airs:
        if air.field("network") is True and eng is not None and eng.network_w \
                and network_drawn:
            canvas.edge(node, "network", watts(eng.network_w), theme="air",
                        tooltip=f"{air.template} removes the switches' heat")
        for c, inst in _served(ctx, air, tree.drawn[key].inst):
            heat = c * (power_of(inst, ctx.cache).si - liquid_heat(inst, ctx.cache))
            _to(canvas, tree, key, inst, node, "air", watts(heat),
                f"{air.template} cools {n(c)} x {inst.kind} {inst.template}")
    if not loops and not airs:
        canvas.node("nocooling", ["no loops or air declared", Line(
            "declare `loop` and `air` blocks to draw the heat path", small=True)], theme="note")
    canvas.finish([("facility", "facility water"), ("liquid", "CDUs and liquid loops"),
                   ("air", "air path"), ("compute", "racks: heat to liquid and to air")],
                  ["edge labels: heat carried (per replica of the box they start in)",
                   "arrows follow the cold supply"])
    return canvas


def _to(canvas: Canvas, tree: Tree, key: str, inst: Instance, node: str, theme: str, text: str,
        tooltip: str) -> None:
    for k in tree.by_inst.get(id(inst), []):
        if key not in [d.key for d in tree.chain(k)]:
            continue
        d = tree.drawn[k]
        attrs = {}
        target = d.node
        if target is None:
            target = d.anchor
            attrs["lhead"] = f"cluster_{k}"
            if k == key:            # the loop's own owner: end at the racks inside
                target = next((x.node for x in tree.drawn.values() if x.node and key in
                               [c.key for c in tree.chain(x.key)]), None)
                attrs = {}
        if target is None or target == node:
            continue
        canvas.edge(node, target, text, theme=theme, tooltip=tooltip, **attrs)


def _changed(ctx, inst: Instance) -> List[Line]:
    return [Line(f"scenario: {c}", bold=True, colour=AMBER) for c in ctx.changed_notes(inst)]


def _circuits_of(ctx, top: Instance, facility) -> List[Tuple[object, bool]]:
    """The facility-water circuits the units in `top` draw on (with one site, all of them),
    each with whether another site's units draw on it too (its figures are then theirs too)."""
    if whole_design(ctx, top):
        return [(cy, False) for cy in facility.circuits]
    here = held_ids(top)
    elsewhere = set().union(*(held_ids(r) for r in ctx.design.roots if r is not top))

    def units(cy, held):
        return any(id(ctx.by_path.get(d.path)) in held for d in cy.circuit.draws)

    return [(cy, units(cy, elsewhere)) for cy in facility.circuits if units(cy, here)]


def _facility(canvas: Canvas, ctx, cy, key: str, shared: bool = False) -> str:
    """A facility-water circuit: its temperatures, heat rejection, hours and chillers."""
    cc = cy.circuit
    fac = ctx.by_path.get(cc.path)
    lines = [f"facility {fac.template if fac is not None else cc.path}"
             + (f" · {cy.water_class}" if cy.water_class else "")]
    if shared:
        lines.append(Line("also another site's: its figures are all its sites'", small=True,
                          colour=AMBER))
    if cc.supply_c is not None:
        lines.append(Line(f"supply {celsius(cc.supply_c)}" + (
            f" → {celsius(cc.supply_c + cc.rise_k)} return" if cc.rise_k else ""), small=True))
    lines.append(Line(f"{watts(cc.average_w)} average · pumps {watts(cc.pump_w)}", small=True))
    lines.append(Line(f"{cy.rejection.replace('_', ' ')}s alone {n(round(cy.free_h))} h a year"
                      + (f", sharing {n(round(cy.partial_h))} h" if cy.partial_h else ""),
                      small=True))
    if cy.fans_w:
        lines.append(Line(f"their fans: {watts(cy.fans_w)} average", small=True))
    if cy.chillers_w or cy.cop:
        lines.append(Line(f"chillers: {watts(cy.chillers_w)} average", small=True))
    if fac is not None:
        lines += _changed(ctx, fac)
    return canvas.node(key, lines,
                       theme="facility", parts=[fac] if fac is not None else [],
                       tooltip=f"facility {cc.path}")


def _loop(canvas: Canvas, ctx, loop: Instance, key: str) -> Tuple[str, str]:
    r = ctx.loops.get(loop.path)
    cdu = ctx.resolve(loop.field("cdu"))
    scheme = loop.field("redundancy")
    scheme = scheme.name if isinstance(scheme, Symbol) else "n_plus_1"
    failed = loop.path in ctx.failed_paths
    what = "CDU" if cdu is None or cdu.template.upper() == "CDU" else f"CDU {cdu.template}"
    clines = [f"{n(r.cdus)} x {what}" if r and r.cdus is not None else what]
    if r is not None and r.cdu_capacity_w:
        cap = cdu.field("max_flow") if cdu is not None else None
        clines.append(Line(f"{watts(r.cdu_capacity_w)} each" + (
            f" · {litres_per_min(cap.si)}" if hasattr(cap, "si") else ""), small=True))
    if r is not None and r.cdus_needed is not None:
        clines.append(Line(f"needs {n(r.cdus_needed)} ({scheme})", small=True))
    if ctx.scenario and any(f"one CDU of {loop.path}" in note for note in ctx.notes):
        clines.append(Line("scenario: one CDU failed", bold=True, colour=AMBER))
    cdu_id = canvas.node(f"{key}_{loop.template}_cdu", clines, theme="liquid",
                         parts=[cdu, loop] if cdu is not None else [loop],
                         tooltip=f"CDUs of loop {loop.path}", failed=failed or None)
    fluid = ctx.resolve(loop.field("fluid"))
    lines = [f"loop {loop.template}" + (f" · {fluid.template}" if fluid is not None else "")]
    if r is not None:
        lines.append(Line(f"{celsius(r.supply_c)} supply → {celsius(r.supply_c + r.rise_k)} "
                          f"return", small=True))
        lines.append(Line(f"{watts(r.heat_w)} · {litres_per_min(r.flow_m3s)}", bold=True))
        if r.pump_w:
            lines.append(Line(f"pumps {watts(r.pump_w)}", small=True))
    lines += _changed(ctx, loop)
    node = canvas.node(f"{key}_{loop.template}", lines, theme="liquid", parts=[loop, fluid],
                       tooltip=f"loop {loop.path}")
    canvas.edge(cdu_id, node, litres_per_min(r.flow_m3s) if r and r.flow_m3s else "",
                theme="liquid", tooltip="the loop's flow through its CDUs")
    return cdu_id, node


def _air(canvas: Canvas, ctx, air: Instance, key: str) -> str:
    r = ctx.air.get(air.path)
    lines = [f"air {air.template}"]
    supply = air.field("supply")
    if hasattr(supply, "value_in") and r is not None:
        lines.append(Line(f"{celsius(supply.value_in('degC'))} supply, +{r.rise_k:g} K",
                          small=True))
    if r is not None:
        lines.append(Line(f"{watts(r.heat_w)} · {m3s(r.flow_m3s)}", bold=True))
        limit = _si(air.field("max_rack_heat"))
        if limit:
            lines.append(Line(f"at most {watts(limit)} per rack (worst {watts(r.max_rack_heat_w)})",
                              small=True))
    lines += _changed(ctx, air)
    return canvas.node(f"{key}_{air.template}", lines, theme="air", parts=[air],
                       tooltip=f"air {air.path}")
