"""What a scenario's failed fabric parts (network_failures.py) do to the fabric they belong to,
resolved on the symbolic design (hosts are intervals of host numbers in one replica of the
fabric's owner, host_positions.py; where the fabric's parts lie: fabric_layout.py) into the
damage network_damage.py prices:

- a first-tier switch that fails darkens the ports of the hosts that land on it, on its rail and
  plane (network.py's wiring); a NIC, a NIC port or a host link darkens its ports;
- an upper-tier switch that fails takes its share of its group's capacity: each lower switch
  that reaches it loses that share of its uplinks, 1 / reach (reach: the upper switches each
  lower switch reaches, the whole group in a full mesh, else its plane, where plane p is switch
  p of every lower group: formulas.even_upper_switches); a whole group lost leaves the switches
  below it no uplink; a link `lower -- upper` takes the lower switch's links to that switch (or
  all of its uplinks: it is then routed around for the traffic above it);
- a failed share of a tier (network.fabric_counts oversubscribes the tier below by it) takes
  that share of the uplinks of every switch below it, for the NICs it slows (the notes);
- a failed switch is off: its power and that of the modules in its cages leave the network's
  total; the modules at the far ends of its links stay powered."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses import failed_links
from astral_dsl.analyses.failed_links import Bad, nic_steps
from astral_dsl.analyses.fabric_layout import FabricLayout
from astral_dsl.analyses.field_reading import error
from astral_dsl.analyses.host_positions import Interval, TooMany
from astral_dsl.analyses.network_records import FabricCount
from astral_dsl.analyses.damage_judge import judge
from astral_dsl.analyses.network_damage import Damage, Piece, degraded
from astral_dsl.analyses.network_failures import Failure, declared, share_lost
from astral_dsl.analyses.nvlink_share import domains
from astral_dsl.diagnostics import Diagnostic, Span
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.values import FabricLink, FabricSelection


def damaged(design: Design, fabrics: List[FabricCount], failures: Sequence[Failure],
            cache: Dict) -> List[FabricCount]:
    """The fabrics (network.fabric_counts) with the damage of the failed parts each serves,
    and E219 on the first for a part that no fabric serves."""
    by_path = {i.path: i for i in design.instances}
    out, used = [], set()
    for fc in fabrics:
        owner = by_path.get(fc.owner)
        mine = [f for f in failures if owner is not None and _concerns(f, fc, owner)]
        used.update(id(f) for f in mine)
        out.append(_Builder(fc, owner, cache).build(mine) if mine else fc)
    lost = [error("E219", f"`{f.written}`: no fabric serves it, so its failure changes nothing",
                  f.span, "name a part of a fabric the design declares (`astral forecast "
                          "--ranks` lists the stable names)")
            for f in failures if id(f) not in used]
    if lost and out:
        out[0] = attrs.evolve(out[0], diagnostics=out[0].diagnostics + tuple(lost))
    return out


def _key(f: Failure):
    """What a failure names: `A -- B` and `B -- A` are one link."""
    if isinstance(f.target, FabricLink):
        return "link", frozenset(getattr(e, "display", str(e)) for e in f.target.ends)
    return f.written, f.fraction


def _concerns(f: Failure, fc: FabricCount, owner: Instance) -> bool:
    t = f.target
    if isinstance(t, FabricSelection):
        return t.fabric.path == fc.fabric
    if isinstance(t, FabricLink):
        return any(e.fabric.path == fc.fabric for e in t.ends if isinstance(e, FabricSelection))
    return nic_steps(f, owner) is not None


class _Builder(FabricLayout):
    """The damage of the failures of one fabric, on one replica of its owner."""

    def __init__(self, fc: FabricCount, owner: Instance, cache):
        super().__init__(fc, owner, cache)
        self.ports: Dict[Tuple[int, int], List[Piece]] = {}
        self.uplinks: Dict[Tuple[int, Optional[int], Optional[int]], List[Piece]] = {}
        # per tier index, the switches named off: ((group area, rail, plane), switch or None
        # for the whole group)
        self.off: Dict[int, set] = {}
        self.causes: List[str] = []
        self.cause_of: Dict[int, int] = {}
        self.spans: List[Optional[Span]] = []
        self.diags: List[Diagnostic] = []
        self.notes: List[str] = []

    # -- the result -----------------------------------------------------------------------------
    def build(self, failures: Sequence[Failure]) -> FabricCount:
        unique, seen = [], set()
        for f in failures:
            if _key(f) in seen:     # a part named twice fails once (a link either way round)
                continue
            seen.add(_key(f))
            unique.append(f)
            self.cause(f)           # the causes in the scenario's order, whatever fails first
        # the switches and NICs first: a link to a switch already off takes nothing more
        taken = set()
        for f in sorted(unique, key=lambda f: isinstance(f.target, FabricLink)):
            try:
                self.one(f)
                taken.add(_key(f))
            except Bad as bad:
                self.diags.append(error(bad.code, bad.message, f.span, bad.hint))
            except TooMany:
                self.diags.append(error("E219", f"`{f.written}` names more than 65,536 separate "
                                                f"runs of hosts", f.span,
                                        "fail a rail, a plane or a tier group instead"))
        failed = self.failed()
        damage = Damage(self.owner.path, self.fc.instances, self.pos.total,
                        max(1, self.fc.rails), max(1, self.fc.planes), self.nics,
                        self.ports_per_nic, self.hosts.gpus_per_host,
                        tuple(("rail" in t.per, "plane" in t.per) for t in self.tiers),
                        tuple(declared(t) or 1.0 for t in self.tiers),
                        tuple(t.name for t in self.tiers), self.ports, self.uplinks,
                        tuple(self.causes), tuple(self.spans), tuple(sorted(failed.items())),
                        frozenset(self.cause_of[id(f)] for f in unique if f.fraction is not None))
        # the tier's worst switch: those that lost a share of their uplinks to named switches
        # or links run above the tier's ratio (network_damage), for the tables to show
        worst: Dict[int, float] = {}
        for above, _, _, over, _ in degraded(damage):
            worst[above - 1] = max(worst.get(above - 1, 0.0), over)
        tiers = []
        for i, t in enumerate(self.tiers):
            off = min(failed.get(t.name, 0.0) * self.fc.instances, t.switches - t.failed)
            if off:
                t = attrs.evolve(t, failed=t.failed + off,
                                 power_w=t.power_w - off * t.switch_share_w)
            if t.oversubscription is not None and worst.get(i, 0.0) > t.oversubscription:
                t = attrs.evolve(t, worst_over=worst[i])
            tiers.append(t)
        limit = self.fc.max_oversubscription
        diags, notes = judge(damage, limit, self.pos.path_at,
                             domains(self.owner, self.pos, self.cache))
        notes = self.notes + notes
        for t in tiers:                 # named switches and failed fractions of tiers
            n = t.failed
            if not n:
                continue
            what = f"{n:,.0f} `{t.name}` switch{'es' if n != 1 else ''} off"
            notes.append(what + (f": {t.switch_share_w * n / 1e3:,.1f} kW less network power"
                                 if t.switch_w is not None else
                                 f" ({'its' if n == 1 else 'their'} power is not declared)"))
        return attrs.evolve(self.fc, tiers=tuple(tiers), damage=damage,
                            diagnostics=self.fc.diagnostics + tuple(self.diags) + tuple(diags),
                            notes=self.fc.notes + tuple(notes),
                            took=tuple(sorted({f.action for f in failures
                                               if _key(f) in taken})))

    def one(self, f: Failure) -> None:
        t = f.target
        if f.fraction is not None:     # the tier below loses its share: network.fabric_counts
            i = self.tier_index(t) if self.tiers else 0
            if i == 0:
                raise Bad("E219", f"`{f.written}`: a share of the first tier does not say "
                                  f"which hosts lose their ports",
                          f"name the switches (`{t.display}` of one group, one switch "
                          f"`...{t.tier}[0]`) or a plane")
            self.diags.extend(share_lost(self.tiers[i - 1], t.tier, f,
                                         self.fc.max_oversubscription, self.notes))
            # and every switch below loses that share of its uplinks into it, as named
            # switches taking the same share do: the NICs behind them are slowed (the notes)
            rails, planes = self.lower_keys(i, self.rails_of(self.tiers[i], None),
                                            self.planes_of(self.tiers[i], None))
            self.lose(i, rails, planes, [(0, self.pos.total)], f.fraction, i, self.cause(f))
            return
        if isinstance(t, FabricSelection):
            self.selection(t, self.cause(f))
        elif isinstance(t, FabricLink):
            failed_links.link(self, f, t)
        else:
            hosts, nics, ports = failed_links.nic_target(self, f)
            self.dark(hosts, nics, ports, self.cause(f))

    def cause(self, f: Failure) -> int:
        """The index of failure `f` among the causes (build reserves each in order)."""
        if id(f) not in self.cause_of:
            self.cause_of[id(f)] = len(self.causes)
            self.causes.append(f.named)
            self.spans.append(f.span)
        return self.cause_of[id(f)]

    # -- recording ------------------------------------------------------------------------------
    def dark(self, hosts: Iterable[Interval], nics: Iterable[int], ports: Iterable[int],
             cause: int) -> None:
        hosts, ports = list(hosts), list(ports)
        for k in nics:
            for j in ports:
                self.ports.setdefault((k, j), []).extend(
                    Piece(a, b, 1.0, 0, cause) for a, b in hosts)

    def lose(self, t: int, rails, planes, hosts: Iterable[Interval], lost: float, top: int,
             cause: int) -> None:
        hosts = list(hosts)
        for r in rails:
            for p in planes:
                self.uplinks.setdefault((t, r, p), []).extend(
                    Piece(a, b, lost, top, cause) for a, b in hosts)

    def lose_under(self, t: int, rails, planes, areas: Sequence[Interval], index: int,
                   lost: float, top: int, cause: int) -> None:
        """`lose` for the NIC ports that land on first-tier switch `index` of each group in
        `areas`, port by port: a host whose ports of a rail and plane straddle two switches
        loses, on each port, what that port's own switch loses."""
        for r in rails:
            for p in planes:
                pieces = self.uplinks.setdefault((t, r, p), [])
                for area in areas:
                    pieces.extend(Piece(a, b, lost, top, cause, (k, j)) for (a, b), k, j
                                  in self.tor_ports(area, index, [r], [p]))

    # -- fabric selections ----------------------------------------------------------------------
    def selection(self, sel: FabricSelection, cause: int) -> None:
        if sel.tier is not None:
            chosen = [self.tier_index(sel)]
        else:
            chosen = [i for i, t in enumerate(self.tiers)
                      if (sel.rail is None or "rail" in t.per)
                      and (sel.plane is None or "plane" in t.per)
                      and (sel.scope is None or self.within(t, sel.scope[0]))]
            if not chosen:
                raise Bad("E219", f"`{sel.display}` names no switch: no tier of the fabric is "
                                  f"split that way",
                          f"name a tier, e.g. `{self.fc.fabric}.{self.tiers[0].name}`"
                          if self.tiers else None)
        area = self.area_of(sel)
        for i in chosen:
            t = self.tiers[i]
            rails, planes = self.rails_of(t, sel.rail), self.planes_of(t, sel.plane)
            if sel.switch is not None:
                self.one_switch(sel, i)
            self.off.setdefault(i, set()).update(
                ((a, r, p), sel.switch) for a in self.scope_areas(t, area) for r in rails
                for p in planes)
            self.switch_down(i, area, rails, planes, sel.switch, cause)

    def is_off(self, sel: FabricSelection, i: int) -> bool:
        """Switch `sel.switch` of tier i (every switch of its groups when it names none) is
        already off: a failed switch or group took every link it has."""
        named = self.off.get(i)
        if not named:
            return False
        t = self.tiers[i]
        return all((g, None) in named or (sel.switch is not None and (g, sel.switch) in named)
                   for g in ((a, r, p) for a in self.scope_areas(t, self.area_of(sel))
                             for r in self.rails_of(t, sel.rail)
                             for p in self.planes_of(t, sel.plane)))

    def failed(self) -> Dict[str, float]:
        """Per tier, its switches off in one replica of the owner, each counted once however
        many targets name it (a plane and a rail share the rail's switches of the plane)."""
        out = {}
        for i, named in sorted(self.off.items()):
            whole = {group for group, switch in named if switch is None}
            one = {(group, switch) for group, switch in named
                   if switch is not None and group not in whole}
            t = self.tiers[i]
            if not t.sizes and not t.by_group:
                out[t.name] = float(len(whole) * t.per_group + len(one))
                continue
            sizes = {g: t.size(self.scope_index(t, g[0]), g[1], g[2])
                     for g in whole | {g for g, _ in one}}
            out[t.name] = float(sum(sizes[g] for g in whole)
                                + sum(1 for g, s in one if s < sizes[g]))
        return out

    def switch_down(self, i: int, area: Interval, rails, planes, switch: Optional[int],
                    cause: int, top: Optional[int] = None) -> None:
        """Switches of tier i fail: switch `switch` of the group in `area`, or every switch of
        the groups in `area`; for the traffic that climbs to tier `top` (default: all)."""
        t = self.tiers[i]
        if i == 0:
            if switch is None and top is None:
                self.dark([area], self.nics_on(rails), self.ports_on(planes), cause)
            elif top is None:
                for hosts, k, j in self.tor_ports(area, switch, rails, planes):
                    self.dark([hosts], [k], [j], cause)
            elif switch is None:
                self.lose(1, rails, planes, [area], 1.0, top, cause)
            else:           # a ToR that lost every uplink: its hosts reach only one another
                self.lose_under(1, rails, planes, [area], switch, 1.0, top, cause)
            return
        lrails, lplanes = self.lower_keys(i, rails, planes)
        top = i if top is None else top
        if switch is None:
            self.lose(i, lrails, lplanes, [area], 1.0, top, cause)
            return
        # groups may differ in size (scope instances, rails and planes: network_groups)
        at = self.scope_index(t, area) if t.sizes or t.by_group else None
        for r in rails:
            for p in planes:
                reach = max(1, t.reach_at(at, r, p) or t.size(at, r, p))
                lr, lp = self.lower_keys(i, [r], [p])
                if t.mesh or i >= 2:
                    self.lose(i, lr, lp, [area], 1.0 / reach, top, cause)
                else:       # plane p of the tier reaches ToR p of every group below it
                    self.lose_under(i, lr, lp, self.scope_areas(self.tiers[0], area),
                                    switch // reach, 1.0 / reach, top, cause)


__all__ = ["damaged"]
