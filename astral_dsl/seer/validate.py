"""Diagnostics for jobs that cannot run as declared (E750-E765, E768-E771, W750-W754), with the
span of the field at fault. `validate_jobs(design)` checks every job; `validate_job` one, and
also returns what a forecast needs (the JobSpec and the cluster) when the job is sound enough to
forecast."""
from __future__ import annotations

from typing import List, Optional, Tuple

import attrs

from astral_dsl.analyses.walk import Resolver
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import budget, validate_moe
from astral_dsl.seer.cluster import Cluster, cluster_of, under_failures
from astral_dsl.seer.costs import DEFAULT_SMS, SIXTEEN
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.job import declared, job_spec
from astral_dsl.seer.memory import offload_obstacle
from astral_dsl.seer.spec import (DEFAULT_SEQ, DEFAULT_VOCAB, DIMENSIONS, PYTORCH_FRAMEWORKS,
                               JobSpec, chunk_layers, chunk_split, stage_layers,
                               virtual_stage_options)
from astral_dsl.units.readable import count as _n

GB = 1e9


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
    diags = _budget_model(spec, where) or _model(spec, where)
    if diags:
        return diags, spec, None
    diags = _model_defaults(spec, where) + _layout(spec, where) + _runtime(spec, where)
    cluster = cluster_of(design, job, fabric_failures, spec.parallel.gpus)
    name = f"job `{job.template}`"
    if cluster is None or cluster.gpus == 0:
        diags.append(_err("E758", f"{name}: its placement holds no GPU", job.span_of("placement"),
                          "place the job on a site, hall, pod or rows with GPUs"))
        return diags, spec, None
    par = spec.parallel
    if cluster.gpus < par.gpus:
        diags.append(_err("E755", f"{name} needs {par.gpus} GPUs but its placement "
                                  f"`{cluster.placement}` holds {cluster.gpus}",
                          job.span_of("placement"), "place it on more GPUs or shrink a degree"))
    diags.extend(gpu_data(design, job, cluster, par.gpus, spec.dtype))
    diags.extend(_gpu_guesses(design, job, cluster))
    diags.extend(_precision(spec, cluster, name, where))
    diags.extend(_offload(spec, cluster, name, where))
    if any(d.is_error for d in diags):
        return diags, spec, cluster
    cluster, lost = under_failures(spec, cluster)      # a scenario's failed fabric parts
    if lost:
        diags.append(_err("E775", f"{name}: under the scenario its ranks lose their network, so "
                                  f"it cannot run: {'; '.join(lost)}",
                          job.span_of("placement"),
                          "a collective needs every member on the network: keep a live port "
                          "and a path above it for each GPU of the job"))
        return diags, spec, cluster
    diags.extend(validate_moe.routing_priced(spec, cluster.net, where))
    diags.extend(_budget_blocks(spec, where))
    if not any(d.is_error for d in diags):
        diags.extend(_interleaving(spec, where))
    if not any(d.is_error for d in diags):
        diags.extend(memory_check(job, spec, cluster))
    return diags, spec, cluster


def gpu_data(design, job, cluster: Cluster, ranks: int = 1, dtype: str = "bf16"
             ) -> List[Diagnostic]:
    """E758 for a GPU without the data sheet figures Seer's operator times need (a missing
    figure must not count as zero, nor as an assumed value, nor as another precision's peak:
    `dtype`'s GEMMs need its own, a quantised job's other GEMMs the 16-bit one; the quantised
    rate itself is E765's), without the NVLink bandwidth
    its transfers between the GPUs of a host (or NVLink domain) are priced on, when the job
    has such transfers (several GPUs per host and more than one rank), and for hosts without a
    network bandwidth when the job spans several of them (comm divided by both)."""
    gpu = cluster.gpu
    nvlink = ranks <= 1 or cluster.net.gpus_per_host <= 1 or gpu.nvlink_bw > 0
    missing = [(what, field, note) for what, field, have, note in (
        ("`memory_bandwidth`", "memory_bandwidth", gpu.hbm_bw > 0, _TIMES),
        _peak_missing(gpu, dtype),
        ("`nvlink_bandwidth` (nor does its host)", "nvlink_bandwidth", nvlink,
         f"its {cluster.net.gpus_per_host} GPUs per host exchange activations and gradients "
         "over NVLink, which Seer prices by that bandwidth (per GPU and direction: half of "
         "NVIDIA's bidirectional total, e.g. 450 GB/s for NVLink 4); a GPU without NVLink "
         "(PCIe only) is not modelled")) if not have]
    span = _gpu_span(design, job, gpu)
    out = [_err("E758", f"job `{job.template}` cannot be forecast: GPU `{gpu.name}` declares no "
                        f"{what}", span, f"declare `{field}` on `{gpu.name}` (its data sheet)",
                (note,)) for what, field, note in missing]
    if ranks > cluster.net.gpus_per_host and cluster.net.nic_bw <= 0:
        out.append(_err("E758", f"job `{job.template}` cannot be forecast: its {_n(ranks)} GPUs "
                                f"span hosts of {_n(cluster.net.gpus_per_host)}, which declare "
                                f"no network bandwidth", job.span_of("placement") or job.span,
                        "declare the hosts' `nics`, each with its `ports` and `port_speed` "
                        "(its data sheet), or place the job on one host",
                        ("Seer prices the traffic between hosts (pipeline transfers, "
                         "data-parallel reductions) on the NICs of each GPU's rail",)))
    return out


