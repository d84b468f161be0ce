"""The forecast as a table or as JSON
`{"job", "gpus", "parallelism", "iteration_time_s", "tokens_per_s", "mfu", "hfu", "breakdown_s"}`
(inside the standard envelope of outputs/jsonout.py, added by the CLI)."""
from __future__ import annotations

from typing import Any, Dict

BREAKDOWN_LABELS = (("compute", "compute (incl. recompute)"), ("tp_comm", "exposed TP comm"),
                    ("cp_comm", "exposed CP comm"), ("ep_comm", "exposed EP comm"),
                    ("pp_comm", "exposed PP p2p"), ("dp_comm", "exposed DP comm"),
                    ("bubble", "pipeline bubble / wait"), ("optimizer", "optimizer step"))


def parallelism(fc) -> Dict[str, Any]:
    p, job = fc.job.parallel, fc.job
    return {"tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep, "sp": p.sp,
            "virtual_stages": p.v, "schedule": p.schedule, "zero": p.zero,
            "micro_batch": job.micro, "global_batch": job.global_batch,
            "micro_batches": job.microbatches, "seq": job.seq, "recompute": job.recompute,
            "dtype": job.dtype, "attention": job.attention}


def to_json(fc) -> Dict[str, Any]:
    doc = {"job": fc.job.name, "gpus": fc.gpus, "parallelism": parallelism(fc),
           "iteration_time_s": fc.iteration_time, "tokens_per_s": fc.tokens_per_s,
           "mfu": fc.mfu, "hfu": fc.hfu,
           "breakdown_s": {k: fc.breakdown.get(k, 0.0) for k, _ in BREAKDOWN_LABELS}}
    doc["gpu"] = fc.gpu
    doc["breakdown_stage"] = fc.stage
    doc["memory_gb"] = {k: v / 1e9 for k, v in fc.memory.parts()} | {
        "total": fc.memory.total / 1e9}
    if fc.chosen:
        doc["chosen"] = dict(fc.chosen)
    if fc.notes:
        doc["notes"] = list(fc.notes)
    return doc


def render(fc) -> str:
    j, p = fc.job, fc.job.parallel
    lines = [f"forecast: job `{j.name}` ({j.model.name}) on {fc.gpus} x {fc.gpu}"
             + (f" in {getattr(fc, 'placement', '')}" if getattr(fc, "placement", "") else "")]
    lines.append(f"  parallel   tp {p.tp}  pp {p.pp}  dp {p.dp}  cp {p.cp}  ep {p.ep}"
                 f"{'  sp' if p.sp else ''}  {p.schedule}" + (f" v={p.v}" if p.v > 1 else "")
                 + (f"  zero-{p.zero}" if p.zero else ""))
    lines.append(f"  batch      global {j.global_batch}  micro {j.micro}  x {j.microbatches} "
                 f"micro-batches  seq {j.seq}  recompute {j.recompute}  {j.dtype}")
    if fc.chosen:
        lines.append("  chosen     " + ", ".join(f"{k} = {v}" for k, v in fc.chosen)
                     + " (fastest that fits in memory; docs/seer.md)")
    for n in fc.notes:
        lines.append(f"  note       {n}")
    lines.append("")
    lines.append(f"  iteration time   {fc.iteration_time:10.3f} s")
    lines.append(f"  tokens/s         {fc.tokens_per_s:10,.0f}")
    lines.append(f"  MFU              {fc.mfu:10.1%}")
    lines.append(f"  HFU              {fc.hfu:10.1%}")
    lines.append(f"  memory per GPU   {fc.memory.total / 1e9:10.1f} GB (stage {fc.memory.stage})")
    lines.append("")
    lines.append(f"  breakdown (stage {fc.stage})         seconds   share")
    for key, label in BREAKDOWN_LABELS:
        v = fc.breakdown.get(key, 0.0)
        if v > 0 or key in ("compute", "bubble"):
            lines.append(f"    {label:<28} {v:9.3f} {v / fc.iteration_time:7.1%}")
    return "\n".join(lines) + "\n"
