"""The forecast as a table or as JSON
`{"job", "gpus", "parallelism", "iteration_time_s", "tokens_per_s", "mfu", "hfu", "breakdown_s",
"breakdown_stage", "memory_stage", "memory_gb", ..., "calibration", "scenario"}` (`calibration`:
how far to trust it, seer/envelope.py: {"regime", "inside", "band", ...}; the scenario object of
every command's JSON, outputs/jsonout.py scenario_json, or null; inside the standard envelope of
outputs/jsonout.py, added by the CLI). Every figure says which pipeline stage it is for: the
breakdown is the busiest stage's (most compute), the memory the fullest stage's, and the
breakdown's stage's memory is shown too when they differ."""
from __future__ import annotations

from typing import Any, Dict

from astral_dsl.outputs.forecast.split import split_lines, stage_split
from astral_dsl.outputs.jsonout import scenario_json
from astral_dsl.units.readable import memory_capacity
from astral_dsl.seer.envelope import band_text as text_of, inverse
from astral_dsl.seer.checked import direction

BREAKDOWN_LABELS = (("compute", "compute (incl. recompute)"), ("tp_comm", "exposed TP comm"),
                    ("cp_comm", "exposed CP comm"), ("ep_comm", "exposed EP comm"),
                    ("pp_comm", "exposed PP p2p"), ("dp_comm", "exposed DP comm"),
                    ("offload", "exposed activation offload"),
                    ("host", "host-bound (CPU launch)"), ("bubble", "pipeline bubble / wait"), ("optimizer", "optimizer step"))


def parallelism(fc) -> Dict[str, Any]:
    p, job = fc.job.parallel, fc.job
    return {"tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep, "sp": p.sp,
            "order": "-".join(p.order), "virtual_stages": p.v, "schedule": p.schedule,
            "zero": p.zero, "reshard_after_forward": p.reshard_after_forward,
            "micro_batch": job.micro, "global_batch": job.global_batch,
            "micro_batches": job.microbatches, "pipeline_runs": job.pipeline_runs,
            "seq": job.seq, "recompute": job.recompute,
            "recompute_layers": job.recompute_layers if job.recompute == "full" else None,
            "recompute_modules": sorted(job.recomputed) if job.recompute == "modules" else None,
            "optimizer_dtype": job.optimizer_dtype,
            "offload_layers": job.offload_layers or 0,
            "dtype": job.dtype, "grad_dtype": job.gradient_dtype, "attention": job.attention,
            "tp_overlap": job.tp_overlap, "overlap_grad_reduce": job.overlap_grad_reduce,
            "overlap_param_gather": job.overlap_param_gather,
            "pp_overlap": job.pp_overlap and p.v > 1,
            "capacity_factor": job.capacity_factor if job.model.experts else None,
            "pad_to_capacity": job.padded,
            "moe_routing": job.moe_routing if job.model.experts else None,
            "etp": p.etp if job.model.experts else None,
            "expert_groups": ([job.model.expert_groups, job.model.group_top_k]
                              if job.model.experts and job.model.group_top_k else None),
            "stage_split": stage_split(fc)}


def _routing(job) -> str:
    """Which experts a token goes to (seer/routing.py), as the text says it."""
    m = job.model
    if job.moe_routing == "round_robin":
        return f"routing round robin ({m.top_k} consecutive experts a token)"
    if m.expert_groups > 1 and m.group_top_k:
        return f"routing top-{m.top_k} within {m.group_top_k} of {m.expert_groups} expert groups"
    return f"routing top-{m.top_k}"


def _stage_memory(fc, stage: int):
    from astral_dsl.seer.memory import stage_estimate

    if stage == fc.memory.stage:
        return fc.memory
    return stage_estimate(fc.job, fc.lowering.stage_params, stage)


def to_json(fc) -> Dict[str, Any]:
    doc = {"job": fc.job.name, "gpus": fc.gpus, "parallelism": parallelism(fc),
           "iteration_time_s": fc.iteration_time, "tokens_per_s": fc.tokens_per_s,
           "mfu": fc.mfu, "hfu": fc.hfu,
           "breakdown_s": {k: fc.breakdown.get(k, 0.0) for k, _ in BREAKDOWN_LABELS}}
    doc["gpu"] = fc.gpu
    doc["breakdown_stage"] = fc.stage
    doc["memory_stage"] = fc.memory.stage
    doc["memory_gb"] = {k: v / 1e9 for k, v in fc.memory.parts()} | {
        "total": fc.memory.total / 1e9, "uncertainty": fc.memory.uncertainty / 1e9}
    cap = fc.lowering.c.gpu.memory
    doc["gpu_memory_gb"] = cap / 1e9 if cap else None
    doc["may_not_fit"] = may_not_fit(fc)
    if fc.memory.offloaded:
        doc["offloaded_gb"] = fc.memory.offloaded / 1e9    # in host memory, not in the GPU's
    if fc.stage != fc.memory.stage:
        doc["breakdown_stage_memory_gb"] = _stage_memory(fc, fc.stage).total / 1e9
    if fc.chosen:     # beside `chosen`, the values sizing chose (as in every command's JSON)
        doc["chosen_by_rule"] = dict(fc.chosen)
    if fc.notes:
        doc["notes"] = list(fc.notes)
    doc["calibration"] = fc.envelope().as_json()
    doc["scenario"] = None if fc.scenario is None else scenario_json(*fc.scenario)
    return doc


