"""`astral size`: the sizing report as tables that fit the terminal (outputs/table.py), each
number in a readable unit (units/readable.py); the JSON summary is outputs/size_json.py."""
from __future__ import annotations

from typing import List

from astral_dsl.analyses import formulas, network_groups
from astral_dsl.analyses.engineering import Engineering
from astral_dsl.analyses.network_failures import declared
from astral_dsl.model.design import Design
from astral_dsl.outputs.size_json import (bom, chosen_json, chosen_lines, objective_line,
                                          size_summary, value_text)
from astral_dsl.outputs.table import Field, Table, bold, fold, print_table
from astral_dsl.outputs.feeder_load import (all_feeders, battery_sized_for, failover_through_w,
                                           through_w)
from astral_dsl.units import format_number, readable

__all__ = ["bom", "bom_lines", "chosen_json", "chosen_lines", "objective_line", "render_report",
           "size_summary", "value_text"]


def render_report(design: Design, eng: Engineering, colour: bool = False, width: int = 100,
                  sizing=None) -> str:
    """The report, `width` columns wide: tables wider than that are stacked."""
    from astral_dsl.outputs.terminal import printable

    lines: List[str] = []

    def say(text: str = "") -> None:         # one line of text, folded to the width
        lines.extend(fold(text, width) if text else [""])

    for line in chosen_lines(design):
        say(printable(line))
    objective = objective_line(sizing)
    if objective is not None:
        say(printable(objective))
    _headline(lines, design, eng, colour, width)
    for t in _tables(eng):
        print_table(lines.append, t, width, colour, printable)
        for line in t.lines:
            lines.extend(fold(printable(line), width, "  ", "      "))
        if t.lines:
            lines.append("")
    return "".join(line.rstrip() + "\n" for line in "\n".join(lines).splitlines())


def _headline(lines: List[str], design, eng, colour: bool, width: int) -> None:
    from astral_dsl.analyses.summary import counts_text, summarize
    from astral_dsl.outputs.size_facility import uncounted
    from astral_dsl.outputs.terminal import printable

    s = summarize(design, eng)
    p, c = eng.power, eng.cooling
    first = fold(f"{printable(design.file)}: {counts_text(s)}", width)
    name = printable(design.file)
    if colour and first[0].startswith(name + ":"):      # the file's name in bold
        first[0] = bold(name, True) + first[0][len(name):]
    lines.extend(first)
    facility = f"facility {readable.power(c.facility_w)} average"
    if c.peak is not None:
        facility += f", {readable.power(c.peak.total_w)} peak"
    missing = ", ".join(label for _, label in uncounted(eng)) if c.pue else ""
    lower = f" (a lower bound: {missing} not all counted, see the facility table)" \
        if missing else ""
    lines.extend(fold(f"IT {readable.power(p.it_peak_w)} peak, {readable.power(p.it_average_w)} "
                      f"average; {facility}; PUE "
                      f"{format_number(round(c.pue, 4)) if c.pue else '-'}{lower}", width))


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
              [Field("level", True), Field("instance", True), Field("replicas"),
               Field("peak each"), Field("avg each"), Field("peak total")])
    each = readable.powers([lv.peak_w for lv in levels])
    avg = readable.powers([lv.average_w for lv in levels] + [eng.power.it_average_w])
    total = readable.powers([lv.peak_w * lv.replicas for lv in levels] + [eng.power.it_peak_w])
    for i, lv in enumerate(levels):
        t.add(lv.kind, lv.path, f"{lv.replicas:,}", each[i], avg[i], total[i])
    t.total("IT total", "", "", "", avg[-1], total[-1])
    return t


def _ratings(fs) -> List[str]:
    """The feeders' capacities as stated: a rating in kVA (feeders.rated_capacity) in kVA."""
    cells = readable.powers([f.rating for f in fs])
    return [readable.apparent(c) if f.rating_pf else c for c, f in zip(cells, fs)]


