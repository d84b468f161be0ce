"""`astral size`: the sizing report as tables that fit the terminal (outputs/tables.py), each
number in a readable unit (units/readable.py); the JSON summary is outputs/size_json.py."""
from __future__ import annotations

import io
import textwrap
from typing import List

from astral_dsl.analyses import formulas
from astral_dsl.analyses.engineering import Engineering
from astral_dsl.model.design import Design
from astral_dsl.outputs.size_json import (bom, chosen_json, chosen_lines, objective_line,
                                          size_summary, value_text)
from astral_dsl.outputs.tables import Column, Table, print_table
from astral_dsl.units import format_number, readable

__all__ = ["bom", "bom_lines", "chosen_json", "chosen_lines", "objective_line", "render_report",
           "size_summary", "value_text"]


def render_report(design: Design, eng: Engineering, colour: bool = False, width: int = 100,
                  sizing=None) -> str:
    """The report, `width` columns wide: tables wider than that are stacked."""
    from rich.console import Console
    from rich.markup import escape

    from astral_dsl.outputs.terminal import printable

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=colour, color_system="standard"
                      if colour else None, highlight=False, soft_wrap=False)

    def shown(text) -> str:                 # design text: no terminal controls, no markup
        return escape(printable(text))

    def table(t: Table) -> None:
        print_table(console, t, width, shown)

    for line in chosen_lines(design):
        console.print(shown(line))
    objective = objective_line(sizing)
    if objective is not None:
        console.print(shown(objective))
    _headline(console, design, eng, shown)
    for t in _tables(eng):
        table(t)
        for line in t.lines:
            for part in textwrap.wrap(printable(line), width, initial_indent="  ",
                                      subsequent_indent="      ", break_on_hyphens=False):
                console.print(escape(part), overflow="fold")
        if t.lines:
            console.print()
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


def _headline(console, design, eng, shown) -> None:
    from astral_dsl.analyses.summary import summarize

    s = summarize(design, eng)
    p, c = eng.power, eng.cooling
    console.print(f"[bold]{shown(design.file)}[/bold]: {s['gpus']:,} GPUs, {s['hosts']:,} hosts, "
                  f"{s['racks']:,} racks, {s['switches']:,} switches", overflow="fold")
    facility = f"facility {readable.power(c.facility_w)} average"
    if c.peak is not None:
        facility += f", {readable.power(c.peak.total_w)} peak"
    console.print(f"IT {readable.power(p.it_peak_w)} peak, {readable.power(p.it_average_w)} "
                  f"average; {facility}; PUE {format_number(round(c.pue, 4)) if c.pue else '-'}",
                  overflow="fold")


def _tables(eng: Engineering) -> List[Table]:
    c = eng.cooling
    out = [_levels(eng)]
    if all_feeders(eng):
        out += _feeders(eng)
    if c.loops:
        out += _loops(eng)
    if c.air:
        out.append(_air(eng))
    if c.average is not None:
        from astral_dsl.outputs.size_facility import facility_tables

        out += facility_tables(eng)
    for f in eng.fabrics:
        out += _network(f)
    return out


def _levels(eng: Engineering) -> Table:
    levels = eng.power.levels
    t = Table("Power by level (IT load; the site and network rows add up to the total)",
              [Column("level", True), Column("instance", True), Column("replicas"),
               Column("peak each"), Column("avg each"), Column("peak total")])
    each = readable.powers([lv.peak_w for lv in levels])
    avg = readable.powers([lv.average_w for lv in levels] + [eng.power.it_average_w])
    total = readable.powers([lv.peak_w * lv.replicas for lv in levels] + [eng.power.it_peak_w])
    for i, lv in enumerate(levels):
        t.add(lv.kind, lv.path, f"{lv.replicas:,}", each[i], avg[i], total[i])
    t.total("IT total", "", "", "", avg[-1], total[-1])
    return t


