"""`astral size`: the sizing report as tables (rich) and as the JSON summary."""
from __future__ import annotations

import io
from typing import Any, Dict, List

from astral_dsl.analyses import formulas
from astral_dsl.analyses.engineering import Engineering
from astral_dsl.analyses.summary import summarize
from astral_dsl.model.design import Design
from astral_dsl.units import format_number


def chosen_json(design: Design):
    """The values sizing chose: where the `?` is, and the value."""
    out = []
    for key, value in design.chosen:
        file, line, col = key.rsplit(":", 2)
        shown = value.path if hasattr(value, "path") else value_text(value)
        out.append({"file": file, "line": int(line), "column": int(col), "value": shown})
    return out


def value_text(value) -> str:
    return format_number(value.si) if hasattr(value, "si") and not value.unit else str(value)


def size_summary(design: Design, eng: Engineering) -> Dict[str, Any]:
    base = summarize(design, eng)
    p, c = eng.power, eng.cooling
    by_tier: Dict[str, int] = {}
    over: Dict[str, Any] = {}
    for f in eng.fabrics:
        for t in f.tiers:
            by_tier[t.name] = by_tier.get(t.name, 0) + t.switches
            if t.oversubscription is not None:
                over[t.name] = round(max(over.get(t.name, 0.0), t.oversubscription), 6)
    flow = sum(l.replicas * (l.flow_m3s or 0.0) for l in c.loops)
    air = sum(a.replicas * a.flow_m3s for a in c.air)
    return {
        "gpus": base["gpus"], "hosts": base["hosts"], "racks": base["racks"],
        "it_power_kw": round(p.it_peak_w / 1e3, 3),
        "it_power_avg_kw": round(p.it_average_w / 1e3, 3),
        "facility_power_kw": round(c.facility_w / 1e3, 3),
        "pue": round(c.pue, 4) if c.pue else None,
        "liquid_heat_kw": round(c.liquid_heat_w / 1e3, 3),
        "air_heat_kw": round(c.air_heat_w / 1e3, 3),
        "liquid_flow_l_per_min": round(formulas.m3s_to_l_per_min(flow), 1),
        "air_flow_m3_per_h": round(formulas.m3s_to_m3_per_h(air), 1),
        "cdus": sum(l.replicas * (l.cdus if l.cdus is not None else (l.cdus_needed or 0))
                    for l in c.loops),
        "feeders": sum(f.replicas * f.count for f in p.feeders),
        "rectifier_modules": p.rectifier_modules,
        "battery_ah": round(p.battery_ah, 1),
        "switches": base["switches"],
        "switches_by_tier": by_tier,
        "oversubscription": over,
        "network_power_kw": round(eng.network_w / 1e3, 3),
        "network_bom": [row for f in eng.fabrics for row in bom(f)],
        "network_paths": [{"fabric": f.fabric, "between": k, "switches": v, "route": r}
                          for f in eng.fabrics for (k, v), (_, r) in zip(f.hops, f.routes)],
        "liquid_flow_per_part": [
            {"loop": lp.path, "kind": kind, "path": path, "per_loop": n,
             "heat_kw": round(q / 1e3, 3),
             "flow_l_per_min": round(formulas.m3s_to_l_per_min(flow), 2) if flow else None}
            for lp in c.loops for kind, path, n, q, flow in lp.parts],
        "pump_power_kw": round(c.pump_w / 1e3, 3),
    }


def _kw(w: float) -> str:
    return f"{w / 1e3:,.1f}"


