"""What NVIDIA's MoE rows ran that their tables do not say, read off their label or their
release's performance recipe: token dropping (`capacity_factor`, `pad_to_capacity`) and
Mixtral's experts as sequential GEMMs (`grouped_gemm = false`).

A row labelled "tokendrop" (Megatron-Bridge's tables from NeMo 25.09) ran Megatron-Bridge's
token-drop helper (training/utils/moe_token_drop.py, apply_moe_token_drop, 0.3.1): a capacity
factor of 1.0 with the experts' inputs padded to it, on the alltoall dispatcher.

The NeMo 2.x containers' tables (NeMo 25.04 and 25.07) label no row so, but their performance
scripts build every MoE model below from its library recipe in performance mode, which adds the
token-drop callback: nemo_toolkit 2.3.0 and 2.4.0, scripts/performance/llm/
pretrain_mixtral_8x7b.py and pretrain_llama4_e16.py call `pretrain_recipe(performance_mode=True)`,
whose `pretrain_performance_optimizations` (collections/llm/recipes/mixtral_8x7b.py line 226,
mixtral_8x22b.py 233, llama4_e16.py and llama4_e128.py 241) appends MegatronTokenDropCallback
(lightning/pytorch/callbacks/moe_token_drop.py: moe_expert_capacity_factor = 1.0,
moe_pad_expert_input_to_capacity = True by default, and it asserts the alltoall dispatcher);
nemo_toolkit 2.4.0's pretrain_qwen3_30b_a3b.py (line 73) and pretrain_qwen3_235b_a22b.py (74)
append it themselves. Padded to capacity, Megatron-Core's alltoall dispatcher knows every
split ahead and sets no host synchronisation point (0.12.0 and 0.13.0,
transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher: `drop_and_pad` keeps
cuda_sync_point = "no_sync"). NeMo 25.04 is taken to ship nemo_toolkit 2.3.0 and NeMo 25.07
2.4.0 (the 25.09 container moved to Megatron-Bridge, releases.FLEX_FROM), and to run Megatron-Core
0.12 and 0.13; the DeepSeek-V3 script of 2.4.0 drops tokens on Blackwell only (USE_TOKEN_DROP),
and the table has no such row.

NeMo 2.x's Mixtral runs its experts as Megatron-Core's SequentialMLP: MixtralConfig (nemo_toolkit
2.3.0 and 2.4.0, collections/llm/gpt/model/mixtral.py) leaves `moe_grouped_gemm` at Megatron-Core's
default, False (0.12.0 transformer_config.py:397, 0.13.0 :461), and neither the recipe nor the
performance script sets it (DeepSeek's, Llama 4's and Qwen3's configs set it True); without it
moe_module_specs.py (0.12.0, line 60) builds SequentialMLP, whose forward runs each local
expert's Transformer Engine linear layers on its own tokens, one expert after another
(transformer/moe/experts.py, SequentialMLP.forward; with one local expert, as with EP 8 of
Mixtral's 8, the rank's whole input through one MLP).

GPT-OSS's Megatron-Bridge recipes keep Megatron-Core's alltoall token dispatcher (NCCL
all-to-all) where the other MoE recipes from NeMo 25.09 are read with the flex one
(releases.FLEX_FROM): the model's provider sets `moe_token_dispatcher_type = "alltoall"` (0.3.0
models/gpt_oss/gpt_oss_provider.py:72) and its recipe changes no dispatcher setting (0.3.0
recipes/gpt_oss/gpt_oss.py); 0.6.2's library recipe sets "alltoall" again (recipes/gpt_oss/h100/
gpt_oss.py:204; its `moe_flex_dispatcher_backend = "deepep"` is never applied: unlike the
DeepSeek-V3 and Qwen3 recipes it does not call training/flex_dispatcher_backend.py's
apply_flex_dispatcher_backend), and the performance recipes built on it (0.6.0's and 0.6.2's
alike) for B200 and GB200 in BF16 and B200 in MXFP8 (perf_recipes/gpt_oss/b200/gpt_oss.py,
gb200/gpt_oss.py) keep it; only the GB200 MXFP8 one switches to HybridEP
(perf_recipes/gpt_oss/common.py, _apply_gpt_oss_120b_full_iter_fp8mx_configs:
`moe_token_dispatcher_type = "flex"`, `moe_flex_dispatcher_backend = "hybridep"`)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.releases import HYBRIDEP_FROM

# (model label prefix as precision.squeezed, first NeMo 2.x release whose performance recipe
# drops tokens): module docstring, file:line there
NEMO2_TOKEN_DROP = (
    ("mixtral", (25, 4)),        # recipes/mixtral_8x7b.py:226, mixtral_8x22b.py:233 (2.3.0)
    ("llama4", (25, 4)),         # recipes/llama4_e16.py:241, llama4_e128.py:241 (2.3.0)
    ("qwen3", (25, 7)),          # scripts/performance/llm/pretrain_qwen3_*.py:73-74 (2.4.0)
)
# (model label prefix as precision.squeezed, first NeMo 2.x release) whose experts run as
# SequentialMLP (module docstring)
NEMO2_SEQUENTIAL_EXPERTS = (("mixtral", (25, 4)),)
# (model label prefix as precision.squeezed, first NeMo 2.x release) whose performance run
# keeps Megatron-Core's unfused token permutation, and of those the ones with unfused RoPE: NeMo
# 2.x's MixtralConfig (2.4.0 collections/llm/gpt/model/mixtral.py) leaves Megatron-Core's
# default, 0.14.0 transformer_config.py `moe_permute_fusion: bool = False`, and fuses RoPE, and
# the Mixtral performance scripts (2.3.0 and 2.4.0 scripts/performance/llm/
# pretrain_mixtral_8x7b.py) change neither. Not Llama 4: its Llama4Config turns both off
# (llama.py, `moe_permute_fusion = False`, `apply_rope_fusion = False`), but its performance
# scripts turn both back on (2.3.0 and 2.4.0 scripts/performance/llm/pretrain_llama4_e16.py and
# pretrain_llama4_e128.py lines 84-85: `apply_rope_fusion = True`, `moe_permute_fusion = True`)
NEMO2_UNFUSED_PERMUTE = (("mixtral", (25, 4)),)
NEMO2_UNFUSED_ROPE: Tuple[Tuple[str, Tuple[int, int]], ...] = ()
# (model label prefix as precision.squeezed, the GPUs and precisions on which its Megatron-Bridge
# performance recipe runs the flex dispatcher): every other row of the model keeps the alltoall
# dispatcher (module docstring)
ALLTOALL_RECIPES = (("gptoss", ("gb200", "gb300"), ("mxfp8",)),)
# (model label prefix as precision.squeezed, GPU directory, precisions, (tp, pp, ep)): the
# Megatron-Bridge performance recipes (0.6.0 and 0.6.2) that run HybridEP on a GPU where the MoE
# rows are otherwise read with DeepEP (stacks.py: HybridEP on GB200 and GB300 and for
# DeepSeek-V3): perf_recipes/qwen/b200/qwen3_moe.py,
# qwen3_30b_a3b_pretrain_8gpu_b200_{bf16,fp8cs,fp8mx}_config (lines 198, 252, 306 of 0.6.2, 199,
# 253, 307 of 0.6.0: `moe_flex_dispatcher_backend = "hybridep"`, TP 1, PP 1, EP 8), which
# training/flex_dispatcher_backend.py keeps on compute capability 10. Keyed by the recipe's layout
# without its micro-batch: the dispatcher does not depend on it. Not taken: Qwen3 235B-A22B's
# 256-B200 MXFP8 recipe (HybridEP, but with 3 virtual stages where the rows run none).
HYBRID_EP_RECIPES = (("qwen330ba3b", "b200", ("bf16", "fp8", "mxfp8"), (1, 1, 8)),)
# the first release of Megatron-Bridge's containers (releases.FLEX_FROM), whose MoE recipes drop
# tokens only where the table's label says so
BRIDGE_FROM = (25, 9)
# The YaRN models (labels as precision.squeezed, not multi-head latent attention) whose rows of
# Megatron-Bridge's 0.2 line with Megatron-Core 0.15 (NeMo 25.09 and 25.11: BRIDGE_FROM to
# releases.HYBRIDEP_FROM, the versions an assumption there) ran Transformer Engine's fused RoPE:
# Megatron-Bridge 0.2.0rc6's GPTModelProvider turns `apply_rope_fusion` on wherever TE >= 2.2
# and Megatron-Core's fused kernels import (models/gpt_provider.py:171, utils/fusions.py
# can_enable_apply_rope_fusion) and its validate_rope_fusion_compatibility keeps it for any
# position embedding (0.3.0's turns it off for all but "rope"); GPT-OSS's provider leaves it
# (0.3.0 models/gpt_oss/gpt_oss_provider.py); Megatron-Core 0.15.0 then takes the fused kernel
# whatever YaRN's attention factor (models/common/embeddings/rope_utils.py:268-286), where 0.16
# falls back to its unfused RoPE for a factor other than 1 (seer/lower_attention.py).
YARN_FUSED_ROPE = ("gptoss",)


def recipe_token_drop(label: str, release: Optional[Tuple[int, int]]) -> Optional[str]:
    """How a Megatron MoE row is taken to have dropped tokens (capacity factor 1, the experts'
    inputs padded to it, the alltoall dispatcher), or None: `label` its model as
    precision.squeezed, `release` (year, month) of its NeMo container or None."""
    if "tokendrop" in label:
        return ("tokens dropped beyond each expert's even share and the experts' inputs padded "
                "to it, with the alltoall dispatcher (the label; capacity factor 1: "
                "Megatron-Bridge's token-drop defaults)")
    if _nemo2(NEMO2_TOKEN_DROP, label, release):
        return ("tokens dropped beyond each expert's even share and the experts' inputs "
                "padded to it, with the alltoall dispatcher (NeMo 2.x's performance recipe "
                "for the model: MegatronTokenDropCallback, capacity factor 1)")
    return None


def _nemo2(table, label: str, release: Optional[Tuple[int, int]]) -> bool:
    """Whether a NeMo 2.x row (release before BRIDGE_FROM) of `label` runs what `table` lists."""
    if release is None or release >= BRIDGE_FROM:
        return False
    return any(label.startswith(model) and release >= since for model, since in table)


def sequential_experts(label: str, release: Optional[Tuple[int, int]]) -> bool:
    """Whether a Megatron MoE row ran its experts as SequentialMLP (`grouped_gemm = false`,
    module docstring): `label` its model as precision.squeezed, `release` its NeMo container's."""
    return _nemo2(NEMO2_SEQUENTIAL_EXPERTS, label, release)


