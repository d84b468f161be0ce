"""One point of a sweep, evaluated where a worker runs it: compile the design with the point's
overrides, check it as `astral check` does (sizing, engineering, the scenario asked for), and,
with a job, forecast it. The result is a plain dict (a row), so it travels between processes and
machines as data; a point that fails is a row with its diagnostics, never an exception."""
from __future__ import annotations

import traceback
from typing import Any, Dict, List, Optional, Sequence


from astral_dsl import records
from astral_dsl.explore.bundle import Bundle, laid_out, renamer
from astral_dsl.kept import Kept
from astral_dsl.semantics.overrides import Option, command_line

# the columns of `astral size --format json`'s summary a sweep shows
SUMMARY = ("gpus", "hosts", "racks", "switches", "it_power_kw", "it_power_avg_kw",
           "facility_power_kw", "pue")
# with a job: the forecast's figures, its memory estimate per GPU (the fullest stage's, GB) and
# whether that estimate plus its uncertainty exceeds the GPU's memory (`may_not_fit`: the test of
# `astral forecast`'s "may not fit" and `astral search`'s `may not`; W750 tests the estimate alone)
FORECAST = ("iteration_time_s", "tokens_per_s", "mfu", "memory_gb", "may_not_fit", "calibration")


@records.frozen
class PointOptions:
    job: Optional[str] = None          # forecast this job (None: no forecast)
    forecast: bool = False
    scenario: Optional[str] = None
    calibration: Any = None            # Seer's constants (None: the shipped fit)
    set_option: Option = command_line  # how an override is named (semantics/overrides.py)


def evaluate_points(bundle: Bundle, points: Sequence[Dict[str, str]],
                    options: PointOptions) -> List[Dict[str, Any]]:
    """The rows of `points` (overrides by parameter name), in order."""
    with laid_out(bundle) as (entry, rename):
        fix = renamer(rename)
        return [evaluate_point(entry, p, options, fix, bundle.entry_name) for p in points]


def evaluate_point(entry, overrides: Dict[str, str], options: PointOptions, fix=lambda d: d,
                   name: str = "") -> Dict[str, Any]:
    from astral_dsl.outputs.jsonout import diagnostic_json

    row: Dict[str, Any] = {"valid": False, "metrics": {}, "diagnostics": []}
    try:
        diags, metrics = _evaluate(str(entry), overrides, options)
    except Exception as exc:  # noqa: BLE001 - a bug must cost one row, not the sweep
        row["diagnostics"] = [{
            "code": "E000", "severity": "error",
            "message": f"internal error while evaluating this point: {type(exc).__name__}: {exc}",
            "file": name, "range": None,
            "hint": "this is a bug in astral_dsl, not in your design; please report it",
            "notes": traceback.format_exc().strip().splitlines()[-3:]}]
        return row
    row["diagnostics"] = [fix(diagnostic_json(d)) for d in diags]
    row["valid"] = not any(d.is_error for d in diags)
    row["metrics"] = metrics
    return row


KEEP_PARSED = 8      # designs whose parsed workspace a process keeps (0.1-5 MiB each)
_PARSED = Kept(KEEP_PARSED)


def workspace(entry: str):
    """The workspace of `entry`: its source is read and parsed once per process (while it is
    among the KEEP_PARSED most recently used), then evaluated with each point's overrides, as
    `astral check --set ...` would."""
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    ws = _PARSED.get(entry)
    if ws is None:       # a point's compile names its overrides as its options say
        ws = _PARSED.put(entry, Workspace.open(entry, {}, option=command_line))
    return ws


def _evaluate(entry: str, overrides, options: PointOptions):
    from astral_dsl.outputs.size_report import size_summary
    from astral_dsl.pipeline import check, front_end_errors

    ws = workspace(entry)
    design = ws.compile(overrides=dict(overrides), option=options.set_option)
    result = check(ws, design, [options.scenario] if options.scenario else None)
    design = result.design
    diags = list(result.diagnostics)
    metrics: Dict[str, Any] = {}
    if not design.roots or front_end_errors(design) or result.engineering is None:
        return diags, metrics
    eng = result.engineering
    if options.scenario:
        found = [o for o in result.scenarios if o.name == options.scenario]
        if found:
            eng = found[0].result
            metrics["scenario_broken"] = sorted({d.code for d in found[0].broken})
    summary = size_summary(design, eng)
    for key in SUMMARY:
        metrics[key] = summary[key]
    from astral_dsl.explore.cost import priced_cost

    cost, unpriced = priced_cost(design, eng)
    if cost is not None:
        metrics["cost_usd"] = round(cost, 2)
        if unpriced:
            diags.append(unpriced)
    if options.forecast and any(d.is_error for d in design.diagnostics):
        # the errors `astral forecast` and `astral search` refuse a design for (a failed
        # `check`, E500; sizing's): no figure that would read as a valid design's, the row's
        # diagnostics say why
        metrics.update(dict.fromkeys(FORECAST))
    elif options.forecast:
        known = {(d.code, d.span, d.message) for d in diags}
        diags.extend(d for d in _forecast(ws, design, options, metrics)
                     if (d.code, d.span, d.message) not in known)
    return diags, metrics