def _feeders(eng: Engineering) -> List[Table]:
    fs = all_feeders(eng)
    # under a scenario that failed a feeder, the shares are what each carries now and with one
    # more failed (analyses/feeders.py: `degraded`), and the headers say so
    failed = any(f.degraded for f in fs)
    now, more = ("now", "one more") if failed else ("normal", "failover")
    when = ("under the scenario's failures and with one more feeder failed" if failed else
            "in normal operation and with one feeder failed")
    load = Table(f"Feeders: peak load, {when}",
                 [Field("feeder", True), Field("x"), Field("type", True), Field("V"),
                  Field("load"), Field(now), Field("through"), Field(more),
                  Field("capacity")])
    # the failover column is, as `through`, the power through the feeder (its share over its
    # efficiency): the figure E621 compares with its capacity
    failover = [failover_through_w(f) for f in fs]
    loads = [readable.powers([f.load_w for f in fs]), readable.powers([f.normal_w for f in fs]),
             readable.powers([through_w(f, f.normal_w) for f in fs]),
             readable.powers([w or 0.0 for w in failover]),
             _ratings(fs)]
    loads[3] = [cell if w is not None else "-" for cell, w in zip(loads[3], failover)]
    for i, f in enumerate(fs):
        x = f"{f.replicas * f.count:,}"
        if f.running < f.count:
            x += " (down)" if f.running == 0 else f" ({f.replicas * f.running:,} up)"
        kind = f"{f.current_type}{' ' + f.side if f.side else ''}" + (
            " net" if f.network_w else " mech" if f.mechanical_w else "")
        load.add(f.path, x, kind, format_number(f.voltage_v), *[col[i] for col in loads])
    load.lines.append(f"through, {more}: the feeder's share of the load over its efficiency "
                      f"(against its capacity), {when}"
                      + ("; for a feeder that shares its load with a failed one, a second "
                         "failure, which no check holds it to" if failed else ""))
    if any(w is None for w in failover):
        load.lines.append(f"{more} -: no feeder is left to carry the load when one "
                          f"{'more ' if failed else ''}fails")
    wires = Table("Feeders: current at the lowest voltage they run at, conductors, equipment",
                  [Field("feeder", True), Field("current"), Field("at"),
                   Field("voltage drop"), Field("rectifiers"), Field("battery")])
    current = readable.currents([f.current_a for f in fs])
    for i, f in enumerate(fs):
        wires.add(f.path, current[i],
                  f"{format_number(round(f.low_voltage_v, 1))} V" if f.low_voltage_v else "-",
                  f"{f.drop_ratio * 100:.2f} %" if f.drop_ratio is not None else "-",
                  _modules(f), _battery(f))
    wires.lines.extend(_feeder_lines(fs))
    return [load, wires]


def _feeder_lines(fs) -> List[str]:
    out = []
    for f in fs:
        bits = []
        if f.equipment_v is not None:
            bits.append(f"the equipment sees {format_number(round(f.equipment_v, 2))} V at the "
                        f"batteries' end of discharge ({format_number(round(f.low_voltage_v, 2))}"
                        f" V less the {format_number(round(f.voltage_drop_v, 2))} V drop)")
        if f.battery_for:
            bits.append(f"batteries sized for {readable.power(f.battery_w)}, "
                        f"{battery_sized_for(f)}")
        if f.recharge_w:
            bits.append(f"rectifiers sized for the load and {readable.power(f.recharge_w)} of "
                        f"battery recharge")
        if f.no_load_w:
            # what the installed modules draw whatever the load (their `no_load_loss`), per
            # feeder: the feeder itself does not draw it
            modules = f.rectifier_modules or f.rectifier_modules_needed
            bits.append(f"its {modules} rectifier modules draw {readable.power(f.no_load_w)} at "
                        f"no load" if modules else
                        f"its rectifier draws {readable.power(f.no_load_w)} at no load")
        if bits:
            out.append(f"{f.path}: " + "; ".join(bits))
    return out


def _loops(eng: Engineering) -> List[Table]:
    c = eng.cooling
    loops = Table(f"Liquid loops (peak heat {readable.power(c.liquid_heat_w)} in all; each "
                  f"loop's figures)",
                  [Field("loop", True), Field("x"), Field("fluid", True), Field("heat"),
                   Field("supply"), Field("rise"), Field("flow"), Field("CDUs"),
                   Field("pumps")])
    parts = Table(f"Liquid flow per {_kinds(c.loops)} (each, in each loop)",
                  [Field("loop / part", True), Field("x per loop"), Field("heat"),
                   Field("flow")])
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


def _kinds(loops) -> str:
    """The kinds of part the loops list, as the design has them: `row and rack`, or `rack`
    alone in a design of halls (rows and blocks are listed, then racks: analyses/loops.py)."""
    kinds = sorted({kind for lp in loops for kind, *_ in lp.parts},
                   key=lambda k: (k == "rack", k))
    return " and ".join([", ".join(kinds[:-1])] + kinds[-1:]) if len(kinds) > 1 else \
        "".join(kinds)


