"""`--view power`: the one-line diagram, left to right: the site's transformers (when it declares
them) and the supply of each side (A, B), both drawn by power_supply.py; the rectifier modules
and batteries of the DC feeders, each feeder with its voltage, capacity and load (normal, and
with its partner or one of its N failed), and the racks it serves inside the collapsed rows and
pods, with their loads."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.model.design import Instance
from astral_dsl.model.values import Group
from astral_dsl.outputs.feeder_load import (battery_basis, battery_installed_ah, loading,
                                           through_w)
from astral_dsl.outputs.render.numbers import amps, n, percent, watts
from astral_dsl.outputs.render.power_supply import supply, supply_edges, sym, transformers
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import Canvas
from astral_dsl.outputs.render.tree import Tree, counted, held_ids, power_line, summary, \
    whole_design
from astral_dsl.units.readable import apparent


def _si(v) -> Optional[float]:
    return v.si if hasattr(v, "si") else None


def _served(ctx, feeder: Instance) -> List[Tuple[int, Instance]]:
    value = feeder.field("serves")
    out: List[Tuple[int, Instance]] = []
    if isinstance(value, Group):
        for c, item in value.flat():
            inst = ctx.resolve(item)
            if inst is not None:
                out.append((c, inst))
    else:
        inst = ctx.resolve(value)
        if inst is not None:
            out.append((1, inst))
    return out


def _redundancy(feeders: List[Instance], results) -> str:
    sides = sorted({sym(f.field("side")) for f in feeders if sym(f.field("side"))})
    if len(sides) > 1:
        return f"2N: {' + '.join(sides)}, each side carries it alone" if len(sides) == 2 \
            else f"{len(sides)} sides: {', '.join(sides)}"
    counts = [results[f.path].count for f in feeders if f.path in results]
    if counts and max(counts) > 1:
        return f"N+1: {max(counts)} feeders, any {max(counts) - 1} carry it"
    return ""


def build(ctx, located) -> Canvas:
    top = located.instance
    eng = ctx.eng
    results = ctx.feeders
    title = [f"{located.text} — power view"]
    design_wide = whole_design(ctx, top)
    if eng is not None and design_wide:
        p = eng.power
        line = f"IT {watts(p.it_peak_w)} peak"
        if eng.network_w:
            line += (f" ({watts(p.it_peak_w - eng.network_w)} racks + "
                     f"{watts(eng.network_w)} network)")
        line += f" · {watts(p.it_average_w)} average"
        title.append(line)
        extra = [f"conversion losses {watts(p.conversion_loss_w)}"]
        if p.rectifier_modules:
            extra.append(f"{n(p.rectifier_modules)} rectifier modules")
        installed = battery_installed_ah(p.feeders)
        if installed:
            extra.append(f"batteries {n(round(installed))} Ah installed")
        if p.battery_ah:
            extra.append(f"{n(round(p.battery_ah))} Ah needed")
        title.append(" · ".join(extra))
    else:
        title.append(summary(ctx, top) + f" · {power_line(ctx, top, 1)}")
    canvas = Canvas(ctx, "power", "LR", title)
    canvas.g.graph_attr.update(ranksep="0.7", nodesep="0.3")
    tree = Tree(canvas, ctx)
    drawn: List[Tuple[str, Instance, str, str]] = []   # (cluster key, feeder, entry, node)
    network: List[str] = []                            # the network switches' node
    facility: List[str] = []                           # the facility's consumers' node

    def on_cluster(key, inst, count):
        if inst is top:
            supplies = _supplies(canvas, ctx, top)
            if eng is not None and eng.cooling.facility is not None:
                held = held_ids(top)      # this site's stages, not another site's
                transformers(canvas, [s for s in eng.cooling.facility.transformers
                                       if s.inst is not None and id(s.inst) in held], supplies)
        here = _network_here(ctx, top) if inst is top and eng is not None else None
        if here is not None and here[0]:
            watts_here, switches, unfed = here
            where = "not on a declared feeder" if unfed >= watts_here - 1e-6 else (
                f"{watts(unfed)} not on a declared feeder" if unfed else
                "on the feeders with network = true")
            network.append(canvas.node("network", ["network switches", Line(
                f"{n(switches)} switches · {watts(watts_here)} peak", small=True),
                Line(where, small=True)], theme="note" if unfed else "compute",
                tooltip="the switches' power counts in the IT load, at full power"))
        mech = [(reps, f) for reps, f in _feeders_below(ctx, top)
                if f.field("mechanical") is True] if inst is top else []
        if mech and eng is not None and eng.cooling.facility is not None:
            # what this picture's mechanical feeders carry at the peak hour (in a design of
            # several sites, its site's own consumers; analyses/chain.py)
            mech_w = sum(reps * r.count * r.normal_w for reps, r in
                         ((reps, results.get(f.path)) for reps, f in mech) if r is not None)
            facility.append(canvas.node("facility", ["facility consumers", Line(
                f"{watts(mech_w)} at the peak hour", small=True), Line(
                "CDUs, pumps, fans, chillers, heat rejection, lighting", small=True)],
                theme="compute", tooltip="the facility's own consumers, on the feeders "
                                         "with mechanical = true"))
        feeders = [m.value for m in inst.members
                   if isinstance(m.value, Instance) and m.value.kind == "feeder"]
        anchor = None
        for f in feeders:
            side = sym(f.field("side"))
            partner = any(sym(g.field("side")) != side for g in feeders if g is not f)
            entry, node = _feeder(canvas, ctx, f, results.get(f.path), key, partner)
            drawn.append((key, f, entry, node))
            anchor = anchor or entry
        return anchor

    def leaf(key, inst, count):
        lv = ctx.levels.get(inst.path)
        lines = [Line(power_line(ctx, inst, count), small=True)]
        if lv is not None and abs(lv.average_w - lv.peak_w) > 1e-6:
            lines.append(Line(f"{watts(lv.average_w)} average each", small=True))
        limit = _si(inst.field("power_limit"))
        if limit:
            lines.append(Line(f"limit {watts(limit)}", small=True))
        return "compute", lines

    def title_of(inst, count):
        feeders = [m.value for m in inst.members
                   if isinstance(m.value, Instance) and m.value.kind == "feeder"]
        red = _redundancy(feeders, results)
        head = f"{inst.kind} {inst.template}" if inst is top else \
            counted(count, inst.kind, inst.template)
        return [head, Line(power_line(ctx, inst, count) + (f" · {red}" if red else ""),
                           small=True)]

    tree.draw(top, title=title_of, on_cluster=on_cluster, leaf=leaf,
              theme=lambda i: "site" if i is top else "group")
    supply_edges(canvas, ctx, tree, drawn)
    _served_edges(canvas, ctx, tree, drawn, network[0] if network else None,
                  facility[0] if facility else None)
    if not drawn:
        canvas.node("nofeeder", ["no feeders declared",
                                 Line("declare `feeder` blocks with `serves = ...` to draw the "
                                      "one-line diagram", small=True)], theme="note")
    notes = ["edge labels: the power each feeder carries " + (
        "under the scenario" if ctx.scenario else "in normal operation"),
             "counts inside a box are per replica of the box"]
    canvas.finish([("dc", "DC feeder (with rectifier modules and batteries)"),
                   ("ac", "AC feeder"), ("storage", "batteries on the DC bus"),
                   ("compute", "racks with their peak load")], notes)
    return canvas


def _feeder(canvas: Canvas, ctx, f: Instance, r, key: str, partner: bool) -> Tuple[str, str]:
    """Draw a feeder with its rectifier and battery; returns (entry node, feeder node)."""
    current = sym(f.field("current")) or "dc"
    theme = "dc" if current == "dc" else "ac"
    side = sym(f.field("side"))
    gid = f"{key}_{f.template}"
    head = f"feeder {f.template}" + (f" · side {side}" if side else "")
    if r is not None and r.count > 1:
        head = f"{r.count} x " + head
    std = ctx.resolve(f.field("standard"))
    volts = _si(f.field("voltage"))
    kind = "DC" if current == "dc" else "AC"
    phases = _si(f.field("phases"))
    desc = f"{volts:g} V {kind}" if volts else kind
    if current != "dc" and phases:
        desc += f" {int(phases)}-phase"
    pf = _si(f.field("power_factor"))
    if pf and current != "dc":
        desc += f" · pf {pf:g}"
    if std is not None:
        desc += f" · {std.template}"
    lines = [head, Line(desc, small=True)]
    failed = f.path in ctx.failed_paths
    if r is not None:
        cap = r.capacity_w
        # a rating in kVA as stated, with the real power it holds (analyses/feeders.py
        # rated_capacity), as the size report and E620/E621 say it
        rated = (f"{apparent(watts(r.rating))} ({watts(cap)})"
                 if cap and r.rating_pf else watts(cap))
        lines.append(Line(f"capacity {rated}" + (" each" if r.count > 1 else ""),
                          small=True))
        # the power through the feeder (its share over its own efficiency) and its share of
        # its capacity: as the report and E620/E621 count them (outputs/feeder_load.py)
        if failed and r.normal_w == 0:
            lines.append(Line("failed: carries nothing", bold=True))
        else:
            share = f" ({percent(loading(r, r.normal_w))})" if cap else ""
            what = "carries" if ctx.scenario else "normal"
            lines.append(Line(f"{what} {watts(through_w(r, r.normal_w))}{share}", bold=True))
        if r.failover_w:
            # under a scenario that failed a feeder sharing its load: one more failure
            other = "one more down" if r.degraded else \
                "other side down" if partner else f"one of {r.count} down"
            share = f" ({percent(loading(r, r.failover_w))})" if cap else ""
            lines.append(Line(f"{other}: {watts(through_w(r, r.failover_w))}{share}",
                              small=True))
        if r.current_a:
            lines.append(Line(f"{amps(r.current_a)} at {watts(r.carried_w)}", small=True))
        if r.voltage_drop_v is not None:
            lines.append(Line(f"drop {r.voltage_drop_v:.2f} V ({percent(r.drop_ratio)})",
                              small=True))
        if r.input_ratio != 1.0 and not (failed and r.normal_w == 0):
            lines.append(Line(f"{percent(1 / r.input_ratio)} efficient: "
                              f"{watts(r.worst_w)} of load", small=True))
        elif r.efficiency and current != "dc":
            lines.append(Line(f"{percent(r.efficiency)} efficient", small=True))
    parts = [f]
    node = canvas.node(gid, lines, theme=theme, parts=parts, tooltip=f"feeder {f.path}",
                       failed=failed or None)
    entry = node
    rect = ctx.resolve(f.field("rectifier"))
    if rect is not None:
        rlines = [f"rectifier {rect.template}"]
        module = _si(rect.field("module"))
        scheme = sym(rect.field("redundancy")) or ""
        if r is not None and not failed and (r.rectifier_modules or r.rectifier_modules_needed):
            have = r.rectifier_modules or r.rectifier_modules_needed
            rlines.append(Line(f"{n(have)} x {watts(module)} modules" if module else
                               f"{n(have)} modules", bold=True))
            if r.rectifier_modules and r.rectifier_modules_needed:
                rlines.append(Line(f"needs {n(r.rectifier_modules_needed)}"
                                   + (f" ({scheme})" if scheme else ""), small=True))
            elif scheme:
                rlines.append(Line(f"as needed, {scheme}", small=True))
        eff = _si(rect.field("efficiency"))
        if eff:
            rlines.append(Line(f"{percent(eff)} efficient", small=True))
        entry = canvas.node(f"{gid}_rect", rlines, theme="dc", parts=[rect],
                            tooltip=f"rectifier {rect.path} of {f.path}", failed=failed or None)
        canvas.edge(entry, node, "DC bus", theme="dc", failed=failed)
    bat = ctx.resolve(f.field("battery"))
    if bat is not None:
        blines = [f"battery {bat.template}"]
        cells, autonomy = _si(bat.field("cells")), _si(bat.field("autonomy"))
        bits = []
        if cells:
            bits.append(f"{int(cells)} cells")
        if autonomy:
            bits.append(f"{autonomy / 60:g} min")
        chem = sym(bat.field("chemistry"))
        if chem:
            bits.append(chem.replace("_", "-"))
        if bits:
            blines.append(Line(" · ".join(bits), small=True))
        if r is not None and r.battery_required_ah and not failed:
            blines.append(Line(f"needs {n(round(r.battery_required_ah))} Ah", bold=True))
            duty, factors = battery_basis(r)     # as `astral size` and the review say it
            if duty:
                blines.append(Line(f"for {watts(r.battery_w)}, {duty}", small=True))
                blines.append(Line(factors, small=True))
        if r is not None and r.battery_available_ah:
            blines.append(Line(f"holds {n(round(r.battery_available_ah))} Ah", small=True))
        b = canvas.node(f"{gid}_bat", blines, theme="storage", parts=[bat],
                        tooltip=f"battery {bat.path} of {f.path}", failed=failed or None)
        canvas.edge(b, node, "backup", theme="storage", failed=failed, style="dashed")
    return entry, node


def _network_here(ctx, top: Instance) -> Optional[Tuple[float, int, float]]:
    """(power, switches, power on no feeder) of the fabrics the picture holds: the design's
    with one site; in a site of several, those attached in it, a fabric supplied when a feeder
    with `network = true` is declared in its owner or above it there."""
    eng = ctx.eng
    if whole_design(ctx, top):
        return eng.network_w, sum(f.switches for f in eng.fabrics), eng.power.network_unfed_w
    held = held_ids(top)
    fed: set = set()
    for owner in (i for i in ctx.design.instances if id(i) in held):
        if any(isinstance(m.value, Instance) and m.value.kind == "feeder" and
               m.value.field("network") is True for m in owner.members):
            fed |= held_ids(owner)
    fabrics = [f for f in eng.fabrics if id(ctx.by_path.get(f.owner)) in held]
    return (sum(f.power_w for f in fabrics), sum(f.switches for f in fabrics),
            sum(f.power_w for f in fabrics if id(ctx.by_path.get(f.owner)) not in fed))


def _feeders_below(ctx, top: Instance) -> List[Tuple[int, Instance]]:
    """(replicas inside `top`, feeder) for every feeder declaration at or below `top`."""
    out: List[Tuple[int, Instance]] = []

    def walk(inst: Instance, mult: int) -> None:
        for m in inst.members:
            if isinstance(m.value, Instance) and m.value.kind == "feeder":
                out.append((mult, m.value))
        for c, child in inst.containment():
            walk(child, mult * c)

    walk(top, 1)
    return out


def _supplies(canvas: Canvas, ctx, top: Instance) -> List[str]:
    """One supply per side: how many feeders it feeds and what they carry; their nodes."""
    sides: Dict[str, List] = {}
    for reps, f in _feeders_below(ctx, top):
        sides.setdefault(sym(f.field("side")) or "", []).append((reps, f))
    with canvas.same_rank("same"):
        for side, items in sorted(sides.items()):
            supply(canvas, ctx, side, items)
    return [f"supply_{side or 'x'}" for side in sorted(sides)]


def _served_edges(canvas: Canvas, ctx, tree: Tree, drawn, network: Optional[str],
                  facility: Optional[str] = None) -> None:
    for key, f, entry, node in drawn:
        r = ctx.feeders.get(f.path)
        current = sym(f.field("current")) or "dc"
        failed = f.path in ctx.failed_paths
        if f.field("mechanical") is True:
            if facility is not None:
                canvas.edge(node, facility, (watts(r.normal_w) if not failed else "0 kW")
                            if r is not None else "", theme="dc" if current == "dc" else "ac",
                            failed=failed,
                            tooltip=f"{f.template} supplies the facility's consumers")
            continue
        served = _served(ctx, f)
        if f.field("network") is True and network is not None:
            canvas.edge(node, network, (watts(r.normal_w) if not failed else "0 kW")
                        if r is not None else "", theme="dc" if current == "dc" else "ac",
                        failed=failed, tooltip=f"{f.template} supplies the network switches")
            if not served:
                continue
        served = served or [(1, tree.drawn[key].inst)]
        for c, inst in served:
            targets = [k for k in tree.by_inst.get(id(inst), [])
                       if key in [d.key for d in tree.chain(k)]]
            for k in targets:
                d = tree.drawn[k]
                text = ""
                if r is not None:
                    text = watts(r.normal_w) if not failed else "0 kW"
                attrs = {}
                target = d.node
                if target is None:      # a cluster: end at its border
                    target = d.anchor
                    attrs["lhead"] = f"cluster_{k}"
                if target is None:
                    continue
                canvas.edge(node, target, text, theme="dc" if current == "dc" else "ac",
                            failed=failed, tooltip=f"{f.template} serves {n(c)} x "
                                                   f"{inst.kind} {inst.template}", **attrs)
