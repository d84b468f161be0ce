"""The design's devices, replica by replica, with their names: every grouping part (site, hall,
pod, row, block, rack) and host at its path (`Astral.pods[3].rows[5].racks[3].hosts[0]`), every
switch of every fabric tier (named as the rank map names it: `Astral.pods[0].fabric.rail[3]
.plane[A].tor[2]`), a host's NIC ports. Each is named by the pattern the design declares on it
(`name = "gpu-{pod}-{rack:03}-{host}"`, model/names.py), else by its path; an inventory
(bind(), below) may give it its real name, serial and asset tag.

The walk expands the replication the model keeps symbolic, so it costs one step per replica
(the reference design: 8 pods, 1,024 rows, 16,384 racks, 65,536 hosts, 20,480 switches); it is
asked for only by what lists devices (`astral export --netbox`, an inventory's binding)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses.walk import replicas
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.names import render
from astral_dsl.model.values import plane_label
from astral_dsl.units import Quantity

GROUPING = ("site", "hall", "pod", "row", "block", "rack")


@records.frozen
class Part:
    """One replica of a grouping part or host."""
    path: str
    kind: str
    instance: Instance
    name: str                         # by the design's pattern, else the path
    parent: Optional[str]             # the path of the part holding it
    site: str                         # the site's path
    location: Optional[str]           # the nearest hall, pod, row or block holding it
    rack: Optional[str] = None        # a host's rack
    position: Optional[float] = None  # a host's lowest rack unit, when the units are declared
    missing: Tuple[str, ...] = ()     # placeholders of its pattern it does not have


@records.frozen
class Switch:
    path: str                         # fabric_names' name of the switch
    name: str
    model: Optional[Instance]         # the switch model (the tier's `switch`)
    tier: str
    fabric: str                       # the fabric's path, for the owner's replica
    owner: str                        # the owner's replica path
    site: str
    missing: Tuple[str, ...] = ()
    ports: Tuple = ()                 # the tier's (down ports, down speed, up ports, up speed)
    declared: Optional[Instance] = None  # the tier's declaration (its `name` pattern's span)


def parts(design: Design) -> Iterator[Part]:
    """Every grouping part and host, replica by replica, in the design's order (a part before
    what it holds)."""
    for root in design.roots:
        values = {"site": root.path}
        yield _part(root, root.path, "site", values, None, root.path, None, None, None)
        yield from _below(root, root.path, values, root.path, None, None)


def _below(inst: Instance, path: str, values, site: str, location, rack) -> Iterator[Part]:
    units: Optional[float] = 0.0         # rack units taken by the hosts below so far
    for cpath, index, child in replicas(inst, path):
        if child.kind not in GROUPING and child.kind != "host":
            continue
        inner = dict(values)
        inner[child.kind] = index if index is not None else 0
        inner["index"] = index if index is not None else 0
        position = None
        if child.kind == "host" and rack is not None:
            height = child.field("units")
            if isinstance(height, Quantity) and units is not None:
                position = 1 + units
                units += height.value_in("U")
            else:
                units = None                 # a host of unknown height: no positions after
        yield _part(child, cpath, child.kind, inner, path, site, location,
                    rack if child.kind == "host" else None, position)
        if child.kind != "host":
            yield from _below(child, cpath, inner, site,
                              cpath if child.kind in ("hall", "pod", "row", "block")
                              else location, cpath if child.kind == "rack" else rack)


def _part(inst, path, kind, values, parent, site, location, rack, position) -> Part:
    name, missing = named(inst.field("name"), values, path)
    return Part(path, kind, inst, name, parent, site, location, rack, position, missing)


def named(pattern, values: Dict, path: str) -> Tuple[str, Tuple[str, ...]]:
    """The name a pattern (a string field, None when not declared) gives, else the path."""
    if not isinstance(pattern, str):
        return path, ()
    return render(pattern, values)


def switches(design: Design, owners: Dict[str, List[str]],
             by_path: Optional[Dict[str, Part]] = None) -> Iterator[Switch]:
    """Every switch of every fabric tier, for each replica of the fabric's owner (`owners`:
    canonical owner path -> replica paths, from parts(); `by_path`: parts() by path, for the
    kinds on the owner's path its switches' patterns may name, `{pod}` of a pod's fabric)."""
    from astral_dsl.analyses.network import fabric_counts
    from astral_dsl.analyses.walk import Resolver
    from astral_dsl.model.rollup import count_of
    from astral_dsl.model.tier_groups import kinds_of

    cache: Dict = {}
    resolve = Resolver(design)
    for fc in fabric_counts(design, cache):
        owner = design.instance(fc.owner)
        if owner is None:
            continue
        site = fc.owner.split(".", 1)[0].split("[", 1)[0]
        for replica in owners.get(fc.owner, [fc.owner]):
            fabric = fc.fabric.replace(fc.owner, replica, 1)
            above = _kinds_above(replica, by_path or {})
            for t in fc.tiers:
                tier = resolve.by_path.get(t.switch)
                decl = _tier(design, fc.fabric, t.name)
                pattern = decl.field("name") if decl is not None else None
                kinds = kinds_of(t.scope)
                scoped = owner.kind not in kinds and t.scope is not None
                scopes = [None] if not scoped else [
                    (t.scope, i) for i in range(count_of(owner, kinds, cache))]
                ports = (t.down_ports, t.down_speed, t.up_ports, t.up_speed)
                # the rails and planes a NIC port reaches: the others hold no switch (W610)
                rails = range(fc.rails_used or fc.rails) if "rail" in t.per else [None]
                planes = range(fc.planes_used or fc.planes) if "plane" in t.per else [None]
                for scope in scopes:
                    for rail in rails:
                        for plane in planes:
                            for index in range(t.size(scope[1] if scope else None, rail,
                                                      plane)):
                                yield _switch(fabric, replica, site, t.name, tier, pattern,
                                              scope, rail, plane, index, ports, decl, above)


