"""The sizing sections: the engineering tables (power per level, feeders, loops and air, switch
tiers), every table of the size summary (tables.summary_tables, generic over its keys), the
PUE's components and the bill of materials."""
from __future__ import annotations

from typing import List

from astral_dsl.analyses import formulas
from astral_dsl.analyses.facility import COMPONENTS
from astral_dsl.outputs.feeder_load import (all_feeders, battery_sized_for, failover_through_w,
                                           loading, through_w)
from astral_dsl.outputs.report.bom import bom_lines
from astral_dsl.outputs.report.html import esc, tag
from astral_dsl.outputs.report.sections import section
from astral_dsl.outputs.size_facility import uncounted
from astral_dsl.outputs.report.tables import figure, label, summary_tables, table

# summary keys shown in their own sections or as the engineering tables above (per level, per
# feeder, per loop, per air unit, per fabric tier) rather than again among the size tables
_ELSEWHERE = ("network_bom", "power_by_level", "feeder_list", "loops", "air_units", "network")


def _kw(w):
    return None if w is None else round(w / 1e3, 3)


def engineering_tables(eng) -> str:
    """Per-instance tables of the engineering results."""
    out: List[str] = []
    p, c = eng.power, eng.cooling
    out.append(table(["level", "instance", "replicas", "peak kW each", "average kW each",
                      "peak kW total", "average kW total"],
                     [[lv.kind, lv.path, lv.replicas, _kw(lv.peak_w), _kw(lv.average_w),
                       _kw(lv.peak_w * lv.replicas), _kw(lv.average_w * lv.replicas)]
                      for lv in p.levels], "Power by level (IT load)", tid="size-levels"))
    # the facility's own consumers' feeders (`mechanical = true`) too, as `astral size` lists them
    feeders = all_feeders(eng)
    if feeders:
        out.append(table(
            ["feeder", "feeders", "type", "side", "V", "load kW", "normal kW", "through kW",
             "through, one failed kW", "capacity kW", "normal % of capacity", "current A", "at V",
             "voltage drop %",
             "rectifier modules", "needed", "battery Ah needed", "battery Ah installed",
             "battery sized for kW", "battery sized for"],
            [[f.path, f.replicas * f.count,
              f.current_type + (" net" if f.network_w else " mech" if f.mechanical_w else ""),
              f.side, f.voltage_v, _kw(f.load_w),
              _kw(f.normal_w), _kw(through_w(f, f.normal_w)), _kw(failover_through_w(f)),
              _kw(f.capacity_w),
              round(loading(f, f.normal_w) * 100, 2) if f.capacity_w else None, round(f.current_a, 1), f.low_voltage_v or None,
              round(f.drop_ratio * 100, 3) if f.drop_ratio is not None else None,
              f.rectifier_modules, f.rectifier_modules_needed,
              round(f.battery_required_ah, 1) if f.battery_required_ah else None,
              round(f.battery_available_ah, 1) if f.battery_available_ah else None,
              # the load its batteries ride through, which share that is and by which IEEE 485
              # factors (feeder_load.battery_sized_for, as `astral size` and the picture say it)
              _kw(f.battery_w) if f.battery_for else None, battery_sized_for(f) or None]
             for f in feeders], "Feeders (normal operation and with one feeder failed)",
            tid="size-feeders"))
    if c.loops:
        out.append(table(
            ["loop", "loops", "fluid", "heat kW", "supply degC", "rise K", "flow L/min",
             "CDUs", "CDUs needed", "CDU rating kW", "pump kW"],
            [[lp.path, lp.replicas, lp.fluid, _kw(lp.heat_w), lp.supply_c, lp.rise_k,
              round(formulas.m3s_to_l_per_min(lp.flow_m3s), 1) if lp.flow_m3s else None,
              lp.cdus, lp.cdus_needed, _kw(lp.cdu_capacity_w), _kw(lp.pump_w)]
             for lp in c.loops], "Liquid loops (each)", tid="size-loops"))
    if c.air:
        out.append(table(
            ["air unit", "units", "heat kW", "rise K", "flow m³/h", "flow CFM",
             "worst rack to air kW", "max rack heat kW"],
            [[a.path, a.replicas, _kw(a.heat_w), a.rise_k,
              round(formulas.m3s_to_m3_per_h(a.flow_m3s), 1),
              round(formulas.m3s_to_cfm(a.flow_m3s), 1), _kw(a.max_rack_heat_w) or None,
              _kw(a.rack_limit_w)]
             for a in c.air], "Air cooling (each unit)", tid="size-air"))
    for k, f in enumerate(eng.fabrics):
        caption = f"Network: {f.fabric} on {f.owner}" + (
            f" (x{f.instances:,})" if f.instances > 1 else "") + (
            f"; capacity {f.capacity_gpus:,} GPUs" if f.capacity_gpus else "")
        out.append(table(
            ["tier", "switch", "scope", "groups", "per group", "switches", "down used",
             "down ports", "down speed", "up ports", "up speed", "links below",
             "oversubscription", "kW"],
            [[t.name, t.switch, t.scope + ("/" + "/".join(t.per) if t.per else ""), t.groups,
              t.per_group_text if t.sizes else t.per_group, t.switches, round(t.down_used, 2),
              t.down_ports,
              str(t.down_speed) if t.down_speed else None, t.up_ports,
              str(t.up_speed) if t.up_speed else None, t.down_links, t.shown_oversubscription,
              _kw(t.power_w)] for t in f.tiers], caption, tid=f"size-fabric-{k}"))
    return "".join(out)