def may_not_fit(fc) -> bool:
    """The estimate plus its uncertainty over the GPU's memory: the test of `astral search`'s
    "may not fit" (W750 tests the estimate alone)."""
    return fc.memory.may_not_fit(fc.lowering.c.gpu.memory)


def band_text(env) -> str:
    """The band beside a forecast's time: "-4/+7 %" and where it comes from."""
    if env.inside:
        return (f"{env.text()}  (true time: the spread of {env.rows:,} calibration runs of "
                f"{_basis(env)} left out of the fit{_pooled(env)})")
    return f"{env.text()}  (outside the calibrated envelope: a default band, W753)"


def _basis(env) -> str:
    """The runs a band comes from: its regime, a coarser key ("H100/BF16", "BF16") or, for the
    key `*`, every regime."""
    return "every regime" if env.basis == "*" else env.basis


def _pooled(env) -> str:
    """Where a regime had too few runs for a band of its own (seer/envelope.py: a coarser key's
    band, widened to its own runs'), that it did: "" when the band is the regime's."""
    from astral_dsl.seer.envelope import MIN_ROWS
    from astral_dsl.seer.regime import regime_key

    key = regime_key(env.regime)
    if env.basis == key:
        return ""
    return f"; fewer than {MIN_ROWS} of {key}: theirs pooled with the others"


def _time(t: float) -> str:
    if t >= 1.0 or t == 0.0:
        return f"{t:.3f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.1f} ms"
    return f"{t * 1e6:.0f} us"


