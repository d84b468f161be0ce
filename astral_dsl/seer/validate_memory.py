"""The job checks of its memory (validate.py runs them): activation offloading as declared
(E768), the estimate against the GPU's memory (W750, E757) and the offloaded activations
against the host's (E769, W754), at validation and again on the configuration forecast."""
from __future__ import annotations

from typing import List

import attrs

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer.cluster import Cluster
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.memory import offload_obstacle
from astral_dsl.seer.spec import JobSpec
from astral_dsl.units.readable import memory_capacity

GB = 1e9


def offload(spec: JobSpec, cluster, name: str, where) -> List[Diagnostic]:
    """E768 for activation offloading that cannot run as declared: Megatron-Core's needs one
    pipeline stage and keeps at least the last layer on the GPU (megatron/core/transformer/
    transformer_config.py), and Seer prices the copies at the GPU's declared host link."""
    k, layers = spec.offload_layers, spec.model.layers
    if not k:
        return []
    why = offload_obstacle(spec, cluster.gpu.host_bw)
    if why is None and k >= layers:
        why = "layers"
    if why is None:
        return []
    message, hint = {
        "framework": (f"with framework = {spec.framework}: activation offloading is modelled as "
                      f"Megatron-Core's", "leave `offload_layers` out, or `framework = megatron`"),
        "stages": (f"with pp = {spec.parallel.pp}: Megatron-Core offloads activations only "
                   f"without pipeline parallelism", "`pp = 1` (shard with `fsdp = true` or raise "
                                                    "tp instead), or leave `offload_layers` out"),
        "layers": (f"of the model's {layers} layers: at least the last layer stays on the GPU",
                   f"at most `offload_layers = {layers - 1}`"),
        "host_link": (f"but `{cluster.gpu.name}` declares no `host_bandwidth`: the copies to host "
                      f"memory cannot be priced", "declare the GPU's link to host memory, each "
                      "direction, e.g. `host_bandwidth = 64 GB/s` (PCIe Gen5 x16)")}[why]
    return [_err("E768", f"{name}: offload_layers = {k} {message}", where("offload_layers", ""),
                 hint)]


def memory_check(job, spec: JobSpec, cluster: Cluster) -> List[Diagnostic]:
    """E757 when the estimate exceeds the GPU's memory by more than its uncertainty, W750 when
    by less (memory.py states the uncertainty). A job that leaves its micro-batch (or virtual
    stages) to the rule is checked at the smallest (micro-batch 1, no interleaving);
    forecast_diagnostics checks the configuration the rule chose."""
    from astral_dsl.seer.memory import of_job

    if not cluster.gpu.memory:          # the GPU declares no memory: nothing to check against
        return []
    probe = memory_probe(spec)
    return memory_diagnostics(job, probe, of_job(probe), cluster.gpu)


def memory_probe(spec: JobSpec) -> JobSpec:
    """The configuration the memory check estimates (and `astral check --margins` measures the
    margin of): what the job leaves to the rule at its smallest, micro-batch 1, whole layers
    recomputed, nothing offloaded, no interleaving."""
    probe = spec if spec.micro else spec.with_(micro=1)
    if probe.recompute == "auto":
        probe = probe.with_(recompute="full")
    if probe.offload_layers is None:       # the rule's: checked at none, as recompute at full
        probe = probe.with_(offload_layers=0)
    if probe.parallel.schedule == "interleaved" and not probe.parallel.v:
        probe = probe.with_(parallel=attrs.evolve(probe.parallel, v=1))
    return probe


def probe_settings(spec: JobSpec) -> List[str]:
    """What `memory_probe` takes in place of what `spec` leaves to Seer's rule, in words
    (`["1 virtual stage"]`): where the estimate it measures is not the forecast's."""
    probe = memory_probe(spec)
    out = []
    if probe.micro != spec.micro:
        out.append(f"micro-batch {probe.micro}")
    if probe.recompute != spec.recompute:
        out.append(f"recompute = {probe.recompute}")
    if probe.offload_layers != spec.offload_layers:
        out.append("no layer offloaded")
    if probe.parallel.v != spec.parallel.v:
        out.append(f"{probe.parallel.v} virtual stage")
    return out


def memory_diagnostics(job, spec: JobSpec, est, gpu, chosen=()) -> List[Diagnostic]:
    """W750 / E757 for the estimate `est` of `spec` on `gpu` (nothing when it fits), then E769 /
    W754 for what it offloads to host memory; `chosen`: the runtime parameters the rule picked
    for it, named in a note."""
    return _gpu_memory(job, spec, est, gpu, chosen) + _host_memory(job, est, gpu)


