"""The job checks of its runtime fields (validate.py runs them): schedule, sharding, overlap,
recomputation and token dropping agree with one another (E760, E761, E764, E770, E771) and
have an effect (W751, W756)."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer import budget, validate_moe
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.spec import PYTORCH_FRAMEWORKS, JobSpec


def runtime(spec: JobSpec, where) -> List[Diagnostic]:
    """The schedule, sharding, overlap, recomputation and token-dropping fields agree with one
    another (E760, E761, E764, E770, E771) and have an effect (W751)."""
    par, out = spec.parallel, []
    name = f"job `{spec.name}`"
    if par.v and par.v > 1 and par.schedule != "interleaved":
        if par.layout and "virtual_stages" not in where.fields:     # the layout's (seer/job.py)
            out.append(_err("E760", f"{name}: the layout's {len(par.layout)} chunks on pp = "
                                    f"{par.pp} are {par.v} virtual stages a GPU, with schedule = "
                                    f"{par.schedule}", where("layout"),
                            f"virtual stages are the interleaved 1F1B schedule: `schedule = "
                            f"interleaved`, or list {par.pp} layer counts, one a stage"))
        else:
            out.append(_err("E760", f"{name}: {par.v} virtual stages with schedule = "
                                    f"{par.schedule}", where("virtual_stages"),
                            "virtual stages are the interleaved 1F1B schedule: `schedule = "
                            "interleaved`, or leave `virtual_stages` out"))
    if par.schedule == "interleaved" and par.pp == 1:
        out.append(_err("E760", f"{name}: an interleaved schedule needs pipeline stages (pp = 1)",
                        where("schedule"), "raise pp, or use `schedule = 1f1b`"))
    stated = where.fields
    if par.schedule == "interleaved" and par.pp > 1 and stated.get("virtual_stages") == 1:
        # one chunk per stage: the interleaved order is 1F1B's, and so is the forecast
        # (memory.in_flight, schedule.py: v = 1); stated, not the rule's choice (noted there)
        out.append(_warn("W751", f"{name}: schedule = interleaved has no effect with "
                                 f"virtual_stages = 1: one chunk per stage has nothing to "
                                 f"interleave, and the job is forecast as 1F1B",
                         where("virtual_stages"),
                         "state `virtual_stages = 2` or more to interleave, leave "
                         "`virtual_stages` out for the rule's choice, or use `schedule = 1f1b`"))
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
                                 f"data-parallel rank", where("overlap_grad_reduce", ""),
                         "there is no gradient reduction to overlap: leave it out, or give "
                         "the job data-parallel ranks"))
    if spec.fp8_params and not spec.quantised_params:
        out.append(_warn("W751", f"{name}: fp8_params has no effect "
                                 + ("with a 16-bit dtype" if not spec.fp8 else
                                    f"with framework = {spec.framework}"),
                         where("fp8_params", ""),
                         "fp8 parameters are Megatron-Core's (--fp8-param-gather) with a "
                         "quantised dtype: fp8, mxfp8 or nvfp4"))
    if spec.pp_overlap and par.schedule != "interleaved":     # (schedule.py: v > 1 only)
        out.append(_warn("W751", f"{name}: pp_overlap has no effect without an interleaved "
                                 f"pipeline: Megatron-Core overlaps an interleaved schedule's "
                                 f"sends with the next block (overlap_p2p_comm), the "
                                 f"{par.schedule} schedule's sends stay synchronous",
                         where("pp_overlap", ""),
                         "interleave (`virtual_stages = 2` or more), or leave `pp_overlap` out"))
    out.extend(_without_effect(spec, where))
    if spec.pipeline_runs > 1 and par.pp == 1:
        out.append(_warn("W751", f"{name}: pipeline_runs has no effect without pipeline stages "
                                 f"(pp = 1): its runs are the micro-batches one after another "
                                 f"either way", where("pipeline_runs", "batch"),
                         "leave `pipeline_runs` out"))
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


def _without_effect(spec: JobSpec, where) -> List[Diagnostic]:
    """W751 for a stated field the job gives nothing to act on: a recipe of fp8 scales on
    another dtype, sequence parallelism or a TP overlap without tensor parallelism, an expert
    all-to-all overlap without expert parallelism (lower.py, lower_comm.py read them so),
    torch.compile outside torchtitan (costs.set_framework: only its step runs eager), the
    router's fusion outside Megatron-Core (lower_moe.py counts its kernels there only), the
    block scales' swizzle outside Transformer Engine's MXFP8 and NVFP4."""
    par, stated, name, out = spec.parallel, where.fields, f"job `{spec.name}`", []
    if "fp8_recipe" in stated and spec.dtype != "fp8":
        out.append(_warn("W751", f"{name}: fp8_recipe has no effect with dtype = {spec.dtype}: "
                                 f"it says how fp8 tensors are scaled",
                         where("fp8_recipe", ""),
                         "`dtype = fp8` with it, or leave `fp8_recipe` out (MXFP8 and NVFP4 "
                         "carry their own block scales)"))
    for field, what in (("sp", "sequence parallelism shards the TP group's activations"),
                        ("tp_overlap", "it overlaps the TP group's collectives")):
        if par.tp == 1 and field in stated and stated[field] not in (False, "backward"):
            out.append(_warn("W751", f"{name}: {field} has no effect with tp = 1: {what}",
                             where(field, "parallel" if field == "sp" else ""),
                             f"leave `{field}` out, or give the job tensor parallelism"))
    if stated.get("ep_overlap") is True and (par.ep == 1 or not spec.model.experts):
        out.append(_warn("W751", f"{name}: ep_overlap has no effect without expert parallelism "
                                 f"(ep = {par.ep}{'' if spec.model.experts else ', no experts'}"
                                 f"): there is no expert all-to-all to overlap",
                         where("ep_overlap", ""),
                         "leave `ep_overlap` out, or spread the experts (`ep` > 1)"))
    elif stated.get("ep_overlap") is True and par.pp > 1 and par.v is not None and par.v <= 1:
        # (v None: an interleaved schedule whose virtual stages the rule chooses, 2 or more)
        # Megatron-Core 0.16.1 transformer_config.py __post_init__: "If enabling EP A2A
        # overlap, virtual_pipeline_model_parallel_size must be specified when
        # pipeline_model_parallel_size > 1" (its combined 1F1B pairs passes only in the
        # interleaved schedule: spec.ep_overlap_share)
        out.append(_warn("W751", f"{name}: ep_overlap has no effect with pp = {par.pp} and no "
                                 f"virtual stages: Megatron-Core overlaps the expert "
                                 f"all-to-all only in the interleaved schedule (it refuses the "
                                 f"setting otherwise); forecast without it",
                         where("ep_overlap", ""),
                         "give the pipeline virtual stages (`virtual_stages` > 1), or leave "
                         "`ep_overlap` out"))
    if stated.get("router_fusion") is True and spec.framework != "megatron":
        out.append(_warn("W751", f"{name}: router_fusion has no effect with framework = "
                                 f"{spec.framework}: it is Megatron-Core's switch to "
                                 f"Transformer Engine's fused router kernels",
                         where("router_fusion", ""),
                         "leave `router_fusion` out: Seer counts the router's kernels under "
                         "Megatron-Core only (router_kernels.py)"))
    for field, what in (("permute_fusion", "token permutation (moe_permute_fusion)"),
                        ("rope_fusion", "RoPE (apply_rope_fusion)")):
        if stated.get(field) is False and spec.framework != "megatron":
            out.append(_warn("W751", f"{name}: {field} has no effect with framework = "
                                     f"{spec.framework}: it is Megatron-Core's switch to its "
                                     f"unfused {what}",
                             where(field, ""),
                             f"leave `{field}` out: Seer prices the framework's own kernels"))
    if stated.get("scale_swizzle") is True and not (
            spec.dtype in ("mxfp8", "nvfp4") and spec.framework == "megatron"):
        out.append(_warn("W751", f"{name}: scale_swizzle has no effect with dtype = "
                                 f"{spec.dtype} and framework = {spec.framework}: it is "
                                 f"Transformer Engine's swizzle of MXFP8 and NVFP4 block scales",
                         where("scale_swizzle", ""),
                         "`dtype = mxfp8` or `nvfp4` under `framework = megatron` with it, or "
                         "leave `scale_swizzle` out"))
    if stated.get("cross_entropy") is not None and spec.framework != "megatron":
        out.append(_warn("W751", f"{name}: cross_entropy has no effect with framework = "
                                 f"{spec.framework}: it is Megatron-Core's choice of "
                                 f"cross-entropy kernels (cross_entropy_fusion_impl)",
                         where("cross_entropy", ""),
                         "leave `cross_entropy` out: Seer prices the cross-entropy of other "
                         "frameworks by its generic count (lower_dense.CROSS_ENTROPY)"))
    if stated.get("attention_precision") == "fp8" and not spec.fp8_attention:
        out.append(_warn("W751", f"{name}: attention_precision = fp8 has no effect with dtype = "
                                 f"{spec.dtype}, framework = {spec.framework} and attention = "
                                 f"{spec.attention}: Seer prices fp8 attention as Transformer "
                                 f"Engine's MXFP8 attention, which runs under an MXFP8 recipe's "
                                 f"fused attention in Megatron-Core",
                         where("attention_precision", ""),
                         "`dtype = mxfp8` with fused attention under `framework = megatron`, "
                         "or leave `attention_precision` out (attention in bf16)"))
    if stated.get("head_precision") == "fp8" and not spec.fp8_head:
        out.append(_warn("W751", f"{name}: head_precision = fp8 has no effect with dtype = "
                                 f"{spec.dtype} and framework = {spec.framework}: Seer prices "
                                 f"an fp8 output layer as Megatron-Core's fp8_output_proj, "
                                 f"which runs under an MXFP8 recipe alone",
                         where("head_precision", ""),
                         "`dtype = mxfp8` under `framework = megatron`, or leave "
                         "`head_precision` out (the output layer in bf16)"))
    if stated.get("torch_compile") is True and spec.framework != "torchtitan":
        out.append(_warn("W751", f"{name}: torch_compile has no effect with framework = "
                                 f"{spec.framework}: its element-wise kernels are forecast "
                                 f"fused without it", where("torch_compile", ""),
                         ("Megatron-LM's step runs Transformer Engine's fused kernels, not "
                          "torch.compile" if spec.framework == "megatron" else
                          "Seer forecasts NeMo AutoModel's element-wise kernels fused "
                          "(Transformer Engine's) with or without it")
                         + ": leave `torch_compile` out"))
    return out