def _air(eng: Engineering) -> Table:
    c = eng.cooling
    t = Table(f"Air (peak heat {readable.power(c.air_heat_w)} in all; each unit's heat, flow and "
              f"fans)",
              [Field("air unit", True), Field("x"), Field("heat"), Field("average"),
               Field("rise"), Field("flow"), Field("flow CFM"), Field("fans avg")])
    heat = readable.powers([a.heat_w for a in c.air])
    average = readable.powers([a.average_heat_w for a in c.air])
    fans = readable.powers([a.average_heat_w * a.fan_power_ratio
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
    switches = Table(title, [Field("tier", True), Field("switch", True),
                             Field("scope", True), Field("groups"), Field("per group"),
                             Field("switches"), Field("power")])
    power = readable.powers([tier.power_w for tier in f.tiers] + [f.power_w])
    ports = Table(f"Network: {f.fabric}, ports and links per tier",
                  [Field("tier", True), Field("down used"), Field("down x speed"),
                   Field("up x speed"), Field("links below"), Field("oversub.")])
    for i, tier in enumerate(f.tiers):
        switches.add(tier.name, tier.switch,
                     tier.scope + ("/" + "/".join(tier.per) if tier.per else ""),
                     f"{tier.groups:,}", tier.per_group_text, f"{tier.switches:,}", power[i])
        ports.add(tier.name, format_number(round(tier.down_used, 1)),     # 32, not 32.0
                  f"{tier.down_ports} x {tier.down_speed}"
                  if tier.down_speed else "-",
                  f"{tier.up_ports} x {tier.up_speed}" if tier.up_speed else "-",
                  f"{tier.down_links:,}",
                  f"{format_number(round(tier.shown_oversubscription, 4))}:1"
                  if tier.shown_oversubscription is not None else "-")
    switches.total("total", "", "", "", "", f"{f.switches:,}", power[-1])
    ports.lines.extend(_network_lines(f))
    return [switches, ports]


def _network_lines(f) -> List[str]:
    hops = "; ".join(f"{k}: {route} ({v} switch{'es' if v > 1 else ''})"
                     for (k, v), (_, route) in zip(f.hops, f.routes))
    return [f"NIC ports: {f.host_ports:,}; paths between GPUs: {hops}"] + bom_lines(f)


def _battery(f) -> str:
    """The capacity its batteries hold beside what its autonomy needs (IEEE 485), as `_modules`
    gives the rectifier's: `1,600 Ah (needs 315)`; `needs 315 Ah` when none is declared."""
    if not f.battery_required_ah:
        return "-"
    needed = readable.grouped(f.battery_required_ah)
    if f.battery_available_ah is None:
        return f"needs {needed} Ah"
    return f"{readable.grouped(f.battery_available_ah)} Ah (needs {needed})"


def _modules(f) -> str:
    """The rectifier's modules beside what the load needs, as `_battery` gives the battery's:
    `9 (needs 9)`; `needs 15` when it states no `modules`."""
    if f.rectifier_modules_needed is None:
        return "-"
    if f.rectifier_modules is None:
        return f"needs {f.rectifier_modules_needed:,}"
    return f"{f.rectifier_modules:,} (needs {f.rectifier_modules_needed:,})"


def bom_lines(fabric) -> List[str]:
    """The links of each tier, and why a tier's switch count was rounded up."""
    out = []
    for t in fabric.tiers:
        base, worst = declared(t), t.shown_oversubscription
        if base is not None and worst is not None and worst > base * (1 + 1e-9):
            out.append(f"{t.name}: oversubscribed {format_number(round(worst, 4))}"
                       f":1 at its worst switch under the scenario's failures, "
                       f"{format_number(round(base, 4))}:1 as declared")
        if t.sizes:
            out.append(f"{t.name}: its groups differ in size, each sized for its own "
                       f"{t.scope}: {network_groups.describe(t.sizes)}")
        if t.by_group:
            out.append(f"{t.name}: its groups differ by rail or plane, each sized for its own "
                       f"links: {network_groups.describe_groups(t.by_group)}")
        if t.sized_for:
            out.append(f"{t.name}: {t.needed:,} switches per group: {t.sized_for}")
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