def _switch(fabric, owner, site, tier_name, model, pattern, scope, rail, plane, index,
            ports=(), declared=None, above=None):
    from astral_dsl.model.values import fabric_path

    path = fabric_path(fabric, scope, rail, plane, tier_name, index)
    values: Dict = dict(above or {})
    values.update(site=site, index=index)
    if scope is not None:
        values[scope[0]] = scope[1]
    if rail is not None:
        values["rail"] = rail
    if plane is not None:
        values["plane"] = plane_label(plane)
    name, missing = named(pattern, values, path)
    return Switch(path, name, model, tier_name, fabric, owner, site, missing, ports, declared)


def _kinds_above(owner: str, by_path: Dict[str, Part]) -> Dict[str, int]:
    """The kinds on the path of a fabric's owner replica and their indices (`Hall.pods[3]`:
    {"pod": 3}), as its parts' patterns have them."""
    values: Dict[str, int] = {}
    p = by_path.get(owner)
    while p is not None and p.kind != "site":
        index = p.path.rsplit("[", 1)[1][:-1] if p.path.endswith("]") else "0"
        values.setdefault(p.kind, int(index))          # (the nearest, as _below gives it)
        p = by_path.get(p.parent) if p.parent else None
    return values


def _tier(design: Design, fabric: str, tier: str) -> Optional[Instance]:
    return design.instance(f"{fabric}.{tier}")


def interface_names(host: Instance, cache: Dict) -> List[Tuple[int, int, str]]:
    """(NIC index, port index, interface name) of a host's NIC ports, in order: the NIC's
    pattern (`"eth{nic}"`), else `nics[k].port[a]` as in paths."""
    return [(k, j, name) for k, j, name, _, _ in _interfaces(host, cache)]


def _interfaces(host: Instance, cache: Dict) -> Iterator[tuple]:
    """(NIC index, port index, interface name, missing placeholders, the NIC) of its ports."""
    from astral_dsl.analyses.rank_placement import _members
    from astral_dsl.model.values import port_label

    _, member, nics = _members(host, cache)
    for k, nic in enumerate(nics):
        ports = nic.field("ports")
        for j in range(int(ports.si) if isinstance(ports, Quantity) else 1):
            default = f"{member}[{k}].port[{port_label(j)}]"
            name, missing = named(nic.field("name"), {"nic": k, "port": j}, default)
            yield k, j, name, missing, nic


def name_of_nic(host: Instance, interface: str) -> Optional[Instance]:
    """The NIC of `host` whose `name` pattern names its port `interface` (None: none does)."""
    return next((nic for _, _, name, _, nic in _interfaces(host, {})
                 if name == interface and isinstance(nic.field("name"), str)), None)


