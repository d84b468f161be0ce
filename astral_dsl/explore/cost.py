"""The cost column of a sweep: the declared prices times counts (analyses/cost.py), given only
when the design declares a price at all, and with a warning (W800) naming the equipment that
counts without one. A part is priced when it, or a part containing it, declares a `price` (a
host's price may include its GPUs); prices are never built in."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.analyses.walk import Resolver, owned
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.units import Quantity

EQUIPMENT = ("gpu", "nic", "cpu", "host", "switch", "cdu", "rectifier", "battery", "feeder")


def _priced(inst) -> bool:
    return isinstance(inst.field("price"), Quantity)


def unpriced_parts(design, eng) -> List[str]:
    """Equipment that neither it nor a container of it prices, as `kind Template`."""
    resolve = Resolver(design)
    missing: List[str] = []
    seen = set()

    def note(inst) -> None:
        key = f"{inst.kind} {inst.template}"
        if key not in seen:
            seen.add(key)
            missing.append(key)

    def visit(inst, covered: bool) -> None:
        if (id(inst), covered) in seen:
            return
        seen.add((id(inst), covered))
        covered = covered or _priced(inst)
        if inst.kind in EQUIPMENT and not covered:
            note(inst)
        if inst.kind == "feeder":
            for name in ("rectifier", "battery"):
                part = resolve(inst.field(name))
                if part is not None and not (covered or _priced(part)):
                    note(part)
        if inst.kind == "loop":
            cdu = resolve(inst.field("cdu"))
            if cdu is not None and not _priced(cdu):
                note(cdu)
        for _, child in owned(inst):
            visit(child, covered)

    for root in design.roots:
        visit(root, False)
    for fabric in eng.fabrics:
        for tier in fabric.tiers:
            switch = resolve.by_path.get(tier.switch)
            if switch is not None and not _priced(switch):
                note(switch)
    return missing


def priced(design) -> bool:
    """The design declares a price somewhere."""
    return any(_priced(i) for i in design.instances)


def priced_cost(design, eng) -> Tuple[Optional[float], Optional[Diagnostic]]:
    """(cost in USD, W800 when some equipment has no price); (None, None) when the design
    declares no price at all."""
    from astral_dsl.analyses.cost import total_cost

    if not priced(design):
        return None, None
    cost = total_cost(design, eng)
    missing = unpriced_parts(design, eng)
    if not missing:
        return cost, None
    return cost, Diagnostic(
        "W800", Severity.WARNING, "the cost counts only the equipment with a declared price",
        None, "declare a `price` on the parts below (or on a part containing them)",
        notes=("no price: " + ", ".join(missing),), file=design.file)
