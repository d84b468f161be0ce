"""The lengths NetBox takes, checked before `astral export --netbox` writes a file (netbox.py): a
name, serial, asset tag or description longer than the NetBox field it fills is E705, and
nothing is written. NetBox's import refuses such a row ("Ensure this value has at most 64
characters"), after the rows before it went in: a design whose paths are long (a host named by
its path, `Site.rows_of_hall_one[0].racks[3].hosts[0]`, past a device name's 64 characters)
gave files that NetBox took in part. One E705 is said for each field of each part of the design
(its `name` pattern, or its declaration), with the first name of its replicas that is too long
and how many are.

The limits are the `max_length` of NetBox's model fields, read from the files of NetBox 4.7.3
(the `netbox` wheel on PyPI, which needs Python 3.12: `pip download --no-deps --python-version
3.12 --only-binary=:all: netbox==4.7.3`): dcim/models/sites.py, racks.py, devices.py,
device_components.py (ComponentModel), device_component_templates.py (ComponentTemplateModel),
power.py; netbox/models/__init__.py for the description (PrimaryModel, and a cable's) and the
name of an organizational or nested model (a manufacturer, a location). Its dcim migrations from
0190_nested_modules (NetBox 4.1's nested modules) on change none of these lengths
(0198_natural_ordering, of 4.2, their collation only): they are NetBox 4.1's to 4.7's."""
from __future__ import annotations

from typing import Dict, Iterable, List

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity, excerpt
from astral_dsl.outputs.tally import Tally, more_like_it

# (what NetBox calls it, its max_length)
SITE = ("a site's name (dcim.Site.name)", 100)
LOCATION = ("a location's name (dcim.Location.name)", 100)
RACK = ("a rack's name (dcim.Rack.name)", 100)
DEVICE = ("a device's name (dcim.Device.name)", 64)
SERIAL = ("a device's serial (dcim.Device.serial)", 50)
ASSET_TAG = ("a device's asset tag (dcim.Device.asset_tag)", 50)
INTERFACE = ("an interface's name (dcim.Interface.name, dcim.InterfaceTemplate.name)", 64)
MANUFACTURER = ("a manufacturer's name (dcim.Manufacturer.name)", 100)
MODEL = ("a device type's model (dcim.DeviceType.model)", 100)
PANEL = ("a power panel's name (dcim.PowerPanel.name)", 100)
FEED = ("a power feed's name (dcim.PowerFeed.name)", 100)
DESCRIPTION = ("a description (the model path; every exported model's `description`)", 200)
NAMED = {"site": SITE, "hall": LOCATION, "pod": LOCATION, "row": LOCATION, "block": LOCATION,
         "rack": RACK, "host": DEVICE}


class _Found:
    """The too-long values, grouped by (limit, span): the first of each, and how many."""

    def __init__(self):
        self.groups = Tally()

    def add(self, limit, text: str, span, where: str, hint: str) -> None:
        if len(text) > limit[1]:
            self.groups.add((limit, span), (text, where, hint))

    def diagnostics(self, file) -> List[Diagnostic]:
        out = []
        for ((what, most), span), (text, where, hint), count in self.groups:
            of = "" if where in text else f"{where}: "      # (a path: the text says it)
            out.append(placed(
                "E705", Severity.ERROR,
                f"{of}`{excerpt(text, 80)}` ({len(text):,} characters{more_like_it(count)}) is "
                f"longer than the {most} characters NetBox takes for {what}: its import would "
                f"refuse the row", span, hint, file))
        return out


PATTERN_HINT = ("declare a shorter `name` pattern on it (`name = \"gpu-{pod}-{rack:03}-{host}\"`,"
                " model/names.py), or shorten its template's and members' names")


def _named_hint(inst) -> str:
    return PATTERN_HINT if isinstance(inst.field("name"), str) else \
        "name it by a pattern (`name = \"gpu-{pod}-{rack:03}-{host}\"`): without one it is " \
        "named by its path"