_TIMES = ("Seer times memory-bound operators by the memory bandwidth and GEMMs by the peak "
          "FLOP/s of the job's precision")


def _peak_missing(gpu, dtype: str):
    """(what, field, has it, note) of the peak FLOP/s a `dtype` job's GEMMs run at."""
    if dtype == "fp32":
        return ("fp32 peak FLOP/s (`flops_fp32`)", "flops_fp32", gpu.has_peak("fp32"),
                _TIMES + "; it prices no GEMM at another precision's peak")
    what = "16-bit peak FLOP/s (`flops_bf16` or `flops_fp16`)"
    if dtype not in SIXTEEN:
        what += f", which the GEMMs outside a {dtype} job's linear layers run at"
    return (what, "flops_bf16", gpu.has_peak("bf16"),
            _TIMES + "; bf16 and fp16 share one tensor-core rate, and it prices no GEMM at "
            "another precision's peak (fp8, fp32)")


def _gpu_span(design, job, gpu):
    """The GPU's declaration, else the job's."""
    inst = next((i for i in design.instances if i.kind == "gpu" and i.template == gpu.name), None)
    return inst.span if inst is not None and inst.span is not None else job.span


def _gpu_guesses(design, job, cluster: Cluster) -> List[Diagnostic]:
    """W752 for a GPU figure Seer has to guess: the SMs a GEMM's tiles spread over, and the
    generation whose fitted GEMM efficiency it takes (costs.eff_name: Ampere's `gemm_eff`)."""
    gpu, out = cluster.gpu, []
    if gpu.sms <= 0:
        out.append(_warn("W752", f"GPU `{gpu.name}` declares no `sms`: Seer takes {DEFAULT_SMS} "
                                 f"(an H100 SXM's), which sets how well small GEMMs fill the GPU",
                         _gpu_span(design, job, gpu),
                         "state its streaming multiprocessors from its data sheet: `sms = ...`"))
    if not gpu.arch:
        out.append(_warn("W752", f"GPU `{gpu.name}` declares no `architecture`: Seer takes "
                                 f"Ampere's fitted GEMM efficiency (`gemm_eff`), which sets the "
                                 f"rate of every GEMM", _gpu_span(design, job, gpu),
                         "state its generation: `architecture = hopper` (or `ampere`, "
                         "`blackwell`, `other`)"))
    return out


def _model(spec: JobSpec, where) -> List[Diagnostic]:
    """The model's own shape: whole heads, key/value groups, experts (E763)."""
    m, out = spec.model, []
    name = f"`{m.name}`"
    if not m.head_size and m.hidden % m.heads:
        out.append(_err("E763", f"{name}: hidden size {m.hidden} is not a multiple of its "
                                f"{_n(m.heads)} attention heads", where.model_field("heads"),
                        "each head has hidden / heads dimensions"))
    elif m.kv_heads > m.heads or m.heads % m.kv_heads:
        out.append(_err("E763", f"{name}: {_n(m.kv_heads)} key/value heads do not divide its "
                                f"{_n(m.heads)} attention heads", where.model_field("kv_heads"),
                        "grouped-query attention shares each key/value head among a whole "
                        "number of query heads"))
    if m.experts and m.top_k > m.experts:
        out.append(_err("E763", f"{name}: top_k = {m.top_k} routes to more experts than its "
                                f"{m.experts}", where.model_field("top_k")))
    if m.pattern and (len(m.pattern) != m.layers or set(m.pattern) - set("M*E-")):
        out.append(_err("E763", f"{name}: the pattern has {len(m.pattern)} layers, "
                                f"{m.layers} declared, and may only hold M, *, E and -",
                        where.model_field("pattern"),
                        "one character per layer: M Mamba-2, * attention, E MoE, - MLP"))
    elif m.pattern and "E" in m.pattern and not m.experts:
        out.append(_err("E763", f"{name}: the pattern has MoE layers (E) but no `experts`",
                        where.model_field("pattern")))
    if not m.pattern and m.mamba_layers + m.attention_layers > m.layers:
        out.append(_err("E763", f"{name}: {m.mamba_layers} Mamba-2 and {m.attention_layers} "
                                f"attention layers of {m.layers}",
                        where.model_field("mamba_layers")))
    if m.mamba_heads_stated and where.model.field("mamba_expand") is not None:
        out.append(_err("E763", f"{name}: both mamba_heads and mamba_expand set the Mamba-2 "
                                f"width", where.model_field("mamba_heads"),
                        "state one: `mamba_heads` (Megatron's mamba_num_heads: the width is "
                        "heads x mamba_head_dim) or `mamba_expand` (the width over hidden)"))
    elif m.hybrid and m.mamba_inner % m.mamba_head:
        out.append(_err("E763", f"{name}: the Mamba-2 width {m.mamba_inner:g} (mamba_expand x "
                                f"hidden) is not a whole number of {m.mamba_head}-wide heads",
                        where.model_field("mamba_head_dim")))
    if m.dense_layers > m.layers:
        out.append(_err("E763", f"{name}: {m.dense_layers} dense layers of {m.layers}",
                        where.model_field("dense_layers")))
    out.extend(validate_moe.expert_groups(spec, where))
    return out


