"""The ranking of `astral search` as a table (outputs/table.py), JSON Lines or CSV: one row per
ranked configuration, the layout first, then the forecast and where its time goes."""
from __future__ import annotations

import csv
import io
import textwrap
from typing import Any, Dict, List

from astral_dsl.outputs.forecast.report import BREAKDOWN_LABELS
from astral_dsl.outputs.jsonout import csv_cell, dumps, envelope
from astral_dsl.seer.envelope import band_text, marked
from astral_dsl.seer.rule import PARTIAL_FRAMEWORKS
from astral_dsl.units.readable import memory_capacity
from astral_dsl.regularfile import output

LAYOUT = ("gpus", "tp", "pp", "dp", "cp", "ep", "virtual_stages", "micro_batch", "recompute",
          "recompute_layers", "zero", "offload_layers")
FIGURES = ("iteration_time_s", "tokens_per_s", "mfu", "hfu", "memory_gb",
           "memory_uncertainty_gb", "memory_stage", "offloaded_gb", "cost_per_token_usd")
SHORT = {"compute": "compute", "tp_comm": "TP", "cp_comm": "CP", "ep_comm": "EP",
         "pp_comm": "PP", "dp_comm": "DP", "offload": "offload", "host": "host",
         "bubble": "bubble", "optimizer": "optimizer"}
OBJECTIVE_LABELS = {"tokens_per_s": "tokens/s (highest first)",
                    "iteration_time": "iteration time (shortest first)",
                    "cost_per_token": "cost per token (lowest first)"}


def _fitting(s) -> str:
    """How a configuration that does not fit as it is is made to (explore/search/work.py
    `fitting`), as the summary says it."""
    offload = not s.offload_declared
    partial = s.base.framework in PARTIAL_FRAMEWORKS and "none" in s.recompute
    if offload and partial:
        return ("; one that does not fit in memory offloads the fewest layers that make it fit, "
                "where offloading can run (one pipeline stage), or, recomputing nothing, "
                "recomputes whole the fewest layers of each chunk that do, whichever is faster")
    if offload:
        return ("; one that does not fit in memory offloads the fewest layers that make it fit, "
                "where offloading can run (one pipeline stage)")
    if partial:
        return ("; one that recomputes nothing and does not fit in memory recomputes whole the "
                "fewest layers of each chunk that make it fit")
    return ""


def _recompute(row: Dict[str, Any]) -> str:
    """The recomputation a row ran: `full 4` for the first 4 layers of each chunk."""
    n = row.get("recompute_layers")
    return row.get("recompute", row["config"].recompute) + (f" {n}" if n is not None else "")


def row_json(row: Dict[str, Any]) -> Dict[str, Any]:
    c = row["config"]
    out: Dict[str, Any] = {"rank": row["rank"], "gpus": c.gpus, "tp": c.tp, "pp": c.pp,
                           "dp": c.dp, "cp": c.cp, "ep": c.ep, "virtual_stages": c.v,
                           "micro_batch": c.micro, "recompute": row.get("recompute", c.recompute),
                           "recompute_layers": row.get("recompute_layers"), "zero": c.zero,
                           "offload_layers": row.get("offload_layers", 0),
                           "stages": list(c.stages) if c.stages else None}
    for k in FIGURES:
        if k in row:
            out[k] = row[k]
    out["may_not_fit"] = row.get("may_not_fit", False)
    out["band"] = list(row["calibration"]["band"])
    out["calibration"] = dict(row["calibration"])
    out["breakdown_stage"] = row["breakdown_stage"]
    out["breakdown_s"] = dict(row["breakdown_s"])
    return out


def jsonl(result) -> str:
    """`--format jsonl` and `-o FILE.jsonl`: a ranked row per line, nothing else."""
    return "".join(dumps(row_json(r)) + "\n" for r in result.rows)


