"""The NIC and link targets of a scenario's failures (failed_fabric.py resolves the rest): the
hosts, NICs and ports a NIC or NIC-port target names, and what a failed link takes:

- a host link `port -- tor[0]` darkens that port (E219 when the rank map does not wire it there);
- `lower -- upper[k]` takes the lower switch's links to that switch, 1 / reach of its uplinks;
- `lower -- upper` takes every uplink of the lower switch: a first-tier switch's hosts then reach
  only one another, a switch higher up is routed around by the traffic that climbs above it.

Each function takes the fabric's builder (failed_fabric._Builder) and records on it."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses.host_positions import Interval, merge, path_steps, route_below
from astral_dsl.analyses.network_failures import Failure
from astral_dsl.model.design import Instance
from astral_dsl.model.values import FabricLink, FabricSelection, NicPort


class Bad(Exception):
    """A failure target that names nothing of the fabric: its code, message and hint."""

    def __init__(self, code: str, message: str, hint: Optional[str] = None):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def nic_steps(f: Failure, owner: Instance):
    """The route of a NIC (or NIC port) target below `owner`; None when it is elsewhere."""
    route = f.route
    if route is not None and not route.from_template:
        base = path_steps(owner.path, route.root)
        return None if base is None else route_below(route.steps, base)
    nic = f.target.nic if isinstance(f.target, NicPort) else f.target
    path = getattr(nic, "path", None)
    return None if path is None else path_steps(path, owner.path)


def nic_target(fb, f: Failure):
    """(host intervals, NIC indices, port indices) a NIC or NIC-port target names."""
    if f.route is not None and f.route.from_template:
        raise Bad("E219", f"`{f.written}` names a NIC of a template, not of one host",
                  "name it by its path from the site (`S.pods[0]...hosts[0].nics[4]`), "
                  "or fail a rail (`S.fabric.rail[4]`)")
    steps = nic_steps(f, fb.owner)
    if not steps:
        raise Bad("E219", f"`{f.written}` does not name a NIC of `{fb.owner.path}`")
    *host_steps, nic_step = steps
    try:
        hosts = fb.pos.named(host_steps)
    except KeyError as exc:
        raise Bad("E219", f"`{f.written}`: no member `{exc.args[0]}` on the way to its "
                          f"host")
    index, count = nic_step.index, max(1, fb.nics)
    if index in (None, "*"):
        ks = list(range(count))
    elif isinstance(index, tuple):
        ks = list(range(max(0, index[0]), min(count, index[1])))
    else:
        ks = [index]
    bad = [k for k in ks if not 0 <= k < count]
    if bad:
        raise Bad("E214", f"`{f.written}`: NIC {bad[0]} is out of range: its host has "
                          f"{count} NICs")
    ports = [f.target.port] if isinstance(f.target, NicPort) else \
        list(range(fb.ports_per_nic))
    return hosts, ks, ports


def link(fb, f: Failure, link: FabricLink) -> None:
    a, b = link.ends
    if isinstance(b, NicPort):
        a, b = b, a
    if isinstance(a, NicPort):
        host_link(fb, f, a, b)
        return
    ia, ib = fb.tier_index(a), fb.tier_index(b)
    if ia > ib:
        a, b, ia, ib = b, a, ib, ia
    if ib != ia + 1 or a.switch is None:
        raise Bad("E219", f"`{f.written}` is not a link: a link joins one switch to a "
                          f"switch (or the group) of the tier right above it",
                  "e.g. `...tor[0] -- ...agg` (every uplink of the ToR) or "
                  "`...tor[0] -- ...agg[3]`")
    fb.one_switch(a, ia)
    lower, upper = fb.tiers[ia], fb.tiers[ib]
    if b.switch is not None:
        fb.one_switch(b, ib)
    area, upper_area = fb.area_of(a), fb.area_of(b)
    # groups may differ in size (scope instances, rails and planes: network_groups)
    reach = upper.reach_at(fb.scope_index(upper, upper_area),
                           a.rail if "rail" in upper.per else None,
                           a.plane if "plane" in upper.per else None)
    linked = all(getattr(b, axis) == getattr(a, axis) for axis in ("rail", "plane")
                 if axis in upper.per) and \
        (fb.kinds(upper) is None or b.scope is not None) and \
        upper_area[0] <= area[0] and area[1] <= upper_area[1] and \
        (b.switch is None or upper.mesh or b.switch // max(1, reach) == a.switch)
    if not linked:
        raise Bad("E219", f"`{f.written}`: `{a.display}` has no link to `{b.display}`",
                  f"its uplinks go to the `{upper.name}` group above it"
                  + ("" if upper.mesh else
                     f", to the {reach} switches of plane {a.switch}"))
    if fb.is_off(a, ia) or fb.is_off(b, ib):
        return              # a link of a switch already off: its failure takes nothing more
    cause = fb.cause(f)
    rails, planes = fb.rails_of(lower, a.rail), fb.planes_of(lower, a.plane)
    share = 1.0 if b.switch is None else 1.0 / max(1, reach)
    if ia == 0:
        fb.lose_under(1, rails, planes, [area], a.switch, share, 1, cause)
    elif b.switch is None:
        # a switch with no uplink is routed around by the traffic that climbs above it
        fb.switch_down(ia, area, rails, planes, a.switch, cause, top=ib)
    else:
        fb.lose(ib, rails, planes, [area], share, ib, cause)


def host_link(fb, f: Failure, port: NicPort, sw: FabricSelection) -> None:
    if fb.tier_index(sw) != 0 or sw.switch is None:
        raise Bad("E219", f"`{f.written}` is not a link: a NIC port's link goes to one "
                          f"switch of the first tier `{fb.tiers[0].name}`")
    fb.one_switch(sw, 0)
    hosts, nics, ports = nic_target(fb, attrs.evolve(f, target=port))
    want: Dict[Tuple[int, int], List[Interval]] = {}
    for iv, k, j in fb.tor_ports(fb.area_of(sw), sw.switch, [sw.rail], [sw.plane]):
        want.setdefault((k, j), []).append(iv)
    wired = all(any(x <= a and b <= y for x, y in merge(want.get((k, j), ())))
                for k in nics for j in ports for a, b in hosts)
    if not wired:
        raise Bad("E219", f"`{f.written}`: `{port.display}` is not wired to `{sw.display}`",
                  "a NIC port's link goes to the first-tier switch the rank map names for "
                  "it (`astral forecast FILE --ranks ranks.json` writes the rank map)")
    if not fb.is_off(sw, 0):        # a port on a switch already off is dark already
        fb.dark(hosts, nics, ports, fb.cause(f))


__all__ = ["Bad", "host_link", "link", "nic_steps", "nic_target"]