def _feeders(eng: Engineering) -> List[Table]:
    fs = all_feeders(eng)
    load = Table("Feeders: peak load, in normal operation and with one feeder failed",
                 [Column("feeder", True), Column("x"), Column("type", True), Column("V"),
                  Column("load"), Column("normal"), Column("failover"), Column("capacity")])
    loads = [readable.powers([getattr(f, name) for f in fs])
             for name in ("load_w", "normal_w", "failover_w", "capacity_w")]
    for i, f in enumerate(fs):
        x = f"{f.replicas * f.count:,}"
        if f.running < f.count:
            x += " (down)" if f.running == 0 else f" ({f.replicas * f.running:,} up)"
        kind = f"{f.current_type}{' ' + f.side if f.side else ''}" + (
            " net" if f.network_w else " mech" if f.mechanical_w else "")
        load.add(f.path, x, kind, format_number(f.voltage_v), *[col[i] for col in loads])
    wires = Table("Feeders: current at the lowest voltage they run at, conductors, equipment",
                  [Column("feeder", True), Column("current"), Column("at"),
                   Column("voltage drop"), Column("rectifiers"), Column("battery")])
    current = readable.currents([f.current_a for f in fs])
    for i, f in enumerate(fs):
        wires.add(f.path, current[i],
                  f"{format_number(round(f.low_voltage_v, 1))} V" if f.low_voltage_v else "-",
                  f"{f.drop_ratio * 100:.2f} %" if f.drop_ratio is not None else "-",
                  _modules(f), f"{readable.grouped(f.battery_required_ah)} Ah"
                  if f.battery_required_ah else "-")
    wires.lines.extend(_feeder_lines(fs))
    return [load, wires]


def all_feeders(eng: Engineering):
    """The IT feeders and those of the facility's own consumers (`mechanical = true`)."""
    facility = eng.cooling.facility
    return tuple(eng.power.feeders) + (tuple(facility.feeders) if facility is not None else ())


def _feeder_lines(fs) -> List[str]:
    out = []
    for f in fs:
        bits = []
        if f.equipment_v is not None:
            bits.append(f"the equipment sees {format_number(round(f.equipment_v, 2))} V at the "
                        f"batteries' end of discharge ({format_number(round(f.low_voltage_v, 2))}"
                        f" V less the {format_number(round(f.voltage_drop_v, 2))} V drop)")
        if f.recharge_w:
            bits.append(f"rectifiers sized for the load and {readable.power(f.recharge_w)} of "
                        f"battery recharge")
        if f.no_load_w:
            bits.append(f"{readable.power(f.no_load_w)} at no load")
        if bits:
            out.append(f"{f.path}: " + "; ".join(bits))
    return out


def _loops(eng: Engineering) -> List[Table]:
    c = eng.cooling
    loops = Table(f"Liquid loops (peak heat {readable.power(c.liquid_heat_w)})",
                  [Column("loop", True), Column("x"), Column("fluid", True), Column("heat"),
                   Column("supply"), Column("rise"), Column("flow"), Column("CDUs"),
                   Column("pumps")])
    parts = Table("Liquid flow per row and rack (each, in each loop)",
                  [Column("loop / part", True), Column("x per loop"), Column("heat"),
                   Column("flow")])
    heat = readable.powers([lp.heat_w for lp in c.loops])
    pumps = readable.powers([lp.pump_w for lp in c.loops])
    for i, lp in enumerate(c.loops):
        cdus = "-" if lp.cdus_needed is None else (
            f"{lp.cdus} (needs {lp.cdus_needed})" if lp.cdus is not None else
            f"{lp.cdus_needed}")
        loops.add(lp.path, f"{lp.replicas:,}", lp.fluid_name or lp.fluid, heat[i],
                  f"{format_number(lp.supply_c)} degC", f"{format_number(lp.rise_k)} K",
                  f"{formulas.m3s_to_l_per_min(lp.flow_m3s):,.0f} L/min" if lp.flow_m3s else "-",
                  cdus, pumps[i])
        if lp.parts:
            parts.add(lp.path, "", "", "")
        for kind, path, n, q, flow in lp.parts:
            parts.add(f"  {kind} {path}", f"{n:,}", readable.power(q),
                      f"{formulas.m3s_to_l_per_min(flow):,.1f} L/min" if flow else "-")
    loops.lines.extend([f"{lp.path}: fluid {lp.fluid} (CoolProp) at "
                   f"{format_number(round(lp.supply_c + lp.rise_k / 2, 2))} degC"
                   + (f", CDUs draw {readable.power(lp.cdu_w)}" if lp.cdu_w else "")
                   + (f", of which {readable.power(lp.network_heat_w)} from the switches"
                      if lp.network_heat_w else "") for lp in c.loops])
    return [loops] + ([parts] if parts.rows else [])