def recipe_fusions(label: str, release: Optional[Tuple[int, int]]) -> Tuple[bool, bool]:
    """Whether a Megatron row of model `label` (as precision.squeezed) from the NeMo container
    `release` ran (token permutation, RoPE) as Transformer Engine's fused kernels: not where
    its NeMo 2.x config runs Megatron-Core's unfused ones (NEMO2_UNFUSED_PERMUTE, _ROPE)."""
    return (not _nemo2(NEMO2_UNFUSED_PERMUTE, label, release),
            not _nemo2(NEMO2_UNFUSED_ROPE, label, release))


def yarn_rope_fused(label: str, release: Optional[Tuple[int, int]]) -> Optional[str]:
    """Why a Megatron row of YaRN model `label` (as precision.squeezed) from the NeMo container
    `release` ran Transformer Engine's fused RoPE (YARN_FUSED_ROPE), or None."""
    if release is None or not BRIDGE_FROM <= release < HYBRIDEP_FROM or \
            not label.startswith(YARN_FUSED_ROPE):
        return None
    return ("Transformer Engine's fused RoPE under YaRN (Megatron-Bridge 0.2's provider sets "
            "apply_rope_fusion, which Megatron-Core 0.15 takes whatever YaRN's attention "
            "factor: runs/moe_recipe.py)")