def too_long(design, found, sws, names: Dict[str, str], types, devices, panels, feeds,
             cables) -> List[Diagnostic]:
    """E705 for each field of each part that the export would write too long. `found`, `sws`:
    the parts and switches (analyses/inventory.py); `names`: path -> exported name; `types`:
    (instance, netbox.DeviceType made from it); `devices`: the inventory's (or None); `panels`,
    `feeds`: their rows; `cables()`: (the longest a cable's description can be, a function
    giving the cables' rows, asked only when that is past the limit)."""
    seen = _Found()
    by_path = {p.path: p for p in found}

    def name(limit, path: str, kind: str, declared, hint: str) -> None:
        """The name of the part at `path` and its description (its path), said at `declared`
        (its `name` pattern or declaration), or the inventory's row that names it."""
        span, row = declared, devices.by_path.get(path) if devices else None
        if row is not None and row.file is not None:
            span, hint = row_span(row), "the inventory's row names it: NetBox takes at most " \
                f"{limit[1]} characters there"
        seen.add(limit, names[path], span, path, hint)
        seen.add(DESCRIPTION, path, declared, path, _path_hint(kind))

    for p in found:
        if p.kind in NAMED:
            name(NAMED[p.kind], p.path, p.kind, p.instance.span_of("name"),
                 _named_hint(p.instance))
    for s in sws:
        tier = s.declared
        name(DEVICE, s.path, "switch", tier.span_of("name") if tier is not None else None,
             _named_hint(tier) if tier is not None else PATTERN_HINT)
    for inst, t in types:
        seen.add(MODEL, t.model, inst.span, inst.template,
                 "shorten the template's name (a device type is named after it)")
        seen.add(MANUFACTURER, t.manufacturer, inst.span_of("vendor"), inst.template,
                 "shorten its `vendor`")
        for name in (name for name, _kind in t.interfaces if len(name) > INTERFACE[1]):
            seen.add(INTERFACE, name, _nic_span(inst, name), inst.template,
                     "declare a shorter `name` pattern on its NICs (`name = \"eth{nic}\"`)")
    for path, device in (devices.by_path.items() if devices else ()):
        span = row_span(device)
        for limit, value in ((SERIAL, device.serial), (ASSET_TAG, device.asset_tag)):
            if value:
                seen.add(limit, value, span, path, "the inventory's row: NetBox takes at most "
                         f"{limit[1]} characters there")
    for _site, _location, name, path in panels:
        part = by_path.get(path)
        seen.add(PANEL, name, part.instance.span_of("name") if part else None, path,
                 _named_hint(part.instance) if part else PATTERN_HINT)
    panel_of = {name: path for _site, _location, name, path in panels}
    for row in feeds:
        name, path = row[2], row[-1]
        span = _feeder_span(by_path.get(panel_of.get(row[1])), path)
        seen.add(FEED, name, span, path, "shorten the feeder's name")
        seen.add(DESCRIPTION, path, span, path, _path_hint("feeder"))
    longest, rows = cables()
    if longest > DESCRIPTION[1]:
        for row in rows():
            first = row[-1].split(" ", 1)[0]
            part = by_path.get(first)
            seen.add(DESCRIPTION, row[-1], part.instance.span if part else None, first,
                     "a cable's description names its two ends' paths: " + _path_hint("cable"))
    return seen.diagnostics(design.file)


def _feeder_span(part, path: str):
    """The declaration of the feeder at `path` (`PART.feeder`, `PART.power.feeder`) of the part
    whose panel feeds it (None: no part)."""
    if part is None:
        return None
    inst = part.instance
    for name in path[len(part.path) + 1:].split("."):
        inner = inst.member(name)
        if inner is None or not hasattr(inner, "span"):
            return inst.span
        inst = inner
    return inst.span


def _path_hint(kind: str) -> str:
    return (f"the {kind}'s path is its description, which an inventory binds by: shorten the "
            f"names of the templates and members on its path")


def _nic_span(host, interface: str):
    """The span of the NIC pattern that names `interface` on `host`, else the host's."""
    from astral_dsl.analyses.inventory import name_of_nic

    nic = name_of_nic(host, interface)
    return nic.span_of("name") if nic is not None else host.span


@records.frozen
class Item:
    """Where an item of a JSON inventory is (it has no line to point at): its file and its
    place in the list, said as the inventory's own diagnostics say it (analyses/fleet.py)."""
    file: str
    number: int


def row_span(device):
    """The line of the inventory's row that gives `device`, or its Item in a JSON list (None:
    a part no inventory row names)."""
    from astral_dsl.diagnostics import Span

    if device.file is None:
        return None
    if device.line is None:
        return Item(device.file, device.item) if device.item is not None else None
    return Span.at(device.file, device.line, 1)


def placed(code: str, severity, message: str, span, hint: str, file) -> Diagnostic:
    """A diagnostic at `span` of the design `file`, or at an Item of a JSON inventory (its file,
    and a note naming the item)."""
    if isinstance(span, Item):
        return Diagnostic(code, severity, message, None, hint, file=span.file,
                          notes=(f"item {span.number} of the list",))
    return Diagnostic(code, severity, message, span, hint, file=file)


def longest(texts: Iterable[str]) -> int:
    return max(map(len, texts), default=0)


def cable_bound(found, sws) -> int:
    """The longest a cable's description can be (netbox._cables: `HOST nic K port J -- SWITCH`,
    `LOWER port N -- UPPER`), from the longest paths: the cables (millions) are read only when
    it is past the limit."""
    from astral_dsl.analyses.inventory import interface_names

    hosts = [p for p in found if p.kind == "host"]
    switch, between, cache = longest(s.path for s in sws), 0, {}
    for inst in {id(p.instance): p.instance for p in hosts}.values():
        between = max(between, longest(f" nic {k} port {j} -- "
                                       for k, j, _ in interface_names(inst, cache)))
    return max(longest(p.path for p in hosts) + between + switch,
               2 * switch + len(" port  -- ") + 10)      # a port number of at most 10 digits


__all__ = ["Item", "cable_bound", "longest", "placed", "row_span", "too_long"]
