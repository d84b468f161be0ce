"""Containment drawn collapsed: one cluster per distinct grouping (site, hall, pod, row, block)
labelled with its count ("8 x pod Pod"), and the parts below the groupings (racks, or hosts)
as leaf nodes ("16 x rack GpuRack"). Views hook their own nodes into each cluster."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses.walk import owned
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import count_of, group_of, power_of
from astral_dsl.outputs.render.numbers import n, watts
from astral_dsl.outputs.render.labels import Line

GROUPING = ("site", "hall", "pod", "row", "block")
LEVEL = {"host": 1, "rack": 2, "row": 3, "block": 3, "pod": 4, "hall": 5, "site": 6}
MAX_CHILDREN = 8          # distinct children drawn per cluster; the rest are summarised


@records.define
class Drawn:
    key: str
    inst: Instance
    count: int                 # replicas inside the parent (1 for the top)
    parent: Optional[str]
    node: Optional[str] = None      # the node id of a leaf
    anchor: Optional[str] = None    # a node inside a cluster, for edges that end at the cluster


def level(kind: str) -> int:
    return LEVEL.get(kind, 0)


def plural(kind: str, count: int) -> str:
    return kind if count == 1 else {"switch": "switches", "battery": "batteries"}.get(
        kind, kind + "s")


def counted(count: int, kind: str, template: str) -> str:
    return f"{n(count)} x {kind} {template}"


def replica_names(parent: Instance) -> Dict[int, str]:
    """By id of a child instance: where it sits among its member's replicas, written as in a
    path (`sus[0]`, `sus[1..3]`, `sus[0..1], sus[3]`), for members whose replicas are distinct
    instances of one template (under a scenario the parts it names are isolated): two boxes
    "1 x block SU" become "block SU sus[0]" and "block SU sus[1]"."""
    from astral_dsl.model.values import Group

    out: Dict[int, str] = {}
    for m in parent.members:
        g = m.value
        if not isinstance(g, Group) or any(isinstance(r.item, Group) for r in g.runs):
            continue
        spans: Dict[int, List[Tuple[int, int]]] = {}
        templates: Dict[int, str] = {}
        offset = 0
        for r in g.runs:
            ranges = spans.setdefault(id(r.item), [])
            templates[id(r.item)] = f"{r.item.kind} {r.item.template}"
            if ranges and ranges[-1][1] == offset:
                ranges[-1] = (ranges[-1][0], offset + r.count)
            else:
                ranges.append((offset, offset + r.count))
            offset += r.count
        if len(set(templates.values())) == len(templates):
            continue                    # each template once: its label names it already
        for key, ranges in spans.items():
            shown = [f"{m.name}[{a}]" if b - a == 1 else f"{m.name}[{a}..{b - 1}]"
                     for a, b in ranges[:3]]
            out[key] = ", ".join(shown) + (f" and {len(ranges) - 3:,} more" if len(ranges) > 3
                                           else "")
    return out


def _indexed(lines: list, where: Optional[str]) -> list:
    """A title's first line with the replicas it stands for (replica_names)."""
    if not where or not lines or not isinstance(lines[0], str):
        return lines
    return [f"{lines[0]} {where}"] + list(lines[1:])


def nic_ports(inst: Instance, cache) -> Tuple[int, Optional[object], int]:
    """(NIC ports inside `inst`, port speed, ports per NIC)."""
    total, speed, per_nic = 0, None, 1
    for count, nic in group_of(inst, ("nic",), cache).flat():
        q = nic.field("ports")
        ports = int(q.si) if hasattr(q, "si") else 1
        total += count * ports
        per_nic = ports
        speed = nic.field("port_speed") or speed
    return total, speed, per_nic


def contents(inst: Instance, cache) -> str:
    """`4 x host Node · 8 x H800 · 8 x CX7_2x200G` (what one replica holds)."""
    parts = []
    if inst.kind == "rack":
        for c, host in group_of(inst, ("host",), cache).flat():
            parts.append(f"{n(c)} x {host.template}")
    for kind in ("gpu", "nic"):
        flat = group_of(inst, (kind,), cache).flat()
        if inst.kind == "rack":
            hosts = count_of(inst, ("host",), cache) or 1
            parts.extend(f"{n(c // hosts if c % hosts == 0 else c)} x {g.template}"
                         + (" each" if c % hosts == 0 and hosts > 1 else "") for c, g in flat)
        else:
            parts.extend(f"{n(c)} x {g.template}" for c, g in flat)
    return " · ".join(parts)


