"""`--view rack --name PATH`: one rack (or host) left to right: each host as a table of its GPUs
and NICs with one cell per NIC port, and an edge from every port to the first-tier switch it
reaches (NIC k on rail k, port j on plane j; hosts fill the switches of their rail and plane in
order, so the switch's number follows from the host's position in the pod and its ports on the
rail and plane: fabric_names.place)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import count_of, group_of, power_of
from astral_dsl.model.values import Group
from astral_dsl.outputs.render.cluster import Fabric, fabrics_of
from astral_dsl.analyses.fabric_names import TierKey, place, port_name, ports_before, wiring
from astral_dsl.outputs.render.numbers import links, n, plane_name, speed, watts
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import PLANE_EDGE, RED, RED_FILL, Canvas
from astral_dsl.model.tier_groups import kinds_of

MAX_HOSTS = 16
MAX_ROWS = 32          # GPUs / NICs listed per host


def _hosts_in(ctx, value) -> int:
    if isinstance(value, Group):
        return sum(c * count_of(item, ("host",), ctx.cache) for c, item in value.flat()
                   if getattr(item, "level", None) is not None)
    if isinstance(value, Instance) and value.level is not None:
        return count_of(value, ("host",), ctx.cache)
    return 0


def _position(ctx, located, scope_index: int) -> int:
    """Hosts before the located part inside the instance at chain position `scope_index`."""
    total = 0
    for st in located.steps[scope_index:]:
        for m in st.owner.members:
            if m.name == st.member:
                if isinstance(m.value, Group) and st.index:
                    total += _hosts_in(ctx, m.value.slice(0, st.index))
                break
            total += _hosts_in(ctx, m.value)
    return total


def _scope(f: Fabric, located) -> Tuple[int, Optional[Instance]]:
    """(chain position, instance) of the first tier's group that holds the located part."""
    chain = located.chain()
    t0 = f.tiers[0]
    kinds = kinds_of(t0.scope)
    owner_at = next((k for k, c in enumerate(chain) if c is f.owner), None)
    if owner_at is None:
        return 0, None
    for k in range(len(chain) - 1, owner_at - 1, -1):
        if chain[k].kind in kinds:
            return k, chain[k]
    return owner_at, f.owner


