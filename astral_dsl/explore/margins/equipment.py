"""The limits of a feeder's and a loop's equipment, as their checks measure them: the batteries'
Ah against what their autonomy needs (E623), the rectifier modules declared against those
needed (E627), each conductor set's current against its ampacity (E625), the voltage drop
against `max_voltage_drop` (E622), and a loop's coolant flow against its `max_flow` and what its
CDUs pass, with and without the failure its redundancy covers (E643, E641). One limit per
feeder or loop declaration (so per site where the design has several), numeric sides in the
check's units: the margins bracket them by evaluating the design again."""
from __future__ import annotations

from typing import List

from astral_dsl.explore.margins.limits import Limit, where_of, cdus_limits
from astral_dsl.units import Quantity, readable


def feeder_equipment(eng, design) -> List[Limit]:
    from astral_dsl.analyses.walk import Resolver

    resolve = Resolver(design)
    facility = eng.cooling.facility
    mechanical = facility.feeders if facility is not None else ()
    out: List[Limit] = []
    for fr in tuple(eng.power.feeders) + tuple(mechanical):
        f = resolve.by_path.get(fr.path)
        if f is None:
            continue
        bat = resolve(f.field("battery"))
        if bat is not None and fr.battery_required_ah and fr.battery_available_ah is not None:
            file, line, col = where_of(bat.span_of("strings") or f.span_of("battery"))
            out.append(Limit(f"battery:{fr.path}", "battery",
                             f"battery capacity of feeder {fr.path} (IEEE 485, for its "
                             f"autonomy)", fr.battery_required_ah * 3600.0,
                             fr.battery_available_ah * 3600.0, "<=", "Ah", file, line, col))
        rect = resolve(f.field("rectifier"))
        if rect is not None and fr.rectifier_modules_needed is not None and \
                fr.rectifier_modules is not None:
            file, line, col = where_of(rect.span_of("modules") or f.span_of("rectifier"))
            out.append(Limit(f"rectifier:{fr.path}", "rectifier",
                             f"rectifier modules of feeder {fr.path} (needed <= installed)",
                             float(fr.rectifier_modules_needed), float(fr.rectifier_modules),
                             "<=", "", file, line, col))
        if fr.conductor_current_a is not None and fr.ampacity_a is not None:
            file, line, col = where_of(f.span_of("conductor_area"))
            out.append(Limit(f"ampacity:{fr.path}", "ampacity",
                             f"current per conductor set of feeder {fr.path}",
                             fr.conductor_current_a, fr.ampacity_a, "<=", "A", file, line, col))
        limit = f.field("max_voltage_drop")
        if fr.drop_ratio is not None and isinstance(limit, Quantity):
            file, line, col = where_of(f.span_of("max_voltage_drop"))
            out.append(Limit(f"voltage_drop:{fr.path}", "voltage_drop",
                             f"voltage drop of feeder {fr.path}", fr.drop_ratio, limit.si,
                             "<=", "%", file, line, col,
                             note=f"{readable.voltage(fr.voltage_drop_v)} of the "
                                  f"{readable.voltage(fr.low_voltage_v)} it carries its "
                                  f"current at ({fr.low_voltage_from})"))
    return out


def loop_flows(eng, design) -> List[Limit]:
    from astral_dsl.analyses.walk import Resolver

    resolve = Resolver(design)
    out: List[Limit] = []
    for lp in eng.cooling.loops:
        inst = resolve.by_path.get(lp.path)
        if inst is None or lp.flow_m3s is None:
            continue
        limit = inst.field("max_flow")
        if isinstance(limit, Quantity):
            file, line, col = where_of(inst.span_of("max_flow"))
            out.append(Limit(f"flow:{lp.path}", "flow", f"coolant flow of loop {lp.path}",
                             lp.flow_m3s, limit.si, "<=", "L/min", file, line, col))
        cdu = resolve(inst.field("cdu"))
        per = cdu.field("max_flow") if cdu is not None else None
        if not isinstance(per, Quantity) or not lp.cdus:
            continue
        out.extend(cdus_limits(lp, "cdu_flow", f"coolant flow through the CDUs of loop "
                                               f"{lp.path}", lp.flow_m3s, per.si, "L/min",
                               where_of(inst.span_of("cdus"))))
    return out
