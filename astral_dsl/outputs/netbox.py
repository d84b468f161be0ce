"""`astral export --netbox DIR`: the design as NetBox's bulk import takes it (NetBox 4.x, one CSV
per object type, in the order to import them, and the device types as YAML in the
netbox-community devicetype-library's format, interfaces included):

    sites.csv, locations.csv (halls, pods, rows and blocks, nested), racks.csv,
    manufacturers.csv, device_roles.csv, device_types.csv (and device-types/VENDOR/MODEL.yaml),
    devices.csv (hosts and switches), cables.csv (each host port to its first-tier switch, each
    switch's uplinks to the tier above: analyses/cabling.py), power_panels.csv, power_feeds.csv

Devices are named by the design's patterns or its inventory (analyses/inventory.py, fleet.py),
else by their paths; every device's `description` is its model path, which an inventory of the
exported devices can bind by (`columns { path = "description" }`). A cable's ends name their
sites beside their devices (`side_a_site`, `side_b_site`): NetBox's import finds a cable's
device by its name in that site, and a device's name is unique per site only (an inventory
may give a device of each site one name). The interfaces of a device
come with its device type (NetBox makes them from the type's interface templates), so there is
no interfaces.csv to import twice. A switch's interfaces are its tier's ports, p1.. its down
ports, then its uplinks, then any the model has beyond them; a tier whose ports differ from the
model's own (200 Gb/s breakouts of a 400 Gb/s switch) gets a device type of its own, named
after the model and its tiers. The numbers NetBox requires are written from the design (a
rack's `width` and `units`, a device type's `units`, a feed's `voltage`, amperage and
`max_utilization`), derived from it where the physics says so, or assumed with W707 at the
declaration (netbox_required.py), and checked against the bounds of NetBox's fields
(netbox_ranges.py: E709; a feed NetBox cannot hold is left out, W709); netbox_power.py makes the power panels and feeds, netbox_csv.py writes
the CSV files. Same design, same files,
byte for byte."""
from __future__ import annotations

import functools
import os
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from astral_dsl import records
from astral_dsl.analyses.inventory import Part, interface_names, owner_replicas, parts, switches
from astral_dsl.outputs.netbox_csv import STATUS, write_csv
from astral_dsl.outputs.netbox_lengths import cable_bound, too_long
from astral_dsl.outputs.netbox_names import distinct, same_device_name, same_maker, \
    same_panel_name, slug, slugs
from astral_dsl.outputs.netbox_power import power
from astral_dsl.outputs.netbox_ranges import Bounds
from astral_dsl.outputs.netbox_required import Assumed, rack_height, rack_width, type_height, \
    wrong_widths
from astral_dsl.regularfile import created
from astral_dsl.units import Quantity

UNSPECIFIED = "Unspecified"      # a device type whose template declares no `vendor`
ROLES = {"host": ("GPU server", "gpu-server", "4caf50"), "switch": ("Switch", "switch",
                                                                      "2196f3")}
# NetBox interface types (dcim.choices.InterfaceTypeChoices) for what a port declares
ETHERNET = {(100e9, "qsfp28"): "100gbase-x-qsfp28", (200e9, "qsfp56"): "200gbase-x-qsfp56",
            (400e9, "qsfp_dd"): "400gbase-x-qsfpdd", (400e9, "osfp"): "400gbase-x-osfp",
            (400e9, "qsfp112"): "400gbase-x-qsfp112", (800e9, "osfp"): "800gbase-x-osfp",
            (800e9, "qsfp_dd"): "800gbase-x-qsfpdd"}
INFINIBAND = {100e9: "infiniband-edr", 200e9: "infiniband-hdr", 400e9: "infiniband-ndr",
              800e9: "infiniband-xdr"}


@records.frozen
class Written:
    files: Tuple[Tuple[str, int], ...]       # (file below DIR, rows)
    notes: Tuple[str, ...]
    diagnostics: Tuple = ()     # E705-E709: nothing was written (netbox_lengths, _names, ...)
    warnings: Tuple = ()        # W707: a number NetBox requires that was assumed; W709