def render_report(design: Design, eng: Engineering, colour: bool = False, width: int = 160) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=colour, color_system="standard"
                      if colour else None, highlight=False)
    s = size_summary(design, eng)
    from rich.markup import escape

    from astral_dsl.outputs.terminal import printable

    def shown(text) -> str:                 # design text: no terminal controls, no markup
        return escape(printable(text))

    for item in chosen_json(design):
        console.print(f"chosen by sizing: {shown(item['file'])}:{item['line']}:"
                      f"{item['column']} = {shown(item['value'])}")
    console.print(f"[bold]{shown(design.file)}[/bold]: {s['gpus']:,} GPUs, {s['hosts']:,} hosts, "
                  f"{s['racks']:,} racks; IT {s['it_power_kw']:,.1f} kW peak, "
                  f"{s['it_power_avg_kw']:,.1f} kW average; facility "
                  f"{s['facility_power_kw']:,.1f} kW; PUE {s['pue'] if s['pue'] else '-'}")

    t = Table(title="Power by level (peak and average IT load)", box=box.SIMPLE_HEAD)
    for col in ("level", "instance", "replicas", "peak kW each", "avg kW each", "peak kW total"):
        t.add_column(col, justify="left" if col in ("level", "instance") else "right")
    for lv in eng.power.levels:
        t.add_row(lv.kind, lv.path, f"{lv.replicas:,}", _kw(lv.peak_w), _kw(lv.average_w),
                  _kw(lv.peak_w * lv.replicas))
    console.print(t)

    if eng.power.feeders:
        t = Table(title="Feeders (normal / one failed)", box=box.SIMPLE_HEAD)
        for col in ("feeder", "x", "type", "V", "load kW", "normal kW", "failover kW",
                    "capacity kW", "A", "drop %", "rectifiers", "battery Ah"):
            t.add_column(col, justify="left" if col in ("feeder", "type") else "right")
        for f in eng.power.feeders:
            t.add_row(f.path, f"{f.replicas * f.count:,}", f"{f.current_type}{' ' + f.side if f.side else ''}",
                      format_number(f.voltage_v), _kw(f.load_w), _kw(f.normal_w),
                      _kw(f.failover_w), _kw(f.capacity_w) if f.capacity_w else "-",
                      f"{f.current_a:,.0f}",
                      f"{f.drop_ratio * 100:.2f}" if f.drop_ratio is not None else "-",
                      _modules(f), f"{f.battery_required_ah:,.0f}" if f.battery_required_ah
                      else "-")
        console.print(t)

    c = eng.cooling
    if c.loops or c.air:
        t = Table(title=f"Cooling (liquid {c.liquid_heat_w / 1e3:,.1f} kW, air "
                        f"{c.air_heat_w / 1e3:,.1f} kW)", box=box.SIMPLE_HEAD)
        for col in ("loop / air", "x", "fluid", "heat kW", "supply", "rise K", "flow",
                    "CDUs", "pump kW"):
            t.add_column(col, justify="left" if col in ("loop / air", "fluid") else "right")
        for lp in c.loops:
            cdus = "-" if lp.cdus_needed is None else (
                f"{lp.cdus} (needs {lp.cdus_needed})" if lp.cdus is not None else
                f"{lp.cdus_needed}")
            t.add_row(lp.path, f"{lp.replicas:,}", shown(lp.fluid), _kw(lp.heat_w),
                      f"{format_number(lp.supply_c)} degC", format_number(lp.rise_k),
                      f"{formulas.m3s_to_l_per_min(lp.flow_m3s):,.0f} L/min" if lp.flow_m3s
                      else "-", cdus, _kw(lp.pump_w))
        for lp in c.loops:
            for kind, path, n, q, flow in lp.parts:
                t.add_row(f"  {kind} {path}", f"{n:,}", "", _kw(q), "", "",
                          f"{formulas.m3s_to_l_per_min(flow):,.1f} L/min each" if flow else "-",
                          "", "")
        for a in c.air:
            t.add_row(a.path, f"{a.replicas:,}", "air", _kw(a.heat_w), "-",
                      format_number(a.rise_k),
                      f"{formulas.m3s_to_m3_per_h(a.flow_m3s):,.0f} m^3/h "
                      f"({formulas.m3s_to_cfm(a.flow_m3s):,.0f} CFM)", "-", "-")
        console.print(t)

    for f in eng.fabrics:
        t = Table(title=f"Network: {f.fabric} on {f.owner}"
                        + (f" (x{f.instances:,})" if f.instances > 1 else "")
                        + f"; capacity {f.capacity_gpus:,} GPUs" if f.capacity_gpus else "",
                  box=box.SIMPLE_HEAD)
        for col in ("tier", "switch", "scope", "groups", "per group", "switches", "down used",
                    "down x speed", "up x speed", "links below", "oversub.", "kW"):
            t.add_column(col, justify="left" if col in ("tier", "switch", "scope") else "right")
        for tier in f.tiers:
            t.add_row(tier.name, tier.switch, tier.scope + ("/" + "/".join(tier.per)
                                                            if tier.per else ""),
                      f"{tier.groups:,}", f"{tier.per_group:,}", f"{tier.switches:,}",
                      f"{tier.down_used:.1f}", f"{tier.down_ports} x {tier.down_speed}"
                      if tier.down_speed else "-",
                      f"{tier.up_ports} x {tier.up_speed}" if tier.up_speed else "-",
                      f"{tier.down_links:,}", f"{tier.oversubscription:g}:1"
                      if tier.oversubscription is not None else "-", _kw(tier.power_w))
        console.print(t)
        hops = "; ".join(f"{k}: {route} ({v} switch{'es' if v > 1 else ''})"
                         for (k, v), (_, route) in zip(f.hops, f.routes))
        console.print(f"  NIC ports: {f.host_ports:,}; paths between GPUs: {hops}")
        for line in bom_lines(f):
            console.print("  " + line)
    return out.getvalue()


def _modules(f) -> str:
    if f.rectifier_modules_needed is None:
        return "-"
    if f.rectifier_modules is None:
        return str(f.rectifier_modules_needed)
    return f"{f.rectifier_modules} (needs {f.rectifier_modules_needed})"


def bom(fabric) -> List[Dict[str, Any]]:
    """Bill of materials of one fabric: switches by model and tier (with the reason when the
    count was rounded up for even uplinks), and each tier's links by medium: cables (copper and
    AOC assemblies, a breakout counted once; fibres for optics) and transceivers (none for copper
    within its reach; twin-port modules carry two links)."""
    rows: List[Dict[str, Any]] = []
    for t, layer in zip(fabric.tiers, fabric.links or [None] * len(fabric.tiers)):
        row = {"item": "switch", "model": t.switch, "tier": t.name, "count": t.switches}
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


def bom_lines(fabric) -> List[str]:
    """The links of each tier, and why a tier's switch count was rounded up."""
    out = []
    for t in fabric.tiers:
        if t.rounding:
            out.append(f"{t.name}: {t.per_group:,} switches per group, not {t.needed:,}: "
                       f"{t.rounding}")
    for layer in fabric.links:
        speed = str(layer.speed) if layer.speed else "?"
        if layer.medium is None:
            how = f"medium not declared: {layer.transceivers:,} transceivers assumed"
        else:
            name = layer.medium_name or layer.medium
            length = f", {format_number(layer.length_m)} m" if layer.length_m is not None else ""
            what = "fibres" if layer.medium_type == "optics" else "cables"
            how = f"{name} ({layer.medium_type}{length}): {layer.cables:,} {what}"
            how += (f", {layer.transceivers:,} transceivers ({layer.upper_modules:,} at "
                    f"`{layer.tier}`, {layer.lower_modules:,} at the {layer.below} end)"
                    if layer.transceivers else ", no transceivers")
        out.append(f"{layer.below}-{layer.tier}: {layer.links:,} x {speed} links, {how}")
    return out
