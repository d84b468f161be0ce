"""Stable names for every switch, tier group, NIC port and link of a fabric, and the wiring rule
that puts a host's NIC port on its first-tier switch.

Names are paths in the language (they can be written as a scenario's `fail` target) that hold
every level needed to make them unique:

    Lab.pods[0].fabric.rail[3].plane[A].tor[1]          one ToR (fabric attached to the pod)
    Astral.fabric.pod[2].rail[3].plane[A].agg[17]       one switch (fabric attached to the site:
                                                        the tier's scope `pod` is an axis)
    Astral.fabric.pod[2].rail[3].plane[A].agg           the tier group (any of its switches)
    Astral.fabric.core[4095]                            a tier that spans the rails and planes
    Lab.pods[0].rows[0].racks[1].hosts[2].nics[3].port[a]     one NIC port (port a, b, ...)
    <end> -- <end>                                      a link, named by its two ends

Wiring (network.py's rules, the rack view's numbering): NIC k is on rail k mod R, port j on plane
j mod P; a host's ports of one rail and plane fill the first-tier switches of its group in host
order: the host at position i of the tier's scope lands on switch floor(i * ports / down_ports),
where `ports` is the host's ports per rail and plane. A lower switch's uplinks spread over every
switch of the group above (ECMP): which one a flow takes is not known to the twin."""
from __future__ import annotations

from typing import Optional, Tuple


from astral_dsl import records
from astral_dsl.model.values import fabric_path, port_label

LINK = " -- "


@records.frozen
class TierKey:
    """One group of a tier: its scope instance (kind and index, None when the tier's scope is
    the fabric's owner), rail and plane (None when the tier is not split by them)."""
    fabric: str                  # path of the fabric
    tier: str
    scope: Optional[Tuple[str, int]] = None
    rail: Optional[int] = None
    plane: Optional[int] = None

    @property
    def name(self) -> str:
        return fabric_path(self.fabric, self.scope, self.rail, self.plane, self.tier)

    def switch(self, index: int) -> str:
        return fabric_path(self.fabric, self.scope, self.rail, self.plane, self.tier, index)


def port_name(host_path: str, nic_member: str, nic: int, port: int) -> str:
    return f"{host_path}.{nic_member}[{nic}].port[{port_label(port)}]"


def link_name(a: str, b: str) -> str:
    return a + LINK + b


def first_switch(position: int, ports_per_group: float, down_ports: int) -> int:
    """The first-tier switch (index in its group) of the host at `position` in the tier's scope."""
    if down_ports <= 0:
        return 0
    return int(position * ports_per_group // down_ports)


__all__ = ["LINK", "TierKey", "first_switch", "link_name", "port_label", "port_name"]
