"""The compiled design model as JSON, replication kept as counts (`astral export`).

The document's shape is described by schema/design.schema.json (`astral export --schema`);
`EXPORT_VERSION` changes whenever that shape does."""
from __future__ import annotations

from typing import Any, Dict

from astral_dsl import resources
from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.rollup import PLURALS, count_of, power_of
from astral_dsl.model.values import (Bundle, FabricLink, FabricSelection, Group, ListValue,
                                     NicPort, RangeValue, Symbol, Values)
from astral_dsl.units import Quantity

EXPORT_VERSION = "1.0"


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


def instance_json(inst: Instance, cache: Dict) -> Dict[str, Any]:
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
        roll["power"] = value_json(power_of(inst, cache))
        out["rollup"] = roll
    return out


def export_design(design: Design) -> Dict[str, Any]:
    cache: Dict = {}
    return {
        "export_version": EXPORT_VERSION,
        "file": design.file,
        "roots": [r.path for r in design.roots],
        "jobs": [j.path for j in design.jobs],
        "scenarios": [s.path for s in design.scenarios],
        "params": {k: value_json(v) for k, v in design.params},
        "instances": [instance_json(i, cache) for i in design.instances],
        "chosen": [{"at": k, "value": value_json(v)} for k, v in design.chosen],
        "checks": [{"message": c.message, "severity": c.severity, "passed": c.passed,
                    "instances": c.instances, "example": c.example,
                    "file": c.span.file, "line": c.span.start.line} for c in design.checks],
    }


def schema_text() -> str:
    return (resources.schema_dir() / "design.schema.json").read_text(encoding="utf-8")