def build(ctx, located) -> Canvas:
    part = located.instance
    cache = ctx.cache
    hosts: List[Instance] = [part] if part.kind == "host" else (
        group_of(part, ("host",), cache).items(10**6) or [])
    # replica paths, as the rank map and a diagnosis name them
    member = _member(part, "host") if part.kind != "host" else None
    host_paths = [located.text] if part.kind == "host" else [
        f"{located.text}.{member}[{h}]" if any(m.name == member for m in part.members)
        else hosts[h].path for h in range(len(hosts))]
    fabric = next((f for f in fabrics_of(ctx) if f.owner is not None and f.tiers and
                   any(f.owner is c for c in located.chain())), None)
    gpus = sum(count_of(h, ("gpu",), cache) for h in hosts)
    ports_total = 0
    for h in hosts:
        for nic in group_of(h, ("nic",), cache).items(10**6) or []:
            q = nic.field("ports")
            ports_total += int(q.si) if hasattr(q, "si") else 1
    title = [f"{located.text} — {part.kind} view",
             f"{part.template} · {n(len(hosts))} host{'s' if len(hosts) != 1 else ''} · "
             f"{n(gpus)} GPUs · {n(ports_total)} NIC ports · {watts(power_of(part, cache).si)} peak"]
    canvas = Canvas(ctx, "rack", "LR", title)
    canvas.g.graph_attr.update(ranksep="2.2", nodesep="0.12")
    scope_at, scope = _scope(fabric, located) if fabric else (0, None)
    hl = ctx.highlight
    axis = (scope.kind, located.steps[scope_at - 1].index or 0) \
        if scope is not None and fabric is not None and scope is not fabric.owner and \
        scope_at > 0 else None
    before = _position(ctx, located, scope_at) if scope is not None else 0
    t0 = fabric.tiers[0] if fabric else None
    per_rail, per_plane = fabric.split(0) if fabric else (False, False)
    rails = fabric.rails if fabric and per_rail else 1
    planes = fabric.planes if fabric and per_plane else 1
    # hosts of the scope that put different counts on a group: the ports of those before
    prior = ports_before(scope, (rails, planes, per_rail, per_plane), cache) \
        if scope is not None and fabric is not None else None
    switches: Dict[Tuple, str] = {}
    names: Dict[Tuple, str] = {}           # switch key -> stable name (fabric_names.py)
    host_ids: List[str] = []
    wanted: List[Tuple[str, Tuple, int, int]] = []     # (tail port, switch key, nic, port)
    named = ctx.device_name(located.text)
    with canvas.cluster("part", [f"{part.kind} {located.text}" if named is None else
                                 f"{part.kind} {named} ({located.text})",
                                 Line(f"{part.template} · {watts(power_of(part, cache).si)} peak",
                                      small=True)], parts=[part], theme="group",
                        tooltip=f"{part.kind} {part.path}"):
        for h, host in enumerate(hosts[:MAX_HOSTS]):
            gid = f"host{h}"
            host_ids.append(gid)
            rows, port_list = _host_rows(ctx, host, host_paths[h], rails, planes, hl)
            index = before + h
            # where each port lands: the wiring the rank map and the cables use (fabric_names)
            places = {(p.nic, p.port): p for p in wiring(
                [_int(nic.field("ports"), 1) for nic in
                 group_of(host, ("nic",), cache).items(10**6) or []],
                rails, planes, per_rail, per_plane)}
            for k, ports in enumerate(port_list):
                for j, cell in enumerate(ports):
                    rail = k % rails if per_rail else None
                    plane = j % planes if per_plane else None
                    number = place(index, places[k, j], t0.down_ports,
                                   prior(index, places[k, j]) if prior else None)[0] \
                        if t0 else 0
                    wanted.append((f"{gid}:{cell}", (rail, plane, number), k, j,
                                   port_name(host_paths[h], _member(host, "nic"), k, j)))
            real = ctx.device_name(host_paths[h])
            canvas.node(gid, (), theme="compute", parts=[host], table_rows=rows,
                        header=(f"{real} (host {h})" if real else f"host {h}")
                        + f" · {host.template} · {watts(power_of(host, cache).si)}",
                        tooltip=f"host {host.path}", shape="plain",
                        suspect=hl.match(host_paths[h]) if hl else None)
        if len(hosts) > MAX_HOSTS:
            canvas.node("more_hosts", [f"{n(len(hosts) - MAX_HOSTS)} more hosts",
                                       Line("name one with --name to see it", small=True)],
                        theme="note")
    if fabric is None:
        canvas.node("nofabric", ["no fabric reaches this part",
                                 Line("NIC ports are drawn unconnected", small=True)],
                    theme="note")
    else:
        scope_text = located.chain()[scope_at].path if scope is not None else fabric.fc.owner
        shown = _scope_text(located, scope_at)
        # its scope instance's groups: they may differ from another's (network_groups)
        # its scope instance's groups: they may differ from another's, and by rail and plane
        size = t0.per_group_of(scope.path if scope is not None else None)

        def mine(rail, plane) -> int:
            return t0.size_of(scope.path, rail, plane) if scope is not None else \
                t0.size(None, rail, plane)
        with canvas.cluster("tier", [f"tier {t0.name} of {fabric.inst.template}",
                                     Line(f"{size} per {_group_axes(t0)} in {shown}",
                                          small=True)],
                            theme="rail", parts=[fabric.tier_insts[0]],
                            tooltip=f"tier {t0.name} of {fabric.fc.fabric} ({scope_text})"):
            for tail, key, k, j, _ in sorted(wanted, key=lambda w: (w[1], w[0])):
                if key in switches:
                    continue
                rail, plane, number = key
                gid = f"sw_{'x' if rail is None else rail}_{'x' if plane is None else plane}" \
                      f"_{number}"
                where = []
                if rail is not None:
                    where.append(f"rail {rail}")
                if plane is not None:
                    where.append(f"plane {plane_name(plane)}")
                named = ctx.device_name(
                    TierKey(fabric.fc.fabric, t0.name, axis, rail, plane).switch(number))
                lines = [f"{t0.name} {' · '.join(where)}".strip()
                         + (f" · {named}" if named else ""),
                         Line(f"#{number} of {n(mine(rail, plane))} · {t0.switch}",
                              small=True)]
                if t0.up_ports:
                    lines.append(Line(f"↑ {links(t0.up_ports, t0.up_speed)} to "
                                      f"{fabric.tiers[1].name if len(fabric.tiers) > 1 else 'up'}",
                                      small=True))
                failed = ctx.fabric_failed(fabric.fc.fabric, t0.name, rail, plane)
                names[key] = TierKey(fabric.fc.fabric, t0.name, axis, rail, plane).switch(number)
                switches[key] = canvas.node(gid, lines, theme="network",
                                            parts=[fabric.tier_insts[0]], failed=failed or None,
                                            tooltip=f"{t0.name} {' '.join(where)} #{number}",
                                            suspect=hl.match(names[key]) if hl else None)
        for tail, key, k, j, port in wanted:
            rail, plane, number = key
            failed = ctx.fabric_failed(fabric.fc.fabric, t0.name, rail, plane)
            colour = PLANE_EDGE[(plane or 0) % len(PLANE_EDGE)]
            mark = (hl.match(port) or hl.match_link(port, names[key])) if hl else None
            canvas.edge(tail + ":e", switches[key] + ":w", "", theme="network", colour=colour,
                        failed=failed, dir="none", suspect=mark,
                        tooltip=f"{tail.split(':')[0].replace('host', 'host ')} NIC {k} port "
                                f"{chr(ord('a') + j)} -> {t0.name}"
                                + (f" rail {rail}" if rail is not None else "")
                                + (f" plane {plane_name(plane)}" if plane is not None else "")
                                + f" #{number}")
    order = [switches[k] for k in sorted(switches, key=lambda k: tuple(
        -1 if x is None else x for x in k))]
    with canvas.same_rank():
        for a, b in zip(order, order[1:]):
            canvas.here.edge(a, b, style="invis")
    notes = []
    if fabric is not None:
        notes.append(f"NIC k is on rail k mod {fabric.fc.rails}; port a on plane A, port b on "
                     f"plane B" if fabric.planes > 1 else
                     f"NIC k is on rail k mod {fabric.fc.rails}")
        notes.append("a switch's number follows from the host's position in its "
                     f"{fabric.tiers[0].scope}")
    entries = [("compute", "a host: GPUs, NICs and one cell per NIC port")]
    if fabric is not None:
        entries.append(("network", f"first-tier switch ({t0.name}); edge colour: plane"))
    canvas.finish(entries, notes)
    return canvas


