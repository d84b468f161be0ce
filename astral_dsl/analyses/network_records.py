"""The records of a switch fabric's counts (network.py computes them): a tier's switches and
links (TierCount), a fabric's tiers, paths and reach (FabricCount), and the hosts it serves
(Hosts). Their methods answer per group (a scope instance, a rail, a plane), from the group
sizes network_groups.py works out."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from astral_dsl import records
from astral_dsl.analyses import network_groups
from astral_dsl.analyses.network_links import LinkLayer
from astral_dsl.diagnostics import Diagnostic, Span
from astral_dsl.model.design import Instance
from astral_dsl.units import Quantity


@records.frozen(slots=False)
class TierCount:
    name: str
    switch: str                 # path of the switch model
    scope: str
    per: Tuple[str, ...]
    groups: int                 # groups this tier is replicated over
    per_group: int              # switches per group
    switches: int
    down_used: float            # downlinks used per switch (average)
    down_ports: int             # downlinks per switch (declared)
    up_ports: int
    down_speed: Optional[Quantity]
    up_speed: Optional[Quantity]
    down_links: int             # links served from below (whole tier)
    up_links: int               # uplinks (whole tier)
    oversubscription: Optional[float]
    power_w: float              # switches x (switch power + optics power)
    span: Optional[Span] = None
    needed: int = 0             # switches per group before the even-uplink rule
    rounding: Optional[str] = None   # why per_group is above `needed`
    switch_w: Optional[float] = None  # declared power of one switch (None: not declared)
    optics_w: float = 0.0       # optics power of the whole tier (declared or from the media)
    # wiring from the tier below: each lower switch reaches `reach` switches of this tier's
    # group, all of them (`mesh`) or plane p = switch p of every lower group (formulas)
    reach: int = 0
    mesh: bool = True
    failed: float = 0.0         # switches a scenario has failed (off: no power), whole tier
    # why per_group is above what the average group needs: the groups differ (scope instances
    # of different sizes, NICs that split unevenly over the rails) and each is sized for the
    # largest, so that every group can be wired
    sized_for: Optional[str] = None
    # groups of different sizes (scope instances of different sizes: a site fabric over `pods =
    # [1 x Big, 3 x Small]`, network_groups.py): runs of (scope instances, canonical path,
    # switches per group, reach, links per group) in the owner's order; () when every group
    # has per_group (the largest) and reach
    sizes: Tuple[Tuple[int, str, int, int, float], ...] = ()
    # groups of one scope instance of different sizes (its rails or planes: 6 NICs on 4 rails
    # put 2 on rails 0 and 1, 1 on the others), each sized for its own links: per distinct scope
    # instance (canonical path, "" when every one is alike; how many the owner holds),
    # ((rail, plane), switches, reach, links from below) of each of its groups
    # (network_groups.by_group); () when they are alike
    by_group: Tuple[Tuple[str, int, Tuple[Tuple[Tuple[Optional[int], Optional[int]], int, int,
                                                float], ...]], ...] = ()

    # under a scenario that fails named switches or links: the oversubscription of the tier's
    # worst switch, when above `oversubscription` (failed_fabric.py; the tables and the JSON
    # show it, Seer prices each job's own switches from the damage instead)
    worst_over: Optional[float] = None

    @property
    def shown_oversubscription(self) -> Optional[float]:
        """The oversubscription the tables give: the worst switch's."""
        return self.worst_over if self.worst_over is not None else self.oversubscription

    def _group(self, scope: Optional[int], rail: Optional[int], plane: Optional[int],
               path: Optional[str] = None) -> Optional[Tuple[int, int]]:
        if not self.by_group or (rail is None and plane is None):
            return None
        if path is None and self.sizes and scope is not None:
            run = network_groups.at(self.sizes, scope)
            path = run[1] if run else None
        return network_groups.group_of_key(self.by_group, path, (rail, plane))

    def size(self, scope: Optional[int] = None, rail: Optional[int] = None,
             plane: Optional[int] = None) -> int:
        """Switches in the group of scope instance `scope` (TierKey.scope's index in the owner;
        0 for one out of range), on `rail` and `plane` (None: the largest of its groups)."""
        group = self._group(scope, rail, plane)
        if group is not None:
            return group[0]
        if not self.sizes or scope is None:
            return self.per_group
        run = network_groups.at(self.sizes, scope)
        return run[2] if run else 0

    def reach_at(self, scope: Optional[int] = None, rail: Optional[int] = None,
                 plane: Optional[int] = None) -> int:
        """Upper switches each lower switch reaches in the group of scope instance `scope`."""
        group = self._group(scope, rail, plane)
        if group is not None:
            return group[1]
        run = network_groups.at(self.sizes, scope) if self.sizes and scope is not None else None
        return run[3] if run else self.reach

    @property
    def per_group_text(self) -> str:
        """Switches per group as the tables show them: `2`, or `1 to 2` when groups differ."""
        return network_groups.span(self.sizes, self.per_group, self.by_group)

    def per_group_of(self, path: Optional[str]) -> str:
        """Switches per group of the scope instance whose canonical path is `path` (None: the
        owner): `2`, or `1 to 2` when its rails or planes differ."""
        size = self.size_of(path) if path is not None else self.per_group
        groups = [g for p, _, g in self.by_group if p in ("", path)] if path is not None else \
            [g for _, _, g in self.by_group[:1]]
        low = min((n for g in groups for _, n, _, _ in g if n), default=size)
        return f"{size:,}" if low >= size else f"{low:,} to {size:,}"

    def size_of(self, path: str, rail: Optional[int] = None, plane: Optional[int] = None) -> int:
        """Switches in each group of the scope instance whose canonical path is `path` (on
        `rail` and `plane`: None, its largest group)."""
        group = self._group(None, rail, plane, path)
        if group is not None:
            return group[0]
        run = network_groups.of_path(self.sizes, path) if self.sizes else None
        return run[2] if run else self.per_group

    @property
    def switch_share_w(self) -> float:
        """One switch with the modules in its cages (the tier's optics, per switch)."""
        return (self.switch_w or 0.0) + (self.optics_w / self.switches if self.switches else 0.0)