# the tensor cores a quantised dtype's GEMMs need: (the GPU's rate field, the generations that
# have them). MXFP8 and NVFP4 are block-scaled formats (OCP Microscaling Formats (MX) v1.0, 2023;
# NVIDIA's NVFP4: fp4 values, one fp8 scale per 16) that Blackwell's fifth-generation tensor cores
# run natively (NVIDIA Blackwell architecture technical brief); Hopper has per-tensor fp8 only
# (Transformer Engine's MXFP8 and NVFP4 recipes require compute capability 10.0), Ampere no fp8.
NEEDS = {"fp8": ("fp8", ("hopper", "blackwell")), "mxfp8": ("fp8", ("blackwell",)),
         "nvfp4": ("fp4", ("blackwell",))}
KNOWN = ("ampere", "hopper", "blackwell")     # generations whose tensor cores are known here


def _precision(spec: JobSpec, cluster, name: str, where) -> List[Diagnostic]:
    """E765 for a quantised dtype the job's GPU cannot run: no rate for it declared, or a GPU of
    a declared generation without the tensor cores its format needs. (Seer never prices a GEMM
    at another precision's rate.)"""
    if spec.dtype not in NEEDS:
        return []
    field, generations = NEEDS[spec.dtype]
    gpu = cluster.gpu
    if not gpu.has_peak(spec.dtype):
        return [_err("E765", f"{name}: dtype = {spec.dtype} but `{gpu.name}` declares no "
                             f"{field} rate (`flops_{field}`)", where("dtype", ""),
                     f"{spec.dtype} GEMMs need {field} tensor cores ("
                     f"{', '.join(g.capitalize() for g in generations)}): `dtype = bf16`, or "
                     f"declare the GPU's `flops_{field}`")]
    if gpu.arch in KNOWN and gpu.arch not in generations:
        return [_err("E765", f"{name}: dtype = {spec.dtype} but `{gpu.name}` is a "
                             f"{gpu.arch.capitalize()} GPU: its tensor cores do not run "
                             f"{spec.dtype} GEMMs (only "
                             f"{', '.join(g.capitalize() for g in generations)} do)",
                     where("dtype", ""),
                     "on Hopper, `dtype = fp8` (per-tensor scales, or `fp8_recipe = blockwise` "
                     "for DeepSeek-style block scales); on Ampere, `dtype = bf16`")]
    return []


def _offload(spec: JobSpec, cluster, name: str, where) -> List[Diagnostic]:
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


def _model_defaults(spec: JobSpec, where) -> List[Diagnostic]:
    """W752 for a model field Seer has to guess (docs/seer.md, "Defaults"): the vocabulary, the
    sequence length when the batch does not state it either, a SwiGLU model's FFN width, a
    hybrid model's Mamba-2 dimensions."""
    m, model, out = spec.model, where.model, []
    span = model.span or where.job.span_of("model")
    name = f"model `{m.name}`"
    if model.field("vocab") is None:
        out.append(_warn("W752", f"{name} declares no `vocab`: Seer takes {DEFAULT_VOCAB:,} "
                                 f"tokens (Llama 2's), which sizes the embedding, the logits and "
                                 f"their memory", span,
                         "state the model's vocabulary, e.g. `vocab = 128256` (Llama 3)"))
    if model.field("seq") is None and not where.fields.get("seq"):
        out.append(_warn("W752", f"neither {name} nor job `{spec.name}`'s batch declares `seq`: "
                                 f"Seer takes {DEFAULT_SEQ:,} tokens (GPT-3's context)", span,
                         "state the training sequence length: `batch { seq = 8192 }`"))
    if model.field("ffn") is None and m.activation == "swiglu":
        out.append(_warn("W752", f"{name} declares no `ffn`: Seer takes 8h/3 = {m.ffn:,} (a "
                                 f"SwiGLU MLP with the parameters of a 4h one, Shazeer 2020); "
                                 f"Llama models round it up (Llama 3 8B: 14,336 = 3.5 h)", span,
                         "state the FFN width: `ffn = ...`"))
    unstated = [f"{k} = {v}" for k, v in MAMBA_DEFAULTS if model.field(k) is None]
    if m.mamba_layers and unstated:
        out.append(_warn("W752", f"{name} has Mamba-2 layers but does not state "
                                 f"{', '.join(k.split(' = ')[0] for k in unstated)}: Seer takes "
                                 f"{', '.join(unstated)} (Mamba-2's reference configuration, Dao "
                                 f"and Gu 2024; 8 groups as Nemotron-H), which size the scan's "
                                 f"work and memory", span,
                         "state the Mamba-2 layers' dimensions from the model's configuration"))
    return out