def _air(eng: Engineering) -> Table:
    c = eng.cooling
    t = Table(f"Air (peak heat {readable.power(c.air_heat_w)})",
              [Column("air unit", True), Column("x"), Column("heat"), Column("average"),
               Column("rise"), Column("flow"), Column("flow CFM"), Column("fans avg")])
    heat = readable.powers([a.heat_w for a in c.air])
    average = readable.powers([a.average_heat_w for a in c.air])
    fans = readable.powers([a.replicas * a.average_heat_w * a.fan_power_ratio
                            if a.fan_power_ratio is not None else None for a in c.air])
    for i, a in enumerate(c.air):
        t.add(a.path, f"{a.replicas:,}", heat[i], average[i], f"{format_number(a.rise_k)} K",
              f"{formulas.m3s_to_m3_per_h(a.flow_m3s):,.0f} m^3/h",
              f"{formulas.m3s_to_cfm(a.flow_m3s):,.0f}", fans[i])
    t.lines.extend(f"{a.path}: humid air (CoolProp) of {format_number(round(a.density, 4))} "
                   f"kg/m^3 at its supply, dew point "
                   f"{format_number(round(a.dew_point_c, 2))} degC, "
                   f"{readable.grouped(a.pressure_pa / 1e3, 2)} kPa"
                   for a in c.air if a.density is not None)
    return t


def _network(f) -> List[Table]:
    title = f"Network: {f.fabric} on {f.owner}" + (f" (x{f.instances:,})" if f.instances > 1
                                                     else "")
    if f.capacity_gpus:
        title += f"; capacity {f.capacity_gpus:,} GPUs"
    switches = Table(title, [Column("tier", True), Column("switch", True),
                             Column("scope", True), Column("groups"), Column("per group"),
                             Column("switches"), Column("power")])
    power = readable.powers([tier.power_w for tier in f.tiers] + [f.power_w])
    ports = Table(f"Network: {f.fabric}, ports and links per tier",
                  [Column("tier", True), Column("down used"), Column("down x speed"),
                   Column("up x speed"), Column("links below"), Column("oversub.")])
    for i, tier in enumerate(f.tiers):
        switches.add(tier.name, tier.switch,
                     tier.scope + ("/" + "/".join(tier.per) if tier.per else ""),
                     f"{tier.groups:,}", f"{tier.per_group:,}", f"{tier.switches:,}", power[i])
        ports.add(tier.name, f"{tier.down_used:.1f}", f"{tier.down_ports} x {tier.down_speed}"
                  if tier.down_speed else "-",
                  f"{tier.up_ports} x {tier.up_speed}" if tier.up_speed else "-",
                  f"{tier.down_links:,}", f"{tier.oversubscription:g}:1"
                  if tier.oversubscription is not None else "-")
    switches.total("total", "", "", "", "", f"{f.switches:,}", power[-1])
    ports.lines.extend(_network_lines(f))
    return [switches, ports]


def _network_lines(f) -> List[str]:
    hops = "; ".join(f"{k}: {route} ({v} switch{'es' if v > 1 else ''})"
                     for (k, v), (_, route) in zip(f.hops, f.routes))
    return [f"NIC ports: {f.host_ports:,}; paths between GPUs: {hops}"] + bom_lines(f)


def _modules(f) -> str:
    if f.rectifier_modules_needed is None:
        return "-"
    if f.rectifier_modules is None:
        return str(f.rectifier_modules_needed)
    return f"{f.rectifier_modules} (needs {f.rectifier_modules_needed})"


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