def write(design, directory: str, devices=None) -> Written:
    """Write the files below `directory` (created); `devices`: analyses.devices.Devices. A
    value longer than NetBox takes (E705), two devices of a site named alike but for case
    (E706), a rack width NetBox has no choice for (E707), two power panels of a site named
    alike (E708), or a number outside the range of its NetBox field (E709, netbox_ranges.py), is
    said instead, and nothing is written; a number NetBox requires that the design does not
    state is assumed (W707); a feed's number NetBox cannot hold is rounded, or the feed left
    out (W709)."""
    found = list(parts(design))
    owners = owner_replicas(design, found)
    by_path = {p.path: p for p in found}
    sws = list(switches(design, owners, by_path))
    names = _names(found, sws, devices)
    notes: List[str] = []
    files: List[Tuple[str, int]] = []
    hosts = [p for p in found if p.kind == "host"]
    said = Assumed()
    named_apart: List[str] = []          # their notes, said after the racks' (as before)
    types = same_maker(_device_types(hosts, sws, said), named_apart)
    makers = slugs(t.manufacturer for t in types.values())
    types = distinct(types, makers, named_apart)
    bounds = Bounds()
    panels, feeds = power(design, found, names, said, bounds)
    made = {id(t): (inst, t) for inst, t in [(p.instance, types[id(p.instance)]) for p in hosts]
            + [(s.model, types[_switch_key(s)]) for s in sws if s.model is not None]}
    for inst, t in made.values():
        bounds.device_type(inst, t.u_height)
    racks = [p for p in found if p.kind == "rack"]
    tops = _tops(hosts)
    sizes = [(rack_width(p.instance, said), rack_height(p.instance, tops.get(p.path), said))
             for p in racks]
    for p, (_width, height) in zip(racks, sizes):
        bounds.rack(p.instance, height)
    refused = too_long(design, found, sws, names, made.values(), devices, panels, feeds,
                       lambda: (cable_bound(found, sws), lambda: _cables(design, owners, names,
                                                                         by_path, [])))
    refused += same_device_name(found, sws, names, devices, design.file)
    refused += wrong_widths(racks)
    refused += same_panel_name(panels, by_path, design.file)
    refused += bounds.diagnostics(design.file)
    if refused:
        return Written((), (), tuple(refused))
    os.makedirs(directory, exist_ok=True)

    def out(name: str, header: Sequence[str], rows: Iterable[Sequence]):
        files.append((name, write_csv(os.path.join(directory, name), header, rows)))

    sites = [p for p in found if p.kind == "site"]
    locations = [p for p in found if p.kind in ("hall", "pod", "row", "block")]
    places = slugs(p.path for p in sites + locations)
    out("sites.csv", ("name", "slug", "status", "description"),
        ((names[p.path], places[p.path], STATUS, p.path) for p in sites))
    out("locations.csv", ("site", "parent", "name", "slug", "status", "description"),
        ((names[p.site], names[_up(p, by_path)] if _up(p, by_path) else "", names[p.path],
          places[p.path], STATUS, p.path) for p in locations))
    out("racks.csv", ("site", "location", "name", "status", "width", "u_height", "description"),
        ((names[p.site], names[p.location] if p.location else "", names[p.path], STATUS,
          width, height, p.path) for p, (width, height) in zip(racks, sizes)))
    notes += named_apart
    kinds = sorted({t.slug: t for t in types.values()}.values(), key=lambda t: t.slug)
    unnamed = sorted(t.model for t in kinds if t.manufacturer == UNSPECIFIED)
    if unnamed:
        notes.append(f"device type(s) {', '.join(unnamed)}: no `vendor` declared, manufacturer "
                     f"`{UNSPECIFIED}`")
    flat = sorted({types[id(p.instance)].model for p in hosts if p.position is not None
                   and types[id(p.instance)].u_height == "0"})
    if flat:
        notes.append(f"devices.csv: host(s) of device type(s) {', '.join(flat)} are 0 U: in their "
                     "racks without a position, as NetBox mounts a 0 U device")
    out("manufacturers.csv", ("name", "slug"), sorted(makers.items()))
    out("device_roles.csv", ("name", "slug", "color"), sorted(ROLES.values()))
    out("device_types.csv", ("manufacturer", "model", "slug", "u_height", "comments"),
        ((t.manufacturer, t.model, t.slug, t.u_height, t.comments) for t in kinds))
    for t in kinds:
        rel = os.path.join("device-types", makers[t.manufacturer], f"{t.slug}.yaml")
        path = os.path.join(directory, rel)
        with open(created(path, directory), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(_yaml(t))
        files.append((rel.replace(os.sep, "/"), len(t.interfaces)))
    serial = {p: getattr(devices.by_path.get(p), "serial", None) for p in names} \
        if devices else {}
    tags = {p: getattr(devices.by_path.get(p), "asset_tag", None) for p in names} \
        if devices else {}
    out("devices.csv", ("role", "manufacturer", "device_type", "name", "serial", "asset_tag",
                        "status", "site", "location", "rack", "position", "face",
                        "description"),
        _device_rows(hosts, sws, types, names, serial, tags, by_path))
    out("cables.csv", ("side_a_site", "side_a_device", "side_a_type", "side_a_name",
                       "side_b_site", "side_b_device", "side_b_type", "side_b_name", "status",
                       "description"),
        _cables(design, owners, names, by_path, notes))
    out("power_panels.csv", ("site", "location", "name", "description"), panels)
    out("power_feeds.csv", ("site", "power_panel", "name", "status", "type", "supply",
                            "phase", "voltage", "amperage", "max_utilization", "description"),
        feeds)
    if bounds.left_out:
        notes.append(f"power_feeds.csv: {len(bounds.left_out):,} feed(s) of feeder(s) "
                     f"{', '.join(sorted(set(bounds.left_out)))} left out: NetBox cannot hold "
                     f"their voltage or amperage (W709)")
    if bounds.rounded:
        each = [f"{path} {amps:,.2f} -> {whole:,} A"
                for path, (amps, whole) in sorted(bounds.rounded.items())]
        notes.append("power_feeds.csv: amperages derived from a feeder's capacity at its "
                     "voltage (or its cable's ampacity) are written rounded down to whole "
                     "amperes, as NetBox holds them: " + ", ".join(each[:5])
                     + (f" and {len(each) - 5:,} more" if len(each) > 5 else ""))
    return Written(tuple(files), tuple(notes), (),
                   tuple(said.diagnostics()) + tuple(bounds.diagnostics(design.file, "W709")))


def _names(found: List[Part], sws, devices) -> Dict[str, str]:
    out = {p.path: p.name for p in found}
    out.update((s.path, s.name) for s in sws)
    if devices:
        for path, d in devices.by_path.items():
            if path in out:
                out[path] = d.name
    return out


def _up(p: Part, by_path) -> Optional[str]:
    """The location holding a location (None: it is right below the site)."""
    parent = by_path.get(p.parent) if p.parent else None
    while parent is not None and parent.kind not in ("hall", "pod", "row", "block"):
        parent = by_path.get(parent.parent) if parent.parent else None
    return parent.path if parent is not None else None


def _tops(hosts: List[Part]) -> Dict[str, float]:
    """rack path -> the highest rack unit its placed hosts take."""
    out: Dict[str, float] = {}
    for p in hosts:
        if p.rack is not None and p.position is not None:
            top = p.position - 1 + p.instance.field("units").value_in("U")
            if top > out.get(p.rack, 0.0):
                out[p.rack] = top
    return out


@records.frozen
class DeviceType:
    manufacturer: str
    model: str
    slug: str
    u_height: str
    comments: str
    interfaces: Tuple[Tuple[str, str], ...]       # (name, NetBox type)


def _device_types(hosts: List[Part], sws, said) -> Dict[object, DeviceType]:
    """One device type per distinct host template (by the instance), and per switch model and
    port layout (by _switch_key: a tier whose ports are not the model's own gets its own)."""
    out: Dict[object, DeviceType] = {}
    cache: Dict = {}
    for p in hosts:
        inst = p.instance
        if id(inst) in out:
            continue
        ports = tuple((name, _port_type(nic)) for nic, name in _nic_ports(inst, cache))
        out[id(inst)] = _type(inst, ports, said)
    layouts: Dict[tuple, Tuple[object, tuple]] = {}     # switch key -> (model, interfaces)
    tiers: Dict[tuple, set] = {}                  # (model, interfaces) -> the tiers using them
    for s in sws:
        if s.model is not None:
            key = _switch_key(s)
            if key not in layouts:
                layouts[key] = (s.model, _layout(s.model, s.ports))
            inst, layout = layouts[key]
            tiers.setdefault((id(inst), layout), set()).add(s.tier)
    made: Dict[tuple, DeviceType] = {}
    for key, (inst, layout) in layouts.items():
        kind = (id(inst), layout)
        if kind not in made:
            own = layout == _layout(inst, ())
            made[kind] = _type(inst, layout, said,
                               "" if own else f" ({', '.join(sorted(tiers[kind]))})")
        out[key] = made[kind]
    return out


def _switch_key(s) -> tuple:
    d, ds, u, us = s.ports or (0, None, 0, None)
    return (id(s.model), d, getattr(ds, "si", None), u, getattr(us, "si", None))


def _layout(inst, ports) -> Tuple[Tuple[str, str], ...]:
    """A switch's interfaces: its tier's down ports, then uplinks (`ports`: down, down speed,
    up, up speed), then the model's ports beyond them, at the model's speed."""
    count = inst.field("ports")
    n = int(count.si) if isinstance(count, Quantity) else 0
    down, down_speed, up, up_speed = ports or (0, None, 0, None)
    kinds = [_port_type(inst, down_speed)] * down + [_port_type(inst, up_speed)] * up
    kinds += [_port_type(inst)] * max(0, n - len(kinds))
    return tuple((f"p{i}", kind) for i, kind in enumerate(kinds, 1))


def _nic_ports(host, cache):
    from astral_dsl.analyses.rank_placement import _members

    _, _, nics = _members(host, cache)
    for k, _j, name in interface_names(host, cache):
        yield nics[k], name


def _type(inst, interfaces, said, suffix: str = "") -> DeviceType:
    vendor = inst.field("vendor")
    # a vendor of spaces alone is none (NetBox refuses a blank name)
    manufacturer = vendor if isinstance(vendor, str) and vendor.strip() else UNSPECIFIED
    source = inst.field("source")
    comments = f"astral template {inst.template}" + (f"; source: {source}"
                                                      if isinstance(source, str) else "")
    model = inst.template + suffix
    return DeviceType(manufacturer, model, slug(f"{manufacturer}-{model}"),
                      type_height(inst, said), comments, interfaces)


def _port_type(inst, speed=None) -> str:
    """The NetBox interface type of a NIC's or switch's ports, from their declared speed (or
    `speed`, a tier's), form factor and protocol; `other` when they do not say enough."""
    speed = speed if isinstance(speed, Quantity) else inst.field("port_speed")
    protocol = getattr(inst.field("protocol"), "name", None)
    form = getattr(inst.field("form_factor"), "name", None)
    if not isinstance(speed, Quantity):
        return "other"
    if protocol == "infiniband":
        return INFINIBAND.get(speed.si, "other")
    return ETHERNET.get((speed.si, form), "other")


def _device_rows(hosts, sws, types, names, serial, tags, by_path):
    for p in hosts:
        t = types[id(p.instance)]
        # a 0 U device has no position in NetBox (Device.clean() refuses one)
        position = "" if p.position is None or t.u_height == "0" else f"{p.position:g}"
        yield (ROLES["host"][0], t.manufacturer, t.model, names[p.path], serial.get(p.path) or "",
               tags.get(p.path) or "", STATUS, names[p.site],
               names[p.location] if p.location else "", names[p.rack] if p.rack else "",
               position, "front" if position else "", p.path)
    for s in sws:
        t = types.get(_switch_key(s))
        if t is None:
            continue
        yield (ROLES["switch"][0], t.manufacturer, t.model, names[s.path],
               serial.get(s.path) or "", tags.get(s.path) or "", STATUS, names[s.site], "", "",
               "", "", s.path)


def _cables(design, owners, names, by_path, notes):
    from astral_dsl.analyses.cabling import host_links, tier_links

    cache: Dict = {}
    # per host model: (nic, port) -> (its interface, " nic K port J -- "); the switch ports'
    # names made once (two million cables of the reference design)
    ports: Dict[int, Dict[Tuple[int, int], Tuple[str, str]]] = {}
    p_, n_ = port_labels()
    groups: Dict = {}
    for host_links_ in host_links(design, owners, groups):
        path = host_links_.host
        host = by_path.get(path)
        if host is None:
            continue
        key = id(host.instance)
        if key not in ports:
            ports[key] = {(k, j): (name, f" nic {k} port {j} -- ")
                          for k, j, name in interface_names(host.instance, cache)}
        interfaces, device, site = ports[key], names[path], names[host.site]
        for nic, port, switch, switch_port in host_links_.links:
            if switch in names:
                interface, between = interfaces[(nic, port)]
                yield (site, device, "dcim.interface", interface, site, names[switch],
                       "dcim.interface",
                       p_[switch_port] if 0 <= switch_port < PORTS else f"p{switch_port + 1}",
                       STATUS, path + between + switch)
    short: List = []
    for lower, lower_port, upper, upper_port in tier_links(design, owners, groups, short):
        if lower in names and upper in names:
            n = n_[lower_port] if 0 <= lower_port < PORTS else str(lower_port + 1)
            site = names[lower.split(".", 1)[0]]        # (a fabric's switches: one site)
            yield (site, names[lower], "dcim.interface", "p" + n, site, names[upper],
                   "dcim.interface",
                   p_[upper_port] if 0 <= upper_port < PORTS else f"p{upper_port + 1}",
                   STATUS, f"{lower} port {n} -- {upper}")
    for s in short:
        notes.append(f"cables.csv: {s.uplinks:,} uplink(s) of tier `{s.tier}` of {s.fabric} "
                     "found no free down port on the tier above: not cabled")


PORTS = 4096        # switch ports whose names are made once (the reference's have 128)


@functools.lru_cache(maxsize=1)
def port_labels() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The names of switch ports 0 .. PORTS - 1: `pN` and `N` (N from 1)."""
    return tuple(f"p{i + 1}" for i in range(PORTS)), tuple(str(i + 1) for i in range(PORTS))


def _yaml(t: DeviceType) -> str:
    """A devicetype-library YAML file (written by hand: plain scalars, quoted)."""
    lines = [f"manufacturer: {_q(t.manufacturer)}", f"model: {_q(t.model)}",
             f"slug: {_q(t.slug)}"]
    if t.u_height:
        lines.append(f"u_height: {t.u_height}")
    lines.append(f"comments: {_q(t.comments)}")
    if t.interfaces:
        lines.append("interfaces:")
        for name, kind in t.interfaces:
            lines.append(f"  - name: {_q(name)}")
            lines.append(f"    type: {_q(kind)}")
    return "---\n" + "\n".join(lines) + "\n"


def _q(text: str) -> str:
    """A YAML double-quoted scalar of exactly `text`: a line break in a double-quoted scalar is
    folded into a space (a vendor "A\\nB" came back as "A B", unlike the CSV's), and the control
    characters YAML does not allow make the file unreadable, so both are escaped (`\\u000a`)."""
    return '"' + "".join(_YAML_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if _yaml_escaped(ch)
                                                   else ch) for ch in str(text)) + '"'


_YAML_ESCAPES = {"\\": "\\\\", '"': '\\"'}


def _yaml_escaped(ch: str) -> bool:
    """Not printable in YAML (C0 and C1 controls, DEL) or a line break to it (U+2028, U+2029)."""
    return ch < " " or "\x7f" <= ch <= "\x9f" or ch in "\u2028\u2029\ufeff"
