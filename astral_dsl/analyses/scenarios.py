"""What-if scenarios on the model: `fail` marks parts failed, `set` changes a field.

`set` changes the value the analyses read (a loop's supply temperature, a feeder's capacity);
the model is symbolic, so it changes every replica that shares the instance. When a recompiler
is at hand, checking.py compiles the design again under the scenario so that expressions and
user checks follow the change too; this module then applies the `fail`s. `fail` takes a feeder (its partner
side carries the load), a loop (one of its CDUs fails), or a fabric part (the NIC ports on it go
dark: a plane halves each dual-port NIC's bandwidth)."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs

from astral_dsl.model.design import Design, Instance, Member, Ref
from astral_dsl.model.values import FabricSelection, Group


@attrs.frozen
class Applied:
    design: Design
    failed: frozenset                 # paths of failed feeders
    failed_cdus: Tuple[Tuple[str, int], ...]
    fabric: Tuple[FabricSelection, ...]
    notes: Tuple[str, ...]
    tier_failures: Tuple[Tuple[str, str, float], ...] = ()   # (fabric path, tier, fraction)


def apply(design: Design, scenario: Instance) -> Applied:
    failed = set()
    cdus: Dict[str, int] = {}
    fabric: List[FabricSelection] = []
    notes: List[str] = []
    sets: Dict[str, Dict[str, object]] = {}
    tiers: List[Tuple[str, str, float]] = []
    by_path = {i.path: i for i in design.instances}
    for action in scenario.actions:
        if action.verb == "fail":
            targets = _targets(action.target, by_path)
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
            for inst in targets:
                if inst.kind == "feeder":
                    failed.add(inst.path)
                    notes.append(f"feeder {inst.path} failed")
                elif inst.kind == "loop":
                    cdus[inst.path] = cdus.get(inst.path, 0) + 1
                    notes.append(f"one CDU of {inst.path} failed")
                else:
                    notes.append(f"{inst.kind} {inst.path} failed")
        elif action.verb == "set":
            for inst in _targets(action.target, by_path):
                sets.setdefault(inst.path, {})[action.field] = action.value
                notes.append(f"{inst.path}.{action.field} = {getattr(action.value, 'display', action.value)}")
    if sets:
        design = _with_fields(design, sets)
    return Applied(design, frozenset(failed), tuple(sorted(cdus.items())), tuple(fabric),
                   tuple(notes), tuple(tiers))


def _targets(target, by_path) -> List[Instance]:
    if isinstance(target, Ref):
        inst = by_path.get(target.path)
        return [inst] if inst is not None else []
    if isinstance(target, Group):
        out = []
        for _, r in target.flat():
            out.extend(_targets(r, by_path))
        return out
    if isinstance(target, Instance):
        return [target]
    return []


def _with_fields(design: Design, sets: Dict[str, Dict[str, object]]) -> Design:
    memo: Dict[int, Instance] = {}

    def rebuild(inst: Instance) -> Instance:
        hit = memo.get(id(inst))
        if hit is not None:
            return hit
        members = tuple(Member(m.name, _member(m.value), m.span) for m in inst.members)
        changed = any(a.value is not b.value for a, b in zip(members, inst.members))
        fields = inst.fields
        if inst.path in sets:
            new = sets[inst.path]
            fields = tuple((k, new.get(k, v)) for k, v in inst.fields) + tuple(
                (k, v) for k, v in new.items() if k not in dict(inst.fields))
            changed = True
        out = attrs.evolve(inst, fields=fields, members=members) if changed else inst
        memo[id(inst)] = out
        return out

    def _member(v):
        if isinstance(v, Instance):
            return rebuild(v)
        if isinstance(v, Group):
            mapped = v.map(rebuild)
            same = all(a is b for (_, a), (_, b) in zip(mapped.flat(), v.flat()))
            return v if same else mapped
        return v

    roots = tuple(rebuild(r) for r in design.roots)
    instances = tuple(rebuild(i) for i in design.instances)
    return attrs.evolve(design, roots=roots, instances=instances)
