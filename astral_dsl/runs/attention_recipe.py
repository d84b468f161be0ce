"""Which NVIDIA rows ran their fused attention in MXFP8 (`attention_precision = fp8`), read off
Megatron-Bridge's performance recipes and the Transformer Engine of their time.

The recipes: Megatron-Bridge 0.6.0 and 0.6.2 set `cfg.mixed_precision.fp8_dot_product_attention
= True` in the functions that turn on the full-iteration MXFP8 stack, perf_recipes/qwen/
common.py `_enable_hybridep_full_iteration_mxfp8` (0.6.0 line 55, 0.6.2 line 57; called by the
fp8mx configs of Qwen3 30B-A3B on GB200 and B200, qwen/gb200/qwen3_moe.py:328 and
qwen/b200/qwen3_moe.py:313, and of Qwen3 235B-A22B on GB200 at 64 and 256 GPUs, :168 and :488,
and on B200 at 256 GPUs alone, :463: the 64-GPU B200 fp8mx config, :130, does not call it) and
perf_recipes/gpt_oss/common.py `_apply_gpt_oss_120b_full_iter_fp8mx_configs` (0.6.0 line 44,
0.6.2 line 74; called by the GB200 fp8mx config alone, gpt_oss/gb200/gpt_oss.py:239); 0.6.2 also
for Nemotron 3 Nano in MXFP8 on GB200 (nemotronh/gb200/nemotronh.py:484) and Nemotron 3.5
Lightning's (:616; 0.6.0's nemotronh recipes never set it). DeepSeek-V3's only on B300 and
GB300 (deepseek/common.py, off by default): no row. No recipe sets NVTE_DPA_FP8_RECIPE (perf_recipes/environment.py and the
recipes' env_vars), which could switch it back to 16 bits.

The code: Megatron-Core 0.18.0 (wheel of 2026-06-23, beside Megatron-Bridge 0.5.0's of 06-22:
NeMo 26.06) and 0.19.0 (2026-08-19, beside 0.6.0's of 08-20: NeMo 26.08) build the MXFP8 recipe
with it (fp8_utils.py get_fp8_recipe: `MXFP8BlockScaling(fp8_format=..., fp8_dpa=config.
fp8_dot_product_attention)`; 0.17.1 of 2026-05-28 passed the format alone). Transformer Engine
2.16 to 2.20.2 (every release from before 26.06 to after 26.08) run an MXFP8 recipe's `fp8_dpa`
as MXFP8 attention (dot_product_attention.py, the recipe table: "MXFP8 | MXFP8 | Pass MXFP8 to
autocast()", no variable needed) on cuDNN's fused kernels only (utils.py
get_attention_backend: FlashAttention and the unfused path disabled for fp8 attention; the
fused one kept on sm100 and later with cuDNN 9.21 or later, not 9.23.0/9.23.1, not `fp8_mha`,
not THD; GPT-OSS's learnable softmax and sliding window are allowed in fp8 there on the same
conditions), and raise "No dot product attention backend is available" rather than fall back
to 16 bits when none is left: a row that ran the recipe ran MXFP8 attention. 2.11 refused it
(stop 61). Which TE and cuDNN each container shipped is not known (no wheel names them): an
ASSUMPTION, stated in the rows' `assumed` list.

The rows are read with the recipes of their release (recompute_recipe.recipes_of: 0.6.0's
through NeMo 26.08, 0.6.2's after) from NeMo 26.06 (ep_overlap.OWN_FROM, the full-iteration
graphs the same functions turn on); Megatron-Bridge 0.5.x, NeMo 26.06's own, ships no
performance recipes, so 26.06's and 26.06.01's rows are read with 0.6.0's, as for their graphs
and EP overlap."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.ep_overlap import OWN_FROM
from astral_dsl.runs.recompute_recipe import BOTH, V062, recipes_of

# (model label prefix as precision.squeezed, GPU directory, GPU counts (None: every config of
# the model, GPU and precision), recipe releases) of the MXFP8 performance recipes that set
# fp8_dot_product_attention (module docstring, file:line there)
FP8_ATTENTION_ON = (
    ("qwen330ba3b", "gb200", None, BOTH),      # qwen/common.py via gb200/qwen3_moe.py:328
    ("qwen330ba3b", "b200", None, BOTH),       # qwen/common.py via b200/qwen3_moe.py:313
    ("qwen3235ba22b", "gb200", None, BOTH),    # qwen/common.py via gb200/qwen3_moe.py:168, 488
    ("qwen3235ba22b", "b200", (256,), BOTH),   # qwen/common.py via b200/qwen3_moe.py:463
    ("gptoss120b", "gb200", None, BOTH),       # gpt_oss/common.py via gb200/gpt_oss.py:239
    ("nemotron3nano", "gb200", None, V062),    # nemotronh/gb200/nemotronh.py:484
    ("nemotron35lightning", "gb200", None, V062),  # nemotronh/gb200/nemotronh.py:616
)


def recipe_attention_precision(label: str, gpu: str, family: Optional[str], gpus: int,
                               release: Optional[Tuple[int, int]]) -> Tuple[str, str]:
    """(attention_precision, what the row is taken to have run; "" for bf16) of an NVIDIA row:
    `label` its model as precision.squeezed, `gpu` gb200 | b200 | h100 | "", `family` its
    precision's dtype (runs/precision.precision_of), `gpus` its GPU count, `release` (year,
    month) or None."""
    if family != "mxfp8" or release is None or release < OWN_FROM:
        return "bf16", ""
    version = recipes_of(release)
    on = any(label.startswith(model) and gpu == where and (counts is None or gpus in counts)
             and version in versions for model, where, counts, versions in FP8_ATTENTION_ON)
    if not on:
        return "bf16", ""
    return "fp8", (f"attention in MXFP8 (Megatron-Bridge {version}'s performance recipe sets "
                   f"fp8_dot_product_attention; Transformer Engine 2.16-2.20 with cuDNN 9.21 or "
                   f"later run it on cuDNN's fused kernels, or no attention at all)")