@records.frozen(slots=False)
class FabricCount:
    owner: str                  # path of the instance the fabric is attached to
    fabric: str
    instances: int              # how many such owners the design holds
    rails: int
    planes: int
    host_ports: int             # NIC ports served (whole design)
    nic_speed: Optional[Quantity]
    tiers: Tuple[TierCount, ...]
    hops: Tuple[Tuple[str, int], ...]        # path -> switches traversed
    capacity_gpus: Optional[int]             # GPUs the tiers can reach (radix bound)
    diagnostics: Tuple[Diagnostic, ...] = ()
    links: Tuple[LinkLayer, ...] = ()        # one layer per tier: its downlinks
    max_oversubscription: Optional[float] = None
    # under a scenario's failed parts (network_failures.py): what they do, and what it slows
    damage: Any = None
    notes: Tuple[str, ...] = ()
    took: Tuple[int, ...] = ()   # the actions of the failed parts it took (not rejected)
    # the rails and planes some NIC port reaches (0: as declared): the others hold no switch
    # (W610), and the switch names, the export and the pictures list none there
    rails_used: int = 0
    planes_used: int = 0

    @property
    def routes(self) -> Tuple[Tuple[str, str], ...]:
        """The tiers each path crosses: `tor > agg > core > agg > tor`."""
        names = [t.name for t in self.tiers]
        out = []
        for label, switches in self.hops:
            top = (switches - 1) // 2
            up = names[:top + 1]
            out.append((label, " > ".join(up + list(reversed(up[:-1])))))
        return tuple(out)

    @property
    def switches(self) -> int:
        return sum(t.switches for t in self.tiers)

    @property
    def power_w(self) -> float:
        return sum(t.power_w for t in self.tiers)

    @property
    def on(self) -> str:
        """` on `owner`` where the fabric's path does not say where it is (one fabric attached
        to several parts, e.g. two sites), else "": for the messages that name it."""
        return "" if self.fabric.startswith(self.owner + ".") else f" on `{self.owner}`"


@records.frozen(slots=False)
class Hosts:
    """The hosts a fabric serves (per owner): their NIC ports, as the tiers and links need them."""
    count: int                  # hosts
    ports: int                  # NIC ports
    speed: Optional[Quantity]   # the first NIC model's port speed
    ports_per_nic: int
    gpus_per_host: int
    # per host model: (hosts, NICs per host, ports per host, ports per NIC)
    kinds: Tuple[Tuple[int, int, int, int], ...]
    nics: Tuple[Instance, ...]  # the NIC models
    fewest_ports: int = 1       # ports of the NIC model with the fewest (ports_per_nic: most)
    # per host model (as `kinds`): its NICs' ports in the host's order (fabric_names.wiring)
    layouts: Tuple[Tuple[int, ...], ...] = ()
