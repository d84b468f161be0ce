"""`--view cluster`: the whole site top-down: the switch tiers (core on top), one column per
rail, the pods and rows as collapsed clusters ("8 x pod Pod") and the racks at the bottom, with
link counts on the edges ("8,192 x 400G") and a table of the tiers."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.outputs.render.numbers import links, n, plane_name, speed, watts
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import AMBER, GREY_FILL, Canvas
from astral_dsl.model.tier_groups import kinds_of
from astral_dsl.outputs.render.tree import GROUPING, Tree, counted, level, nic_ports, \
    power_line, summary

MAX_RAILS = 16


class Fabric:
    """One fabric as the views draw it."""

    def __init__(self, ctx, fc):
        self.fc = fc
        self.owner = ctx.by_path.get(fc.owner)
        self.inst = ctx.by_path.get(fc.fabric)
        self.tiers = list(fc.tiers)
        self.tier_insts = [ctx.by_path.get(f"{fc.fabric}.{t.name}") for t in fc.tiers]
        # the rails and planes a NIC port reaches (the others hold no switch, W610): wiring
        # NIC k to rail k mod this is the same, as no NIC k reaches past them
        self.rails = max(1, fc.rails_used or fc.rails)
        self.planes = max(1, fc.planes_used or fc.planes)

    def split(self, i: int) -> Tuple[bool, bool]:
        t = self.tiers[i]
        return ("rail" in t.per and self.rails > 1), ("plane" in t.per and self.planes > 1)

    def place_level(self, i: int) -> int:
        return min(level(self.tiers[i].scope), level(self.owner.kind) if self.owner else 99)

    def scope_count(self, ctx, inst, i: int) -> int:
        """Groups of tier i's scope inside one replica of `inst`."""
        kinds = kinds_of(self.tiers[i].scope)
        if inst.kind in kinds:
            return 1
        return count_of(inst, kinds, ctx.cache) or 1

    def switches_in(self, ctx, inst, i: int, rail: Optional[int] = None,
                    plane: Optional[int] = None) -> int:
        """Switches of tier i per rail and plane (of `rail` and `plane`, when given) in one
        replica of `inst`: its groups' there (groups of different sizes: each its own,
        network_groups)."""
        t = self.tiers[i]
        kinds = kinds_of(t.scope)
        if t.by_group and (rail is not None or plane is not None):
            if inst.kind in kinds:
                return t.size_of(inst.path, rail, plane)
            if count_of(inst, kinds, ctx.cache):
                return sum(k * t.size_of(s.path, rail, plane)
                           for k, s in group_of(inst, kinds, ctx.cache).flat())
            return t.size(None, rail, plane)
        if not t.sizes or not count_of(inst, kinds, ctx.cache):
            return t.per_group * self.scope_count(ctx, inst, i)
        return sum(k * t.size_of(s.path) for k, s in group_of(inst, kinds, ctx.cache).flat())

    def every_in(self, ctx, inst, i: int) -> int:
        """Switches of tier i in one replica of `inst`, over its rails and planes."""
        per_rail, per_plane = self.split(i)
        if not self.tiers[i].by_group:
            return self.switches_in(ctx, inst, i) * (self.rails if per_rail else 1) \
                * (self.planes if per_plane else 1)
        return sum(self.switches_in(ctx, inst, i, r, p)
                   for r in (range(self.rails) if per_rail else [None])
                   for p in (range(self.planes) if per_plane else [None]))


def fabrics_of(ctx) -> List[Fabric]:
    return [Fabric(ctx, fc) for fc in (ctx.eng.fabrics if ctx.eng else ())]


