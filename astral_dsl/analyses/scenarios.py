"""What-if scenarios on the model: the parts a scenario's `fail`s name.

The design comes compiled under the scenario (compiler.Compilation.under): the parts its routes
name are isolated, so each is its own instance at its own path, and its `set`s are in place.
This module reads the `fail`s of that design: a feeder (its partner side, or the other feeders of
its group, carry the load), a loop (one of its CDUs fails), a fabric part (the NIC ports on it go
dark: a plane halves each dual-port NIC's bandwidth) or a fraction of a switch tier."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs

from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.values import FabricSelection, Group, show


@attrs.frozen
class Applied:
    design: Design                    # the design compiled under the scenario
    failed: frozenset                 # paths of failed feeders
    failed_cdus: Tuple[Tuple[str, int], ...]
    fabric: Tuple[FabricSelection, ...]
    notes: Tuple[str, ...]
    tier_failures: Tuple[Tuple[str, str, float], ...] = ()   # (fabric path, tier, fraction)
    changed: Tuple[Tuple[str, str, str], ...] = ()           # (path, field, value) of `set`s


def apply(design: Design, scenario: Instance) -> Applied:
    """`design` compiled under `scenario` (its `set`s already in place)."""
    failed = set()
    cdus: Dict[str, int] = {}
    fabric: List[FabricSelection] = []
    notes: List[str] = []
    tiers: List[Tuple[str, str, float]] = []
    changed: List[Tuple[str, str, str]] = []
    by_path = {i.path: i for i in design.instances}
    for action in scenario.actions:
        if action.verb == "fail":
            if isinstance(action.target, FabricSelection):
                sel = action.target
                if action.value is not None and sel.tier is not None:
                    fraction = action.value.si
                    tiers.append((sel.fabric.path, sel.tier, fraction))
                    notes.append(f"{fraction:.0%} of {sel.display} failed")
                    continue
                fabric.append(sel)
                notes.append(f"{sel.display} failed")
                continue
            for inst, count in targets(action.target, by_path):
                where = _replicas(inst.path, count)
                if inst.kind == "feeder":
                    failed.add(inst.path)
                    notes.append(f"feeder {where} failed")
                elif inst.kind == "loop":
                    cdus[inst.path] = cdus.get(inst.path, 0) + 1
                    notes.append(f"one CDU of {where} failed")
        elif action.verb == "set":
            for inst, count in targets(action.target, by_path):
                value = show(action.value)
                changed.append((inst.path, action.field, value))
                notes.append(f"{_replicas(inst.path, count)}.{action.field} = {value}")
    return Applied(design, frozenset(failed), tuple(sorted(cdus.items())), tuple(fabric),
                   tuple(notes), tuple(tiers), tuple(changed))


def _replicas(path: str, count: int) -> str:
    return path if count == 1 else f"{path} (and {count - 1:,} replicas like it)"


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