def _port_path(host: Instance, k: int, j: int, cache: Dict) -> str:
    from astral_dsl.analyses.rank_placement import _members
    from astral_dsl.model.values import port_label

    return f"{_members(host, cache)[1]}[{k}].port[{port_label(j)}]"


def interface_clashes(hosts: Iterable[Instance], bad: Dict, file) -> Tuple:
    """E237 for a NIC pattern that gives two ports of a host one interface name (once per
    pattern, with the first two ports and how many more); a placeholder a port does not have
    joins `bad` (E235), and its ports are not counted."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    groups: Dict[Any, list] = {}
    cache: Dict = {}
    for host in hosts:
        first: Dict[str, Tuple[int, int]] = {}
        for k, j, name, missing, nic in _interfaces(host, cache):
            pattern = nic.field("name")
            if missing:
                bad.setdefault(pattern, (f"{host.template}'s {_port_path(host, k, j, cache)}",
                                         missing, nic.span_of("name")))
                continue
            other = first.setdefault(name, (k, j))
            if other != (k, j) and isinstance(pattern, str):
                entry = groups.setdefault(nic.span_of("name"),
                                          [pattern, host, (k, j), other, name, 0])
                entry[5] += 1
    out = []
    for span, (pattern, host, (k, j), (k0, j0), name, count) in groups.items():
        more = f"; {count - 1:,} more port{'s' * (count > 2)} it names as another" \
            if count > 1 else ""
        need = "`{port}`: its NIC has more ports than one" if k == k0 else \
            "`{nic}`: the host has more NICs than one"
        out.append(Diagnostic(
            "E237", Severity.ERROR, f"the name pattern `{pattern}` gives "
            f"{_port_path(host, k, j, cache)} of host {host.template} the interface name "
            f"`{name}`, as it gives {_port_path(host, k0, j0, cache)}{more}: NetBox takes an "
            "interface's name once per device (dcim.Interface and dcim.InterfaceTemplate: "
            "UniqueConstraint of device, or device type, and name)", span,
            f"add {need} (`\"ib{{nic}}p{{port}}\"`)", file=file))
    return tuple(out)


# ---- what an inventory binds to ---------------------------------------------------------------
@records.frozen
class Named:
    named: Dict[str, Tuple[str, str]]     # path -> (kind, name) of every host, rack and switch
    by_name: Dict[str, str]               # name -> path
    diagnostics: Tuple = ()


def named_parts(design: Design) -> Named:
    """The hosts, racks and switches of the design with their names; E235 for a pattern that
    names a placeholder its part (or NIC port) does not have, E236 for one that gives a part the
    name of another, E237 for a NIC's that gives two ports of a host one name (once per pattern
    each)."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    named: Dict[str, Tuple[str, str]] = {}
    by_name: Dict[str, str] = {}
    bad: Dict[str, Tuple[str, Tuple[str, ...], Any]] = {}
    twice = _Twice(by_name, any(columns_of(i)["path"] is None for i in design.instances
                                if i.kind == "inventory"))
    found = list(parts(design))
    for p in found:
        if p.kind in ("host", "rack"):
            named[p.path] = (p.kind, p.name)
            twice.add(p.path, p.name, p.instance, p.missing, p.site,
                      (p.location,) if p.kind == "rack" else None)
        if p.missing:
            bad.setdefault(p.instance.field("name"),
                           (p.path, p.missing, p.instance.span_of("name")))
    ports = interface_clashes({id(p.instance): p.instance for p in found
                               if p.kind == "host"}.values(), bad, design.file)
    for s in switches(design, owner_replicas(design, found), {p.path: p for p in found}):
        named[s.path] = ("switch", s.name)
        twice.add(s.path, s.name, s.declared, s.missing, s.site)
        if s.missing:
            bad.setdefault(s.declared.field("name"),
                           (s.path, s.missing, s.declared.span_of("name")))
    diags = tuple(Diagnostic(
        "E235", Severity.ERROR, f"the name pattern `{pattern}` names "
        + ", ".join(f"`{{{k}}}`" for k in missing) + f", which {path} does not have",
        span, "a part has the kinds on its path (`{rack}`, `{pod}`...) and `{index}`; a "
              "switch `{site}`, `{index}`, the kinds on its fabric's owner's path (`{pod}` of "
              "a pod's fabric), its tier's scope (`{block}`...) and `{rail}`, `{plane}` where "
              "its tier is per rail or plane; a NIC's port `{nic}` and `{port}`",
        file=design.file)
        for pattern, (path, missing, span) in bad.items())
    return Named(named, by_name, diags + twice.diagnostics(design.file) + ports)