def document(result) -> str:
    """`--format json`: one document, every command's envelope with the search's `job`,
    `objective`, `top`, `counts` (how many were enumerated, admitted, rejected by rule, could
    reach the top, fit), `summary` (the text's lines), `declared` (the job as declared: its
    configuration's label, iteration time, tokens/s and MFU, or null and the codes that stop
    it in `declared_errors`) and the ranked `rows` (none when no configuration fits). `valid`
    is the exit code's verdict: a ranking, and no error among the diagnostics."""
    counts = dict(result.counts.to_json(), could_reach_top=result.memory_checked,
                  fit=result.fit)
    if result.sure_fit:
        counts["left_out_may_not_fit"] = result.unsure
    d = result.declared
    declared = None if d is None else {k: d[k] for k in ("label", "iteration_time_s",
                                                         "tokens_per_s", "mfu")}
    doc = envelope(result.diagnostics, file=result.file, job=result.job,
                   objective=result.objective, top=result.top, counts=counts,
                   summary=[line.strip() for line in summary(result)], declared=declared,
                   declared_errors=list(result.declared_errors),
                   rows=[row_json(r) for r in result.rows])
    doc["valid"] = doc["valid"] and bool(result.rows)
    return dumps(doc) + "\n"


def csv_text(result) -> str:
    out = io.StringIO()
    flat = []
    for r in result.rows:
        doc = row_json(r)
        parts = doc.pop("breakdown_s")
        cal = doc.pop("calibration")
        doc["band"] = band_text(doc["band"])
        doc["inside_envelope"] = cal["inside"]
        doc["extrapolated"] = " ".join(b["field"] for b in cal["extrapolated"])
        doc["stages"] = " ".join(map(str, doc["stages"])) if doc["stages"] else ""
        doc.update({f"breakdown_{k}_s": parts.get(k, 0.0) for k, _ in BREAKDOWN_LABELS})
        flat.append(doc)
    header = list(flat[0]) if flat else ["rank", *LAYOUT]
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for doc in flat:
        writer.writerow({k: csv_cell(v) for k, v in doc.items()})
    return out.getvalue()


