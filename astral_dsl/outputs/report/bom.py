"""The bill of materials as purchase lines, from a size summary (outputs.size_report): switches
by model and tier, each tier's cables (or fibres) and transceivers by medium, CDUs by model (and
rating, where one model is installed at two), and the power equipment the summary counts (the IT
feeders and apart those of the facility's own
consumers, rectifier modules, battery capacity: what is installed, as for the modules, and apart
the need of batteries that declare no capacity). One
line is (item, model, where, quantity, unit); `astral diff` compares these lines too."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from astral_dsl.units import readable

# summary keys of equipment counted as a whole, and how a line names them
_EQUIPMENT = (("feeders", "feeder", "power distribution", "feeders"),
              ("mechanical_feeders", "feeder", "facility consumers (mechanical)", "feeders"),
              ("rectifier_modules", "rectifier module", "HVDC feeders", "modules"),
              ("battery_ah_installed", "battery capacity", "HVDC feeders", "Ah"),
              # batteries that declare no `strings` x `string_capacity` (W-coded): what they need
              ("battery_ah_not_declared", "battery capacity, needed (not declared)",
               "HVDC feeders", "Ah"))


def bom_lines(summary: Mapping[str, Any]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for row in summary.get("network_bom") or ():
        if row.get("item") == "switch":
            out.append({"item": "switch", "model": row.get("model"), "where": row.get("tier"),
                        "quantity": row.get("count"), "unit": "switches"})
            continue
        medium = row.get("medium") or "medium not declared"
        what = "fibre" if row.get("medium_type") == "optics" else "cable"
        where = f"{row.get('tier')} links, {row.get('speed')}" + (
            f", {row['length_m']:g} m" if row.get("length_m") is not None else "")
        if row.get("cables"):
            out.append({"item": what, "model": medium, "where": where,
                        "quantity": row["cables"], "unit": f"{what}s"})
        if row.get("transceivers"):
            out.append({"item": "transceiver", "model": medium, "where": where,
                        "quantity": row["transceivers"], "unit": "modules"})
    out += _cdu_lines(summary)
    counts = dict(summary)
    # the feeders with `mechanical = true` are installed as the IT feeders are (they are not in
    # `feeders`, the IT feeders' count)
    counts["mechanical_feeders"] = sum(f.get("replicas", 1) * f.get("count", 1)
                                       for f in summary.get("mechanical_feeders") or ())
    for key, item, where, unit in _EQUIPMENT:
        value = counts.get(key)
        if value:
            out.append({"item": item, "model": "", "where": where, "quantity": value,
                        "unit": unit})
    return out


def _cdu_lines(summary: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """A line per CDU model (`cdus_by_model`); a model installed at two ratings names each
    (`CDU, 1.2 MW`). A summary without the models (an older one) keeps one line of them all."""
    models = summary.get("cdus_by_model")
    if models is None:
        n = summary.get("cdus")
        return [{"item": "CDU", "model": "", "where": "cooling loops", "quantity": n,
                 "unit": "units"}] if n else []
    names = [m["model"] for m in models]
    out = []
    for m in models:
        model = m["model"] or "CDU model not declared"
        if names.count(m["model"]) > 1 and m.get("capacity_kw") is not None:
            model += f", {readable.power(m['capacity_kw'] * 1e3)}"
        out.append({"item": "CDU", "model": model, "where": "cooling loops",
                    "quantity": m["count"], "unit": "units"})
    return out


def line_key(line: Mapping[str, Any]):
    """What identifies a line across two designs: everything but the quantity."""
    return (line["item"], line["model"] or "", line["where"] or "")