# a hybrid model's Mamba-2 dimensions when it does not state them (seer/job.py `model_spec`)
MAMBA_DEFAULTS = (("mamba_state", 128), ("mamba_head_dim", 64), ("mamba_groups", 8),
                  ("mamba_expand", 2), ("mamba_chunk", 256))


def _budget_model(spec: JobSpec, where) -> List[Diagnostic]:
    """E762 for a model or batch beyond Seer's work budget (budget.py)."""
    m, out = spec.model, []
    if m.layers > budget.MAX_LAYERS:
        out.append(_err("E762", f"`{m.name}` has {_n(m.layers)} layers: Seer lowers at most "
                                f"{budget.MAX_LAYERS:,} (its work budget, docs/seer.md)",
                        where.model_field("layers")))
    for name in ("hidden", "ffn", "vocab", "heads", "kv_heads", "experts", "moe_ffn"):
        value = getattr(m, name)
        stated = where.model.field(name) is not None       # not a default derived from another
        if value > budget.MAX_WIDTH and stated:
            out.append(_err("E762", f"`{m.name}`: {name} = {_n(value)} is beyond Seer's budget "
                                    f"of {budget.MAX_WIDTH:,} (docs/seer.md)",
                            where.model_field(name)))
    tokens = spec.seq * (spec.micro or 1)
    if spec.seq > budget.MAX_TOKENS or tokens > budget.MAX_TOKENS:
        out.append(_err("E762", f"job `{spec.name}`: {_n(tokens)} tokens per micro-batch is "
                                f"beyond Seer's budget of {budget.MAX_TOKENS:,} (docs/seer.md)",
                        where("seq", "batch") if where.fields.get("seq") else
                        where.model_field("seq")))
    return out


def _budget_blocks(spec: JobSpec, where) -> List[Diagnostic]:
    """The pipeline blocks one simulation runs (E762): with a declared micro-batch, that
    simulation's; else the rule must have a candidate within the budget."""
    par = spec.parallel
    v = par.v or 1
    if not spec.micro:
        # imported here, for start-up: a job that declares its micro-batch never asks the rule
        # (nor its schedule, which the rule imports)
        from astral_dsl.seer.rule import candidates

        if candidates(spec):
            return []
    micro = spec.micro or budget.largest_micro(spec)
    m = spec.global_batch // max(1, micro * par.dp)
    blocks = budget.blocks(par.pp, v, m)
    if blocks <= budget.MAX_BLOCKS:
        return []
    field = "micro" if spec.micro else "global_batch"
    return [_err("E762", f"job `{spec.name}`: {_n(blocks)} pipeline blocks to simulate (2 x pp "
                         f"x virtual stages x micro-batches = 2 x {par.pp} x {v} x {_n(m)}), "
                         f"over Seer's work budget of {budget.MAX_BLOCKS:,} (docs/seer.md)",
                 where(field, "batch"), "a larger micro-batch or a smaller global batch")]


