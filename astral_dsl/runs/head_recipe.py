"""Which NVIDIA rows ran their output layer (the logits) in MXFP8 (`head_precision = fp8`), read
off Megatron-Bridge's performance recipes and the Megatron-Core of their time.

The recipes: Megatron-Bridge 0.6.0 and 0.6.2 set `cfg.model.fp8_output_proj = True` in two of
the functions that turn on the full-iteration MXFP8 stack: perf_recipes/gpt_oss/common.py
`_apply_gpt_oss_120b_full_iter_fp8mx_configs` (0.6.0 line 28, 0.6.2 line 58; called by the GB200
fp8mx config alone among the GPUs the tables hold, gpt_oss/gb200/gpt_oss.py:239), and
perf_recipes/deepseek/common.py `_enable_deepseek_full_iteration_mxfp8` with its
`fp8_output_proj` argument (off by default; passed True by the GB200 fp8mx config,
deepseek/gb200/deepseek_v3.py:160 in 0.6.0 and :157 in 0.6.2, and by B300's and GB300's; not
by B200's). Qwen3's `_enable_hybridep_full_iteration_mxfp8` and the Nemotron-H recipes leave it
off.

The code: Megatron-Core 0.18.0 (wheel of 2026-06-23: NeMo 26.06; 0.17.1 has no such field) and
0.19.0 declare `fp8_output_proj` (transformer/transformer_config.py: "run the LM-head output
projection with a TE ColumnParallelLinear under the MXFP8 autocast context", refused unless
`fp8` and the MXFP8 recipe); models/gpt/gpt_model.py then builds the output layer as
extensions/transformer_engine.py `TELMHeadColumnParallelLinear` (fp8_utils.py
`is_mxfp8_output_proj_active`), a Transformer Engine linear layer whose forward runs under
`get_fp8_context(config)`: its input quantised, its GEMM and, backward, its data and weight
gradients in MXFP8 (TE's default recipe), where otherwise the head is Megatron-Core's 16-bit
ColumnParallelLinear. Megatron-Bridge's GPT providers are Megatron-Core TransformerConfigs
(models/gpt_provider.py `GPTModelProvider(TransformerConfig, ...)`), so the recipe's field reaches
the model as set.

The rows are read with the recipes of their release (recompute_recipe.recipes_of: 0.6.0's
through NeMo 26.08, 0.6.2's after) from NeMo 26.06 (ep_overlap.OWN_FROM, the full-iteration
graphs the same functions turn on), as the MXFP8 attention of the same functions
(attention_recipe.py)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.ep_overlap import OWN_FROM
from astral_dsl.runs.recompute_recipe import BOTH, recipes_of

# (model label prefix as precision.squeezed, GPU directory, recipe releases) of the MXFP8
# performance recipes that set fp8_output_proj (module docstring, file:line there)
FP8_HEAD_ON = (
    ("gptoss120b", "gb200", BOTH),      # gpt_oss/common.py via gb200/gpt_oss.py:239
    ("deepseekv3", "gb200", BOTH),      # deepseek/common.py via gb200/deepseek_v3.py:160 (:157)
)


def recipe_head_precision(label: str, gpu: str, family: Optional[str],
                          release: Optional[Tuple[int, int]]) -> Tuple[str, str]:
    """(head_precision, what the row is taken to have run; "" for bf16) of an NVIDIA row:
    `label` its model as precision.squeezed, `gpu` gb200 | b200 | h100 | "", `family` its
    precision's dtype (runs/precision.precision_of), `release` (year, month) or None."""
    if family != "mxfp8" or release is None or release < OWN_FROM:
        return "bf16", ""
    version = recipes_of(release)
    if not any(label.startswith(model) and gpu == where and version in versions
               for model, where, versions in FP8_HEAD_ON):
        return "bf16", ""
    return "fp8", (f"the output layer (logits) in MXFP8 (Megatron-Bridge {version}'s "
                   f"performance recipe sets fp8_output_proj; Megatron-Core 0.18 and later "
                   f"build it as Transformer Engine's linear layer under the MXFP8 autocast)")
