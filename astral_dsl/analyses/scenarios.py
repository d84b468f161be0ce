"""What-if scenarios on the model: the parts a scenario's `fail`s name.

The design comes compiled under the scenario (workspace.Workspace.under): the parts its routes
name are isolated, so each is its own instance at its own path, and its `set`s are in place.
This module reads the `fail`s of that design: a feeder (its partner side, or the other feeders of
its group, carry the load), a loop (one of its CDUs fails), a fabric part (a switch, a group of
switches, a NIC, a NIC port or a link: network_failures.py says what it does) or a fraction of a
switch tier. Notes and `named` say what each action named as written, and how many replicas:
`fail Astral.pods[*].rows[0].hvdc` is 8 feeders, `set Node.power = 11 kW` every Node host."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.network import first_tier
from astral_dsl.analyses.network_failures import Failure
from astral_dsl.analyses.walk import multiplicities
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.values import (FabricLink, FabricSelection, Group, NicPort, port_label,
                                     show)
from astral_dsl.units import Quantity, readable


@records.frozen(slots=False)
class Applied:
    design: Design                    # the design compiled under the scenario
    failed: frozenset                 # paths of failed feeders
    failed_cdus: Tuple[Tuple[str, int], ...]
    fabric: Tuple[Failure, ...]       # failed fabric parts: switches, groups, NICs, ports, links
    notes: Tuple[str, ...]
    tier_failures: Tuple[Tuple[str, str, float], ...] = ()   # (fabric path, tier, fraction)
    changed: Tuple[Tuple[str, str, str], ...] = ()           # (path, field, value) of `set`s
    # what each action named, as written: (verb, target as written, kind, replicas, field, value)
    named: Tuple[Tuple[str, str, str, int, Optional[str], Optional[str]], ...] = ()
    # the actions (indices into notes and named, Failure.action) of the fabric parts the failure
    # analysis rejected (E214, E219): they fail nothing, their notes and names are gone (settled)
    rejected: frozenset = frozenset()

    @property
    def fabric_failed(self) -> Tuple[Failure, ...]:
        """The fabric parts out of service: those failed, less those rejected."""
        return tuple(f for f in self.fabric if f.action not in self.rejected)


def apply(design: Design, scenario: Instance) -> Applied:
    """`design` compiled under `scenario` (its `set`s already in place)."""
    failed = set()
    cdus: Dict[str, int] = {}
    fabric: List[Failure] = []
    notes: List[str] = []
    tiers: List[Tuple[str, str, float]] = []
    changed: List[Tuple[str, str, str]] = []
    named: List[Tuple[str, str, str, int, Optional[str], Optional[str]]] = []
    by_path = {i.path: i for i in design.instances}
    mult = {i.path: n for n, i in multiplicities(design).values()}
    for action in scenario.actions:
        written = as_written(action)
        if action.verb == "fail":
            target = action.target
            # a share of a tier; all of it is the tier itself (its switches' GPUs lose every
            # path above them, E617), not a share of uplinks lost (an infinite oversubscription)
            if isinstance(target, FabricSelection) and action.value is not None \
                    and action.value.si < 1 - 1e-12:
                fraction = action.value.si
                # a share of the first tier would leave unsaid which hosts lose their ports:
                # failed_fabric.py rejects it (E219), and then it fails nothing (no switch off)
                if target.tier != first_tier(by_path.get(target.fabric.path)):
                    tiers.append((target.fabric.path, target.tier, fraction))
                fabric.append(Failure(target, written, action.span, action.route, fraction,
                                      len(named)))
                notes.append(f"{readable.percent(fraction)} of {written} failed")
                named.append(("fail", f"{readable.percent(fraction)} of {written}", "tier", 1,
                              None, None))
                continue
            if isinstance(target, (FabricSelection, NicPort, FabricLink)):
                fabric.append(Failure(target, written, action.span, action.route,
                                      action=len(named)))
                # a NIC port stands for as many replicas as its (isolated) NIC; a fabric part's
                # switches are counted by the fabric analysis (its notes)
                count = mult.get(target.nic.path, 1) if isinstance(target, NicPort) else None
                notes.append(f"{written} failed" + _how_many(count or 1, "nic port"))
                named.append(("fail", written, _fabric_kind(target), count, None, None))
                continue
            found = targets(target, by_path)
            kinds = {inst.kind for inst, _ in found}
            count = _replica_count(found, mult)
            kind = kinds.pop() if len(kinds) == 1 else "part"
            for inst, _ in found:
                if inst.kind == "feeder":
                    failed.add(inst.path)
                elif inst.kind == "loop":
                    cdus[inst.path] = cdus.get(inst.path, 0) + 1
            if kind == "nic" or "nic" in {inst.kind for inst, _ in found}:
                # its notes go with it when it is rejected, unless it fails more than NICs
                fabric.append(Failure(_nic_ref(target), written, action.span, action.route,
                                      action=len(named) if kind == "nic" else -1))
            what = {"feeder": f"feeder {written} failed", "loop": f"one CDU of {written} failed",
                    "nic": f"NIC {written} failed"}.get(kind, f"{written} failed")
            notes.append(what + _how_many(count, kind))
            named.append(("fail", written, kind, count, None, None))
        elif action.verb == "set":
            found = targets(action.target, by_path)
            value = show(action.value)
            count = _replica_count(found, mult)
            kinds = {inst.kind for inst, _ in found}
            kind = kinds.pop() if len(kinds) == 1 else "part"
            for inst, _ in found:
                changed.append((inst.path, action.field, value))
            notes.append(f"{written}.{action.field} = {value}" + _how_many(count, kind))
            notes.extend(_hours_kept(found, action.field))
            named.append(("set", written, kind, count, action.field, value))
    return Applied(design, frozenset(failed), tuple(sorted(cdus.items())), tuple(fabric),
                   tuple(notes), tuple(tiers), tuple(changed), tuple(named))


def _hours_kept(found, field: str) -> List[str]:
    """What a `set` of a facility-water circuit's `supply` leaves as it was: the free-cooling
    hours it declares (without a site `climate`; with one they are E654), which no temperature
    moves, so warmer water saves no chiller hour unless the scenario sets them too."""
    out = []
    for inst, _ in found:
        hours = inst.field("free_cooling")
        if inst.kind == "facility" and field == "supply" and isinstance(hours, Quantity):
            out.append(f"{inst.path}'s {readable.grouped(hours.value_in('h'))} h of free "
                       f"cooling are declared: they stay as they are at its new `supply` (set "
                       f"`free_cooling` too, or give the site a `climate` to derive them)")
    return out


def settled(applied: Applied, fabrics) -> Applied:
    """`applied` less the fabric parts the failure analysis (network_failures.counts, `fabrics`)
    rejected: they stay in `fabric` (the analysis reports their E214 or E219 again), but are
    not said failed (notes, named), nor out of service, and no share of a tier they name is
    failed."""
    from astral_dsl.analyses.network_failures import rejected

    gone = rejected(applied.fabric, fabrics) | applied.rejected
    if gone == applied.rejected:
        return applied
    shares = {(f.target.fabric.path, f.target.tier) for f in applied.fabric
              if f.fraction is not None and f.action in gone}
    # the actions left (a settled Applied holds one note and one name for each but those gone)
    left = [i for i in range(len(applied.named) + len(applied.rejected))
            if i not in applied.rejected]
    return attrs.evolve(
        applied, rejected=gone,
        notes=tuple(n for i, n in zip(left, applied.notes) if i not in gone),
        named=tuple(n for i, n in zip(left, applied.named) if i not in gone),
        tier_failures=tuple(t for t in applied.tier_failures if t[:2] not in shares))


def as_written(action) -> str:
    """The target as the scenario wrote it: its route (`Astral.pods[*].rows[0].hvdc`, `Node`),
    else what it evaluated to."""
    if action.route is not None and not isinstance(action.target, FabricLink):
        target = action.target
        if isinstance(target, NicPort):
            return f"{action.route.display}.port[{port_label(target.port)}]"
        if isinstance(target, FabricSelection):
            # from a template (`P.fabric.spine[0]`) it is that fabric wherever P is used bare,
            # not the one at the shared instance's own path (`S.pods[0].fabric...`)
            path = getattr(target.fabric, "path", None)
            if action.route.from_template and path and target.display.startswith(path):
                return action.route.display + target.display[len(path):]
            return target.display
        return action.route.display
    target = action.target
    if isinstance(target, Group):
        return ", ".join(getattr(r, "path", str(r)) for _, r in target.flat())
    return getattr(target, "display", None) or getattr(target, "path", None) or str(target)


def _fabric_kind(target) -> str:
    if isinstance(target, NicPort):
        return "nic port"
    if isinstance(target, FabricLink):
        return "link"
    if target.switch is not None:
        return "switch"
    return "switches"


def _nic_ref(target):
    """A NIC target as the model holds it (a Ref, an instance or a group of them)."""
    if isinstance(target, Group):
        return next((r for _, r in target.flat()), target)
    return target


def _replica_count(found, mult) -> int:
    """How many replicas the instances a target names stand for: under the scenario each named
    replica set is its own instance (semantics/isolate.py), so its multiplicity is the count; a
    template target counts every use of the instance it shares."""
    seen = {inst.path: inst for inst, _ in found}
    return sum(mult.get(path, 1) for path in seen)


def _how_many(count: int, kind: str) -> str:
    """` (8 feeders)`: how many replicas a group target names (nothing for one)."""
    if count <= 1:
        return ""
    plural = {"switch": "switches", "nic": "NICs", "nic port": "NIC ports"}.get(kind, f"{kind}s")
    return f" ({count:,} {plural})"


def targets(target, by_path) -> List[Tuple[Instance, int]]:
    """The instances a target names, with how many of the named replicas each stands for."""
    if isinstance(target, Ref):
        inst = by_path.get(target.path)
        return [(inst, 1)] if inst is not None else []
    if isinstance(target, Group):
        out = []
        for count, r in target.flat():
            out.extend((inst, c * count) for inst, c in targets(r, by_path))
        return out
    if isinstance(target, Instance):
        return [(target, 1)]
    return []