def _host_memory(job, est, gpu) -> List[Diagnostic]:
    """E769 when the activations offloaded per GPU exceed the host's memory per GPU (its
    `memory` over its GPUs), W754 when the host declares no memory to hold them."""
    if not est.offloaded:
        return []
    span = job.span_of("offload_layers") if job.field("offload_layers") is not None else job.span
    moved = f"{est.offloaded / GB:.1f} GB of activations per GPU"
    if gpu.host_memory is None:
        return [_warn("W754", f"job `{job.template}` offloads {moved} to host memory, which its "
                              f"host does not declare: not checked", span,
                      "declare the host's `memory` (e.g. `memory = 2 TB`: DGX H100)")]
    if est.offloaded <= gpu.host_memory:
        return []
    return [_err("E769", f"job `{job.template}` offloads about {moved} to host memory, "
                         f"{gpu.host_memory / GB:.0f} GB per GPU on its host", span,
                 "offload fewer layers (`offload_layers`), recompute (`recompute = full`), or "
                 "a host with more memory")]


def _gpu_memory(job, spec: JobSpec, est, gpu, chosen) -> List[Diagnostic]:
    cap = gpu.memory
    if not cap or est.total <= cap:
        return []
    notes = [f"per-GPU estimate on pipeline stage {est.stage}: {est.total / GB:.1f} GB "
             f"+/- {est.uncertainty_pct:.0f} % of {memory_capacity(cap)} on `{gpu.name}`",
             ", ".join(f"{k} {v / GB:.1f} GB" for k, v in est.parts())]
    if chosen:
        notes.append("no configuration the rule tried fits: it took the one that needs the "
                     "least memory (" + ", ".join(f"{k} = {v}" for k, v in chosen) + ")")
    span = job.span_of("recompute") if job.field("recompute") is not None else job.span
    if est.total - est.uncertainty <= cap:
        return [_warn("W750", f"job `{job.template}` may not fit in GPU memory: "
                              f"{est.total / GB:.0f} GB estimated, {memory_capacity(cap)} on the GPU, "
                              f"estimate +/- {est.uncertainty_pct:.0f} %", span,
                      "leave headroom: " + _memory_hint(spec, gpu.host_bw), notes)]
    return [_err("E757", f"job `{job.template}` does not fit in GPU memory: about "
                         f"{est.total / GB:.1f} GB per GPU, the GPU has {memory_capacity(cap)}",
                 span, _memory_hint(spec, gpu.host_bw), notes)]


def forecast_diagnostics(job, diags, fc, cluster) -> List[Diagnostic]:
    """What a forecast reports beside its figures: the job's warnings (validate_job), with the
    memory check made again on the configuration forecast (the rule's choice, which may need
    more than the smallest configuration validate_job checks): W750, or E757 when even the
    rule's least-memory choice clearly exceeds the GPU."""
    kept = [d for d in diags if not d.is_error and d.code != "W750"]
    return kept + memory_diagnostics(job, fc.job, fc.memory, cluster.gpu, fc.chosen)


def _memory_hint(spec: JobSpec, host_bw: float) -> str:
    """What would shrink the estimate, leaving out what the job already does."""
    par, out = spec.parallel, []
    if spec.recompute != "full":
        # `auto` is never left out: a job that states no `recompute` recomputes nothing
        out.append("recompute activations (`recompute = full`, or `recompute = auto`: the "
                   "fastest that fits, Seer's rule)")
    if not spec.offload_layers and offload_obstacle(spec, host_bw) is None:
        out.append("offload activations to host memory (`offload_layers = N`)")
    if par.zero == 0:
        out.append("shard the optimizer (`zero = 1` in `parallel`)")
    elif par.zero < 3:
        out.append(f"shard more (`zero = {par.zero + 1}`" + (", or `fsdp = true`)"
                                                             if par.zero == 1 else ")"))
    if spec.micro and spec.micro > 1:
        out.append("a smaller micro-batch")
    if not spec.fp8_params and spec.with_(fp8_params=True).quantised_params:
        out.append("hold the linear weights in fp8 only (`fp8_params = true`)")
    out.append("raise tp / pp")
    return ", ".join(out[:-1]) + (", or " if len(out) > 1 else "") + out[-1]
