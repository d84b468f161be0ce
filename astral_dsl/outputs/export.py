"""The compiled design model as JSON, replication kept as counts (`astral export`).

An instance's roll-up `power` is the language's (section 9.4): its declared power, else its
parts'; a fabric's switches are no part of the instance that owns it. Where the engineering
analysis counted switches (`fabrics`: analyses/network.py), an instance that owns a fabric or
holds owners of fabrics also gets `switches`, `network_power` (theirs, at full power, with the
optics in their cages) and `it_power` = `power` + `network_power`: all the IT equipment draws.

The document's shape is described by schema/design.schema.json (`astral export --schema`);
`EXPORT_VERSION` changes whenever that shape does."""
from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from astral_dsl import resources
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.analyses.walk import owned
from astral_dsl.model.rollup import PLURALS, count_of, power_of
from astral_dsl.model.values import (Bundle, FabricLink, FabricSelection, Group, ListValue,
                                     NicPort, RangeValue, Symbol, Values)
from astral_dsl.units import Quantity

EXPORT_VERSION = "1.1"
_WATT_DIMS = Quantity.of(1, "W").dims


def value_json(v: Any) -> Any:
    if v is None or isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, Quantity):
        if not v.unit and v.dimensionless:
            return int(v.si) if float(v.si).is_integer() and abs(v.si) < 2**53 else v.si
        mag = v.magnitude
        return {"value": int(mag) if float(mag).is_integer() and abs(mag) < 2**53 else mag,
                "unit": v.unit}
    if isinstance(v, Symbol):
        return v.name
    if isinstance(v, ListValue):
        return [value_json(i) for i in v.items]
    if isinstance(v, Bundle):
        return {"count": v.count, "each": value_json(v.item)}
    if isinstance(v, Ref):
        return {"ref": v.path}
    if isinstance(v, Instance):
        return {"ref": v.path}
    if isinstance(v, (FabricSelection, NicPort, FabricLink)):
        return {"ref": v.display}
    if isinstance(v, Group):
        return {"count": v.count, "runs": [_run_json(r) for r in v.runs]}
    if isinstance(v, RangeValue):
        return {"start": v.start, "stop": v.stop}
    if isinstance(v, Values):
        return [{"count": c, "value": value_json(x)} for c, x in v.runs]
    return str(v)


def _run_json(run) -> Dict[str, Any]:
    if isinstance(run.item, Group):
        return {"count": run.count, "pattern": [_run_json(r) for r in run.item.runs]}
    return {"count": run.count, "instance": run.item.path}


def instance_json(inst: Instance, cache: Dict, network=None) -> Dict[str, Any]:
    """`network`: (owners_network(...), a memo shared by the instances of one document)."""
    out: Dict[str, Any] = {"path": inst.path, "kind": inst.kind, "template": inst.template}
    if inst.span is not None:
        out["source"] = {"file": inst.span.file, "line": inst.span.start.line,
                         "column": inst.span.start.column}
    out["fields"] = {k: value_json(v) for k, v in inst.fields}
    if inst.chosen:
        out["chosen"] = list(inst.chosen)
    out["members"] = {m.name: value_json(m.value) for m in inst.members}
    if inst.actions:
        out["actions"] = [{"verb": a.verb, "target": value_json(a.target), "field": a.field,
                           "value": value_json(a.value),
                           "route": a.route.display if a.route is not None else None,
                           "line": a.span.start.line if a.span else None} for a in inst.actions]
    if inst.level is not None:
        roll: Dict[str, Any] = {}
        for plural, kinds in PLURALS.items():
            if plural == "blocks":
                continue
            n = count_of(inst, kinds, cache)
            if n and inst.kind not in kinds:
                roll[plural] = n
        power = power_of(inst, cache)
        roll["power"] = value_json(power)
        switches, network_w = _network_in(inst, *network) if network else (0, 0.0)
        if switches:
            roll["switches"] = switches
            roll["network_power"] = value_json(_kw(network_w))
            roll["it_power"] = value_json(_kw(power.si + network_w))
        out["rollup"] = roll
    return out


def _kw(w: float) -> Quantity:
    """Watts as the `power` roll-up writes them: in kW from 1 kW up."""
    return Quantity(w, _WATT_DIMS, "kW" if w >= 1000 else "W")


def owners_network(design: Design, fabrics: Sequence) -> Dict[int, Tuple[int, float]]:
    """id(owner instance) -> (switches, watts) of the fabrics it owns, per owner (a fabric's
    counts are for all its owners' replicas)."""
    by_path = {i.path: i for i in design.instances}
    out: Dict[int, Tuple[int, float]] = {}
    for f in fabrics:
        owner = by_path.get(f.owner)
        if owner is None:
            continue
        n = max(f.instances, 1)
        have = out.get(id(owner), (0, 0.0))
        out[id(owner)] = (have[0] + f.switches // n, have[1] + f.power_w / n)
    return out


def _network_in(inst: Instance, network: Dict[int, Tuple[int, float]],
                memo: Dict[int, Tuple[int, float]]) -> Tuple[int, float]:
    """The switches and their power in the fabrics `inst` owns and those its parts own."""
    if not network:
        return 0, 0.0
    hit = memo.get(id(inst))
    if hit is not None:
        return hit
    n, w = network.get(id(inst), (0, 0.0))
    for count, child in owned(inst):
        cn, cw = _network_in(child, network, memo)
        n, w = n + count * cn, w + count * cw
    memo[id(inst)] = (n, w)
    return n, w


def export_design(design: Design, fabrics: Sequence = ()) -> Dict[str, Any]:
    """`fabrics`: the network analysis' counts (Engineering.fabrics), for the switches in the
    roll-ups (none without them)."""
    cache: Dict = {}
    network = (owners_network(design, fabrics), {})
    return {
        "export_version": EXPORT_VERSION,
        "file": design.file,
        "roots": [r.path for r in design.roots],
        "jobs": [j.path for j in design.jobs],
        "scenarios": [s.path for s in design.scenarios],
        "params": {k: value_json(v) for k, v in design.params},
        "instances": [instance_json(i, cache, network) for i in design.instances],
        "chosen": [{"at": k, "value": value_json(v)} for k, v in design.chosen],
        "checks": [{"message": c.message, "severity": c.severity, "passed": c.passed,
                    "instances": c.instances, "example": c.example,
                    "file": c.span.file, "line": c.span.start.line} for c in design.checks],
    }


def schema_text() -> str:
    return resources.schema_text("design")