def _interleaving(spec: JobSpec, where) -> List[Diagnostic]:
    """E760: declared virtual stages with no micro-batch the interleaved schedule's order can
    run (schedule.runnable): the declared one, or none of those the rule may choose. The rule
    never picks such a configuration (rule.candidates), so `check` refuses what `forecast`
    could not run."""
    par = spec.parallel
    if par.schedule != "interleaved" or not par.v or par.v < 2 or par.pp < 2:
        return []
    # imported here, for start-up: only declared virtual stages ask the rule
    from astral_dsl.seer.rule import candidates

    runnable = candidates(spec)
    if runnable:
        return _megatron_groups(spec, runnable, where)
    micros = [spec.micro] if spec.micro else budget.micro_candidates(
        max(1, spec.global_batch // par.dp))
    counts = sorted({spec.global_batch // (b * par.dp) for b in micros})
    which = (f"micro-batch {spec.micro}" if spec.micro else
             "any micro-batch the rule may choose (" + ", ".join(map(str, sorted(micros))) + ")")
    return [_err("E760", f"job `{spec.name}`: with {which} an iteration has "
                         f"{' or '.join(map(_n, counts))} micro-batches, which the interleaved "
                         f"schedule of pp = {par.pp} stages and {par.v} virtual stages cannot "
                         f"order (its sends would wait on each other)", where("virtual_stages"),
                 f"Megatron-LM's interleaved schedule wants the micro-batches per iteration to "
                 f"be a multiple of pp = {par.pp}: a global batch of "
                 f"{_n(par.pp * par.dp * (spec.micro or 1))} x k, or leave `virtual_stages` "
                 "to the rule")]


def _megatron_groups(spec: JobSpec, runnable, where) -> List[Diagnostic]:
    """W757: declared virtual stages whose micro-batches per run of the schedule are not a
    multiple of pp, with every micro-batch the job may take. Megatron-Core runs an interleaved
    schedule's micro-batches in groups of `microbatch_group_size_per_vp_stage` (pp by default,
    never less) and refuses fewer than one group, or a last group of fewer than pp
    (megatron/core/pipeline_parallel/schedules.py, 0.16.1): the rule and `astral search`
    never interleave such a job; Seer forecasts the declared one's order all the same."""
    pp = spec.parallel.pp
    counts = sorted({c.run_microbatches for c in runnable})
    if any(m % pp == 0 for m in counts):
        return []
    return [_warn("W757", f"job `{spec.name}`: {' or '.join(map(_n, counts))} micro-batches per "
                          f"pipeline, not a multiple of pp = {pp}: Megatron-LM's interleaved "
                          f"schedule refuses them (micro-batches in groups of pp, "
                          f"megatron/core/pipeline_parallel/schedules.py); Seer forecasts the "
                          f"order anyway, which its rule and `astral search` never choose",
                  where("virtual_stages"),
                  f"a global batch of {_n(pp * spec.parallel.dp * (spec.micro or 1))} x k "
                  f"(micro-batches a multiple of pp), or leave `virtual_stages` out (1F1B)")]


def _layout(spec: JobSpec, where) -> List[Diagnostic]:
    m, par, out = spec.model, spec.parallel, []
    name = f"job `{spec.name}`"
    if m.heads % par.tp:
        out.append(_err("E750", f"{name}: tp = {par.tp} does not divide the {m.heads} attention "
                                f"heads of `{m.name}`", where("tp"),
                        "choose a tensor-parallel degree that divides the heads"))
    elif m.kv_heads % par.tp and par.tp % m.kv_heads:
        out.append(_err("E750", f"{name}: tp = {par.tp} and the {m.kv_heads} key/value heads of "
                                f"`{m.name}` do not divide one another", where("tp")))
    if par.layout:
        v = par.v or 1
        if len(par.layout) != par.pp * v or sum(par.layout) != m.layers:
            out.append(_err("E752", f"{name}: the declared layout {_show(par.layout)} has "
                                    f"{len(par.layout)} virtual stages and {sum(par.layout)} "
                                    f"layers; pp x virtual_stages = {par.pp} x {v} and "
                                    f"`{m.name}` has {m.layers} layers", where("layout"),
                            f"list {par.pp * v} layer counts, in model order, adding up to "
                            f"{m.layers}"))
    elif par.stages:
        if len(par.stages) != par.pp or sum(par.stages) != m.layers or min(par.stages) < 1:
            out.append(_err("E752", f"{name}: the declared split {_show(par.stages)} has "
                                    f"{len(par.stages)} stages and {sum(par.stages)} layers; "
                                    f"pp = {par.pp} and `{m.name}` has {m.layers} layers",
                            where("stages"),
                            f"list {par.pp} positive layer counts adding up to {m.layers}"))
    elif par.pp > m.layers:
        out.append(_err("E751", f"{name}: pp = {par.pp} stages for the {m.layers} layers of "
                                f"`{m.name}`", where("pp"), "at most one stage per layer"))
    if not out and par.v and par.v > 1 and par.stages and not par.layout and \
            chunk_split(stage_layers(spec), par.v) is None:
        per_stage = stage_layers(spec)
        options = [v for v in virtual_stage_options(per_stage) if v > 1]
        out.append(_err("E751", f"{name}: the layers per stage {_show(per_stage)} do not split "
                                f"into {_n(par.v)} virtual stages of equal size",
                        where("virtual_stages"),
                        "Megatron-LM splits each stage's layers evenly over its model chunks "
                        "(counting the embedding and the loss as a layer with "
                        "--account-for-embedding/loss-in-pipeline-split): "
                        + (f"virtual_stages = {' or '.join(map(str, options))}, or leave it to "
                           f"the rule" if options else "these stages cannot be interleaved")))
    if m.experts:
        if m.experts % par.ep:
            out.append(_err("E753", f"{name}: ep = {par.ep} does not divide the {m.experts} "
                                    f"experts of `{m.name}`", where("ep")))
        elif (par.tp * par.dp * par.cp) % par.ep:
            out.append(_err("E753", f"{name}: ep = {par.ep} does not divide tp x dp x cp = "
                                    f"{par.tp * par.dp * par.cp}: expert groups are carved out "
                                    f"of the tensor- and data-parallel ranks (expert tensor "
                                    f"parallelism 1)", where("ep")))
    elif par.ep > 1:
        out.append(_err("E753", f"{name}: ep = {par.ep} but `{m.name}` has no experts",
                        where("ep")))
    if spec.gpus is not None and spec.gpus != par.gpus:
        out.append(_err("E754", f"{name}: declares {spec.gpus} GPUs but tp x pp x dp x cp = "
                                f"{par.tp} x {par.pp} x {par.dp} x {par.cp} = {par.gpus}",
                        where("gpus", ""), "make `gpus` the product of the parallel degrees"))
    micro = spec.micro or 1
    if spec.global_batch % (micro * par.dp):
        out.append(_err("E756", f"{name}: global batch {spec.global_batch} is not divisible by "
                                f"micro-batch x dp = {micro} x {par.dp}",
                        where("global_batch", "batch"), f"use a multiple of {micro * par.dp}"))
    runs, m = spec.pipeline_runs, spec.global_batch // (micro * par.dp)
    if runs > 1 and not spec.global_batch % (micro * par.dp) and m % runs:
        what = f"{m} micro-batches a pipeline" if spec.micro else \
            f"{m} sequences a data-parallel rank"
        out.append(_err("E756", f"{name}: {what} do not split into pipeline_runs = {runs} "
                                f"equal runs of the schedule",
                        where("pipeline_runs", "batch"),
                        f"make the global batch a multiple of {runs * micro * par.dp} (or "
                        f"pipeline_runs a divisor of {m})"))
    if spec.seq % par.cp:
        out.append(_err("E756", f"{name}: sequence {spec.seq} is not divisible by cp = {par.cp}",
                        where("cp")))
    out.extend(_order(spec, where))
    return out


def _show(stages) -> str:
    if len(stages) <= 8:
        return "[" + ", ".join(map(str, stages)) + "]"
    return f"[{stages[0]}, {stages[1]}, {stages[2]}, ..., {stages[-2]}, {stages[-1]}]"


def _order(spec: JobSpec, where) -> List[Diagnostic]:
    """E759: `order` names parallel dimensions, each once, and every dimension of size > 1
    (Megatron-Core's RankGenerator; a dimension of size 1 may be left out)."""
    par = spec.parallel
    order = par.order
    text = "-".join(order)
    sizes = {"tp": par.tp, "cp": par.cp, "ep": par.ep, "dp": par.dp, "pp": par.pp}
    unknown = [d for d in order if d not in DIMENSIONS]
    twice = sorted({d for d in order if order.count(d) > 1})
    missing = [d for d in DIMENSIONS if d not in order and sizes[d] > 1]
    problem = None
    if not order:
        problem = "names no dimension"
    elif unknown:
        problem = "does not know " + ", ".join(f"`{d}`" for d in unknown)
    elif twice:
        problem = "names " + ", ".join(f"`{d}`" for d in twice) + " more than once"
    elif missing:
        problem = "leaves out " + ", ".join(f"`{d}` ({d} = {sizes[d]})" for d in missing)
    if problem is None:
        return []
    return [_err("E759", f"job `{spec.name}`: the rank order \"{text}\" {problem}",
                 where("order"), 'name the parallel dimensions tp, cp, ep, dp and pp once each, '
                                 'fastest first, e.g. "tp-cp-ep-dp-pp" (Megatron-Core\'s '
                                 'default) or "tp-cp-ep-pp-dp"')]


def _runtime(spec: JobSpec, where) -> List[Diagnostic]:
    """The schedule, sharding, overlap, recomputation and token-dropping fields agree with one
    another (E760, E761, E764, E770, E771) and have an effect (W751)."""
    par, out = spec.parallel, []
    name = f"job `{spec.name}`"
    if par.v and par.v > 1 and par.schedule != "interleaved":
        out.append(_err("E760", f"{name}: {par.v} virtual stages with schedule = {par.schedule}",
                        where("virtual_stages"),
                        "virtual stages are the interleaved 1F1B schedule: `schedule = "
                        "interleaved`, or leave `virtual_stages` out"))
    if par.schedule == "interleaved" and par.pp == 1:
        out.append(_err("E760", f"{name}: an interleaved schedule needs pipeline stages (pp = 1)",
                        where("schedule"), "raise pp, or use `schedule = 1f1b`"))
    stated = where.fields
    if stated.get("fsdp") is True and stated.get("zero") not in (None, 3):
        out.append(_err("E761", f"{name}: fsdp = true shards weights, gradients and optimizer "
                                f"states (ZeRO-3) but zero = {int(stated['zero'])}",
                        where("fsdp"), "keep one of them: `fsdp = true` or `zero = 3`"))
    if stated.get("fsdp") is False and stated.get("zero") == 3:
        out.append(_err("E761", f"{name}: fsdp = false but zero = 3 shards the weights too, which "
                                f"is FSDP", where("fsdp"),
                        "keep one of them: `zero = 3` (or `fsdp = true`), or `fsdp = false` with "
                        "`zero = 1` or `2`"))
    if "reshard_after_forward" in stated and par.zero < 3:
        out.append(_err("E761", f"{name}: reshard_after_forward applies to sharded weights "
                                f"(ZeRO-3 / FSDP), not to zero = {par.zero}",
                        where("reshard_after_forward"), "add `fsdp = true`, or leave it out"))
    if par.cp > 1 and spec.attention == "unfused":
        out.append(_err("E764", f"{name}: context parallelism (cp = {par.cp}) needs fused "
                                f"attention", where("attention", ""),
                        "Megatron-Core's context parallelism runs in Transformer Engine's fused "
                        "attention: `attention = flash`"))
    if spec.recompute_layers is not None and spec.recompute != "full":
        out.append(_err("E770", f"{name}: recompute_layers = {spec.recompute_layers} with "
                                f"recompute = {spec.recompute}: it counts the layers of each "
                                f"chunk recomputed whole", where("recompute_layers", ""),
                        "`recompute = full` with it (Megatron-LM's block method), or leave "
                        "`recompute_layers` out"))
    if spec.recompute_modules is not None and spec.recompute != "modules":
        out.append(_err("E770", f"{name}: recompute_modules with recompute = {spec.recompute}: "
                                f"it names what operator-level recomputation re-runs",
                        where("recompute_modules", ""),
                        "`recompute = modules` with it, or leave `recompute_modules` out"))
    elif "mla_up_proj" in (spec.recompute_modules or ()) and not spec.model.mla:
        out.append(_err("E770", f"{name}: recompute_modules names mla_up_proj, but model "
                                f"`{spec.model.name}` has no multi-head latent attention "
                                f"(no `kv_lora`)", where("recompute_modules", ""),
                        "leave `mla_up_proj` out"))
    elif "mlp" in (spec.recompute_modules or ()) and not any(
            spec.model.dense_mlp(L) for L in range(min(spec.model.layers, budget.MAX_LAYERS))):
        out.append(_err("E770", f"{name}: recompute_modules names mlp, but model "
                                f"`{spec.model.name}` has no dense MLP layer (Megatron-Core's "
                                f"`mlp` module recomputes those; the experts' activation is "
                                f"`moe_act`)", where("recompute_modules", ""),
                        "leave `mlp` out, or name `moe_act`"))
    if spec.recompute_layers is not None and spec.recompute == "full" and \
            spec.framework == "automodel":
        out.append(_err("E770", f"{name}: recompute_layers = {spec.recompute_layers} with "
                                f"framework = automodel: NeMo AutoModel checkpoints every layer "
                                f"or none", where("recompute_layers", ""),
                        "leave `recompute_layers` out (`recompute = full`: every layer)"))
    out.extend(validate_moe.token_drop(spec, where))
    if spec.overlap_param_gather and par.zero not in (1, 2):
        out.append(_warn("W751", f"{name}: overlap_param_gather has no effect without a sharded "
                                 f"optimizer (zero = 1 or 2)", where("overlap_param_gather", ""),
                         "Megatron-LM overlaps the distributed optimizer's parameter all-gather"))
    if spec.overlap_grad_reduce and par.dp * par.cp == 1:
        out.append(_warn("W751", f"{name}: overlap_grad_reduce has no effect with one "
                                 f"data-parallel rank", where("overlap_grad_reduce", "")))
    if spec.fp8_params and not spec.quantised_params:
        out.append(_warn("W751", f"{name}: fp8_params has no effect "
                                 + ("with a 16-bit dtype" if not spec.fp8 else
                                    f"with framework = {spec.framework}"),
                         where("fp8_params", ""),
                         "fp8 parameters are Megatron-Core's (--fp8-param-gather) with a "
                         "quantised dtype: fp8, mxfp8 or nvfp4"))
    if spec.pipeline_runs > 1 and par.pp == 1:
        out.append(_warn("W751", f"{name}: pipeline_runs has no effect without pipeline stages "
                                 f"(pp = 1): its runs are the micro-batches one after another "
                                 f"either way", where("pipeline_runs", "batch")))
    if par.zero >= 3 and par.pp > 1 and par.dp * par.cp > 1 and \
            spec.framework in PYTORCH_FRAMEWORKS:
        out.append(_warn("W756", f"{name}: FSDP under a PyTorch pipeline is forecast with its "
                                 f"weights gathered and its gradients reduce-scattered every "
                                 f"micro-batch; PyTorch's pipelining does both once per run of "
                                 f"the schedule (torch.distributed.pipelining, "
                                 f"backward_maybe_with_nosync): the data-parallel traffic is an "
                                 f"upper bound", where("fsdp") if "fsdp" in where.fields
                         else where("zero"),
                         "most of it overlaps the computation: the forecast's exposed DP "
                         "share says how much it weighs"))
    return out


def memory_check(job, spec: JobSpec, cluster: Cluster) -> List[Diagnostic]:
    """E757 when the estimate exceeds the GPU's memory by more than its uncertainty, W750 when
    by less (memory.py states the uncertainty). A job that leaves its micro-batch (or virtual
    stages) to the rule is checked at the smallest (micro-batch 1, no interleaving);
    forecast_diagnostics checks the configuration the rule chose."""
    from astral_dsl.seer.memory import estimate
    from astral_dsl.seer.params import stage_params

    if not cluster.gpu.memory:          # the GPU declares no memory: nothing to check against
        return []
    probe = spec if spec.micro else spec.with_(micro=1)
    if probe.recompute == "auto":
        probe = probe.with_(recompute="full")
    if probe.offload_layers is None:       # the rule's: checked at none, as recompute at full
        probe = probe.with_(offload_layers=0)
    if probe.parallel.schedule == "interleaved" and not probe.parallel.v:
        probe = probe.with_(parallel=attrs.evolve(probe.parallel, v=1))
    chunks = chunk_layers(probe)
    return memory_diagnostics(job, probe,
                              estimate(probe, lambda i: stage_params(probe, chunks, i)),
                              cluster.gpu)


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
             f"+/- {est.uncertainty_pct:.0f} % of {cap / GB:.0f} GB (`{gpu.name}`)",
             ", ".join(f"{k} {v / GB:.1f} GB" for k, v in est.parts())]
    if chosen:
        notes.append("no configuration the rule tried fits: it took the one that needs the "
                     "least memory (" + ", ".join(f"{k} = {v}" for k, v in chosen) + ")")
    span = job.span_of("recompute") if job.field("recompute") is not None else job.span
    if est.total - est.uncertainty <= cap:
        return [_warn("W750", f"job `{job.template}` may not fit in GPU memory: "
                              f"{est.total / GB:.0f} GB estimated, {cap / GB:.0f} GB on the GPU, "
                              f"estimate +/- {est.uncertainty_pct:.0f} %", span,
                      "leave headroom: " + _memory_hint(spec, gpu.host_bw), notes)]
    return [_err("E757", f"job `{job.template}` does not fit in GPU memory: about "
                         f"{est.total / GB:.1f} GB per GPU, the GPU has {cap / GB:.0f} GB",
                 span, _memory_hint(spec, gpu.host_bw), notes)]


def forecast_diagnostics(job, diags, fc, cluster) -> List[Diagnostic]:
    """What a forecast reports beside its figures: the job's warnings (validate_job), with the
    memory check made again on the configuration forecast (the rule's choice, which may need
    more than the smallest configuration validate_job checks): W750, or E757 when even the
    rule's least-memory choice clearly exceeds the GPU."""
    kept = [d for d in diags if not d.is_error and d.code != "W750"]
    return kept + memory_diagnostics(job, fc.job, fc.memory, cluster.gpu, fc.chosen)


def unmatched_table_warning(job, path: str) -> Diagnostic:
    """W751: a measured operator table none of whose rows names an operator of the forecast
    (every operator was priced by the roofline, as without it)."""
    return _warn("W751", f"job `{job.template}`: no row of the operator table {path} names an "
                         f"operator of its forecast (operator, shape and dtype as the trace "
                         f"shows them): every operator was priced by the roofline", job.span,
                 "name operators as `astral forecast --trace` writes them (`qkv`, `fc1`, or "
                 "`gemm` for any GEMM) with the shape `MxNxK` of the trace's args.shape")


def _memory_hint(spec: JobSpec, host_bw: float) -> str:
    """What would shrink the estimate, leaving out what the job already does."""
    par, out = spec.parallel, []
    if spec.recompute != "full":
        out.append("recompute activations (`recompute = full`)")
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
