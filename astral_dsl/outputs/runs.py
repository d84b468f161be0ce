"""`astral runs`: a runs table forecast row by row (runs/evaluate.py), as a table or as JSON.

JSON (inside the standard envelope): `{"rows": [{"id", "status", "reason", "field",
"published", "forecast", "metric", "error", "band", "calibration", ...}], "summary": {...}}`,
one object per row of the table in its order (none is dropped): `status` is "ok",
"not_expressible" (Seer cannot state the row: `field` and `reason` say why) or "rejected" (a
cell cannot be read); `error` = forecast / published - 1 on `metric` (runs/score.py); `band` is
the forecast's error band (seer/envelope.py: the true time against the forecast, [low, high])
and `calibration` its whole envelope; `left_out_error`, for a row of the shipped fit's own tables
forecast with its constants, the row's error with its configuration left out of that fit
(runs/left_out.py: fit-exact.json), else null. The summary counts the statuses and gives, per
GPU x precision family (x dense / MoE) and overall, the rows scored and their mean / max |error|
and mean signed error in %; `left_out` the same of the rows' left-out errors (`rows`: how many
have one)."""
from __future__ import annotations

import textwrap
from typing import Any, Dict, List, Optional

from astral_dsl.runs.score import STEP, TFLOPS, TOKENS, family_summary

METRIC_LABELS = {TOKENS: "tok/s/GPU", STEP: "step s", TFLOPS: "TFLOP/s/GPU"}
LIST_IDS = 12            # an assumption made for more rows is given with its count only
STATUSES = ("ok", "not_expressible", "rejected")


def envelope_of(result, calibration):
    """The envelope of a row's forecast (None when it was not forecast), with the layout the
    forecast ran (the rule's micro-batch where the row states none), as `astral calibrate`
    records the ranges of the runs it fits."""
    from astral_dsl.seer.envelope import envelope

    p = result.prepared
    if p.status != "ok":
        return None
    return envelope(result.job or p.spec, p.gpu.name, calibration, p.net)


def _chosen(result) -> Dict[str, Any]:
    return dict(result.chosen)


def layout(result) -> str:
    """"tp4 pp2 dp16 ep8 v4 mb1": the layout forecast (the rule's choices included; "runs2"
    for a schedule run twice a step), else the row's cells."""
    p = result.prepared
    if p.status == "ok":
        par, chosen = p.spec.parallel, _chosen(result)
        dims = [("tp", par.tp), ("pp", par.pp), ("dp", par.dp), ("cp", par.cp), ("ep", par.ep),
                ("v", par.v or chosen.get("virtual_stages") or 1),
                ("mb", p.spec.micro or chosen.get("micro")), ("runs", p.spec.pipeline_runs)]
    else:
        row = result.row
        dims = [("tp", row.count("tp")), ("pp", row.count("pp")), ("cp", row.count("cp")),
                ("ep", row.count("ep")), ("v", row.count("vp")), ("mb", row.count("mbs"))]
    return " ".join(f"{k}{v}" for k, v in dims
                    if v is not None and (v > 1 or k in ("tp", "pp", "dp", "mb")))


def row_json(result, env) -> Dict[str, Any]:
    p, row = result.prepared, result.row
    out: Dict[str, Any] = {
        "id": row.id, "line": row.line, "status": p.status, "reason": p.reason or None,
        "field": p.field or None, "model": row.model, "gpus": row.count("gpus"),
        "system": p.expressed.system if p.expressed is not None else None,
        "layout": layout(result), "metric": result.metric, "published": result.published,
        "forecast": result.forecast, "error": result.error, "left_out_error": result.left_out,
        "band": list(env.as_json()["band"]) if env is not None else None,
        "calibration": env.as_json() if env is not None else None}
    if p.status == "ok":
        out["iteration_time_s"] = result.iteration_time
        out["chosen"] = _chosen(result)
        out["memory_gb"] = result.memory / 1e9 if result.memory is not None else None
    out["assumed"] = list(p.expressed.assumed) if p.expressed is not None else []
    out["notes"] = list(p.notes)
    return out


