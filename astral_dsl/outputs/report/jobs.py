"""The forecast section: per job, Seer's figures (outputs.forecast.report.to_json), where the
busiest stage's time goes (a table and a bar) and the zoomable timeline of the iteration."""
from __future__ import annotations

from astral_dsl.outputs.forecast.report import BREAKDOWN_LABELS, _time as duration, band_text, \
    to_json
from astral_dsl.outputs.report.html import esc, tag
from astral_dsl.outputs.report.sections import _slug, diagnostic, section
from astral_dsl.outputs.report.tables import key_values, table
from astral_dsl.outputs.report import timeline


def _figures(fc) -> str:
    doc = to_json(fc)
    p = doc["parallelism"]
    head = {"model": fc.job.model.name, "GPUs": fc.gpus, "GPU": fc.gpu,
            "placement": fc.placement or None,
            "parallelism": f"TP {p['tp']}, PP {p['pp']}, DP {p['dp']}"
            + (f", CP {p['cp']}" if p["cp"] > 1 else "") + (f", EP {p['ep']}" if p["ep"] > 1
                                                              else "")
            + (f", ETP {p['etp']}" if (p.get("etp") or 1) > 1 else "")
            + f"; {p['schedule']}" + (f", {p['virtual_stages']} virtual stages"
                                      if p["virtual_stages"] > 1 else "")
            + (f", ZeRO-{p['zero']}" if p["zero"] else ""),
            "batch": f"global {p['global_batch']:,}, micro {p['micro_batch']}, "
                     f"{p['micro_batches']:,} micro-batches, seq {p['seq']:,}",
            "recompute": p["recompute"],
            "iteration time (s)": doc["iteration_time_s"],      # shown to 6 digits (tables.cell)
            "how far to trust it": band_text(fc.envelope()),
            "tokens/s": round(doc["tokens_per_s"]),
            "MFU (%)": round(doc["mfu"] * 100, 2), "HFU (%)": round(doc["hfu"] * 100, 2),
            "memory per GPU (GB)": round(doc["memory_gb"]["total"], 2),
            "memory's stage (the fullest)": doc["memory_stage"]}
    if fc.chosen:
        head["chosen by Seer's rule"] = ", ".join(f"{k} = {v}" for k, v in fc.chosen)
    out = table(["what", "value"], [[k, v] for k, v in head.items()], "Forecast",
                cls="kv", sortable=False, tid=f"fc-{_slug(fc.job.name)}")
    mem = {k: round(v, 3) for k, v in doc["memory_gb"].items()}
    out += key_values({f"{k}_gb": v for k, v in mem.items()},
                      f"Memory per GPU on stage {doc['memory_stage']}",
                      tid=f"mem-{_slug(fc.job.name)}")
    for n in fc.notes:
        out += tag("p", "note: " + esc(n), cls="note")
    return out


def _breakdown(fc) -> str:
    total = fc.iteration_time
    rows, bar = [], []
    for key, text in BREAKDOWN_LABELS:
        v = fc.breakdown.get(key, 0.0)
        if v <= 0 and key not in ("compute", "bubble"):
            continue
        share = v / total if total else 0.0
        rows.append([text, round(v, 6), round(share * 100, 2)])
        if share > 0:
            bar.append(tag("span", "", {"class": f"k-{key}", "style": f"width:{share * 100:.3f}%",
                                        "title": f"{text}: {duration(v)} ({share * 100:.1f} %)"}))
    legend = " ".join(tag("span", "", cls=f"swatch k-{k}") + esc(t) for k, t in BREAKDOWN_LABELS
                      if fc.breakdown.get(k, 0.0) > 0)
    return (tag("h3", esc(f"Where the time goes: stage {fc.stage}, the busiest"))
            + tag("div", "".join(bar), cls="bar") + tag("div", legend, cls="note")
            + table(["part", "seconds", "% of the iteration"], rows, tid=
                    f"breakdown-{_slug(fc.job.name)}"))


_LEGEND = (("t-forward", "forward"), ("t-backward", "backward (with recompute)"),
           ("t-mixed", "forward and backward, merged"), ("t-optimizer", "optimizer step"),
           ("t-tp", "TP comm"), ("t-cp", "CP comm"), ("t-ep", "EP comm"), ("t-pp", "PP p2p"),
           ("t-dp", "DP comm"))


def _timeline(fc) -> str:
    uid = f"tl-{_slug(fc.job.name)}"
    svg, note = timeline.svg(fc, uid)
    controls = tag("div", "".join(tag("button", t, {"type": "button", "data-zoom": z})
                                  for t, z in (("zoom in", "2"), ("zoom out", "0.5"),
                                               ("whole iteration", "reset")))
                   + tag("span", " wheel to zoom at the pointer, drag to pan", cls="note"),
                   cls="controls")
    shown = {c for c, _ in _LEGEND if (f"c-{c[2:]}" if c[2:] in ("forward", "backward", "mixed",
                                                                 "optimizer") else
                                        f"s-{c[2:]}") in svg}
    legend = " ".join(tag("span", "", cls=f"swatch {c}") + esc(t) for c, t in _LEGEND
                      if c in shown or (c == "t-forward" and "c-op-" in svg))
    return (tag("h3", "Timeline of one iteration")
            + tag("div", controls + svg + tag("div", legend, cls="note")
                  + tag("p", esc(note), cls="note"),
                  cls="timeline-box"))


def job_block(review, job) -> str:
    head = tag("h3", esc(f"Job {job.name}"), id=f"job-{_slug(job.name)}")
    if job.forecast is None:
        return head + tag("p", "Not forecast:", cls="note") + "".join(
            diagnostic(review, d) for d in job.diagnostics)
    fc = job.forecast
    # the forecast's own warnings (W750 "may not fit", W753 outside the calibrated envelope)
    warned = "".join(diagnostic(review, d) for d in getattr(fc, "diagnostics", ()) or ())
    return head + warned + _figures(fc) + _breakdown(fc) + _timeline(fc)


def jobs_section(review) -> str:
    if not review.jobs:
        text = ("The design declares no job." if not review.design.jobs else
                "No job forecast: the design has errors that stop the analyses.")
        return section("jobs", "Training jobs (Seer)", tag("p", text, cls="note"))
    return section("jobs", "Training jobs (Seer)",
                   "".join(job_block(review, j) for j in review.jobs))
