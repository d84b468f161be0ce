"""The power panels and feeds of `astral export --netbox` (netbox.py): a panel for each part
replica that declares feeders, a feed for each of its feeders, with the numbers NetBox requires
(netbox_required.py) checked against its bounds (netbox_ranges.py)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.analyses.inventory import Part
from astral_dsl.outputs.netbox_csv import STATUS
from astral_dsl.outputs.netbox_required import feed_amperage, feed_utilization
from astral_dsl.units import Quantity


def power(design, found: List[Part], names, said, bounds) -> Tuple[List[tuple], List[tuple]]:
    """A power panel for each part replica that declares feeders, a power feed for each of its
    feeders (N of a feeder with `count = N`); `bounds` checks each feed's numbers."""
    panels, feeds = [], []
    by_path = {i.path: i for i in design.instances}
    for p in found:
        feeders = []
        for m in p.instance.members:          # its feeders, and those of its power systems
            if _kind(m.value) == "feeder":
                feeders.append((m.name, m.value))
            elif _kind(m.value) == "power":
                feeders += [(f"{m.name}.{x.name}", x.value) for x in m.value.members
                            if _kind(x.value) == "feeder"]
        if not feeders:
            continue
        panel = f"{names[p.path]} power"
        panels.append((names[p.site], names[p.location] if p.location else "", panel, p.path))
        for name, feeder in feeders:
            count = feeder.field("count")
            n = int(count.si) if isinstance(count, Quantity) else 1
            for i in range(n):
                side = getattr(feeder.field("side"), "name", None)
                current = getattr(feeder.field("current"), "name", None)
                phases = feeder.field("phases")
                voltage = feeder.field("voltage")
                volts = f"{voltage.si:g}" if isinstance(voltage, Quantity) else ""
                held = bounds.feed(feeder, volts, feed_amperage(feeder, by_path, said))
                if held is None:            # NetBox cannot hold it: left out (W709)
                    continue
                volts, amperage = held
                feeds.append((
                    names[p.site], panel, f"{name}" + (f"-{i + 1}" if n > 1 else ""), STATUS,
                    "redundant" if side == "B" else "primary", current or "",
                    phase(current, phases), volts, amperage,
                    bounds.utilization(feeder, feed_utilization(feeder, said)),
                    f"{p.path}.{name}"))
    return panels, feeds


def phase(current: Optional[str], phases) -> str:
    """NetBox's `phase` of a feed: as declared; an AC feeder without `phases` three-phase, as the
    analyses take it (analyses/conductors.py, W621 says so at check); a DC feed single-phase,
    NetBox's default (phase has no meaning for it)."""
    if isinstance(phases, Quantity):
        return "three-phase" if phases.si == 3 else "single-phase"
    return "single-phase" if current == "dc" else "three-phase"


def _kind(value) -> Optional[str]:
    return getattr(value, "kind", None)


__all__ = ["phase", "power"]
