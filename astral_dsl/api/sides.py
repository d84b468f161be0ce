"""`astral diff`'s facts of one side, gathered from the pipeline's results: the check (with its
size summary and bill of materials) and Seer's forecast of each job. outputs/diff shapes them
(facts.py), compares two sides (compare.py) and prints the result (render.py)."""
from __future__ import annotations

from typing import Any, Dict

from astral_dsl.outputs.diff.checks import check_facts
from astral_dsl.outputs.diff.diagnostics import diagnostics
from astral_dsl.outputs.diff.facts import SECTIONS, Side, flat, identity, is_count, shown, values
from astral_dsl.pipeline import Checked, front_end_errors


def forecasts(design, names, calibration=None) -> Dict[str, Dict[str, Any]]:
    """Each job's forecast (iteration time, its band: how far to trust it, tokens/s, MFU,
    memory), or the codes that stop it; `calibration`: the fit to forecast with (default: the
    shipped one)."""
    from astral_dsl import seer

    out: Dict[str, Dict[str, Any]] = {}
    for name in names:
        try:
            fc = seer.forecast(design, job=name, calibration=calibration)
        except seer.ForecastError as exc:
            out[name] = {"forecast": "not possible: " + (", ".join(sorted(
                {d.code for d in exc.diagnostics})) or str(exc))}
            continue
        env = fc.envelope()
        out[name] = {"iteration_time_s": round(fc.iteration_time, 6),
                     "band": env.brief(),
                     "tokens_per_s": round(fc.tokens_per_s),      # whole: see the band
                     "mfu_pct": round(fc.mfu * 100, 3),
                     "memory_gb": round(fc.memory.total / 1e9, 3)}
    return out


def side(label: str, checked: Checked, relative, calibration=None) -> Side:
    """The facts of a checked design (pipeline.check); `relative` names a file relative to
    its project; `calibration`: the fit its jobs are forecast with (default: the shipped)."""
    from astral_dsl.outputs.report.bom import bom_lines, line_key
    from astral_dsl.outputs.size_report import size_summary

    design, eng = checked.design, checked.engineering
    diags = checked.diagnostics
    facts: Dict[str, Dict[str, Any]] = {s: {} for s in SECTIONS}
    facts["params"] = {k: shown(v) for k, v in design.params}
    facts["lets"] = {k: shown(v) for k, v in design.lets}
    same = {"params": {k: identity(v) for k, v in design.params},
            "lets": {k: identity(v) for k, v in design.lets}}
    facts["checks"], anchors = check_facts(design.checks, design.file, relative, shown)
    same["checks"] = check_facts(design.checks, design.file, relative, identity)[0]
    if not front_end_errors(design):
        facts["values"] = values(design)
        same["values"] = values(design, identity)
    if eng is not None:
        summary = size_summary(design, eng)
        for k, v in flat(summary).items():
            facts["counts" if is_count(k) else "power"][k] = v
        for line in bom_lines(summary):
            item, model, place = line_key(line)
            facts["bom"][" ".join(x for x in (item, model, f"({place})" if place else "")
                                  if x)] = line["quantity"]
    facts["diagnostics"], diagnostic_anchors, beyond = diagnostics(
        diags, design.file, relative, checked.accepted)
    if not front_end_errors(design):
        facts["jobs"] = forecasts(design, [j.template for j in design.jobs], calibration)
    errors = sum(d.is_error for d in diags)
    return Side(label, errors == 0, errors, sum(d.severity.value == "warning" for d in diags),
                facts, same=same, anchors=anchors, file=design.file or "",
                compiled=not front_end_errors(design), diagnostic_anchors=diagnostic_anchors,
                beyond_front_end=beyond)


__all__ = ["forecasts", "side"]
