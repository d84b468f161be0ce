"""`astral size --format json`: the sizing report as one plain dict (`size_summary`) with stable
keys, everything the human report shows (docs/language.md, section 19.2, lists the keys).

Units are in the key names (`_kw`, `_a`, `_v`, `_l_per_min`, ...); values are exact to the
watt (kW with three decimals), never rounded for display."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from astral_dsl.analyses import formulas, network_groups
from astral_dsl.analyses.engineering import Engineering
from astral_dsl.analyses.summary import summarize
from astral_dsl.analyses.walk import multiplicities
from astral_dsl.model.design import Design
from astral_dsl.model.values import plane_label
from astral_dsl.units import Quantity, format_number
from astral_dsl.outputs.feeder_load import (battery_installed_ah, battery_not_declared_ah,
                                          failover_share_w, failover_through_w, through_w)


def _kw(w: Optional[float]) -> Optional[float]:
    return None if w is None else round(w / 1e3, 3)


def _r(x: Optional[float], digits: int = 3) -> Optional[float]:
    return None if x is None else round(x, digits)


# ---- values chosen by sizing ---------------------------------------------------------------
def value_text(value) -> str:
    return format_number(value.si) if hasattr(value, "si") and not value.unit else str(value)


def _contains(span, file: str, line: int, column: int) -> bool:
    if span is None or span.file != file:
        return False
    return (span.start.line, span.start.column) <= (line, column) < \
        (span.end.line, span.end.column)


def _size(span) -> tuple:
    return (span.end.line - span.start.line, span.end.column - span.start.column)


def chosen_fields(design: Design) -> List[Dict[str, Any]]:
    """Where each value sizing chose belongs: the field of the design it is written in (the
    innermost field or member whose value holds the `?`), named by the path of its first
    replica, with how many replicas share it; a part referenced from a field (a rectifier, a
    battery) is named through that field (`Cluster.rows[0].hvdc.rectifier.modules`)."""
    if not design.chosen:           # nothing to place: no walk of the design (0.03 s at 1 MB)
        return []
    mult = multiplicities(design)
    owned = {i.path: m for m, i in mult.values()}     # by path: sizing marks copies
    out = []
    for key, value in design.chosen:
        file, line, col = key.rsplit(":", 2)
        line, col = int(line), int(col)
        best = None
        for inst in design.instances:
            spans = list(inst.field_spans) + [(m.name, m.span) for m in inst.members]
            for name, span in spans:
                if _contains(span, file, line, col) and (best is None or
                                                         _size(span) < _size(best[2])):
                    best = (inst, name, span)
        path, field, replicas, kind = None, None, None, None
        if best is not None:
            inst, field, _ = best
            path, replicas, kind = inst.path, owned.get(inst.path), inst.kind
            if replicas is None:               # a part referenced from a field of the design
                for holder in design.instances:
                    if holder.path not in owned:
                        continue
                    for name, span in holder.field_spans:
                        ref = holder.field(name)
                        if getattr(ref, "path", None) == inst.path and \
                                _contains(span, file, line, col):
                            path, replicas = f"{holder.path}.{name}", owned[holder.path]
                            kind = holder.kind
                            break
                    if replicas is not None:
                        break
        shown = value.path if hasattr(value, "path") else value_text(value)
        out.append({"file": file, "line": line, "column": col, "value": shown,
                    "path": path, "field": field, "replicas": replicas, "kind": kind})
    return out


def chosen_json(design: Design) -> List[Dict[str, Any]]:
    """The values sizing chose: where the `?` is, the field it belongs to, and the value."""
    return chosen_fields(design)


def chosen_lines(design: Design) -> List[str]:
    """`chosen by sizing: Cluster.rows[0].secondary.cdus = 2 (in all 4 loops)`, or the file
    position when the `?` is in no field (a `param`)."""
    return [f"chosen by sizing: {chosen_text(item)}" for item in chosen_fields(design)]


def chosen_text(item: Dict[str, Any]) -> str:
    """One value sizing chose, named by its field's path: `Cluster.rows[0].secondary.cdus = 2
    (in all 4 loops)`; the file position only when the `?` is in no field (a `param`)."""
    if item["path"]:
        where = f"{item['path']}.{item['field']}"
        each = f" (in all {item['replicas']:,} {item['kind']}s)" \
            if (item["replicas"] or 1) > 1 else ""
    else:
        where, each = f"{item['file']}:{item['line']}:{item['column']}", ""
    return f"{where} = {item['value']}{each}"


def objective_json(sizing) -> Optional[Dict[str, Any]]:
    """The objective sizing optimised, and its value at the chosen design (`cost` in USD)."""
    if sizing is None or sizing.value is None:
        return None
    unit = "USD" if sizing.objective == "cost" else (
        "racks" if sizing.objective == "footprint" else None)
    return {"sense": sizing.sense, "name": sizing.objective, "value": _r(sizing.value, 6),
            "unit": unit, "combinations": sizing.combinations, "feasible": sizing.feasible}


def objective_line(sizing) -> Optional[str]:
    """`objective: minimize cost = 44,214,000 USD (the best of 4 feasible combination(s) of 10)`"""
    from astral_dsl.units import readable

    objective = objective_json(sizing)
    if objective is None:
        return None
    unit = f" {objective['unit']}" if objective["unit"] else ""
    return (f"objective: {objective['sense']} {objective['name']} = "
            f"{readable.grouped(objective['value'], 2)}{unit} (the best of "
            f"{objective['feasible']:,} feasible combination(s) of "
            f"{objective['combinations']:,})")


# ---- the report ------------------------------------------------------------------------------
def size_summary(design: Design, eng: Engineering, sizing=None) -> Dict[str, Any]:
    from astral_dsl.outputs.size_facility import facility_json

    base = summarize(design, eng)
    p, c = eng.power, eng.cooling
    by_tier: Dict[str, int] = {}
    over: Dict[str, Any] = {}
    for f in eng.fabrics:
        for t in f.tiers:
            by_tier[t.name] = by_tier.get(t.name, 0) + t.switches
            if t.shown_oversubscription is not None:
                over[t.name] = round(max(over.get(t.name, 0.0), t.shown_oversubscription), 6)
    flow = sum(lp.replicas * (lp.flow_m3s or 0.0) for lp in c.loops)
    air = sum(a.replicas * a.flow_m3s for a in c.air)
    out = {
        "gpus": base["gpus"], "hosts": base["hosts"], "racks": base["racks"],
        "it_power_kw": _kw(p.it_peak_w),
        "it_power_avg_kw": _kw(p.it_average_w),
        "facility_power_kw": _kw(c.facility_w),
        "facility_power_peak_kw": _kw(c.peak.total_w) if c.peak else None,
        "pue": round(c.pue, 4) if c.pue else None,
        "liquid_heat_kw": _kw(c.liquid_heat_w),
        "air_heat_kw": _kw(c.air_heat_w),
        "liquid_flow_l_per_min": round(formulas.m3s_to_l_per_min(flow), 1),
        "air_flow_m3_per_h": round(formulas.m3s_to_m3_per_h(air), 1),
        "cdus": sum(lp.replicas * _cdus_of(lp) for lp in c.loops),
        "cdus_by_model": cdus_by_model(c.loops),
        "feeders": sum(f.replicas * f.count for f in p.feeders),
        "rectifier_modules": p.rectifier_modules,
        "battery_ah": round(p.battery_ah, 1),
        "battery_ah_installed": round(battery_installed_ah(p.feeders), 1),
        "battery_ah_not_declared": round(battery_not_declared_ah(p.feeders), 1),
        "switches": base["switches"],
        "switches_by_tier": by_tier,
        "oversubscription": over,
        "network_power_kw": _kw(eng.network_w),
        "network_unfed_kw": _kw(p.network_unfed_w),
        "network_bom": [row for f in eng.fabrics for row in bom(f)],
        "network_paths": [{"fabric": f.fabric, "between": k, "switches": v, "route": r}
                          for f in eng.fabrics for (k, v), (_, r) in zip(f.hops, f.routes)],
        "liquid_flow_per_part": [
            {"loop": lp.path, "kind": kind, "path": path, "per_loop": n,
             "heat_kw": _kw(q),
             "flow_l_per_min": round(formulas.m3s_to_l_per_min(flow), 2) if flow else None}
            for lp in c.loops for kind, path, n, q, flow in lp.parts],
        "pump_power_kw": _kw(c.pump_w),
        "cdu_power_kw": _cdu_total_kw(c),
        "conversion_loss_kw": _kw(p.conversion_loss_w),
        "conversion_loss_peak_kw": _kw(p.conversion_loss_peak_w),
        "power_by_level": power_by_level(eng),
        "facility": facility_json(eng),
        "feeder_list": [feeder_json(f) for f in p.feeders],
        "mechanical_feeders": [feeder_json(f) for f in c.facility.feeders]
        if c.facility is not None else [],
        "loops": [loop_json(lp) for lp in c.loops],
        "air_units": [air_json(a) for a in c.air],
        "network": [fabric_json(f) for f in eng.fabrics],
    }
    objective = objective_json(sizing)
    if objective is not None:
        out["objective"] = objective
    return out


def _cdus_of(lp) -> int:
    """A loop's CDUs: those installed, else those it needs."""
    return lp.cdus if lp.cdus is not None else (lp.cdus_needed or 0)


def cdus_by_model(loops) -> List[Dict[str, Any]]:
    """The CDUs of every loop counted per model and rating (a purchase line each): `model`
    (as the design names it), `capacity_kw` and `count` (replicas x CDUs), in that order."""
    counts: Dict[Tuple[str, Optional[float]], int] = {}
    for lp in loops:
        n = lp.replicas * _cdus_of(lp)
        if n:
            key = (lp.cdu_model, _kw(lp.cdu_capacity_w))
            counts[key] = counts.get(key, 0) + n
    return [{"model": m, "capacity_kw": cap, "count": n}
            for (m, cap), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))]


def power_by_level(eng: Engineering) -> Dict[str, Any]:
    """One row per distinct part (site, pod, row, rack, host) and per fabric; the site and
    network rows add up to `it_kw`."""
    rows = [{"kind": lv.kind, "path": lv.path, "replicas": lv.replicas,
             "peak_kw_each": _kw(lv.peak_w), "average_kw_each": _kw(lv.average_w),
             "peak_kw_total": _kw(lv.peak_w * lv.replicas),
             "average_kw_total": _kw(lv.average_w * lv.replicas)}
            for lv in eng.power.levels]
    return {"rows": rows, "it_peak_kw": _kw(eng.power.it_peak_w),
            "it_average_kw": _kw(eng.power.it_average_w),
            "sums": ["site", "network"]}


def feeder_json(f) -> Dict[str, Any]:
    return {
        "path": f.path, "replicas": f.replicas, "count": f.count, "running": f.running,
        "current": f.current_type, "side": f.side, "voltage_v": _r(f.voltage_v),
        "low_voltage_v": _r(f.low_voltage_v), "low_voltage_from": f.low_voltage_from,
        "load_kw": _kw(f.load_w), "network_kw": _kw(f.network_w),
        "normal_kw": _kw(f.normal_w), "failover_kw": _kw(failover_share_w(f)),
        # the power through it in each case (its share over its efficiency): size's columns
        # `through` and `failover`, what E621 compares with its capacity
        "through_kw": _kw(through_w(f, f.normal_w)),
        "failover_through_kw": _kw(failover_through_w(f)),
        "average_kw": _kw(f.average_w), "carried_kw": _kw(f.carried_w),
        "capacity_kw": _kw(f.capacity_w), "efficiency": _r(f.efficiency, 6),
        "current_a": _r(f.current_a), "conductor_current_a": _r(f.conductor_current_a),
        "ampacity_a": _r(f.ampacity_a), "voltage_drop_v": _r(f.voltage_drop_v, 4),
        "voltage_drop_ratio": _r(f.drop_ratio, 6),
        "rectifier_modules_needed": f.rectifier_modules_needed,
        "rectifier_modules": f.rectifier_modules,
        "battery_current_a": _r(f.battery_current_a),
        "battery_required_ah": _r(f.battery_required_ah, 2),
        "battery_available_ah": _r(f.battery_available_ah, 2),
        # what its batteries are sized to supply for their autonomy (the power through it), and
        # which share that is: normal | failover | scenario (null: no battery sized)
        "battery_kw": _kw(f.battery_w) if f.battery_for else None,
        "battery_for": f.battery_for or None,
        "equipment_v": _r(f.equipment_v, 4), "recharge_kw": _kw(f.recharge_w),
        "no_load_kw": _kw(f.no_load_w), "mechanical_kw": _kw(f.mechanical_w),
    }


def _cdu_total_kw(c) -> Optional[float]:
    """The running CDUs' declared `power` over the design; null when its loops have CDUs and
    none of them states it (each loop's `cdu_power_kw` null: not counted, not a 0 kW draw)."""
    with_cdu = [lp for lp in c.loops if lp.cdu_model]
    if with_cdu and not any(lp.cdu_power_stated for lp in with_cdu):
        return None
    return _kw(c.cdu_w)


def loop_json(lp) -> Dict[str, Any]:
    return {
        "path": lp.path, "replicas": lp.replicas, "fluid": lp.fluid,
        "heat_kw": _kw(lp.heat_w), "network_heat_kw": _kw(lp.network_heat_w),
        "supply_c": _r(lp.supply_c), "rise_k": _r(lp.rise_k),
        "density_kg_m3": _r(lp.density, 4), "cp_j_kg_k": _r(lp.cp, 3),
        "flow_l_per_min": round(formulas.m3s_to_l_per_min(lp.flow_m3s), 2)
        if lp.flow_m3s else None,
        "cdus": lp.cdus, "cdus_needed": lp.cdus_needed, "cdu_model": lp.cdu_model or None,
        "cdu_capacity_kw": _kw(lp.cdu_capacity_w),
        # null: its CDU states no `power`, and its own draw is not counted (not a 0 W draw)
        "cdu_power_kw": _kw(lp.cdu_w) if lp.cdu_power_stated or not lp.cdu_model else None,
        "pump_kw": _kw(lp.pump_w),
    }


def air_json(a) -> Dict[str, Any]:
    ratio = a.fan_power_ratio or 0.0
    return {
        "path": a.path, "replicas": a.replicas, "heat_kw": _kw(a.heat_w),
        "average_heat_kw": _kw(a.average_heat_w), "network_heat_kw": _kw(a.heat_w - a.it_heat_w),
        "rise_k": _r(a.rise_k), "flow_m3_per_h": round(formulas.m3s_to_m3_per_h(a.flow_m3s), 1),
        "flow_cfm": round(formulas.m3s_to_cfm(a.flow_m3s), 1),
        # the declared limit (null: none), and the most one of its racks sends to air (E644)
        "max_rack_heat_kw": _kw(a.rack_limit_w), "rack_air_heat_kw": _kw(a.max_rack_heat_w),
        "fan_power_ratio": a.fan_power_ratio,
        "fan_kw_average": _kw(ratio * a.average_heat_w), "fan_kw_peak": _kw(ratio * a.heat_w),
        "density_kg_m3": _r(a.density, 5), "dew_point_c": _r(a.dew_point_c, 4),
        "pressure_pa": _r(a.pressure_pa, 1),
    }


def _speed(q) -> Optional[str]:
    return str(q) if isinstance(q, Quantity) else None


def _group_sizes(t) -> Dict[str, Any]:
    """Groups of different sizes (network_groups): per distinct scope instance its switches per
    group (`per_group` is the largest's), and per rail and plane when they differ within one
    (`groups`: `rail`, `plane` where the tier is split so, `switches`); nothing when the
    groups are alike."""
    if t.by_group:
        return {"group_sizes": [
            {"scope": path or None, "instances": n, "per_group": max(s for _, s, _, _ in g),
             "groups": [{k: v for k, v in (("rail", key[0]), ("plane", plane_label(key[1])
                                                             if key[1] is not None else None),
                                           ("switches", size)) if v is not None}
                        for key, size, _, _ in g]} for path, n, g in t.by_group]}
    if not t.sizes:
        return {}
    return {"group_sizes": [{"scope": path, "instances": n, "per_group": size}
                            for path, n, size in network_groups.distinct(t.sizes)]}


def fabric_json(f) -> Dict[str, Any]:
    return {
        "fabric": f.fabric, "owner": f.owner, "instances": f.instances, "rails": f.rails,
        "planes": f.planes, "host_ports": f.host_ports, "capacity_gpus": f.capacity_gpus,
        "switches": f.switches, "power_kw": _kw(f.power_w),
        "tiers": [{"name": t.name, "switch": t.switch, "scope": t.scope, "per": list(t.per),
                   "groups": t.groups, "per_group": t.per_group,
                   "needed_per_group": t.needed, "rounding": t.rounding,
                   "sized_for": t.sized_for,
                   "switches": t.switches, "down_used": _r(t.down_used, 4),
                   "down_ports": t.down_ports, "down_speed": _speed(t.down_speed),
                   "up_ports": t.up_ports, "up_speed": _speed(t.up_speed),
                   "down_links": t.down_links, "up_links": t.up_links,
                   "oversubscription": _r(t.shown_oversubscription, 6)
                   if t.shown_oversubscription not in (None, float("inf")) else None,
                   "power_kw": _kw(t.power_w), "switch_kw": _kw(t.switch_w),
                   "optics_kw": _kw(t.optics_w)} | _group_sizes(t) for t in f.tiers],
        "paths": [{"between": k, "switches": v, "route": r}
                  for (k, v), (_, r) in zip(f.hops, f.routes)],
        "bom": bom(f),
    }


def bom(fabric) -> List[Dict[str, Any]]:
    """Bill of materials of one fabric: switches by model and tier (with the reason when the
    count was rounded up for even uplinks), and each tier's links by medium: cables (copper and
    AOC assemblies, a breakout counted once; fibres for optics) and transceivers (none for copper
    within its reach; twin-port modules carry two links)."""
    rows: List[Dict[str, Any]] = []
    for t, layer in zip(fabric.tiers, fabric.links or [None] * len(fabric.tiers)):
        row = {"item": "switch", "model": t.switch, "tier": t.name, "count": t.switches}
        if t.sized_for:
            row.update(per_group=t.per_group, sized_for=t.sized_for)
        if t.rounding:
            row.update(per_group=t.per_group, needed_per_group=t.needed, rounded=t.rounding)
        rows.append(row)
        if layer is None:
            continue
        rows.append({"item": "link", "tier": f"{layer.below}-{layer.tier}",
                     "speed": str(layer.speed) if layer.speed else "?", "count": layer.links,
                     "medium": layer.medium_name, "medium_type": layer.medium_type,
                     "length_m": layer.length_m, "cables": layer.cables,
                     "transceivers": layer.transceivers,
                     "modules_upper": layer.upper_modules,
                     "modules_lower": layer.lower_modules})
    return rows
