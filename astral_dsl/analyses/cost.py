"""Cost: the sum of declared prices times counts. Prices are data in the design (or in the
stdlib, marked illustrative with their source and date); nothing here has a price of its own.

Counted: every owned part with a `price` (GPUs, hosts, racks, ...), switches per tier, and the
equipment of feeders (per feeder), rectifiers (per module), batteries (per string) and loops
(per CDU). Unknown equipment counts are left out: the sizing step prices them itself."""
from __future__ import annotations

from typing import Dict, Optional

from astral_dsl.analyses.field_reading import si
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.model.design import Design


def total_cost(design: Design, eng) -> float:
    resolve = Resolver(design)
    total = 0.0
    for replicas, inst in multiplicities(design).values():
        price = si(inst.field("price")) or 0.0
        if inst.kind == "feeder":
            count = si(inst.field("count")) or (1.0 if inst.field("count") is None else 0.0)
            total += replicas * count * price
            for name, per in (("rectifier", "modules"), ("battery", "strings")):
                part = resolve(inst.field(name))
                if part is not None:
                    n = si(part.field(per))
                    if n is None and name == "battery":
                        n = 1.0 if part.field(per) is None else 0.0
                    total += replicas * count * (n or 0.0) * (si(part.field("price")) or 0.0)
        elif inst.kind == "loop":
            cdu = resolve(inst.field("cdu"))
            n = si(inst.field("cdus")) or 0.0
            if cdu is not None:
                total += replicas * n * (si(cdu.field("price")) or 0.0)
        elif inst.kind not in ("tier",):
            total += replicas * price
    by_path = resolve.by_path
    for fabric in eng.fabrics:
        for tier in fabric.tiers:
            switch = by_path.get(tier.switch)
            price = (si(switch.field("price")) or 0.0) if switch is not None else 0.0
            total += tier.switches * price
    return total


def objective_value(design: Design, eng, name: str) -> Optional[float]:
    """The value of `minimize NAME` / `maximize NAME` for the built-in objectives."""
    if name == "cost":
        return total_cost(design, eng)
    if name == "footprint":
        from astral_dsl.model.rollup import count_of

        cache: Dict = {}
        return float(sum(count_of(r, ("rack",), cache) for r in design.roots))
    return None