def tier_table(canvas: Canvas, fabrics: List[Fabric], gid: str = "tiers") -> Optional[str]:
    """A table of every tier: switches, ports, speeds, oversubscription, power."""
    if not fabrics:
        return None
    head = ["tier", "switch", "scope", "per", "switches", "per group", "down", "up", "over.",
            "power"]
    rows: List[list] = []
    parts = []
    for f in fabrics:
        fc = f.fc
        rows.append([(Line(f"fabric {f.inst.template if f.inst else fc.fabric} on {fc.owner}: "
                           f"{fc.rails} rail{'s' if fc.rails != 1 else ''} x {fc.planes} "
                           f"plane{'s' if fc.planes != 1 else ''} · "
                           f"{n(fc.host_ports)} NIC ports of {speed(fc.nic_speed)} · "
                           f"{n(fc.switches)} switches · " + (
                               watts(fc.power_w) if fc.power_w else "switch power not declared"),
                           bold=True), {})])
        rows.append([(Line(h, bold=True, small=True), {"align": "LEFT"}) for h in head])
        for t, ti in zip(reversed(fc.tiers), reversed(f.tier_insts)):
            over = f"{t.shown_oversubscription:g}:1" if t.shown_oversubscription is not None \
                else "—"
            rows.append([t.name, t.switch, t.scope, ", ".join(t.per) or "—",
                         (n(t.switches), {"align": "RIGHT"}),
                         (t.per_group_text if t.sizes else n(t.per_group), {"align": "RIGHT"}),
                         links(t.down_ports, t.down_speed) if t.down_ports else "—",
                         links(t.up_ports, t.up_speed) if t.up_ports else "—", over,
                         watts(t.power_w) if t.power_w else "—"])
            parts.append(ti)
        hops = " · ".join(f"{k}: {v}" for k, v in fc.hops)
        if hops:
            rows.append([(Line(f"switches on the shortest path: {hops}", small=True), {})])
        if fc.capacity_gpus:
            rows.append([(Line(f"the radix reaches {n(fc.capacity_gpus)} GPUs", small=True), {})])
        parts.append(f.inst)
    return canvas.node(gid, (), theme="network", parts=parts, table_rows=rows,
                       tooltip="the switch tiers (from the fabric declarations)", shape="plain",
                       padding=4)


def scenario_lines(partly: List[str]) -> List[Line]:
    """A node's lines for the scenario's failures that take out part of it only (one switch,
    or one scope instance's switches): named as the scenario names them."""
    shown = [Line(f"scenario: {name} failed", small=True, bold=True, colour=AMBER)
             for name in partly[:2]]
    if len(partly) > 2:
        shown.append(Line(f"and {len(partly) - 2} more failed", small=True, colour=AMBER))
    return shown


def _tier_node(canvas: Canvas, ctx, f: Fabric, i: int, gid: str, inst, rail: Optional[int]):
    """A tier's switches in one cluster replica (one rail, or all of them): a cell per plane."""
    t = f.tiers[i]
    per_rail, per_plane = f.split(i)
    one = rail if per_rail else None
    each = f.switches_in(ctx, inst, i, one)
    header = t.name if rail is None or not per_rail else f"{t.name} · rail {rail}"
    if per_plane:
        cells, failed = [], 0
        for p in range(f.planes):
            down = ctx.fabric_failed(f.fc.fabric, t.name, rail, p)
            failed += down
            cells.append((f"{plane_name(p)}: {n(f.switches_in(ctx, inst, i, one, p))}",
                          {"bgcolor": GREY_FILL, "colour": "#9e9e9e"} if down else {}))
        rows = [cells]
        all_failed = failed == f.planes
    else:
        total = each * (1 if per_rail or not t.per or "rail" not in t.per else 1)
        rows = [[(f"{n(total)} x {t.switch}", {"align": "CENTER"})]]
        if not per_rail and f.rails > 1 and i > 0 and f.split(i - 1)[0]:
            rows.append([(Line("all rails meet here", small=True), {"align": "CENTER"})])
        if t.down_ports:
            rows.append([(Line(f"{links(t.down_ports, t.down_speed)} down"
                               + (f" · {links(t.up_ports, t.up_speed)} up" if t.up_ports else ""),
                               small=True), {"align": "CENTER"})])
        all_failed = ctx.fabric_failed(f.fc.fabric, t.name, rail, None)
    # what fails part of a cell only (a plane's cell greys when all of it fails)
    partly = list(dict.fromkeys(
        name for p in (range(f.planes) if per_plane else [None])
        for name in ctx.fabric_partly_failed(f.fc.fabric, t.name, rail, p)))
    rows.extend([(line, {"align": "CENTER"})] for line in scenario_lines(partly))
    theme = "core" if not per_rail and f.rails > 1 else "network"
    tip = (f"tier {t.name} of {f.fc.fabric}: "
           f"{t.per_group_text if t.sizes else n(t.per_group)} x {t.switch} per group "
           f"({t.scope}{', ' + ', '.join(t.per) if t.per else ''}), {n(t.switches)} in all")
    return canvas.node(gid, (), theme=theme, parts=[f.tier_insts[i]], table_rows=rows,
                       header=header, tooltip=tip, failed=all_failed or None, shape="plain")