def _forecast(ws, design, options: PointOptions, metrics: Dict[str, Any]):
    from astral_dsl import seer
    from astral_dsl.outputs.forecast.report import may_not_fit
    from astral_dsl.pipeline import forecast

    for key in FORECAST:
        metrics[key] = None
    if not design.jobs:
        return []
    try:
        fc = forecast(ws, design, options.job, options.scenario,
                      calibration=options.calibration)
    except seer.ForecastError as exc:
        return [d for d in exc.diagnostics if d.is_error] or []
    metrics["iteration_time_s"] = round(fc.iteration_time, 6)
    metrics["tokens_per_s"] = round(fc.tokens_per_s, 1)
    metrics["mfu"] = round(fc.mfu, 4)
    metrics["memory_gb"] = round(fc.memory.total / 1e9, 3)
    metrics["may_not_fit"] = may_not_fit(fc)
    metrics["calibration"] = fc.envelope().as_json()       # how far to trust it
    # W753: outside the calibrated envelope, the band is a default (what no run had, at the
    # job's field); W759: beyond the calibration runs' scale or layout; `astral check` does
    # not forecast, so the point has them from here alone
    return [d for d in fc.diagnostics if d.code in ("W753", "W759")]


# ---- what the client accepts as a worker's answer (engines.py: a rogue or mismatched worker) ----
def number(v: Any) -> bool:
    return type(v) in (int, float)


def is_envelope(v: Any) -> bool:
    """Whether `v` has the shape of Envelope.as_json() (seer/envelope.py), which the outputs
    read: a band of two numbers, `inside`, the regime's names, the terms outside, the
    dimensions extrapolated (seer/checked.py Beyond.as_json())."""
    return (type(v) is dict and set(v) == {"regime", "inside", "band", "basis", "rows", "outside",
                                           "extrapolated"}
            and type(v["regime"]) is dict
            and all(type(k) is str and type(x) is str for k, x in v["regime"].items())
            and type(v["inside"]) is bool and type(v["band"]) in (list, tuple)
            and len(v["band"]) == 2 and all(number(b) for b in v["band"])
            and type(v["outside"]) in (list, tuple) and all(type(o) is str for o in v["outside"])
            and type(v["extrapolated"]) in (list, tuple) and all(
                type(b) is dict and set(b) == {"field", "value", "checked"}
                and type(b["field"]) is str and number(b["value"])
                and (b["checked"] is None or (type(b["checked"]) in (list, tuple)
                                              and len(b["checked"]) == 2
                                              and all(number(x) for x in b["checked"])))
                for b in v["extrapolated"]))


def _is_diagnostic(d: Any) -> bool:
    span = d.get("range") if type(d) is dict else None
    return (type(d) is dict and all(type(d.get(k)) is str for k in ("code", "message", "file"))
            and d.get("severity") in ("error", "warning", "info")
            and (d.get("hint") is None or type(d["hint"]) is str)
            and (span is None or (type(span) is dict and set(span) == {"start", "end"} and all(
                type(span[e]) is dict and set(span[e]) == {"line", "column"}
                and all(type(x) is int for x in span[e].values()) for e in span)))
            and type(d.get("notes", [])) is list and all(type(n) is str
                                                         for n in d.get("notes", [])))


def is_row(v: Any) -> bool:
    """Whether `v` has the shape of evaluate_point's rows: what the outputs read."""
    if not (type(v) is dict and set(v) == {"valid", "metrics", "diagnostics"}
            and type(v["valid"]) is bool and type(v["metrics"]) is dict
            and type(v["diagnostics"]) is list):
        return False
    for k, x in v["metrics"].items():
        if k == "calibration":
            ok = x is None or is_envelope(x)
        elif k == "may_not_fit":
            ok = x is None or type(x) is bool
        elif k == "scenario_broken":
            ok = type(x) is list and all(type(c) is str for c in x)
        else:
            ok = type(k) is str and (x is None or number(x))
        if not ok:
            return False
    return all(_is_diagnostic(d) for d in v["diagnostics"])


def are_rows(v: Any, n: int) -> bool:
    """Whether a chunk's answer is the rows of its n points."""
    return type(v) is list and len(v) == n and all(is_row(r) for r in v)