def summary(results, calibration) -> Dict[str, Any]:
    counts = {s: sum(1 for r in results if r.status == s) for s in STATUSES}
    scored = [(r.prepared.regime, r.error) for r in results if r.error is not None]
    left = [(r.prepared.regime, r.left_out) for r in results if r.left_out is not None]
    total = len(results)
    return {"rows": total, **counts,
            "expressed_pct": round(100 * counts["ok"] / total, 1) if total else None,
            "scored": len(scored), "families": family_summary(scored),
            "left_out": {"rows": len(left), "families": family_summary(left)},
            "constants": {"source": calibration.source,
                          "fitted_on": list(calibration.fitted_on)}}


def to_json(results, calibration) -> Dict[str, Any]:
    return {"rows": [row_json(r, envelope_of(r, calibration)) for r in results],
            "summary": summary(results, calibration)}


# ---- text ----------------------------------------------------------------------------------------

def _number(metric: Optional[str], v: Optional[float]) -> str:
    if v is None:
        return "-"
    if metric == STEP:
        return f"{v:.3f}" if v < 100 else f"{v:,.1f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:+.1f} %"


def constants_line(calibration) -> str:
    """Which constants the forecasts used."""
    sets = ", ".join(calibration.fitted_on)
    what = {"shipped": "the shipped fit", "priors": "the prior centres (no fit shipped yet)"}.get(
        calibration.source, calibration.source)
    return f"constants: {what}" + (f", fitted on {sets}" if sets else "")


def table(file: str, results, calibration, colour: bool = False, width: int = 100) -> str:
    from astral_dsl.outputs.table import Column, render
    from astral_dsl.outputs.terminal import printable
    from astral_dsl.seer.envelope import marked

    doc = summary(results, calibration)
    head = (f"runs: {file}: {doc['rows']:,} rows: {doc['ok']:,} forecast, "
            f"{doc['not_expressible']:,} not expressible, {doc['rejected']:,} rejected")
    lines = [printable(head), printable(constants_line(calibration)),
             *textwrap.wrap("error = forecast / published - 1 on the row's metric (+ on "
                            "tokens/s or TFLOP/s: the forecast is optimistic; + on a step time: "
                            "pessimistic); band: how much shorter / longer the true time may be "
                            "(the calibration's leave-one-group-out spread of the row's regime; "
                            "* outside the calibrated envelope: a default)", width)]
    ok = [r for r in results if r.status == "ok"]
    if ok:
        envs = [envelope_of(r, calibration) for r in ok]
        styles = ["red" if r.error is not None and abs(r.error) > 0.1 else "" for r in ok]
        # the figures first: a narrow terminal stacks the rest (layout, system) below them
        cols = [Column("id", tuple(printable(r.row.id) for r in ok), False, True),
                Column("model", tuple(printable(r.row.model) for r in ok), False),
                Column("metric", tuple(METRIC_LABELS.get(r.metric, "-") for r in ok), False),
                Column("published", tuple(_number(r.metric, r.published) for r in ok)),
                Column("forecast", tuple(_number(r.metric, r.forecast) for r in ok)),
                Column("error", tuple(_pct(r.error) for r in ok), styles=tuple(styles)),
                *([Column("left out", tuple(_pct(r.left_out) for r in ok))]
                  if any(r.left_out is not None for r in ok) else []),
                Column("band", tuple(marked(e.as_json()) for e in envs)),
                Column("GPUs", tuple(f"{r.row.count('gpus'):,}" for r in ok)),
                Column("layout", tuple(layout(r) for r in ok), False),
                Column("system", tuple(printable(r.prepared.expressed.system) for r in ok),
                       False)]
        lines += ["", render(cols, width, colour).rstrip("\n")]
        far = [(r, e) for r, e in zip(ok, envs) if e.extrapolated]
        if far:         # rows the fit did not include (none it did: its ranges hold them)
            lines += ["", "^ beyond the scale or layout of the calibration runs (W759: no run "
                      "measured the error there):"]
            lines += [printable(f"  {r.row.id}: {e.beyond_text()}") for r, e in far]
    lost = [r for r in results if r.status != "ok"]
    if lost:
        lines += ["", "not forecast (the field and why):"]
        for r in lost:
            what = "rejected" if r.status == "rejected" else "not expressible"
            lines.append(printable(f"  {r.row.id} (line {r.row.line}, {what}) "
                                   f"{r.prepared.field}: {r.prepared.reason}"))
    noted = [r for r in ok if r.prepared.notes]
    if noted:
        lines += ["", "notes:"]
        for r in noted:
            for n in r.prepared.notes:
                lines.append(printable(f"  {r.row.id}: {n}"))
    lines += _assumed(ok, width)
    lines += _families(doc["families"], doc["left_out"]["families"], colour, width)
    return "\n".join(lines) + "\n"