def build(ctx, located) -> Canvas:
    top = located.instance
    fabrics = fabrics_of(ctx)
    fabric_line = " · ".join(
        f"fabric {f.inst.template if f.inst else f.fc.fabric}: {f.fc.rails} "
        f"rail{'s' if f.fc.rails != 1 else ''} x {f.fc.planes} "
        f"plane{'s' if f.fc.planes != 1 else ''}, "
        f"{len(f.tiers)} tiers, {n(f.fc.switches)} switches" for f in fabrics)
    title = [f"{top.template} — cluster view", summary(ctx, top) + (
        f" · {watts(_it_peak(ctx, top))} IT peak" if ctx.eng else "")]
    if fabric_line:
        title.append(fabric_line)
    canvas = Canvas(ctx, "cluster", "TB", title, cluster_labels="b")
    tree = Tree(canvas, ctx)
    above = {id(i) for i in located.chain()[:-1]}
    # (fabric index, tier index) -> [(cluster key, {rail: node id})]
    placed: Dict[Tuple[int, int], List[Tuple[str, Dict]]] = {}

    def active(f: Fabric, key: str) -> bool:
        if f.owner is None:
            return False
        return id(f.owner) in above or any(d.inst is f.owner for d in tree.chain(key))

    def on_cluster(key, inst, count):
        here = []
        for fi, f in enumerate(fabrics):
            if not active(f, key):
                continue
            for i in range(len(f.tiers)):
                lv = f.place_level(i)
                if level(inst.kind) < lv:
                    continue
                if any(level(ch.kind) >= lv for _, ch in inst.containment()
                       if ch.kind in GROUPING):
                    continue
                here.append((fi, i))
        if not here:
            return None
        anchor = None
        railed = [(fi, i) for fi, i in here if fabrics[fi].split(i)[0]
                  and fabrics[fi].rails <= MAX_RAILS]
        nodes: Dict[Tuple[int, int], Dict] = {(fi, i): {} for fi, i in here}
        for fi in sorted({fi for fi, _ in railed}):
            f = fabrics[fi]
            for r in range(f.rails):
                with canvas.cluster(f"{key}_f{fi}_r{r}", [f"rail {r}"], theme="rail", labelloc="t",
                                    failed=ctx.fabric_failed(f.fc.fabric, None, r, None) or None,
                                    tooltip=f"rail {r}: NIC {r} of every host"):
                    for (fj, i) in sorted(railed, key=lambda x: -x[1]):
                        if fj != fi:
                            continue
                        gid = f"{key}_f{fi}_t{i}_r{r}"
                        nodes[(fi, i)][r] = _tier_node(canvas, ctx, f, i, gid, inst, r)
                        anchor = anchor or gid
        for fi, i in here:
            if (fi, i) in railed:
                continue
            gid = f"{key}_f{fi}_t{i}"
            nodes[(fi, i)][None] = _tier_node(canvas, ctx, fabrics[fi], i, gid, inst, None)
            anchor = anchor or gid
        for (fi, i), ids in nodes.items():
            placed.setdefault((fi, i), []).append((key, ids))
        return anchor

    def leaf(key, inst, count):
        return "compute", [Line(power_line(ctx, inst, count), small=True)]

    def title_of(inst, count):
        if inst is top:
            return [f"{inst.kind} {inst.template}"]
        head = counted(count, inst.kind, inst.template) if count > 1 or inst is not top \
            else f"{inst.kind} {inst.template}"
        return [head, Line(summary(ctx, inst) + (f" · {power_line(ctx, inst, count)}"
                                                 if ctx.eng else ""), small=True)]

    tree.draw(top, title=title_of, on_cluster=on_cluster, leaf=leaf,
              theme=lambda i: "site" if i is top else "group")
    # tiers above the part drawn (a pod's core): outside it
    for fi, f in enumerate(fabrics):
        if f.owner is None or not (id(f.owner) in above or f.owner is top):
            continue
        for i in range(len(f.tiers)):
            if (fi, i) in placed:
                continue
            ids = {}
            per_rail = f.split(i)[0] and f.rails <= MAX_RAILS
            for r in (range(f.rails) if per_rail else [None]):
                gid = f"out_f{fi}_t{i}" + (f"_r{r}" if r is not None else "")
                ids[r] = _tier_node(canvas, ctx, f, i, gid, f.owner, r)
            placed[(fi, i)] = [(None, ids)]
    _edges(canvas, ctx, tree, fabrics, placed)
    table = tier_table(canvas, fabrics)
    notes = []
    if fabrics:
        scope = fabrics[0].tiers[0].scope if fabrics[0].tiers else "pod"
        notes.append(f"edge labels: links per {scope} (per replica of the box they start in)")
    else:
        canvas.node("nofabric", ["no fabric declared",
                                 Line("attach one with `fabric = ...` to draw the network",
                                      small=True)], theme="note")
    canvas.finish([("compute", "racks (hosts, GPUs and NICs inside)"),
                   ("network", "switches of a tier in one rail; a cell per plane"),
                   ("core", "a tier that spans the rails")], notes,
                  after=[d.node for d in tree.drawn.values() if d.node],
                  extra=[table] if table else [])
    return canvas


