"""Diagnostics for jobs that cannot run as declared (E750-E765, E768-E772, W750-W758), with the
span of the field at fault. `validate_jobs(design)` checks every job; `validate_job` one, and
also returns what a forecast needs (the JobSpec and the cluster) when the job is sound enough to
forecast. The checks, by subject: validate_model.py, validate_layout.py, validate_runtime.py,
validate_gpu.py, validate_memory.py and validate_moe.py."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.analyses.walk import Resolver
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import (validate_gpu, validate_layout, validate_memory, validate_model,
                             validate_moe, validate_runtime)
from astral_dsl.seer.cluster import Cluster, cluster_of, under_failures
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.job import declared, job_spec
from astral_dsl.seer.spec import JobSpec


class _Where:
    """Spans of a job's fields, in the job or in its `parallel` / `batch` record; a field the
    job does not write points at the record, else at the job."""

    def __init__(self, job, model_inst, options):
        self.job, self.model = job, model_inst
        self.fields = declared(job, **options)     # what the job (or an option) states

    def __call__(self, name: str, record: str = "parallel"):
        rec = self.job.member(record) if record else None
        if rec is not None:
            for k, s in rec.field_spans:
                if k == name:
                    return s
            return rec.span or self.job.span
        return self.job.span_of(name) or self.job.span

    def model_field(self, name: str):
        return self.model.span_of(name) or self.model.span or self.job.span_of("model")


def validate_jobs(design) -> List[Diagnostic]:
    out: List[Diagnostic] = []
    for job in design.jobs:
        out.extend(validate_job(design, job)[0])
    return out


def validate_job(design, job, fabric_failures=None, **options) -> Tuple[
        List[Diagnostic], Optional[JobSpec], Optional[Cluster]]:
    model_inst = Resolver(design)(job.field("model"))
    if model_inst is None or model_inst.kind != "model":
        return [_err("E758", f"job `{job.template}` has no model to forecast", job.span,
                     "set `model = ...`, e.g. a model of stdlib.models")], None, None
    where = _Where(job, model_inst, options)
    spec = job_spec(job, model_inst, **options)
    diags = validate_model.budget_model(spec, where) or validate_model.shape(spec, where)
    if diags:
        return diags, spec, None
    diags = (validate_model.model_defaults(spec, where) + validate_layout.layout(spec, where)
             + validate_runtime.runtime(spec, where))
    cluster = cluster_of(design, job, fabric_failures, spec.parallel.gpus)
    name = f"job `{job.template}`"
    rack_diag = _per_rack(name, job, cluster)
    if rack_diag is not None:
        diags.append(rack_diag)
        return diags, spec, None
    if cluster is None or cluster.gpus == 0:
        diags.append(_err("E758", f"{name}: its placement holds no GPU", job.span_of("placement"),
                          "place the job on a site, hall, pod or rows with GPUs"))
        return diags, spec, None
    if job.field("placement") is None:         # cluster.py: the design's first root
        diags.append(_warn("W758", f"{name} declares no `placement`: Seer runs it on "
                                   f"`{cluster.placement}`, the design's first "
                                   f"{design.roots[0].kind}", job.span,
                           f"state where it runs: `placement = {cluster.placement}` (a site, "
                           "hall, pod or rows)"))
    par = spec.parallel
    if cluster.gpus < par.gpus and cluster.per_rack is not None:
        n, where = cluster.per_rack[0], cluster.per_rack[3]
        first = "host" if n == 1 else f"{n:,} hosts"
        diags.append(_err("E755", f"{name} needs {par.gpus} GPUs but the first {first} of "
                                  f"each rack of its placement `{where}` hold {cluster.gpus} "
                                  f"(`hosts_per_rack = {n:,}`)", job.span_of("placement"),
                          "place it on more racks, take more hosts of each "
                          "(`hosts_per_rack`), or shrink a degree"))
    elif cluster.gpus < par.gpus:
        diags.append(_err("E755", f"{name} needs {par.gpus} GPUs but its placement "
                                  f"`{cluster.placement}` holds {cluster.gpus}",
                          job.span_of("placement"), "place it on more GPUs or shrink a degree"))
    diags.extend(validate_gpu.gpu_data(design, job, cluster, par.gpus, spec.dtype))
    diags.extend(validate_gpu.gpu_guesses(design, job, cluster))
    diags.extend(validate_gpu.unlike(design, job, cluster, par.gpus))
    diags.extend(validate_gpu.precision(spec, cluster, name, where))
    diags.extend(validate_memory.offload(spec, cluster, name, where))
    if any(d.is_error for d in diags):
        return diags, spec, cluster
    cluster, lost, cut = under_failures(spec, cluster)   # a scenario's failed fabric parts
    if lost:
        diags.append(_err("E775", f"{name}: under the scenario its ranks lose their network, so "
                                  f"it cannot run: {'; '.join(lost)}",
                          job.span_of("placement"),
                          "a collective needs every member on the network: keep a live port "
                          "and a path above it for each GPU of the job", cut))
        return diags, spec, cluster
    diags.extend(validate_moe.routing_priced(spec, cluster.net, where))
    diags.extend(validate_layout.budget_blocks(spec, where))
    if not any(d.is_error for d in diags):
        diags.extend(validate_layout.interleaving(spec, where))
    if not any(d.is_error for d in diags):
        diags.extend(validate_memory.memory_check(job, spec, cluster))
    return diags, spec, cluster


def unmatched_table_warning(job, path: str) -> Diagnostic:
    """W751: a measured operator table none of whose rows names an operator of the forecast
    (every operator was priced by the roofline, as without it)."""
    return _warn("W751", f"job `{job.template}`: no row of the operator table {path} names an "
                         f"operator of its forecast (operator, shape and dtype as the trace "
                         f"shows them): every operator was priced by the roofline", job.span,
                 "name operators as `astral forecast --trace` writes them (`qkv`, `fc1`, or "
                 "`gemm` for any GEMM) with the shape `MxNxK` of the trace's args.shape; "
                 "attention's shape is `flopsN` and a memory-bound kernel's `bytesN` (N: "
                 "args.flops, args.bytes)")


def _per_rack(name: str, job, cluster: Optional[Cluster]) -> Optional[Diagnostic]:
    """E772: `hosts_per_rack = N` on a placement with no rack holding GPUs, or one of whose
    racks holds fewer than N hosts (analyses/job_racks.py)."""
    if cluster is None or cluster.per_rack is None:
        return None
    n, racks, short, where = cluster.per_rack
    span = job.span_of("hosts_per_rack") or job.span
    if not racks:
        return _err("E772", f"{name}: `hosts_per_rack = {n:,}` but its placement `{where}` "
                            "holds no rack with GPUs (the field takes hosts of the racks a "
                            "placement holds)", span,
                    "drop `hosts_per_rack` (the job then takes its placement's hosts in order),"
                    " place the job on racks or a part that holds them, or put the hosts in "
                    "racks (`rack R { hosts = 18 x Tray }`)")
    if short is not None:
        rack, hosts = short
        return _err("E772", f"{name}: `hosts_per_rack = {n:,}` but rack `{rack}` of its "
                            f"placement `{where}` holds {hosts:,} host{'s' if hosts != 1 else ''}",
                    span, f"take at most {hosts:,} hosts of each rack "
                          f"(`hosts_per_rack = {hosts:,}`), or place the job on racks of "
                          f"{n:,} hosts or more")
    return None