def write(result, path: str) -> None:
    text = csv_text(result) if path.lower().endswith(".csv") else jsonl(result)
    with open(output(path), "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def _seconds(t: float) -> str:
    """An iteration time with its unit: `6.518 s`, or `833.5 ms` under a second."""
    return f"{t:.3f} s" if t >= 1 else f"{t * 1e3:.1f} ms"


def _usd_per_mtok(x) -> str:
    return "-" if x is None else f"{x * 1e6:.4g}"


def summary(result) -> List[str]:
    """What was searched and how much of it each stage looked at."""
    s, c = result.space, result.counts
    gpus = ", ".join(f"{n:,}" for n in s.gpus)
    lines = [f"search: job `{result.job}` ({s.base.model.name}) on {gpus} x {result.gpu} in "
             f"{result.placement} ({result.placement_gpus:,} GPUs), by "
             f"{OBJECTIVE_LABELS[result.objective]}",
             f"  kept as declared: global batch {s.batch:,}, sequence {s.base.seq:,}, "
             f"{s.base.dtype}, attention {s.base.attention}, sp {str(s.base.parallel.sp).lower()}"
             f", order {'-'.join(s.base.parallel.order)}"
             + (f", offload_layers {s.base.offload_layers}" if s.base.offload_layers else "")
             + (f", pipeline_runs {s.base.pipeline_runs}" if s.base.pipeline_runs > 1 else ""),
             f"  {c.enumerated:,} configurations enumerated (tp, cp, pp, dp, ep, virtual stages, "
             f"micro-batch, recomputation {'/'.join(s.recompute)}, ZeRO 0-3)"
             + _fitting(s)]
    for rule in c.to_json()["rejected"]:
        code = f"{rule['code']} " if rule["code"] else ""
        lines.append(f"  {rule['count']:>{len(f'{c.enumerated:,}')},} rejected: {code}"
                     f"{rule['why']}")
    cap = f" of {memory_capacity(result.gpu_memory_gb * 1e9)}" if result.gpu_memory_gb else ""
    lines.append(f"  {c.admitted:,} admitted, each bounded below from Seer's operator costs "
                 "without simulating its schedule")
    lines.append(f"  {result.memory_checked:,} of them could reach the top {result.top}: "
                 f"{result.fit:,} fit in memory by Seer's estimate{cap} and were forecast "
                 "fully (the schedule simulated)")
    if result.sure_fit and not result.gpu_memory_gb:
        lines.append(f"  --sure-fit: the GPU `{result.gpu}` declares no `memory`: no estimate "
                     "could be held to it, none was left out (the rows are not sure to fit)")
    elif result.sure_fit:
        lines.append(f"  --sure-fit: {result.unsure:,} of those left out, their memory estimate "
                     f"plus its uncertainty past the GPU's "
                     f"{memory_capacity(result.gpu_memory_gb * 1e9)}: the rest ranked")
    if result.objective == "cost_per_token" or any("cost_per_token_usd" in r
                                                   for r in result.rows):
        years = result.life_s / (365 * 86400)
        unpriced = any(d.code == "W800" for d in result.diagnostics)
        lines.append(f"  cost per token: the purchase cost of the GPUs used and their share of "
                     f"the priced equipment, over a {years:g}-year life"
                     + (" [assumed; --life to change]" if result.life_default else "")
                     + ("; what W800 names has no price and is not in it" if unpriced else ""))
    lines += _trust(result)
    if result.declared is not None:
        d = result.declared
        t = d["iteration_time_s"]           # `10.124 s`, `833.5 ms` (no `ms s`)
        lines.append(f"  as declared: {d['label']}: {_seconds(t)}, "
                     f"{d['tokens_per_s']:,.0f} tokens/s, MFU {d['mfu'] * 100:.1f} %")
    elif result.declared_errors:
        lines.append(f"  as declared: not forecast ({', '.join(result.declared_errors)})")
    return lines


def _trust(result) -> List[str]:
    """How far to trust the ranking: the envelope of the forecasts, and the rows that may not
    fit in memory (rank 1 above all)."""
    rows = result.rows
    if not rows:
        return []
    out = []
    envs = {(tuple(r["calibration"]["band"]), r["calibration"]["inside"],
             tuple(r["calibration"]["outside"])) for r in rows}
    for band, inside, outside in sorted(envs):
        cal = next(r["calibration"] for r in rows if tuple(r["calibration"]["band"]) == band)
        regime = "/".join(cal["regime"].values())
        if inside:
            out.append(f"  calibration: {regime}: error band {band_text(band)} of the true time "
                       f"(the spread of {cal['rows']:,} calibration runs left out of the fit)")
        else:
            out.append(f"  calibration: {regime} is OUTSIDE the calibrated envelope ("
                       + "; ".join(outside) + f"): the band {band_text(band)} is a default, "
                       "not a measurement (W753)")
    out += _beyond(rows)
    offloaded = max((r.get("offloaded_gb", 0.0) for r in rows), default=0.0)
    if offloaded and result.host_memory_gb is None:
        out.append(f"  offloading: the ranked rows offload up to {offloaded:.1f} GB of activations "
                   "per GPU to host memory, which the host does not declare: not checked (W754)")
    risky = [r for r in rows if r.get("may_not_fit")]
    if risky:
        cap = f" of {memory_capacity(result.gpu_memory_gb * 1e9)}" if result.gpu_memory_gb else ""
        first = rows[0]
        if first.get("may_not_fit"):
            safe = next((r["rank"] for r in rows if not r.get("may_not_fit")), None)
            out.append(f"  rank 1 MAY NOT FIT in memory: {first['memory_gb']:.1f} GB estimated "
                       f"+/- {first['memory_uncertainty_gb']:.1f} GB{cap} (the estimate plus its "
                       f"uncertainty exceeds the GPU's memory; W750 tests the estimate alone); "
                       + (f"rank {safe} is the first with the margin to spare"
                          if safe else "no ranked configuration has the margin to spare "
                          "(`--sure-fit` ranks only those that have it)"))
        out.append(f"  {len(risky)} of the {len(rows)} ranked may not fit (their estimate plus "
                   f"its uncertainty exceeds the GPU's memory): marked `may not` under `fits`")
    return out


def _beyond(rows) -> List[str]:
    """Where the ranked rows go beyond the scale and layout of the calibration runs (W759,
    seer/checked.py): per dimension its values, the range checked and the ranks."""
    from astral_dsl.seer.checked import NAMES, Beyond, no_ranges, show

    far: Dict[str, list] = {}
    for r in rows:
        for b in r["calibration"].get("extrapolated", []):
            far.setdefault(b["field"], []).append((r["rank"], b["value"], b["checked"]))
    if not far:
        return []
    if no_ranges((field, c) for field, hits in far.items() for _, _, c in hits):
        return ["  calibration: the calibration records no ranges of the runs it was fitted "
                "on: whether the rows extrapolate beyond them cannot be told (W759)"]
    parts = []
    for field in sorted(far, key=NAMES.index):
        hits = far[field]
        ranks = [k for k, _, _ in hits]
        values = sorted({v for _, v, _ in hits})
        shown = Beyond(field, values[-1], tuple(hits[0][2]) if hits[0][2] else None).text()
        if len(values) > 1:
            shown = shown.replace(f"{field} ", f"{field} {show(field, values[0])}..", 1)
        parts.append(shown + (" in every ranked row" if len(ranks) == len(rows) else
                              " in rank" + ("s " if len(ranks) > 1 else " ")
                              + ", ".join(map(str, ranks))))
    return ["  calibration: beyond the scale or layout of the calibration runs (marked ^; no "
            "run measured the error there, W759): " + "; ".join(parts)]


def table(result, colour: bool = False, width: int = 100) -> str:
    from astral_dsl.outputs.table import Column, render

    rows = result.rows
    text = "".join(textwrap.fill(line, width, subsequent_indent="      ",
                                 break_on_hyphens=False) + "\n" for line in summary(result))
    if not rows:
        # none admitted: every one was rejected by a rule above, none for its memory (a count of
        # GPUs no layout of the job divides, `--gpus 1000`, was "no configuration fits in memory")
        return text + ("\nno configuration fits in memory\n" if result.counts.admitted else
                       "\nno configuration passes the rules: each was rejected, as counted above\n")

    def col(label, cells, key=False, right=True):
        return Column(label, tuple(cells), right, key)

    cfg = [r["config"] for r in rows]
    layout = [col("rank", [str(r["rank"]) for r in rows], True)]
    if len(result.space.gpus) > 1:
        layout.append(col("GPUs", [f"{c.gpus:,}" for c in cfg], True))
    layout += [col(k, [str(getattr(c, a)) for c in cfg], True) for k, a in
               (("tp", "tp"), ("pp", "pp"), ("dp", "dp"), ("cp", "cp"), ("ep", "ep"),
                ("v", "v"), ("micro", "micro"))]
    layout += [col("recompute", [_recompute(r) for r in rows], True, False),
               col("zero", [str(c.zero) for c in cfg], True)]
    if any(r.get("offload_layers") for r in rows):
        layout.append(col("offload", [str(r.get("offload_layers", 0)) for r in rows], True))
    figures = [col("iteration", [_seconds(r["iteration_time_s"]) for r in rows]),
               col("tokens/s", [f"{r['tokens_per_s']:,.0f}" for r in rows]),
               col("band", [marked(r["calibration"]) for r in rows], right=False),
               col("MFU", [f"{r['mfu'] * 100:.1f} %" for r in rows]),
               col("memory GB", [f"{r['memory_gb']:.1f}" for r in rows]),
               Column("fits", tuple("may not" if r.get("may_not_fit") else "yes"
                                    for r in rows), True, False,
                      tuple("yellow" if r.get("may_not_fit") else "" for r in rows))]
    if any("cost_per_token_usd" in r for r in rows):
        figures.append(col("USD per M tokens",
                           [_usd_per_mtok(r.get("cost_per_token_usd")) for r in rows]))
    text += "\n" + render(layout + figures, width, colour)
    far = "; ^ beyond the calibration runs' scale or layout" if any(
        r["calibration"].get("extrapolated") for r in rows) else ""
    text += textwrap.fill("band: how much shorter / longer the true time may be (* outside the "
                          f"calibrated envelope: a default{far}); fits: `may not` when Seer's "
                          "memory estimate plus its uncertainty exceeds the GPU's memory", width,
                          break_on_hyphens=False) + "\n"
    parts = [col("rank", [str(r["rank"]) for r in rows], True),
             col("stage", [str(r["breakdown_stage"]) for r in rows], True)]
    for key, _ in BREAKDOWN_LABELS:
        shares = [r["breakdown_s"].get(key, 0.0) / r["iteration_time_s"] for r in rows]
        if key in ("compute", "bubble") or any(x > 0 for x in shares):
            parts.append(col(SHORT[key], [f"{x * 100:.1f} %" for x in shares]))
    text += "\n" + textwrap.fill(
        "where the time goes, on the busiest stage of each, in % of the iteration: compute "
        "(with recomputation), exposed communication, pipeline bubble and waits, optimizer",
        width, break_on_hyphens=False) + "\n"
    text += render(parts, width, colour)
    return text
