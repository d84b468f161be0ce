"""`--view pod --name PATH`: one pod (or block, row, hall) top-down: its switch tiers per rail
and plane (ToR, Agg), its hosts at the bottom, and the uplinks to the tiers above it (the core),
drawn outside the pod."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.analyses.fabric_names import TierKey
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.outputs.render.cluster import Fabric, fabrics_of, scenario_lines, tier_table
from astral_dsl.outputs.render.numbers import links, n, plane_name, speed
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import Canvas
from astral_dsl.model.tier_groups import kinds_of
from astral_dsl.outputs.render.tree import counted, level, nic_ports, power_line, summary

MAX_COLUMNS = 32           # rail x plane columns drawn one by one; more are drawn per tier only

Key = Tuple[Optional[int], Optional[int]]     # (rail, plane); None: the node spans the axis


def _keys(f: Fabric, i: int, split_ok: bool) -> List[Key]:
    per_rail, per_plane = f.split(i)
    if not split_ok:
        per_rail = per_plane = False
    rails = range(f.rails) if per_rail else [None]
    planes = range(f.planes) if per_plane else [None]
    return [(r, p) for r in rails for p in planes]


def _within(key: Key, upper: Key) -> bool:
    """Whether lower group `key` lies inside upper group `upper`."""
    return all(u is None or u == k for k, u in zip(key, upper))


def _host_path(ctx, pod, host) -> str:
    """`in 128 x row GpuRow, 16 x rack GpuRack each` for a host inside the pod."""
    out = []
    inst = pod
    for _ in range(6):
        kids = [(c, ch) for c, ch in inst.containment() if count_of(ch, ("host",), ctx.cache)]
        if len(kids) != 1 or kids[0][1] is host:
            break
        c, inst = kids[0]
        out.append(f"{n(c)} x {inst.kind} {inst.template}")
    return ("in " + " > ".join(out)) if out else ""


def build(ctx, located) -> Canvas:
    pod = located.instance
    chain = located.chain()
    fabrics = [f for f in fabrics_of(ctx) if f.owner is not None and
               any(f.owner is c for c in chain)]
    title = [f"{located.text} — {pod.kind} view", summary(ctx, pod) + (
        f" · {power_line(ctx, pod, 1)}" if ctx.eng else "")]
    canvas = Canvas(ctx, "pod", "TB", title, cluster_labels="b")
    nodes: Dict[Tuple[int, int], Dict[Key, str]] = {}
    counts: Dict[str, int] = {}
    host_nodes: List[Tuple[str, int, object]] = []
    outside: List[Tuple[int, int]] = []
    inside: List[Tuple[int, int]] = []
    for fi, f in enumerate(fabrics):
        for i in range(len(f.tiers)):
            (inside if f.place_level(i) <= level(pod.kind) else outside).append((fi, i))

    hl = ctx.highlight
    group_names: Dict[str, str] = {}

    def tier_node(fi: int, i: int, key: Key, gid: str, count: int, where: str) -> str:
        f = fabrics[fi]
        t = f.tiers[i]
        rail, plane = key
        group_names[gid] = _group_name(f, i, key, pod, located)
        mark = hl.match(group_names[gid]) if hl else None
        head = t.name + (f" {plane_name(plane)}" if plane is not None else "")
        if rail is not None and plane is None:
            head += f" · rail {rail}"
        axis = _axis(f, i, pod, located)
        failed = ctx.fabric_failed(f.fc.fabric, t.name, rail, plane, axis)
        partly = ctx.fabric_partly_failed(f.fc.fabric, t.name, rail, plane, axis)
        lines = [head, Line(f"{n(count)} x {t.switch}", small=True)]
        lines.extend(scenario_lines(partly))
        if where == "outside" and t.switches != count:
            lines.append(Line(f"per {t.scope}; {n(t.switches)} in all", small=True))
        elif where == "outside":
            lines.append(Line(f"the whole {t.scope}", small=True))
        tip = (f"tier {t.name}{' rail ' + str(rail) if rail is not None else ''}"
               f"{' plane ' + plane_name(plane) if plane is not None else ''}: {n(count)} x "
               f"{t.switch}, {links(t.down_ports, t.down_speed)} down"
               + (f", {links(t.up_ports, t.up_speed)} up" if t.up_ports else ""))
        theme = "core" if where == "outside" or "rail" not in t.per else "network"
        counts[gid] = count
        return canvas.node(gid, lines, theme=theme, parts=[f.tier_insts[i]], tooltip=tip,
                           failed=failed or None, suspect=mark)

    # the tiers above the pod
    if outside:
        canvas.cluster_labels = "t"
        with canvas.cluster("outside", [f"above {located.text}"], theme="note", dashed=True,
                            tooltip="tiers whose scope is wider than this part"):
            for fi, i in sorted(outside, key=lambda x: -x[1]):
                f = fabrics[fi]
                ids = {}
                for key in _keys(f, i, True):
                    gid = f"f{fi}_t{i}_" + "_".join("x" if k is None else str(k) for k in key)
                    ids[key] = tier_node(fi, i, key, gid, _outside_size(f, i, located, key),
                                         "outside")
                nodes[(fi, i)] = ids
        canvas.cluster_labels = "b"
    with canvas.cluster("pod", [f"{pod.kind} {located.text}",
                                Line(f"{pod.template} · {summary(ctx, pod)}", small=True)],
                        parts=[pod], tooltip=f"{pod.kind} {pod.path}"):
        for fi, f in enumerate(fabrics):
            mine = sorted([i for fj, i in inside if fj == fi], reverse=True)
            if not mine:
                continue
            columns = len(_keys(f, mine[-1], True))
            split_ok = columns <= MAX_COLUMNS
            rail_split = split_ok and any(f.split(i)[0] for i in mine)
            for r in (range(f.rails) if rail_split else [None]):
                cm = canvas.cluster(f"f{fi}_r{r}", [f"rail {r}"], theme="rail", labelloc="t",
                                    tooltip=f"rail {r}: NIC {r} of every host") \
                    if r is not None else _nothing()
                with cm:
                    for i in mine:
                        ids = nodes.setdefault((fi, i), {})
                        for key in _keys(f, i, split_ok):
                            if r is not None and key[0] not in (r, None):
                                continue
                            if r is not None and key[0] is None:
                                continue
                            gid = f"f{fi}_t{i}_" + "_".join("x" if k is None else str(k)
                                                             for k in key)
                            ids[key] = tier_node(fi, i, key, gid,
                                                 f.switches_in(ctx, pod, i, *key)
                                                 if split_ok else f.every_in(ctx, pod, i),
                                                 "inside")
            for i in mine:       # tiers of the pod that span every rail
                ids = nodes.setdefault((fi, i), {})
                for key in _keys(f, i, split_ok):
                    if key in ids:
                        continue
                    gid = f"f{fi}_t{i}_" + "_".join("x" if k is None else str(k) for k in key)
                    ids[key] = tier_node(fi, i, key, gid, f.switches_in(ctx, pod, i, *key),
                                         "inside")
        hosts = group_of(pod, ("host",), ctx.cache).flat()
        for j, (count, host) in enumerate(hosts[:8]):
            gid = f"hosts{j}"
            ports, spd, per_nic = nic_ports(host, ctx.cache)
            where = _host_path(ctx, pod, host)
            mark = _host_suspect(hl, located.text) if hl and j == 0 else None
            canvas.node(gid, [counted(count, "host", host.template),
                              Line(where, small=True) if where else None,
                              Line(_host_contents(ctx, host), small=True),
                              Line(f"{ports} NIC ports of {speed(spd)} per host" if ports
                                   else "no NIC ports", small=True)],
                        theme="compute", parts=[host], tooltip=f"host {host.path}",
                        suspect=mark)
            host_nodes.append((gid, count, host))
        if not fabrics:
            canvas.node("nofabric", ["no fabric reaches this part",
                                     Line("attach one with `fabric = ...`", small=True)],
                        theme="note")
    _edges(canvas, ctx, fabrics, nodes, host_nodes, counts, group_names)
    table = tier_table(canvas, fabrics)
    notes = ["NIC k of every host is on rail k; port a on plane A, port b on plane B",
             f"counts are for this {pod.kind}; edge labels: links per rail and plane"] \
        if fabrics else []
    canvas.finish([("compute", "hosts (all of this kind in the part)"),
                   ("network", "switches of one rail and plane"),
                   ("core", "switches that span the rails (above the part)")], notes,
                  after=[g for g, _, _ in host_nodes], extra=[table] if table else [])
    return canvas


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _host_contents(ctx, host) -> str:
    parts = []
    for kind in ("gpu", "nic"):
        for c, item in group_of(host, (kind,), ctx.cache).flat():
            parts.append(f"{n(c)} x {item.template}")
    return "each: " + " · ".join(parts) if parts else ""


def _outside_size(f: Fabric, i: int, located, key: Key = (None, None)) -> int:
    """Switches in the group of tier i (scope wider than the part drawn) that holds the part,
    on the key's rail and plane: its scope instance's own when the tier's groups differ in size
    (network_groups)."""
    t = f.tiers[i]
    kinds = kinds_of(t.scope)
    holder = next((x for x in reversed(located.chain()) if x.kind in kinds), None)
    return t.size_of(holder.path, *key) if holder is not None else t.size(None, *key)


def _axis(f: Fabric, i: int, pod, located) -> Optional[Tuple[str, int]]:
    """The pod as an axis of a tier group (kind, index): when the fabric belongs to a wider
    part and the tier's scope is the pod; None otherwise."""
    t = f.tiers[i]
    if f.owner is not pod and pod.kind in kinds_of(t.scope) and \
            located.steps:
        return (pod.kind, located.steps[-1].index or 0)
    return None


