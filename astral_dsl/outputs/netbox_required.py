"""The numbers NetBox's bulk import requires that a design need not state, for `astral export
--netbox` (netbox.py). Read from NetBox 4.7.3 (the `netbox` wheel on PyPI; see
tests/fixtures/netbox/README.md): `RackImportForm.clean()` refuses a new rack without a rack
type unless its `width` and `u_height` are given (dcim/forms/bulk_import.py); a device type's
`u_height` (dcim/models/devices.py) and a power feed's `voltage`, `amperage` and
`max_utilization` (dcim/models/power.py) are model fields that are not `blank`, which Django's
model forms require although the models give them defaults.

Each is written from the design where it states it (a rack's `width` and `units`, a host's or
switch's `units`, a feeder's `voltage`, `ampacity` x `conductors` and `max_utilization`), or
derived where the physics says so (a feeder's ampacity from its `cable` table at its
`conductor_area`, else the current of its rated `capacity` at its `voltage`); else the default
below is written and W707 says so at the declaration, once per declaration. A declared width
NetBox has no choice for is E707, and nothing is written."""
from __future__ import annotations

import math
from typing import Dict, List, Optional

from astral_dsl.diagnostics import Diagnostic, Severity, own_part
from astral_dsl.units import Quantity

INCH = 0.0254                     # m
WIDTHS = (10, 19, 21, 23)         # NetBox's rack widths in inches (dcim.choices.RackWidthChoices)
# the EIA-310-E 19-inch rack (482.6 mm panels), which DGX/HGX 8-GPU servers are made to mount
# in (rack-mount systems of 19-inch width: the DGX data sheets' dimensions, 482 mm wide), and
# NetBox's own default (dcim/models/racks.py RackBase.width: RackWidthChoices.WIDTH_19IN)
RACK_WIDTH = 19
RACK_HEIGHT = 42                  # NetBox's own: RACK_U_HEIGHT_DEFAULT (dcim/constants.py)
DEVICE_HEIGHT = 1                 # NetBox's own: DeviceType.u_height default=1.0
AMPERAGE = 15                     # NetBox's own: POWERFEED_DEFAULT_AMPERAGE
MAX_UTILIZATION = 80              # NetBox's own: POWERFEED_DEFAULT_MAX_UTILIZATION (%)
# (the last two: netbox/config/parameters.py, the defaults of dcim/models/power.py PowerFeed)


class Assumed:
    """W707 for each declaration whose number was assumed, once per (declaration, field)."""

    def __init__(self):
        self.said: Dict[tuple, Diagnostic] = {}

    def add(self, inst, field: str, message: str, hint: str) -> None:
        """At the declaration; for a stdlib part, not the user's to edit, at the user's line
        that brings it in, the hint naming a part of their own that states it."""
        key = (id(inst), field)
        if key not in self.said:
            if inst.used_at is not None and inst.template:
                own = own_part(inst.kind, inst.template, field)
                hint += f": on a {inst.kind} of your own, `{own}`"
            self.said[key] = Diagnostic("W707", Severity.WARNING, message,
                                        inst.used_at or inst.span, hint)

    def diagnostics(self) -> List[Diagnostic]:
        return list(self.said.values())


def _name(inst) -> str:
    return inst.template or inst.path