def render(fc) -> str:
    from astral_dsl.seer.ranks import RankOrder

    j, p = fc.job, fc.job.parallel
    lines = [f"forecast: job `{j.name}` ({j.model.name}) on {fc.gpus:,} x {fc.gpu}"
             + (f" in {fc.placement}" if fc.placement else "")]
    dims = [f"tp {p.tp}", f"pp {p.pp}", f"dp {p.dp}"] + [f"{k} {v}" for k, v in
                                                          (("cp", p.cp), ("ep", p.ep),
                                                           ("etp", p.etp)) if v > 1]
    sched = p.schedule + (f", {p.v} virtual stages" if p.v > 1 else "")
    if p.schedule == "interleaved" and p.v == 1:      # the rule's choice: one chunk is 1F1B
        sched = "1f1b (interleaved with 1 virtual stage)"
    extras = ["sp"] * p.sp + [sched] + ([f"zero-{p.zero}"] if p.zero else []) + \
        (["no re-sharding after the forward"] if p.zero >= 3 and not p.reshard_after_forward
         else []) + [f"order {'-'.join(p.order)}"]
    lines.append("  parallel   " + "  ".join(dims + extras))
    lines += split_lines(fc)
    runs = (f" in {j.pipeline_runs} runs of the schedule" if j.pipeline_runs > 1 else "")
    lines.append(f"  batch      global {j.global_batch:,}  micro {j.micro}  "
                 f"{j.microbatches:,} micro-batches per pipeline{runs}  seq {j.seq:,}")
    overlaps = [name for on, name in ((j.overlap_grad_reduce, "grad reduce"),
                                      (j.overlap_param_gather, "param gather")) if on]
    n = j.recompute_layers
    whole = ("" if j.recompute != "full" or n is None else " (the first layer of each chunk)"
             if n == 1 else f" (the first {n} layers of each chunk)")
    if j.recompute == "modules":
        whole = f" ({', '.join(sorted(j.recomputed))})"
    lines.append(f"  runtime    recompute {j.recompute}{whole}"
                 + (f"  offload {j.offload_layers} layers" if j.offload_layers else "")
                 + f"  {j.dtype} (gradients "
                 f"{j.gradient_dtype}"
                 + (", Adam's moments bf16" if j.optimizer_dtype == "bf16" else "")
                 + f")  attention {j.attention}")
    lines.append(f"  overlap    TP reductions: {j.tp_overlap}  DP: "
                 + (", ".join(overlaps) if overlaps else "none")
                 + ("  PP: sends" if j.pp_overlap and p.v > 1 else ""))
    if j.model.experts:
        cap = j.capacity_factor
        drop = ("dropless" if cap is None else f"tokens beyond {cap:g}x an expert's share "
                "dropped" + (", inputs padded to it" if j.padded else ""))
        lines.append(f"  moe        {_routing(j)}  dispatcher {j.moe_dispatcher}  {drop}"
                     + ("" if j.host_counts else "  no wait for token counts"))
    if fc.chosen:
        lines.append("  chosen     " + ", ".join(f"{k} = {v}" for k, v in fc.chosen)
                     + " (Seer's rule: the fastest that fits in memory,"
                     " else the one that needs the least; docs/seer.md)")
        if dict(fc.chosen).get("virtual_stages") == 1 and p.pp > 1 and \
                j.run_microbatches % p.pp:
            lines.append(f"             virtual_stages = 1: interleaving needs the micro-batches "
                         f"per pipeline ({j.run_microbatches:,}) to be a multiple of pp = {p.pp} "
                         f"(Megatron-LM, W757)")
    for n in fc.notes:
        lines.append(f"  note       {n}")
    mem = fc.memory
    lines.append("")
    # to the millisecond; under a second (a small model's) to the microsecond, not "0.003 s"
    it = fc.iteration_time
    env = fc.envelope()
    lines.append(f"  iteration time   {f'{it:12.3f} s' if it >= 1 else f'{it * 1e3:11.3f} ms'}"
                 f"   {band_text(env)}")
    import textwrap

    if env.measured:            # measured times replaced Seer's costs the band is the error of
        lines += textwrap.wrap(env.measured_note(), 100, initial_indent=" " * 19,
                               subsequent_indent=" " * 19)
    if env.extrapolated:        # beyond the runs the band was measured on (seer/checked.py)
        lines += textwrap.wrap(f"extrapolated {direction(env.extrapolated)} the calibration "
                               f"runs: {env.beyond_text()} "
                               "(W759): no run measured the error there", 100,
                               initial_indent=" " * 19, subsequent_indent=" " * 19)
    # tokens/s, MFU and HFU go inversely with the time: the time's band, inverted
    per = f"{text_of(inverse(env.band)):<9}"
    lines.append(f"  tokens/s         {fc.tokens_per_s:12,.0f}     {per}  the time's band, "
                 "inverted")
    lines.append(f"  MFU              {fc.mfu * 100:12.1f} %   {per}  model FLOPs / "
                 f"{_peak_text(fc.lowering.c)}")
    lines.append(f"  HFU              {fc.hfu * 100:12.1f} %   {per}  with the recomputed FLOPs")
    cap = fc.lowering.c.gpu.memory
    over = f"; may not fit in {memory_capacity(cap)}" if may_not_fit(fc) else ""
    lines.append(f"  memory per GPU   {mem.total / 1e9:12.1f} GB  +/- {mem.uncertainty_pct:.0f} %"
                 f" on stage {mem.stage}, the fullest{over}")
    if mem.offloaded:
        lines.append(f"                   {mem.offloaded / 1e9:12.1f} GB  of activations in host "
                     f"memory ({j.offload_layers} layers offloaded)")
    if fc.stage != mem.stage:
        other = _stage_memory(fc, fc.stage)
        lines.append(f"                   {other.total / 1e9:12.1f} GB  on stage {fc.stage}, "
                     f"the breakdown's")
    lines.append("")
    rank = RankOrder(p).rank(pp=fc.stage)
    lines.append(f"  stage {fc.stage} (rank {rank}), the busiest: where its time goes")
    for key, label in BREAKDOWN_LABELS:
        v = fc.breakdown.get(key, 0.0)
        if v > 0 or key in ("compute", "bubble"):
            lines.append(f"    {label:<30} {_time(v):>10} {v / fc.iteration_time * 100:6.1f} %")
    return "\n".join(lines) + "\n"


def _peak_text(c) -> str:
    """The peak MFU is measured against, as the GPU declares it: "bf16 peak, 989 TFLOP/s a GPU"
    (an fp8 or MXFP8 job's is the fp8 one, an NVFP4 job's the fp4 one: seer/costs.py)."""
    from astral_dsl.seer.costs import PEAK_OF

    return f"{PEAK_OF.get(c.dtype, c.dtype)} peak, {c.peak / 1e12:,.6g} TFLOP/s a GPU"
