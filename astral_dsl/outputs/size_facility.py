"""The facility in `astral size`: its water circuits and their heat rejection over the year,
the transformers at the utility point, and its draw component by component with the PUE, as
tables (outputs/size_report.py) and as JSON (outputs/size_json.py)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from astral_dsl.analyses import formulas
from astral_dsl.analyses.engineering import Engineering
from astral_dsl.analyses.facility import COMPONENTS
from astral_dsl.outputs.table import Field, Table
from astral_dsl.units import format_number, readable


def _kw(w: Optional[float]) -> Optional[float]:
    return None if w is None else round(w / 1e3, 3)


def _r(x: Optional[float], digits: int = 3) -> Optional[float]:
    return None if x is None else round(x, digits)


def _basis(eng: Engineering) -> Dict[str, str]:
    c = eng.cooling
    f = c.facility
    circuits = f.circuits if f else ()
    weather = "hour by hour over the climate" if f and f.climate else \
        "the declared free-cooling hours"
    chain = "no-load and load losses, hour by hour"
    fed = bool(eng.power.feeders or (f and f.feeders))
    if not fed and f and not f.transformers:
        chain = "no `transformer` and no feeder (W626): not counted"
    if f and f.default_transformer:     # no transformer at all, or a site without one
        chain = f"{chain}; 0.47 % of the load of the sites without one (W630)" \
            if f.transformers else "0.47 % of the load (no transformer: W630)"
    chain = _unstated(chain, [t.path for t in (f.transformers if f else ())
                              if not t.no_load_w and not t.load_loss_w],
                      "no `no_load_loss` or `load_loss` (W630)")
    return {
        "it_w": "hosts at their utilization, switches at full power",
        "transformers_w": chain,
        "losses_w": _unstated("feeders' conversion, rectifiers at no load", [
            x.path for x in list(eng.power.feeders) + list(f.feeders if f else ())
            if x.load_w > 0 and x.efficiency is None], "no `efficiency` (W624)") if fed else
        "no feeder (W626): not counted",
        "cdus_w": _cdu_basis(c.loops),
        "pumps_w": _unstated("at the loops' design flow, all year", [
            lp.path for lp in c.loops if lp.heat_w > 0 and not lp.pump_w],
            "pumps not stated (W648)"),
        "facility_pumps_w": _unstated("at the circuits' design flow, all year", [
            cy.circuit.path for cy in circuits if cy.circuit.peak_w > 0 and
            not cy.circuit.pump_w], "pumps not stated (W648)"),
        "fans_w": _unstated("air units: fan ratio x heat removed", [
            a.path for a in c.air if a.heat_w > 0 and a.fan_power_ratio is None],
            "no `fan_power_ratio` (W657)"),
        "chillers_w": _unstated(weather, [
            cy.circuit.path for cy in circuits if cy.cop is None and
            cy.partial_h + cy.mechanical_h > 0], "no `chiller` (W656)"),
        "rejection_w": _unstated("fan ratio x heat rejected", [
            cy.circuit.path for cy in circuits if cy.circuit.peak_w > 0 and
            cy.fan_ratio is None], "no `rejection_fan_ratio`"),
        "auxiliary_w": "the site's `auxiliary`, all year",
    }


def uncounted(eng: Engineering) -> List[Tuple[str, str]]:
    """(field, label) of the components some of whose parts the facility's draw does not count
    (their data not declared: the basis says which), in the table's order: the PUE is a lower
    bound."""
    if eng.cooling.average is None:
        return []
    notes = _basis(eng)
    return [(name, label) for name, label in COMPONENTS if "not counted" in notes[name]]


def _unstated(basis: str, paths: List[str], missing: str) -> str:
    """A component's basis, naming the parts whose share of it is not counted (0 W: their
    data is not declared, which a warning says: W648 pumps, W657 fans, W656 chillers and heat
    rejection), so that a line that reads 0 W or too little is not taken for a computed one."""
    if not paths:
        return basis
    names = ", ".join(f"`{p}`" for p in paths[:3]) + (
        f" and {len(paths) - 3:,} more" if len(paths) > 3 else "")
    return f"{basis}; {names}: {missing}, not counted"


def _cdu_basis(loops) -> str:
    """What the CDUs' line counts: the running CDUs' declared `power` (their own draw besides
    the pumps, which the pumps' line counts); a CDU that states none is named, not counted."""
    unstated = sorted({lp.cdu_model for lp in loops if lp.cdu_model and not lp.cdu_power_stated})
    if not unstated:
        return "the running CDUs' declared power"
    names = ", ".join(f"`{n}`" for n in unstated)
    stated = any(lp.cdu_power_stated for lp in loops)
    return (f"declared; {names}: none, not counted" if stated else
            f"{names} state{'s' if len(unstated) == 1 else ''} no `power`: not counted")


def facility_tables(eng: Engineering) -> List[Table]:
    c = eng.cooling
    f = c.facility
    out = []
    if f is not None and f.circuits:
        out += _circuits(f)
    if f is not None and f.transformers:
        out.append(_transformers(f))
    notes = _basis(eng)
    t = Table("Facility: what it draws over the year, and at the peak hour (the utility point)",
              [Field("component", True), Field("average"), Field("peak"),
               Field("basis", True)])
    avg = readable.powers([getattr(c.average, n) for n, _ in COMPONENTS] + [c.average.total_w])
    peak = readable.powers([getattr(c.peak, n) for n, _ in COMPONENTS] + [c.peak.total_w])
    for i, (name, label) in enumerate(COMPONENTS):
        t.add(label, avg[i], peak[i], notes[name])
    t.total("facility", avg[-1], peak[-1], "")
    t.total("PUE", format_number(round(c.pue, 4)) if c.pue else "-", "",
            "annual energy ratio (ISO/IEC 30134-2)")
    if f is not None:
        t.lines.append(_peak_line(eng))
    out.append(t)
    return out


def _peak_line(eng: Engineering) -> str:
    c, f = eng.cooling, eng.cooling.facility
    when = f"the hour of `{f.climate}` that draws the most ({f.peak_hour})" if f.peak_hour else \
        "full load with the chillers on" if c.peak.chillers_w else "full load"
    if f.climate and not f.peak_hour:       # nothing counted follows the weather
        when += f", every hour of `{f.climate}` alike"
    return f"peak demand at the utility point: {readable.power(c.peak.total_w)}, {when}"


def _circuits(f) -> List[Table]:
    water = Table("Facility water: the circuits, their heat (loops, air units, their share of the "
                  "losses and of the lighting and auxiliaries, their own pumps' heat) and pumps",
                  [Field("circuit", True), Field("supply/return"), Field("heat avg"),
                   Field("heat peak"), Field("flow"), Field("pumps")])
    heat = readable.powers([cy.circuit.average_w for cy in f.circuits])
    peak = readable.powers([cy.circuit.peak_w for cy in f.circuits])
    pumps = readable.powers([cy.circuit.pump_w for cy in f.circuits])
    for i, cy in enumerate(f.circuits):
        cc = cy.circuit
        temps = "-" if cc.supply_c is None else (
            f"{format_number(round(cc.supply_c, 2))}/"
            f"{format_number(round(cc.supply_c + cc.rise_k, 2))} degC" if cc.rise_k else
            f"{format_number(round(cc.supply_c, 2))} degC")
        water.add(cc.path, temps, heat[i], peak[i],
                  f"{formulas.m3s_to_l_per_min(cc.flow_m3s):,.0f} L/min" if cc.flow_m3s
                  else "-", pumps[i])
    # the hours are disjoint and add up to the year: free (chillers off), partial (the chillers
    # share the heat with the heat rejection), mechanical (the chillers carry all of it); the
    # JSON's `chiller_h` is the chillers' running hours, partial + mechanical
    hours = Table("Heat rejection over the year: hours with the chillers off (free), sharing the "
                  "heat (partial) and carrying all of it (mechanical), adding up to the year",
                  [Field("circuit", True), Field("rejection", True), Field("free h"),
                   Field("partial h"), Field("mechanical h"), Field("chillers avg"),
                   Field("at peak"), Field("fans avg")])
    chill = readable.powers([cy.chillers_w for cy in f.circuits])
    chill_peak = readable.powers([cy.chillers_peak_w for cy in f.circuits])
    fans = readable.powers([cy.fans_w for cy in f.circuits])
    for i, cy in enumerate(f.circuits):
        how = cy.rejection.replace("_", " ") + (
            f" +{format_number(round(cy.approach_k, 2))} K" if cy.approach_k is not None else "")
        hours.add(cy.circuit.path, how, readable.grouped(cy.free_h),
                  readable.grouped(cy.partial_h), readable.grouped(cy.mechanical_h),
                  chill[i], chill_peak[i], fans[i])
    for cy in f.circuits:
        hours.lines.append(f"{cy.circuit.path}: chillers {cy.chiller}; economiser "
                           f"{cy.economiser}" + (f"; water class {cy.water_class}"
                                                 if cy.water_class else ""))
    if f.climate:
        hours.lines.append(f"climate `{f.climate}` ({f.climate_place or 'no place named'}): "
                           f"{f.climate_hours:,} hourly rows; the heat rejection follows the dry "
                           f"bulb (dry coolers) or the wet bulb (cooling towers) plus its approach")
    return [water, hours]


def _transformers(f) -> Table:
    t = Table("Transformers at the utility point (each stage carries the whole site; kVA = kW "
              "/ power factor)",
              [Field("transformers", True), Field("x"), Field("rating"),
               Field("redundancy", True), Field("power factor", True), Field("peak load"),
               Field("losses avg"), Field("losses peak")])
    for tr in f.transformers:
        t.add(tr.path, f"{tr.replicas * tr.count:,}", readable.apparent(
            readable.power(tr.capacity_w)), tr.redundancy,
              f"{format_number(round(tr.power_factor, 4))} ({_PF_FROM[tr.power_factor_from]})",
              readable.apparent(readable.power(tr.peak_load_w * tr.replicas / tr.power_factor)),
              readable.power(tr.average_loss_w), readable.power(tr.peak_loss_w))
    return t


_PF_FROM = {"declared": "declared", "feeders": "feeders' lowest", "assumed": "W631"}


def facility_json(eng: Engineering) -> Dict[str, Any]:
    c = eng.cooling
    f = c.facility

    def parts(d):
        if d is None:
            return None
        out = {name[:-2] + "_kw": _kw(getattr(d, name)) for name, _ in COMPONENTS}
        out["total_kw"] = _kw(d.total_w)
        return out

    return {"average": parts(c.average), "peak": parts(c.peak),
            "pue": round(c.pue, 6) if c.pue else None,
            "water_class": c.water_class,
            "climate": f.climate if f else None,
            "climate_hours": f.climate_hours if f else 0,
            "peak_hour": f.peak_hour if f else None,
            "utility_peak_kw": _kw(c.peak.total_w) if c.peak else None,
            "air_pressure_pa": _r(f.pressure_pa, 1) if f else None,
            "air_pressure_from": f.pressure_from if f else None,
            "default_transformer": f.default_transformer if f else False,
            # the components the PUE leaves parts of out (0 W: not declared), as `average`'s keys
            "uncounted": [name[:-2] + "_kw" for name, _ in uncounted(eng)],
            # the first circuit's, as before there were several (`circuits` has each)
            "free_cooling_h": _r(f.circuits[0].free_h, 2) if f and f.circuits else None,
            "chiller_cop": f.circuits[0].cop if f and f.circuits else None,
            "rejection_fan_ratio": f.circuits[0].fan_ratio if f and f.circuits else None,
            "circuits": [circuit_json(cy) for cy in f.circuits] if f else [],
            "transformers": [transformer_json(t) for t in f.transformers] if f else []}


def circuit_json(cy) -> Dict[str, Any]:
    cc = cy.circuit
    return {"path": cc.path, "replicas": cc.replicas, "supply_c": _r(cc.supply_c, 4),
            "rise_k": _r(cc.rise_k, 4), "fluid": cc.fluid, "water_class": cy.water_class,
            "heat_average_kw": _kw(cc.average_w), "heat_peak_kw": _kw(cc.peak_w),
            "flow_l_per_min": round(formulas.m3s_to_l_per_min(cc.flow_m3s), 1)
            if cc.flow_m3s else None, "pump_kw": _kw(cc.pump_w),
            "draws": [{"path": d.path, "kind": d.kind, "average_kw": _kw(d.average_w),
                       "peak_kw": _kw(d.peak_w)} for d in cc.draws],
            "rejection": cy.rejection, "rejection_approach_k": _r(cy.approach_k, 4),
            "economiser": cy.economiser, "chiller": cy.chiller, "chiller_cop": cy.cop,
            "rejection_fan_ratio": cy.fan_ratio,
            "free_cooling_h": _r(cy.free_h, 2), "partial_h": _r(cy.partial_h, 2),
            "mechanical_h": _r(cy.mechanical_h, 2),
            "chiller_h": _r(cy.partial_h + cy.mechanical_h, 2),
            "chillers_kw_average": _kw(cy.chillers_w), "chillers_kw_peak": _kw(cy.chillers_peak_w),
            "rejection_fans_kw_average": _kw(cy.fans_w),
            "rejection_fans_kw_peak": _kw(cy.fans_peak_w)}


def transformer_json(t) -> Dict[str, Any]:
    return {"path": t.path, "replicas": t.replicas, "count": t.count,
            "capacity_kva": _kw(t.capacity_w), "redundancy": t.redundancy,
            "power_factor": _r(t.power_factor, 6), "power_factor_from": t.power_factor_from,
            "no_load_loss_kw": _kw(t.no_load_w), "load_loss_kw": _kw(t.load_loss_w),
            "peak_load_kw": _kw(t.peak_load_w * t.replicas),
            "peak_load_kva": _kw(t.peak_load_w * t.replicas / t.power_factor),
            "losses_kw_average": _kw(t.average_loss_w), "losses_kw_peak": _kw(t.peak_loss_w)}
