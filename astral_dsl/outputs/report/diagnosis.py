"""The diagnosis section of the review page (`astral report --diagnosis DIAGNOSIS.json`): the
verdict on a running job, its suspects with their evidence, the hosts' fitted clocks and the
per-rank breakdown (compute, communication by kind, idle time, overlap, the kernels' spread
across ranks, the slowest ranks), from the document `astral diagnose -o` writes
(schema/diagnosis.schema.json)."""
from __future__ import annotations

from typing import Any, Dict, List

from astral_dsl.outputs.diagnosis import HEADING_GIVEN, PER_RANK, given_text
from astral_dsl.outputs.report.html import esc, tag
from astral_dsl.outputs.report.sections import section
from astral_dsl.outputs.report.tables import key_values, table

RANKS_SHOWN = 256          # rows of the per-rank table (the slowest compute first)


def _ms(v) -> Any:
    return None if v is None else round(v * 1e3, 3)


def diagnosis_section(doc: Dict[str, Any]) -> str:
    verdict = doc.get("verdict", "")
    head = {"job": doc.get("job"), "verdict": verdict,
            "probability that something is wrong": doc.get("probability"),
            "ranks read": f"{doc.get('ranks_read', 0):,} of {doc.get('world_size', 0):,}",
            "iterations": ", ".join(map(str, doc.get("iterations") or [])),
            "compute columns measure": doc.get("timers"),
            "forecast iteration (s)": doc.get("forecast_iteration_s"),
            "observed iteration (s)": doc.get("observed_iteration_s")}
    band = doc.get("forecast_band") or {}
    if band:
        head["compute / forecast (median over stages)"] = band.get("compute_ratio")
        head["healthy band"] = f"{band.get('low', 0):.3f}-{band.get('high', 0):.3f} " \
                               f"({band.get('source', '')})"
    body = table(["what", "value"], [[k, v] for k, v in head.items()], "Verdict", cls="kv",
                 sortable=False, tid="dx-verdict")
    body += _suspects(doc.get("suspects") or [], doc.get("next_steps"))
    body += _clocks(doc.get("clocks"))
    body += _breakdown(doc.get("breakdown"))
    return section("diagnosis", "Diagnosis", body)


def _suspects(suspects: List[Dict], next_steps=None) -> str:
    if not suspects and next_steps:             # inconclusive: what to collect next
        return tag("p", esc("no suspect named, and a fault is the more likely: " +
                            str(next_steps)), cls="note")
    if not suspects:
        return tag("p", "no suspect: every rank and collective is within the noise of its "
                        "peers and the forecast", cls="note")
    rows = [[i, s.get("kind"), s.get("path"), s.get("probability"), s.get("summary"),
             s.get("supports"), s.get("contradicts"),
             "alternative" if s.get("alternative") else given_text(
                 s.get("given") or (), [(x.get("path"), x.get("alternative")) for x in suspects])]
            for i, s in enumerate(suspects, start=1)]
    caption = "Suspects (their probabilities compete)"
    if any(s.get("given") for s in suspects):
        caption = f"Suspects ({HEADING_GIVEN})"
    out = table(["#", "kind", "part", "probability", "summary", "supports", "contradicts", ""],
                rows, caption, tid="dx-suspects")
    slow = [[i, o["what"], ", ".join(map(str, o["ranks"])), o["iteration"],
             o.get("occurrence"), _ms(o["expected_s"]), _ms(o["observed_s"])]
            for i, s in enumerate(suspects, start=1) if not s.get("alternative")
            for o in s.get("slow") or []]
    if slow:
        out += table(["suspect", "what", "ranks", "iteration", "#", "expected (ms)",
                      "observed (ms)"],
                     slow, "The slowest transfers and collectives each suspect explains",
                     tid="dx-slow")
    for i, s in enumerate(suspects, start=1):
        if s.get("note") and not s.get("alternative"):
            out += tag("p", esc(f"suspect {i}: {s['note']}"), cls="note")
    return out


def _clocks(c) -> str:
    if not c:
        return ""
    rows = [[h, round(c["offsets_s"].get(h, 0.0) * 1e3, 4), d]
            for h, d in sorted(c["drift_ppm"].items(), key=lambda kv: (-abs(kv[1]), kv[0]))]
    cap = (f"Clocks: {c['aligned']:,} of {c['hosts']:,} hosts aligned on collective ends"
           + (f"; {len(c['unaligned'])} cannot be" if c.get("unaligned") else ""))
    return table(["host", "offset (ms)", "drift (ppm)"], rows, cap, tid="dx-clocks")


def _breakdown(b) -> str:
    if not b:
        return ""
    med = b.get("median") or {}
    kinds = med.get("comm_by_kind_s") or {}
    figures = {"source": b.get("source"), "window_s": med.get("window_s"),
               "compute_s": med.get("compute_s"), "communication_s": med.get("comm_s"),
               **{f"communication_{k}_s": v for k, v in kinds.items()},
               "memory_s": med.get("memory_s"), "idle_s": med.get("idle_s"),
               "overlap_pct": None if med.get("overlap") is None else
               round(med["overlap"] * 100, 2)}
    out = key_values(figures, f"Per rank: the {PER_RANK}", tid="dx-median")
    ranks = sorted(b.get("ranks") or [], key=lambda r: (-r["compute_s"], r["rank"]))
    all_kinds = sorted({k for r in ranks for k in r["comm_by_kind_s"]})
    rows = [[r["rank"], r["stage"], _ms(r["window_s"]), _ms(r["compute_s"]), _ms(r["comm_s"])]
            + [_ms(r["comm_by_kind_s"].get(k, 0.0)) for k in all_kinds]
            + [_ms(r["memory_s"]), _ms(r["idle_s"]),
               _ms(r["idle_by_cause_s"]["between_iterations"]),
               _ms(r["idle_by_cause_s"]["within_iterations"]),
               None if r["overlap"] is None else round(r["overlap"] * 100, 2)]
            for r in ranks[:RANKS_SHOWN]]
    shown = "" if len(ranks) <= RANKS_SHOWN else f" (the {RANKS_SHOWN} of {len(ranks):,} " \
                                                 f"ranks computing longest)"
    out += table(["rank", "stage", "window (ms)", "compute (ms)", "communication (ms)"]
                 + [f"{k} (ms)" for k in all_kinds]
                 + ["memory (ms)", "idle (ms)", "idle between iterations (ms)",
                    "idle within iterations (ms)", "overlap (%)"],
                 rows, "Per rank, per iteration" + shown, tid="dx-ranks")
    spread = [[s["name"], s["ranks"], _ms(s["min_s"]), _ms(s["median_s"]), _ms(s["max_s"]),
               None if s["max_over_median"] is None else round(s["max_over_median"], 4),
               s["slowest_rank"]] for s in b.get("kernel_spread") or []]
    if spread:
        out += table(["kernel or phase", "ranks", "min (ms)", "median (ms)", "max (ms)",
                      "max / median", "slowest rank"], spread,
                     "Mean duration across ranks", tid="dx-spread")
    slow = [[s["rank"], s["stage"], _ms(s["compute_s"]), _ms(s["peers_s"]),
             None if s["ratio_to_peers"] is None else round(s["ratio_to_peers"], 4)]
            for s in b.get("slowest") or []]
    if slow:
        out += table(["rank", "stage", "compute (ms)", "its stage (ms)", "ratio"], slow,
                     "The slowest ranks", tid="dx-slowest")
    return out


__all__ = ["diagnosis_section"]
