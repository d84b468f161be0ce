"""The parts whose numbers a power warning understates, beyond the source it points at: a
picture marks them as it marks the part a diagnostic's span is about.

- W606 (switch power not declared) and W607 (optics power not declared): every tier its notes
  name (`tier `spine`: 4 x `Sw``), not only the first one whose field the span points at, and
  the feeders and air units with `network = true` at the fabric's owner or above, whose load and
  heat leave those watts out;
- W690 (a part that declares no power): every part that holds it through parts that declare no
  power either (hosts, racks, rows, pods, the site: their power is shown without it) and the feeders declared in those parts that carry IT
  load."""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Set

from astral_dsl.analyses.declarations import has_power
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Design, Instance

_TIER_NOTE = re.compile(r"^tier `([^`]+)`:")


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


def _at_or_above(holder: str, path: str) -> bool:
    """`holder` is `path` or one of its ancestors."""
    return holder == path or path.startswith(holder + ".") or path.startswith(holder + "[")


def understated(d: Diagnostic, found: Iterable[Instance], design: Design,
                by_path: Dict[str, Instance], feeders: Dict) -> Set[int]:
    """The ids of the instances `d` (W606, W607 or W690) understates, besides `found` (those
    its span points at)."""
    if d.code in ("W606", "W607"):
        return _network(d, found, design, by_path)
    if d.code == "W690":
        return _holders(found, design, feeders)
    return set()


def _network(d: Diagnostic, found, design: Design, by_path) -> Set[int]:
    tiers = [m.group(1) for m in map(_TIER_NOTE.match, d.notes) if m]
    fabrics = {_parent(i.path) for i in found if i.kind == "tier"}
    out: Set[int] = set()
    for fabric in fabrics:
        owner = _parent(fabric)
        for name in tiers:
            tier = by_path.get(f"{fabric}.{name}")
            if tier is not None:
                out.add(id(tier))
        for inst in design.instances:
            if inst.kind in ("feeder", "air") and inst.field("network") is True and \
                    _at_or_above(_parent(inst.path), owner):
                out.add(id(inst))
    return out


def _holders(found, design: Design, feeders: Dict) -> Set[int]:
    leaves = {id(i) for i in found}
    memo: Dict[int, bool] = {}

    def holds(inst: Instance) -> bool:
        """`inst` counts a replica of the part as 0 W: it holds one through parts that declare
        no power (a host that declares its power includes its NICs'), as W690 counts them."""
        hit = memo.get(id(inst))
        if hit is None:
            memo[id(inst)] = False                  # a cycle (none expected) holds nothing
            hit = memo[id(inst)] = not has_power(inst) and any(
                id(c) in leaves or holds(c) for _, c in inst.containment())
        return hit
    holders: List[Instance] = [i for i in design.instances if holds(i)]
    out = {id(i) for i in holders}
    paths = {i.path for i in holders}
    for inst in design.instances:
        r = feeders.get(inst.path) if inst.kind == "feeder" else None
        # a feeder of a part that holds it, carrying IT load (not only switches or pumps)
        if r is not None and r.load_w - r.network_w - r.mechanical_w > 0 and \
                _parent(inst.path) in paths:
            out.add(id(inst))
    return out