def _whole_units(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def rack_width(inst, said: Assumed) -> str:
    """racks.csv's `width` (inches): the rack's declared `width`, else 19 (W707)."""
    q = inst.field("width")
    if isinstance(q, Quantity):
        return str(round(q.si / INCH))
    said.add(inst, "width", f"rack `{_name(inst)}` declares no `width`: NetBox requires one, "
                            f"and racks.csv gives it {RACK_WIDTH} inches (the EIA-310-E 19-inch "
                            f"rack DGX/HGX servers mount in, and NetBox's default)",
             "declare the rack's mounting width, e.g. `width = 19 inch` (or `21 inch`, "
             "`23 inch`, `10 inch`)")
    return str(RACK_WIDTH)


def wrong_widths(racks) -> List[Diagnostic]:
    """E707 for each rack declaration whose `width` is none of NetBox's (10, 19, 21, 23 in)."""
    out, seen = [], set()
    for p in racks:
        inst = p.instance
        q = inst.field("width")
        if id(inst) in seen or not isinstance(q, Quantity):
            continue
        seen.add(id(inst))
        inches = q.si / INCH
        if not any(abs(inches - w) < 1e-3 for w in WIDTHS):
            out.append(Diagnostic(
                "E707", Severity.ERROR,
                f"rack `{_name(inst)}` is {inches:g} inches wide: NetBox takes a rack's width "
                f"as 10, 19, 21 or 23 inches (dcim.choices.RackWidthChoices), and its import "
                f"would refuse the rack", inst.span_of("width"),
                "the nominal mounting width: `19 inch` (EIA-310-E), `21 inch` (Open Rack), "
                "`23 inch` or `10 inch`, not the cabinet's outer width"))
    return out


def rack_height(inst, top: Optional[float], said: Assumed) -> str:
    """racks.csv's `u_height`: the rack's declared `units`, else NetBox's 42 (W707), or the
    top of its hosts where they reach higher (`top`: the highest unit they take)."""
    q = inst.field("units")
    if isinstance(q, Quantity):
        return _whole_units(q.value_in("U"))
    need = math.ceil(top - 1e-9) if top else 0
    if need > RACK_HEIGHT:
        what = f"{need} U, the top of the hosts it holds"
    else:
        what = f"NetBox's default, {RACK_HEIGHT} U"
    said.add(inst, "units", f"rack `{_name(inst)}` declares no `units`: NetBox requires a "
                            f"rack's height, and racks.csv gives it {what}",
             "declare the rack's height, e.g. `units = 48 U`")
    return str(max(need, RACK_HEIGHT))


def type_height(inst, said: Assumed) -> str:
    """device_types.csv's `u_height`: the host's or switch's `units`, else NetBox's 1 (W707)."""
    q = inst.field("units")
    if isinstance(q, Quantity):
        return _whole_units(q.value_in("U"))
    said.add(inst, "units", f"{inst.kind} `{_name(inst)}` declares no `units`: NetBox requires "
                            f"a device type's height, and device_types.csv gives it NetBox's "
                            f"default, {DEVICE_HEIGHT} U",
             f"declare its height in rack units on the {inst.kind}, e.g. `units = 1 U`")
    return str(DEVICE_HEIGHT)


def ampacity(feeder, by_path) -> Optional[float]:
    """A feeder's declared `ampacity` (A), else its `cable`'s at its `conductor_area`."""
    q = feeder.field("ampacity")
    if isinstance(q, Quantity):
        return q.si
    table = by_path.get(getattr(feeder.field("cable"), "path", None))
    area = feeder.field("conductor_area")
    if table is None or not isinstance(area, Quantity):
        return None
    from astral_dsl.analyses.formulas import ampacity as interpolated
    areas = [a.si for a in getattr(table.field("areas"), "items", ())]
    amps = [a.si for a in getattr(table.field("ampacities"), "items", ())]
    try:
        return interpolated(list(zip(areas, amps)), area.si)
    except ValueError:          # E625 said it at check time
        return None


def feed_amperage(feeder, by_path, said: Assumed) -> float:
    """A feed's amperage, unrounded (netbox_ranges.Bounds.feed writes it in whole amperes, as
    NetBox holds it): the feeder's `ampacity` (else its `cable`'s at its `conductor_area`) times
    its `conductors`; else the current of its `capacity` at its `voltage`; else NetBox's 15 A
    (W707)."""
    sets = feeder.field("conductors")
    amps = ampacity(feeder, by_path)
    if amps is not None:
        return amps * (sets.si if isinstance(sets, Quantity) else 1)
    capacity, voltage = feeder.field("capacity"), feeder.field("voltage")
    if isinstance(capacity, Quantity) and isinstance(voltage, Quantity) and voltage.si:
        from astral_dsl.analyses.conductors import current
        kind = getattr(feeder.field("current"), "name", "dc")
        return current(kind, capacity.si, voltage.si, feeder)
    said.add(feeder, "ampacity", f"feeder `{feeder.path}` declares no `ampacity`, `cable` or "
                                 f"`capacity`: NetBox requires a feed's amperage, and "
                                 f"power_feeds.csv gives it NetBox's default, {AMPERAGE} A",
             "declare the feeder's rated `capacity`, or its `ampacity` and `conductors`")
    return float(AMPERAGE)


def feed_utilization(feeder, said: Assumed) -> float:
    """A feed's `max_utilization` in percent, unrounded (netbox_ranges.Bounds.utilization
    writes it in whole percent, as NetBox holds it): the feeder's, else NetBox's 80 (W707)."""
    q = feeder.field("max_utilization")
    if isinstance(q, Quantity):
        return q.si * 100
    said.add(feeder, "max_utilization",
             f"feeder `{feeder.path}` declares no `max_utilization`: NetBox requires a feed's, "
             f"and power_feeds.csv gives it NetBox's default, {MAX_UTILIZATION} %",
             "declare the share of its rating the feeder may carry, e.g. "
             "`max_utilization = 80 %` (a breaker's continuous-load rating)")
    return float(MAX_UTILIZATION)


__all__ = ["Assumed", "ampacity", "feed_amperage", "feed_utilization", "rack_height", "rack_width",
           "type_height", "wrong_widths"]
