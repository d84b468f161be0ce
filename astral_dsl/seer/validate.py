"""Diagnostics for jobs that cannot run as declared (E750-E758), with the span of the field at
fault. `validate_jobs(design)` checks every job; `validate_job` one, and also returns what a
forecast needs (the JobSpec and the cluster) when the job is sound enough to forecast."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.seer.cluster import Cluster, cluster_of
from astral_dsl.seer.job import job_spec
from astral_dsl.seer.spec import JobSpec
from astral_dsl.analyses.walk import Resolver
from astral_dsl.diagnostics import Diagnostic, Severity

GB = 1e9


def _err(code, message, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint, notes=tuple(notes))


def _span(rec, job, name):
    if rec is not None:
        for k, s in rec.field_spans:
            if k == name:
                return s
    return job.span_of(name) if rec is None else (rec.span or job.span)


def validate_jobs(design) -> List[Diagnostic]:
    out: List[Diagnostic] = []
    for job in design.jobs:
        out.extend(validate_job(design, job)[0])
    return out


def validate_job(design, job, fabric_failures=(), **options) -> Tuple[
        List[Diagnostic], Optional[JobSpec], Optional[Cluster]]:
    diags: List[Diagnostic] = []
    model_inst = Resolver(design)(job.field("model"))
    if model_inst is None or model_inst.kind != "model":
        diags.append(_err("E758", f"job `{job.template}` has no model to forecast", job.span,
                          "set `model = ...`, e.g. a model of stdlib.models"))
        return diags, None, None
    spec = job_spec(job, model_inst, **options)
    par_rec, bat_rec = job.member("parallel"), job.member("batch")
    m, par = spec.model, spec.parallel
    name = f"job `{job.template}`"
    if m.heads % par.tp:
        diags.append(_err("E750", f"{name}: tp = {par.tp} does not divide the {m.heads} attention "
                                  f"heads of `{m.name}`", _span(par_rec, job, "tp"),
                          "choose a tensor-parallel degree that divides the heads"))
    elif m.kv_heads % par.tp and par.tp % m.kv_heads:
        diags.append(_err("E750", f"{name}: tp = {par.tp} and the {m.kv_heads} key/value heads of "
                                  f"`{m.name}` do not divide one another",
                          _span(par_rec, job, "tp")))
    if par.stages:
        if len(par.stages) != par.pp or sum(par.stages) != m.layers or min(par.stages) < 1:
            diags.append(_err("E752", f"{name}: the declared split {list(par.stages)} has "
                                      f"{len(par.stages)} stages and {sum(par.stages)} layers; "
                                      f"pp = {par.pp} and `{m.name}` has {m.layers} layers",
                              _span(par_rec, job, "stages"),
                              f"list {par.pp} positive layer counts adding up to {m.layers}"))
    elif m.layers % par.pp:
        base = m.layers // par.pp
        diags.append(_err("E751", f"{name}: pp = {par.pp} does not divide the {m.layers} layers of "
                                  f"`{m.name}`", _span(par_rec, job, "pp"),
                          f"declare an uneven split, e.g. `stages = [...]` with {par.pp} counts "
                          f"adding up to {m.layers} (around {base} each), or change pp"))
    elif par.v and par.v > 1 and (m.layers // par.pp) % par.v:
        diags.append(_err("E751", f"{name}: {m.layers // par.pp} layers per stage do not split into "
                                  f"{par.v} virtual stages", _span(par_rec, job, "virtual_stages")))
    if m.experts:
        if m.experts % par.ep:
            diags.append(_err("E753", f"{name}: ep = {par.ep} does not divide the {m.experts} "
                                      f"experts of `{m.name}`", _span(par_rec, job, "ep")))
        elif (par.dp * par.tp * par.cp) % par.ep:
            diags.append(_err("E753", f"{name}: ep = {par.ep} does not divide dp x tp x cp = "
                                      f"{par.dp * par.tp * par.cp}: expert groups live inside them",
                              _span(par_rec, job, "ep")))
    elif par.ep > 1:
        diags.append(_err("E753", f"{name}: ep = {par.ep} but `{m.name}` has no experts",
                          _span(par_rec, job, "ep")))
    if spec.gpus is not None and spec.gpus != par.gpus:
        diags.append(_err("E754", f"{name}: declares {spec.gpus} GPUs but tp x pp x dp x cp = "
                                  f"{par.tp} x {par.pp} x {par.dp} x {par.cp} = {par.gpus}",
                          job.span_of("gpus"), "make `gpus` the product of the parallel degrees"))
    micro = spec.micro or 1
    if spec.global_batch % (micro * par.dp):
        diags.append(_err("E756", f"{name}: global batch {spec.global_batch} is not divisible by "
                                  f"micro-batch x dp = {micro} x {par.dp}",
                          _span(bat_rec, job, "global_batch"),
                          f"use a multiple of {micro * par.dp}"))
    if m.seq and spec.seq % par.cp:
        diags.append(_err("E756", f"{name}: sequence {spec.seq} is not divisible by cp = {par.cp}",
                          _span(par_rec, job, "cp")))
    cluster = cluster_of(design, job, fabric_failures)
    if cluster is None or cluster.gpus == 0:
        diags.append(_err("E758", f"{name}: its placement holds no GPU", job.span_of("placement"),
                          "place the job on a site, hall, pod or rows with GPUs"))
        return diags, spec, None
    if cluster.gpus < par.gpus:
        diags.append(_err("E755", f"{name} needs {par.gpus} GPUs but its placement "
                                  f"`{cluster.placement}` holds {cluster.gpus}",
                          job.span_of("placement"), "place it on more GPUs or shrink a degree"))
    if any(d.is_error for d in diags):
        return diags, spec, cluster
    diags.extend(memory_check(job, spec, cluster))
    return diags, spec, cluster


def memory_check(job, spec: JobSpec, cluster: Cluster) -> List[Diagnostic]:
    from astral_dsl.seer.costs import Costs
    from astral_dsl.seer.lower import Lowering
    from astral_dsl.seer.memory import estimate

    probe = spec if spec.micro else spec.with_(micro=1)
    if probe.parallel.schedule == "interleaved" and not probe.parallel.v:
        from dataclasses import replace
        probe = probe.with_(parallel=replace(probe.parallel, v=1))
    low = Lowering(probe, Costs(cluster.gpu, probe.dtype), cluster.net)
    if not cluster.gpu.memory:          # the GPU declares no memory: nothing to check against
        return []
    est = estimate(probe, low.stage_params)
    if est.total <= cluster.gpu.memory:
        return []
    notes = [f"per-GPU estimate on pipeline stage {est.stage}: {est.total / GB:.1f} GB of "
             f"{cluster.gpu.memory / GB:.0f} GB (`{cluster.gpu.name}`)"]
    notes.append(", ".join(f"{k} {v / GB:.1f} GB" for k, v in est.parts()))
    return [_err("E757", f"job `{job.template}` does not fit in GPU memory: about "
                         f"{est.total / GB:.1f} GB per GPU, the GPU has "
                         f"{cluster.gpu.memory / GB:.0f} GB", job.span_of("recompute")
                 if job.field("recompute") is not None else job.span,
                 "recompute activations (`recompute = full`), shard the optimizer "
                 "(`zero = 1` in `parallel`), or raise tp / pp", notes)]