def _group_name(f: Fabric, i: int, key: Key, pod, located) -> str:
    """The stable name of the tier group a node draws (fabric_names.py)."""
    return TierKey(f.fc.fabric, f.tiers[i].name, _axis(f, i, pod, located), key[0], key[1]).name


def _host_suspect(hl, pod_path: str) -> Optional[str]:
    """A suspect inside the pod's hosts (a GPU, host or NIC), drawn on its hosts' node: one
    whose path, or one of whose tied parts or parts, is in the pod (a tie of two NICs in two
    pods is drawn in each pod's picture)."""
    for i, s in enumerate(hl.suspects):
        if s.get("kind") not in ("gpu", "host", "nic port", "nvlink"):
            continue
        names = [s.get("path")] + list(s.get("tied") or ()) + list(s.get("parts") or ())
        if any(isinstance(n, str) and n.startswith(pod_path + ".") for n in names):
            hl.shown.add(i)
            return hl.label(i)
    return None


def _edges(canvas: Canvas, ctx, fabrics: List[Fabric], nodes, host_nodes, counts,
           group_names=None) -> None:
    group_names = group_names or {}
    hl = ctx.highlight
    for fi, f in enumerate(fabrics):
        first = nodes.get((fi, 0), {})
        t0 = f.tiers[0] if f.tiers else None
        for gid, count, host in host_nodes:
            ports, spd, per_nic = nic_ports(host, ctx.cache)
            if not ports or not first:
                continue
            share = count * ports / len(first)
            for j, (key, tid) in enumerate(sorted(first.items(), key=lambda x: str(x[0]))):
                rail, plane = key
                which = []
                if rail is not None:
                    which.append(f"NIC {rail}")
                if plane is not None:
                    which.append(f"port {chr(ord('a') + plane)}")
                text = links(share, spd)
                canvas.edge(tid, gid, text + (" each" if len(first) > 1 else "")
                            if j == 0 else "", theme="network",
                            failed=ctx.fabric_failed(f.fc.fabric, t0.name, rail, plane),
                            dir="none", tooltip=f"{text}: {' '.join(which) or 'every port'} of "
                                                f"each host")
        for i in range(len(f.tiers) - 1):
            lower, upper = nodes.get((fi, i), {}), nodes.get((fi, i + 1), {})
            t = f.tiers[i]
            if not lower or not upper or not t.up_ports:
                continue
            first_label = True
            for key, lid in sorted(lower.items(), key=lambda x: str(x[0])):
                goals = [uid for ukey, uid in upper.items() if _within(key, ukey)] or \
                    list(upper.values())
                switches = counts.get(lid, 0)
                total = switches * t.up_ports
                each = total / len(goals)
                failed = ctx.fabric_failed(f.fc.fabric, t.name, key[0], key[1])
                for uid in goals:
                    text = links(each, t.up_speed)
                    mark = hl.match_link(group_names.get(lid, ""), group_names.get(uid, "")) \
                        if hl else None
                    canvas.edge(uid, lid, text + (" each" if len(lower) > 1 else "")
                                if first_label else "",
                                theme="core" if len(goals) == 1 and len(upper) == 1
                                else "network", failed=failed, dir="none", suspect=mark,
                                tooltip=f"{t.name} to {f.tiers[i + 1].name}: {text}")
                    first_label = False