def _assumed(ok, width: int) -> List[str]:
    """What the rows were taken to have run without saying it, with the rows of each."""
    by: Dict[str, List[str]] = {}
    for r in ok:
        for a in r.prepared.expressed.assumed:
            by.setdefault(a, []).append(r.row.id)
    if not by:
        return []
    from astral_dsl.outputs.terminal import printable

    out = [""] + textwrap.wrap("assumed where the rows do not say (docs/runs.md, \"What a row "
                               "is taken to have run\"; each row's in the JSON's `assumed`):",
                               width)
    for a, ids in by.items():
        which = f" ({', '.join(ids)})" if len(ids) <= LIST_IDS else ""
        text = printable(f"{a}: {len(ids):,} row{'s' * (len(ids) != 1)}{which}")
        out += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      ")
    return out


def _families(families: Dict[str, dict], left: Dict[str, dict], colour: bool,
              width: int) -> List[str]:
    """The error per family; with the mean |error| left out where rows have one (`left`)."""
    from astral_dsl.outputs.table import Column, render

    keys = [k for k in families if k.count(" ") == 2] + (["all"] if "all" in families else [])
    if not keys:
        return ["", "no row was forecast with a published figure: no error to summarise"]
    fam = [families[k] for k in keys]
    cols = [Column("GPU x precision x dense/MoE", tuple(keys), False, True),
            Column("rows", tuple(str(f["rows"]) for f in fam)),
            Column("mean |error|", tuple(f"{f['mean_abs_pct']:.1f} %" for f in fam)),
            Column("max |error|", tuple(f"{f['max_abs_pct']:.1f} %" for f in fam)),
            Column("mean error", tuple(f"{f['mean_pct']:+.1f} %" for f in fam))]
    said = ("with the constants above: for rows of the tables they were fitted on, the error in "
            "the fit; `astral calibrate` gives the error on runs left out of it")
    if left:
        cols.append(Column("left out |error|",
                           tuple(_left_cell(left.get(k), families[k]["rows"]) for k in keys)))
        said = ("error: with the constants above, for the rows of the tables they were fitted on "
                "the error in the fit; left out: the shipped fit's own rows forecast with their "
                "configuration left out of it (fit-exact.json, `make calibrate-exact`; in "
                "brackets how many of the family's rows are such rows): the figure that says how "
                "far to trust a forecast")
    return ["", render(cols, width, colour).rstrip("\n"),
            *textwrap.wrap(said, width, break_on_hyphens=False)]


def _left_cell(left: Optional[dict], rows: int) -> str:
    """A family's mean |error| left out, with how many of its `rows` it is of when not all."""
    if left is None:
        return "-"
    return f"{left['mean_abs_pct']:.1f} %" + (f" ({left['rows']})" if left["rows"] != rows else "")