def summary(ctx, inst: Instance) -> str:
    cache = ctx.cache
    out = []
    for kind, kinds in (("GPU", ("gpu",)), ("host", ("host",)), ("rack", ("rack",)),
                        ("pod", ("pod",))):
        c = count_of(inst, kinds, cache)
        if c and (kind != "pod" or inst.kind in ("site", "hall")):
            out.append(f"{n(c)} {kind}{'s' if c != 1 else ''}")
    return " · ".join(out)


class Tree:
    def __init__(self, canvas, ctx):
        self.canvas = canvas
        self.ctx = ctx
        self.drawn: Dict[str, Drawn] = {}
        self.by_inst: Dict[int, List[str]] = {}
        self._next = 0

    def _key(self, prefix: str) -> str:
        self._next += 1
        return f"{prefix}{self._next}"

    def chain(self, key: str) -> List[Drawn]:
        """The drawn parts from the top down to `key`."""
        out = []
        while key is not None:
            d = self.drawn[key]
            out.append(d)
            key = d.parent
        return out[::-1]

    def count_within(self, key: str, ancestor: Optional[str]) -> int:
        """Replicas of drawn part `key` inside one replica of `ancestor` (None: the top)."""
        total = 1
        while key is not None and key != ancestor:
            d = self.drawn[key]
            if d.parent is None and ancestor is not None:
                break
            total *= d.count
            key = d.parent
        return total

    def draw(self, top: Instance, *, title: Callable, on_cluster: Callable = None,
             leaf: Callable = None, theme: Callable = None, count: int = 1) -> str:
        return self._visit(top, count, None, title, on_cluster, leaf, theme)

    def _visit(self, inst: Instance, count: int, parent: Optional[str], title, on_cluster,
               leaf, theme, where: Optional[str] = None) -> str:
        key = self._key("c")
        d = Drawn(key, inst, count, parent)
        self.drawn[key] = d
        self.by_inst.setdefault(id(inst), []).append(key)
        with self.canvas.cluster(key, _indexed(title(inst, count), where), parts=[inst],
                                 theme=theme(inst) if theme else "group",
                                 tooltip=f"{inst.kind} {inst.path}"):
            if on_cluster is not None:
                d.anchor = on_cluster(key, inst, count) or d.anchor
            children = inst.containment()
            names = replica_names(inst)
            groups = [(c, ch) for c, ch in children if ch.kind in GROUPING]
            leaves = [(c, ch) for c, ch in children if ch.kind not in GROUPING]
            drawn = 0
            for c, ch in groups:
                if drawn >= MAX_CHILDREN:
                    break
                sub = self._visit(ch, c, key, title, on_cluster, leaf, theme,
                                  names.get(id(ch)))
                d.anchor = d.anchor or self.drawn[sub].anchor
                drawn += 1
            for c, ch in leaves:
                if drawn >= MAX_CHILDREN:
                    break
                node = self._leaf(ch, c, key, leaf, names.get(id(ch)))
                d.anchor = d.anchor or node
                drawn += 1
            rest = len(groups) + len(leaves) - drawn
            if rest > 0:
                more = sum(c for c, _ in (groups + leaves)[drawn:])
                node = self.canvas.node(self._key("more"), [
                    f"{n(rest)} more distinct parts", Line(f"{n(more)} replicas in all",
                                                          small=True)], theme="note",
                    tooltip="drawn collapsed: name one with --name to see it")
                d.anchor = d.anchor or node
        return key

    def _leaf(self, inst: Instance, count: int, parent: str, leaf,
              where: Optional[str] = None) -> str:
        key = self._key("n")
        d = Drawn(key, inst, count, parent, node=key)
        self.drawn[key] = d
        self.by_inst.setdefault(id(inst), []).append(key)
        cache = self.ctx.cache
        lines = _indexed([counted(count, inst.kind, inst.template),
                          Line(contents(inst, cache), small=True)], where)
        theme, extra, tooltip = "compute", [], f"{inst.kind} {inst.path}"
        if leaf is not None:
            theme, extra = leaf(key, inst, count)
        self.canvas.node(key, lines + list(extra), theme=theme, parts=[inst], tooltip=tooltip)
        return key


def held_ids(top: Instance) -> set:
    """The ids of `top` and every part it holds."""
    held = {id(top)}
    stack = [top]
    while stack:
        for _, child in owned(stack.pop()):
            if id(child) not in held:
                held.add(id(child))
                stack.append(child)
    return held


def whole_design(ctx, top: Instance) -> bool:
    """Whether the picture is of the whole design (its one site): a title may then give the
    design's figures; a site of several gives its own."""
    return top is ctx.design.roots[0] and len(ctx.design.roots) == 1


def power_line(ctx, inst: Instance, count: int) -> str:
    each = power_of(inst, ctx.cache).si
    if count > 1:
        return f"{watts(each)} peak each · {watts(each * count)} in all"
    return f"{watts(each)} peak"