def _it_peak(ctx, top) -> float:
    from astral_dsl.model.rollup import power_of

    if top is ctx.design.roots[0] and ctx.eng is not None:
        return ctx.eng.power.it_peak_w
    return power_of(top, ctx.cache).si


def _edges(canvas: Canvas, ctx, tree: Tree, fabrics: List[Fabric], placed) -> None:
    for fi, f in enumerate(fabrics):
        # tier 1 down to the racks: links per replica of the tier's cluster
        if (fi, 0) in placed:
            t0 = f.tiers[0]
            per_rail, per_plane = f.split(0)
            for key, ids in placed[(fi, 0)]:
                for d in tree.drawn.values():
                    if d.node is None or d.inst.kind in GROUPING:
                        continue
                    chain = [x.key for x in tree.chain(d.key)]
                    if key is not None and key not in chain:
                        continue
                    ports, spd, _ = nic_ports(d.inst, ctx.cache)
                    if not ports:
                        continue
                    total = ports * tree.count_within(d.key, key)
                    share = total / (len(ids) if per_rail else 1)
                    for j, (r, gid) in enumerate(ids.items()):
                        down = ctx.fabric_failed(f.fc.fabric, t0.name, r, None)
                        text = links(share, spd) + (" each rail" if r is not None else "")
                        canvas.edge(gid, d.node, text if j == 0 else "", theme="network",
                                    failed=down, dir="none",
                                    tooltip=f"{n(share)} NIC ports of {speed(spd)} "
                                            f"({'NIC ' + str(r) + ' of every host' if r is not None else 'every NIC'})")
        # tier i+1 down to tier i
        for i in range(len(f.tiers) - 1):
            lower, upper = placed.get((fi, i), []), placed.get((fi, i + 1), [])
            t = f.tiers[i]
            if not t.up_ports:
                continue
            for key, ids in lower:
                target = _nearest(tree, key, upper)
                if target is None:
                    continue
                up_rail = f.split(i + 1)[0]
                inst = tree.drawn[key].inst if key is not None else f.owner
                per_rail, per_plane = f.split(i)
                for j, (r, gid) in enumerate(ids.items()):
                    switches = sum(f.switches_in(ctx, inst, i, r if per_rail else None, p)
                                   for p in range(f.planes)) if per_plane else \
                        f.switches_in(ctx, inst, i, r if per_rail else None)
                    goals = [target[r]] if (up_rail and r is not None and r in target) else (
                        list(target.values()) if r is None else [target.get(None) or
                                                                  target.get(r)])
                    goals = [g for g in goals if g]
                    count = switches * t.up_ports / max(1, len(goals))
                    dark = sum(ctx.fabric_failed(f.fc.fabric, t.name, r, p)
                               for p in range(f.planes)) if per_plane else 0
                    text = links(count, t.up_speed) + (" each rail" if r is not None else "")
                    if dark and dark < f.planes:
                        text += f" ({n(count * dark / f.planes)} down)"
                    for g in goals:
                        canvas.edge(g, gid, text if (j == 0 or dark) else "",
                                    theme="core" if not up_rail else "network",
                                    failed=dark == f.planes and per_plane, dir="none",
                                    tooltip=f"{t.name} uplinks to {f.tiers[i + 1].name}: {text}")


def _nearest(tree: Tree, key: Optional[str], placements) -> Optional[Dict]:
    """The placement of the tier above that serves cluster `key`: in `key` or its ancestors,
    or outside the drawing."""
    if not placements:
        return None
    chain = [d.key for d in tree.chain(key)] if key is not None else []
    for k in reversed(chain):
        for pk, ids in placements:
            if pk == k:
                return ids
    for pk, ids in placements:
        if pk is None:
            return ids
    return None