def recipe_alltoall(label: str, gpu: str, dtype: str) -> Optional[str]:
    """Why a Megatron-Bridge MoE row of model `label` on `gpu` (both as precision.squeezed) in
    `dtype` (bf16, fp8, mxfp8, ...) dispatches tokens with Megatron-Core's alltoall dispatcher
    where the MoE recipes from NeMo 25.09 use the flex one (ALLTOALL_RECIPES), or None."""
    for model, gpus, dtypes in ALLTOALL_RECIPES:
        if label.startswith(model) and not (any(g in gpu for g in gpus) and dtype in dtypes):
            return ("Megatron-Core's alltoall token dispatcher (NCCL all-to-all): the model's "
                    "Megatron-Bridge provider and recipes keep it (0.3.0 gpt_oss_provider.py; "
                    "0.6.0 and 0.6.2 performance recipes, HybridEP on GB200 in MXFP8 only: "
                    "runs/moe_recipe.py)")
    return None


def before_flex_on_blackwell(gpu: str, release: Optional[Tuple[int, int]]) -> Optional[str]:
    """Why a dropless Megatron-Bridge MoE row on `gpu` (precision.squeezed) from the NeMo
    container `release` dispatches with the alltoall dispatcher: a Blackwell row of a release
    before releases.HYBRIDEP_FROM, whose code has no HybridEP and runs DeepEP on Ampere and
    Hopper only; None otherwise."""
    if release is None or release >= HYBRIDEP_FROM or not any(g in gpu for g in ("b200", "b300")):
        return None
    return ("Megatron-Core's alltoall token dispatcher (NCCL all-to-all): this release's "
            "Megatron-Core (< 0.16) has no HybridEP and its Megatron-Bridge (0.1/0.2 line, "
            "training/deepep.py) runs DeepEP on Ampere and Hopper only (runs/releases.py)")


def recipe_hybridep(label: str, gpu: str, dtype: str, layout: Tuple[int, int, int]) -> bool:
    """Whether a Megatron-Bridge MoE row of model `label` (precision.squeezed) on `gpu` (its
    performance recipes' directory: recompute_recipe.gpu_key) in `dtype` at `layout` (tp, pp,
    ep) runs HybridEP by its performance recipe (HYBRID_EP_RECIPES)."""
    return any(label.startswith(model) and gpu == where and dtype in dtypes and layout == shape
               for model, where, dtypes, shape in HYBRID_EP_RECIPES)