def _scope_text(located, scope_at: int) -> str:
    chain = located.chain()
    out = chain[0].template
    for st in located.steps[:scope_at]:
        out += f".{st.member}" + (f"[{st.index}]" if st.index is not None else "")
    return out


def _member(host: Instance, kind: str) -> str:
    """The member of a host that holds its GPUs or NICs (the rank map's names use it)."""
    for m in host.members:
        kinds = {i.kind for _, i in m.value.flat()} if isinstance(m.value, Group) else \
            {m.value.kind} if isinstance(m.value, Instance) else set()
        if kind in kinds:
            return m.name
    return kind + "s"


def _host_rows(ctx, host: Instance, path: str, rails: int, planes: int, hl=None):
    """Table rows: GPU i | NIC i | a | b ..., and the port cells of each NIC (a suspect of the
    diagnosis in red)."""
    gpus = group_of(host, ("gpu",), ctx.cache).items(10**6) or []
    gpu_member, nic_member = _member(host, "gpu"), _member(host, "nic")
    nics = group_of(host, ("nic",), ctx.cache).items(10**6) or []
    rows, ports = [], []
    width = 1
    for nic in nics:
        q = nic.field("ports")
        width = max(width, int(q.si) if hasattr(q, "si") else 1)
    for i in range(min(MAX_ROWS, max(len(gpus), len(nics)))):
        row = []
        mark = hl.match(f"{path}.{gpu_member}[{i}]") if hl and i < len(gpus) else None
        row.append((f"GPU {i} · {gpus[i].template}" + (" ● suspect" if mark else "")
                    if i < len(gpus) else "",
                    {"bgcolor": RED_FILL if mark else "#ffffff", "align": "LEFT",
                     **({"colour": RED} if mark else {})}))
        if i < len(nics):
            nic = nics[i]
            q = nic.field("ports")
            count = int(q.si) if hasattr(q, "si") else 1
            hit = hl is not None and any(hl.match(port_name(path, nic_member, i, j))
                                         for j in range(count))
            row.append((f"NIC {i} · {speed(nic.field('port_speed'))}" + (" ●" if hit else ""),
                        {"align": "LEFT", **({"colour": RED, "bgcolor": RED_FILL}
                                             if hit else {})}))
            cells = []
            for j in range(count):
                port = f"n{i}p{j}"
                cells.append(port)
                colour = PLANE_EDGE[(j % planes) % len(PLANE_EDGE)] if planes > 1 else "#1565c0"
                mark = hl.match(port_name(path, nic_member, i, j)) if hl else None
                row.append((chr(ord("a") + j), {"port": port,
                                                "bgcolor": RED_FILL if mark else "#ffffff",
                                                "border": "1", "colour": RED if mark else colour,
                                                "align": "CENTER"}))
            ports.append(cells)
        rows.append(row)
    extra = max(len(gpus), len(nics)) - MAX_ROWS
    if extra > 0:
        rows.append([(Line(f"and {n(extra)} more", small=True), {})])
    return rows, ports


def _int(q, default: int) -> int:
    return int(q.si) if hasattr(q, "si") else default


def _group_axes(t) -> str:
    """What one group of a tier is split by: `rail and plane`, `rail`, `plane` or `group`."""
    axes = [a for a in ("rail", "plane") if a in t.per]
    return " and ".join(axes) or "group"
