"""What a published run ran on, read from its row: the system, the precision recipe and the
software stack (framework, overlaps, CUDA graphs, MoE dispatcher) as job fields.

The published tables give the layout and the batch but not the runtime settings: NVIDIA's say
"the recipes default to overlapped TP/DP/PP communication and the distributed optimizer" and
publish neither recompute, CUDA graphs, communication-overlap flags nor the MoE dispatcher;
torchtitan's and AutoModel's name some of theirs in the table's caption (carried in `notes`).
Every setting below is one documented rule on the row's text, with the reason beside it
(docs/runs.md, "What a row is taken to have run"); `Stack.assumed` lists the ones the row did
not state, and `astral runs` prints them with the row."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.runs.attention_recipe import recipe_attention_precision
from astral_dsl.runs.ep_overlap import recipe_ep_overlap
from astral_dsl.runs.head_recipe import recipe_head_precision
from astral_dsl.runs.loss_recipe import recipe_cross_entropy
from astral_dsl.runs.precision import precision_of
from astral_dsl.runs.precision import squeezed as _n
from astral_dsl.runs.recompute_recipe import gpu_key, recipe_recompute, recipes_of
from astral_dsl.runs.moe_recipe import (before_flex_on_blackwell, recipe_alltoall,
                                        recipe_hybridep, recipe_token_drop, recipe_fusions,
                                        sequential_experts, yarn_rope_fused)
from astral_dsl.runs.releases import (FA2_BEFORE, FLEX_FROM, FP8_PARAMS_FROM, FSDP_NO_FP8_PARAMS,
                                      HYBRIDEP_FROM, MOE_GRAPHS_FROM, MXFP8_GATHER_AFTER_STEP,
                                      MXFP8_SWIZZLE_BEFORE,
                                      release_of)
from astral_dsl.runs.router_recipe import recipe_router_fusion
from astral_dsl.runs.system_spec import System


@records.frozen
class Stack:
    fields: Tuple[Tuple[str, object], ...]            # job fields
    parallel: Tuple[Tuple[str, object], ...]          # parallel-record fields
    assumed: Tuple[str, ...]                          # what the row did not state
    framework: str


# The models whose Megatron-Bridge recipe asks for HybridEP on every GPU, not only on GB200
# (row labels, as _n): recipes/deepseek/deepseek_v3.py (0.3.1 to 0.5.0) and recipes/deepseek/
# h100/deepseek_v3.py (0.6.2) set `moe_flex_dispatcher_backend = "hybridep"` and call
# apply_flex_dispatcher_backend (training/flex_dispatcher_backend.py), which keeps HybridEP on
# compute capability 8, 9 and 10 (Ampere, Hopper, B200, B300); the DeepSeek-V3 performance
# recipes of 0.6.2 build on them. Seer prices HybridEP and DeepEP alike (lower_comm.py: the
# fused dispatchers' `a2a_eff_fused`): a reading fix, which moves no forecast.
HYBRID_EP_MODELS = ("deepseekv3",)
# The Megatron-Bridge recipes (0.3.1, NeMo 25.09 on) that turn on Megatron-Core's precision-aware
# optimizer with bf16 momentum, variance and main gradients: recipes/deepseek/deepseek_v3.py,
# moonlight/moonlight_16b.py, olmoe/olmoe_7b.py (`use_precision_aware_optimizer = True`,
# `exp_avg_dtype = torch.bfloat16`); every other recipe keeps them in fp32. Row labels, as _n.
BF16_MOMENTS_MODELS = ("deepseekv3", "moonlight", "olmoe")


# The GB200 MoE performance recipes of Megatron-Bridge (0.6.0 and 0.6.2 alike, each row naming the
# one it is read with: recompute_recipe.recipes_of) whose HybridEP topology puts the
# expert-parallel group in one NVLink domain: perf_recipes/deepseek/gb200/deepseek_v3.py (every
# 256-GPU config, EP 64; 0.6.2 lines 67-70, 0.6.0 69-72 for BF16) sets
# NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = 64 with NVLINK_DOMAIN_SIZE = 72 and USE_MNNVL = 1:
# HybridEP takes each run of 64 EP ranks to share one NVL72 rack's NVLink, which a packed
# placement (72 ranks a rack) gives only EP group 0, so the recipe's job runs on 64 of each rack's
# 72 GPUs: 16 of its 18 trays (`hosts_per_rack = 16`, analyses/job_racks.py). Per model (row
# label, as _n), GPU, the EP degree the recipe sets and the EP ranks per NVLink domain; applied
# from NeMo 25.09 (FLEX_FROM) to the recipe's rows, its token-drop variant too: Megatron-Bridge's
# apply_moe_token_drop (training/utils/moe_token_drop.py) changes the model's capacity and
# dispatcher only, not the recipe's environment and launch; NeMo 25.09's and 25.11's own launch
# (no HybridEP in Megatron-Core 0.14, 0.15) gives 16 too: Slurm `--segment` 16 for 64 trays
# (docs/runs.md). Not taken: gpt_oss_120b (64 GPUs, one rack either way) and the models the tables
# do not run on GB200 at this size.
HYBRID_EP_DOMAIN = (("deepseekv3", "gb200", 64, 64),)
GB200_TRAY_GPUS = 4          # an NVL72 compute tray: 2 Grace Blackwell superchips, 4 GPUs
GB200_RACK_GPUS = 72         # an NVL72 rack: 18 trays, one NVLink domain
GB200_RACK_TRAYS = GB200_RACK_GPUS // GB200_TRAY_GPUS


def su_gpus(system: System, per_rack: Optional[int]) -> int:
    """The GPUs of a scalable unit a job may use: all, or with `hosts_per_rack` (a GB200 row of
    HYBRID_EP_DOMAIN) its share of each NVL72 rack."""
    if per_rack is None:
        return system.gpus_per_su
    return system.gpus_per_su * per_rack * GB200_TRAY_GPUS // GB200_RACK_GPUS


def hybrid_ep_hosts(row, ep: int) -> Optional[int]:
    """`hosts_per_rack` of a GB200 row whose recipe's HybridEP puts `ep` ranks in one NVLink
    domain (HYBRID_EP_DOMAIN), else None."""
    label, g = _n(row.model), _n(row.gpu)
    for model, where, degree, per_domain in HYBRID_EP_DOMAIN:
        if label.startswith(model) and where in g and degree == ep:
            return per_domain // GB200_TRAY_GPUS
    return None


def segment_hosts(row, release) -> Optional[int]:
    """`hosts_per_rack` of a GB200 row of a NeMo 2.x container (before FLEX_FROM, whose own
    performance scripts ran it) on more NVL72 trays than a rack holds: NeMo's scripts submit such
    a job with Slurm's `--segment` set to the largest divisor of its trays up to a rack's 18
    (nemo_toolkit 2.3.0 scripts/performance/utils.py:97-103, 2.4.0 executors.py:103-109), so
    each rack holds that many of its trays (128 GPUs: 16 trays a rack, 64 GPUs); None else."""
    trays = (row.count("gpus") or 0) // GB200_TRAY_GPUS
    if release is None or release >= FLEX_FROM or gpu_key(row.gpu) != "gb200" or \
            trays <= GB200_RACK_TRAYS:
        return None
    return max(d for d in range(1, GB200_RACK_TRAYS + 1) if trays % d == 0)


def framework_of(row) -> str:
    """torchtitan or NeMo AutoModel where the row's `source_version` (the release it ran) names
    them as a word, else Megatron: not the notes, which may name another framework in passing
    ("2x faster than our torchtitan baseline")."""
    version = row.source_version.lower()
    if re.search(r"\btorchtitan\b", version):
        return "torchtitan"
    if re.search(r"\bautomodel\b", version):
        return "automodel"
    return "megatron"


def stated_settings(row) -> Tuple[Tuple[str, object], ...]:
    """What the row's `notes` state of how it ran, as Seer reads them (the tables' captions:
    torchtitan's "torch.compile", "async TP" and "interleaved", AutoModel's "DeepEP", "fake
    balanced gate" and "GA=4"): the one reading of the notes that stack_of and express use, and
    part of the row's configuration in the leave-one-group-out check (fit.FitRow.group: two rows
    of one layout that state different settings ran two configurations)."""
    notes = row.notes.lower()
    accumulation = re.search(r"\bga=(\d+)", notes)
    return tuple(sorted((
        ("torch_compile", "torch.compile" in notes),
        ("async_tp", "asynctp" in notes.replace(" ", "")),
        ("interleaved", "interleaved" in notes),
        ("deepep", "deepep" in notes),
        ("fake_gate", "fake balanced gate" in notes),
        ("flex_attention", "flexattn" in notes.replace(" ", "")),
        ("no_sp", "no sequence parallelism" in notes),
        ("accumulation", int(accumulation.group(1)) if accumulation else None),
    )))


def stack_of(row, moe: bool, tp: int, pp: int, dp: int, hybrid: bool = False) -> Stack:
    """The job fields the row's software ran with (module docstring); `hybrid`: a Mamba
    hybrid model."""
    fw = framework_of(row)
    said = dict(stated_settings(row))
    version = row.source_version.lower()
    fields: Dict[str, object] = {"framework": fw}
    par: Dict[str, object] = {}
    assumed: List[str] = []
    if fw == "megatron":
        paper = "narayanan" in version or "korthikanti" in version
        prec = None                  # the recipe's precision, read below for NVIDIA's rows
        release = release_of(row)
        if paper:
            # the papers' own Megatron-LM: unfused attention (FlashAttention came in mid-2022),
            # plain data parallelism with the gradient all-reduce after the backward; the 2021
            # code reduced TP input gradients on the critical path
            fields["attention"] = "unfused"
            if "narayanan" in version:
                fields["tp_overlap"] = "none"
            if said["no_sp"] or tp <= 1:
                par["sp"] = False
        else:
            fields["tp_overlap"] = "full" if tp > 1 else "backward"
            assumed.append("TP communication overlapped with the GEMMs (the recipes' default)"
                           if tp > 1 else "")
            # NeMo's performance scripts (scripts/performance) reduce gradients in bf16
            # (grad_reduce_in_fp32 = False) for throughput
            fields["grad_dtype"] = "bf16"
            if release is not None and release < FA2_BEFORE:
                fields["attention"] = "flash2"
                assumed.append("attention on FlashAttention-2's kernels (Transformer Engine 1.x "
                               "before its Hopper preference for cuDNN)")
            assumed.append("gradients reduced in bf16 (the performance recipes' setting)")
            loss, how = recipe_cross_entropy(_n(row.model), release)
            if loss:
                fields["cross_entropy"] = loss
                assumed.append(how)
            # Megatron-Bridge 0.3.1 training/comm_overlap.py:450-457: with PP > 1 an interleaved
            # pipeline (virtual stages > 1) overlaps its sends with the next block
            # (overlap_p2p_comm), a 1f1b one batches them (batch_p2p_comm) without overlap
            fields["pp_overlap"] = pp > 1 and ((row.count("vp", 1) or 1) > 1
                                               or said["interleaved"])
            prec = precision_of(row.precision, row.gpu, release)[0]
            fsdp_off = (row.count("fsdp") or 0) >= 1 and release in FSDP_NO_FP8_PARAMS
            if release is not None and release >= FP8_PARAMS_FROM and prec is not None and \
                    not fsdp_off and (prec[0] == "mxfp8" or (
                        prec[0] == "fp8" and prec[1] in ("current", "delayed"))):
                fields["fp8_params"] = True
                assumed.append("fp8 parameters: the linear weights held in fp8 only (the "
                               "recipes' precision configs, NeMo 2.0 and Megatron-Bridge)")
            if release is not None and release < MXFP8_SWIZZLE_BEFORE and prec is not None \
                    and prec[0] in ("mxfp8", "nvfp4"):
                fields["scale_swizzle"] = True
                assumed.append("the block scales swizzled before each GEMM (Transformer Engine "
                               "before 2.12, the only ones of 2025)")
        fsdp = row.count("fsdp")
        segment = None if paper else segment_hosts(row, release)
        if segment is not None:
            fields["hosts_per_rack"] = segment
            assumed.append(f"{segment} trays of each NVL72 rack, {segment * GB200_TRAY_GPUS} "
                           f"GPUs: NeMo's performance scripts submit the job with Slurm's "
                           f"--segment {segment}")
        if not paper:
            fields["overlap_grad_reduce"] = dp > 1
            gather_after = release in MXFP8_GATHER_AFTER_STEP and prec is not None and \
                prec[0] == "mxfp8"
            fields["overlap_param_gather"] = dp > 1 and (fsdp or 0) < 1 and not gather_after
            if dp > 1 and (fsdp or 0) >= 1:
                assumed.append("Megatron-Core's FSDP (the row's `fsdp`): each layer's weights "
                               "all-gathered and its gradients reduce-scattered beside the "
                               "computation (the recipes' default overlap)")
            elif dp > 1:
                assumed.append("the distributed optimizer with overlapped gradient reduction "
                               + ("and the MXFP8 weights all-gathered in 16 bits after the "
                                  "optimizer step (NeMo 25.07's and 25.09's scripts: "
                                  "reuse_grad_buf_for_mxfp8_param_ag, no gather overlap)"
                                  if gather_after else
                                  "and parameter gathering (the recipes' default)"))
            if fsdp is not None and fsdp >= 1:
                par["fsdp"] = True
                fields["overlap_param_gather"] = False
            elif dp > 1:
                par["zero"] = 1
            if moe:
                dtype = (precision_of(row.precision, row.gpu)[0] or ("",))[0]
                overlap, how = recipe_ep_overlap(_n(row.model), gpu_key(row.gpu), dtype,
                                                 release, pp, row.count("vp", 1) or 1,
                                                 row.count("ep", 1))
                fields["ep_overlap"] = overlap
                assumed.append(how)
                attn, how = recipe_attention_precision(_n(row.model), gpu_key(row.gpu), dtype,
                                                       row.count("gpus", 0), release)
                if how:
                    fields["attention_precision"] = attn
                    assumed.append(how)
                head, how = recipe_head_precision(_n(row.model), gpu_key(row.gpu), dtype,
                                                  release)
                if how:
                    fields["head_precision"] = head
                    assumed.append(how)
                fields["router_fusion"], how = recipe_router_fusion(
                    _n(row.model), gpu_key(row.gpu), dtype, release)
                assumed.append(how)
                dropped = recipe_token_drop(_n(row.model), release)
                tokendrop = dropped is not None
                if tokendrop:
                    # the label, or the NeMo 2.x performance recipe, says tokens were dropped
                    # (runs/moe_recipe.py): no flex dispatcher (docs/runs.md)
                    fields["capacity_factor"] = 1.0
                    fields["pad_to_capacity"] = True
                    assumed.append(dropped)
                permute, rope = recipe_fusions(_n(row.model), release)
                if not permute:
                    fields["permute_fusion"] = False
                    assumed.append("Megatron-Core's unfused token permutation (NeMo 2.x's "
                                   "config: moe_permute_fusion off: runs/moe_recipe.py)")
                if not rope:
                    fields["rope_fusion"] = False
                    assumed.append("Megatron-Core's unfused RoPE (NeMo 2.x's Llama4Config: "
                                   "apply_rope_fusion off: runs/moe_recipe.py)")
                yarn = yarn_rope_fused(_n(row.model), release)
                if yarn:
                    fields["rope_fusion"] = True
                    assumed.append(yarn)
                if sequential_experts(_n(row.model), release):
                    fields["grouped_gemm"] = False
                    assumed.append("the experts as Megatron-Core's SequentialMLP, one expert's "
                                   "GEMMs after another (NeMo 2.x's Mixtral config leaves "
                                   "moe_grouped_gemm off: runs/moe_recipe.py)")
                if release is not None and release >= FLEX_FROM and not tokendrop:
                    kept = recipe_alltoall(_n(row.model), _n(row.gpu), dtype) or \
                        before_flex_on_blackwell(_n(row.gpu), release)
                    if kept:
                        assumed.append(kept)
                    else:
                        gb = release >= HYBRIDEP_FROM and (
                            "gb200" in _n(row.gpu) or "gb300" in _n(row.gpu) or
                            _n(row.model).startswith(HYBRID_EP_MODELS) or recipe_hybridep(
                                _n(row.model), gpu_key(row.gpu), dtype,
                                (tp, pp, row.count("ep", 1))))
                        fields["moe_dispatcher"] = "hybridep" if gb else "deepep"
                        assumed.append(f"the flex token dispatcher ("
                                       f"{'HybridEP' if gb else 'DeepEP'}), the MoE recipes' "
                                       f"from NeMo 25.09")
                per_rack = hybrid_ep_hosts(row, row.count("ep", 1)) \
                    if release is not None and release >= FLEX_FROM else None
                if per_rack is not None:
                    fields["hosts_per_rack"] = per_rack
                    assumed.append(f"{per_rack} trays of each NVL72 rack, "
                                   f"{per_rack * GB200_TRAY_GPUS} GPUs: the recipe's HybridEP "
                                   f"topology puts its EP group in one NVLink domain "
                                   f"(Megatron-Bridge {recipes_of(release)}, "
                                   f"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = "
                                   f"{per_rack * GB200_TRAY_GPUS})")
                if release is not None and release >= FLEX_FROM and \
                        _n(row.model).startswith(BF16_MOMENTS_MODELS):
                    fields["optimizer_dtype"] = "bf16"
                    assumed.append("Adam's moments and main gradients in bf16 (the model's "
                                   "Megatron-Bridge recipe: precision-aware optimizer)")
                read = recipe_recompute(row, release)
                if read:
                    modules, version = read
                    fields["recompute"] = "modules"
                    fields["recompute_modules"] = modules
                    assumed.append(f"recompute_modules = [{', '.join(modules)}] "
                                   f"(Megatron-Bridge {version}'s performance recipe for the "
                                   f"model and GPU)")
                if release is not None and release >= MOE_GRAPHS_FROM and not hybrid:
                    fields["cuda_graphs"] = True
                    assumed.append("the step replayed from CUDA graphs with sync-free token "
                                   "dispatch (MoE recipes from Megatron-Bridge 26.06)")
    elif fw == "torchtitan":
        par["fsdp"] = dp > 1
        fields["torch_compile"] = said["torch_compile"]
        fields["tp_overlap"] = "full" if said["async_tp"] else "none"
        if pp > 1:
            par["reshard_after_forward"] = False
        fields["overlap_grad_reduce"] = dp > 1
    else:                                                 # NeMo AutoModel: PyTorch FSDP2
        par["fsdp"] = dp > 1
        fields["tp_overlap"] = "none" if tp > 1 else "backward"
        fields["overlap_grad_reduce"] = dp > 1
        if pp > 1:
            # the weights kept gathered from the forward to the backward under a pipeline:
            # nemo_automodel 0.1.0 models/deepseek_v3/parallelizer.py apply_fsdp
            # (`reshard_after_forward=not pp_enabled`), 0.2.0 moe/parallelizer.py
            # (parallelize_model's `reshard_after_forward: bool = False`)
            par["reshard_after_forward"] = False
        if said["deepep"] and moe:
            fields["moe_dispatcher"] = "deepep"
        if said["fake_gate"] and moe:
            # AutoModel's benchmark gate (nemo_automodel 0.7.0 components/moe/layers.py,
            # FakeBalancedGate, noise 0 by default: BackendConfig.fake_gate_noise): token t to
            # the k consecutive experts from t k (seer/routing.py)
            fields["moe_routing"] = "round_robin"
        if said["flex_attention"]:
            # AutoModel's `attn: flex` backend (nemo_automodel 0.2.0 components/attention/
            # flex_attention.py, torch.nn.attention.flex_attention: Triton kernels Inductor
            # generates), not Transformer Engine's: priced as FlashAttention-2's kernels, the
            # class PyTorch reports for it ("90 % of FlashAttention2's performance in the
            # forward pass and 85 % in the backward", PyTorch blog, FlexAttention, Aug. 2024)
            fields["attention"] = "flash2"
            assumed.append("attention on FlexAttention's kernels, priced as FlashAttention-2's")
    if moe and fw == "megatron" and "moe_dispatcher" not in fields:
        assumed.append("MoE tokens dispatched by NCCL all-to-all (alltoall dispatcher)")
    return Stack(tuple(sorted(fields.items())), tuple(sorted(par.items())),
                 tuple(a for a in assumed if a), fw)