class _Twice:
    """The parts named as one before them was (E236): by the pattern that names the second,
    the first such part, the one it meets, and how many. A part named by its path meets none
    (paths are distinct); one whose pattern lacks a placeholder (E235) is not counted. Where an
    inventory binds its rows by name (`global_`), every part's name is one the design has once;
    else a name is compared where NetBox keeps it unique: a device's (a host's, a switch's)
    with the devices of its site (dcim.Device; cables.csv names each end's site), a rack's with
    the racks of its location (dcim.Rack: UniqueConstraint of location and name; devices.csv
    names a device's rack with its site and location), and each with the other kind's of its
    site: two sites laid out alike, or the racks of each row numbered from 1, are not E236."""

    def __init__(self, by_name: Dict[str, str], global_: bool):
        self.by_name = by_name            # name -> the first part's path (shared with Named)
        self.global_ = global_
        self.first: Dict[tuple, str] = {}    # (where it is one, name) -> the first's path
        self.declared: Dict[str, Any] = {}   # path -> the declaration naming it by a pattern
        self.groups: Dict[Any, list] = {}

    def add(self, path: str, name: str, declared, missing, site: str,
            location: Optional[tuple] = None) -> None:
        """`location`: a rack's (its nearest hall, pod, row or block, in a tuple), None for a
        device."""
        self.by_name.setdefault(name, path)
        if self.global_:
            first = self.first.setdefault(("", name), path)
        elif location is None:            # a device: its site's devices', else a rack's
            first = self.first.setdefault(("device", site, name), path)
            first = self.first.get(("rack", site, name), path) if first == path else first
        else:                             # a rack: its location's racks', else a device's
            first = self.first.setdefault((site, location, name), path)
            first = self.first.get(("device", site, name), path) if first == path else first
            self.first.setdefault(("rack", site, name), path)
        if declared is not None and isinstance(declared.field("name"), str):
            self.declared[path] = declared
        if first == path or missing:
            return
        if path in self.declared:       # (else `name` is its path, which a pattern made first)
            self._add(self.declared[path], path, name, first, self.declared.get(first))
        elif first in self.declared:
            self._add(self.declared[first], first, name, path, None)

    def _add(self, by, path: str, name: str, other: str, other_by) -> None:
        entry = self.groups.setdefault(by.span_of("name"), [by, path, name, other, other_by, 0])
        entry[5] += 1

    def diagnostics(self, file) -> Tuple:
        from astral_dsl.diagnostics import Diagnostic, Severity

        out = []
        for span, (by, path, name, other, other_by, count) in self.groups.items():
            said = f"`{name}`, which is the path of" if other_by is None else "as it names" \
                if other_by.span_of("name") == span else \
                f"as the name pattern `{other_by.field('name')}` names"
            more = f"; {count - 1:,} more part(s) it names as another is named" \
                if count > 1 else ""
            out.append(Diagnostic(
                "E236", Severity.ERROR, f"the name pattern `{by.field('name')}` names {path} "
                f"{said} {other}{more}", span,
                "add the placeholder that tells them apart: the part's own index among its "
                "siblings (`{index}`, `{host}` on a host, `{rack}` on a rack) and the kinds "
                "above it where they repeat (`{pod}`, `{row}`...); a switch's `{rail}`, "
                "`{plane}`", file=file))
        return tuple(out)


def owner_replicas(design: Design, found: List[Part]) -> Dict[str, List[str]]:
    """Canonical path -> the paths of its replicas, for every grouping part."""
    by_instance: Dict[int, List[str]] = {}
    for p in found:
        by_instance.setdefault(id(p.instance), []).append(p.path)
    return {i.path: by_instance[id(i)] for i in design.instances if id(i) in by_instance}


def columns_of(inv: Instance) -> Dict[str, Optional[str]]:
    """The columns an inventory reads (its `columns { ... }` block over the defaults)."""
    from astral_dsl.analyses.fleet import DEFAULT_COLUMNS

    out = dict(DEFAULT_COLUMNS)
    block = inv.member("columns")
    if block is not None:
        for key in out:
            value = block.field(key)
            if isinstance(value, str) and value:
                out[key] = value
    return out