def pue_components(eng):
    """(component, average W, peak W) from analyses/facility.py, adding up to the facility
    power on each basis; the averages' total; the peaks' total; the PUE (of the averages)."""
    c = eng.cooling
    avg, peak = c.average, c.peak
    parts = [(label, getattr(avg, name) if avg is not None else None,
              getattr(peak, name) if peak is not None else None) for name, label in COMPONENTS]
    return (parts, avg.total_w if avg is not None else None,
            peak.total_w if peak is not None else None, c.pue)


def pue_section(review) -> str:
    eng = review.checked.engineering
    parts, facility, peak, pue = pue_components(eng)
    if facility is None:
        return section("pue", "PUE components",
                       tag("p", "No cooling is declared: no PUE (W653).", cls="note"))
    it = parts[0][1]
    rows = [[name, round(w / 1e3, 3), round(w / it, 5) if it else None,
             round(w / facility * 100, 3) if facility else None,
             round(pk / 1e3, 3) if pk is not None else None] for name, w, pk in parts]
    rows.append(["facility", round(facility / 1e3, 3), round(facility / it, 5) if it else None,
                 100.0, round(peak / 1e3, 3) if peak is not None else None])
    body = table(["component", "average kW", "share of PUE", "% of facility", "peak kW"], rows,
                 "PUE components (annual average; the peak is what the utility point "
                 "supplies at full load in the hour that draws the most)", tid="pue-components",
                 sortable=False)
    # as `astral size`'s headline and JSON (facility.uncounted) say it
    missing = ", ".join(label for _, label in uncounted(eng)) if pue else ""
    body += tag("p", esc(f"PUE = facility / IT = {figure(round(facility / 1e3, 3))} kW / "
                         f"{figure(round(it / 1e3, 3))} kW = "
                         + (f"{pue:.4f}" if pue else "-")
                         + " (ISO/IEC 30134-2: annual energies; the chillers run the hours "
                           "of the climate, or of the year, free cooling does not cover)"
                         + (f"; a lower bound: {missing} not all counted, their data not "
                            f"declared (`astral size`'s facility table names the parts)"
                            if missing else "")),
                cls="note", id="pue-formula")
    return section("pue", "PUE components", body)


def sizing_section(review) -> str:
    eng = review.checked.engineering
    body = tag("p", "Click a column's header to sort by it (again to reverse).", cls="note")
    body += engineering_tables(eng)
    if review.summary is not None:
        body += tag("h3", "The size summary (astral size --format json)")
        body += summary_tables(review.summary, skip=_ELSEWHERE)
    return section("sizing", "Sizing", body)


def bom_section(review) -> str:
    lines = bom_lines(review.summary or {})
    if not lines:
        return section("bom", "Bill of materials", tag("p", "Nothing counted.", cls="note"))
    body = table([label(k) for k in ("item", "model", "where", "quantity", "unit")],
                 [[x["item"], x["model"] or None, x["where"], x["quantity"], x["unit"]]
                  for x in lines], "Purchase lines", tid="bom-lines")
    return section("bom", "Bill of materials", body)
