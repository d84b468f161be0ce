"""Which NVIDIA rows ran Transformer Engine's cross-entropy kernels and which Megatron-Core's
fused ones (`cross_entropy`, Megatron-Core's `cross_entropy_fusion_impl`; the kernels' bytes:
seer/lower_dense.py CROSS_ENTROPY), read off Megatron-Bridge's providers and recipes.

Megatron-Core's default is `native` (0.16.0 model_parallel_config.py `cross_entropy_fusion_impl
= 'native'`), with the fusion itself on in NeMo 2.x's GPTConfig (nemo_toolkit 2.3.0 to 2.5.3
collections/llm/gpt/model/base.py `cross_entropy_loss_fusion = True`) and Megatron-Bridge's
GPTModelProvider (0.3.1 models/gpt_provider.py:185). `te`:
- NeMo 25.04, 25.07 and 25.09, every model: NeMo 2.x's performance scripts, whose choices those
  rows follow, set it in `set_primary_perf_configs` ("enable cross entropy fusion with TE
  kernel": nemo_toolkit 2.3.0 scripts/performance/utils.py:291, 2.4.0 helpers.py:311 in
  `set_perf_optimization_configs`, 2.5.3 helpers.py:377), which every pretraining script calls.
- From NeMo 25.11, the first release run on Megatron-Bridge's own performance scripts
  (releases.BRIDGE_SCRIPTS_FROM), none of which is on a registry (nor 25.11's Megatron-Bridge,
  of the 0.2 line; 26.02 to 26.06 ran 0.3.0 to 0.5.x, releases.BRIDGE_03_FROM): Megatron-Bridge
  0.3.1's pretraining recipes, an ASSUMPTION stated with the row:
  `te` in recipes/llama/llama3.py (every Llama 3 and 3.1 pretraining config, and the Llama 3
  8B/70B and 3.1 405B providers, models/llama/llama_provider.py:155, 174, 228),
  recipes/deepseek/deepseek_v3.py (and deepseek_v3_bridge.py:73) and recipes/qwen/qwen3_moe.py
  (Qwen3 30B-A3B and 235B-A22B); `native` in recipes/gpt_oss/gpt_oss.py ("GPT-OSS uses
  native") and recipes/nemotronh/nemotron_3_nano.py. For 25.11 the 0.2 line's last wheel,
  0.2.0rc6 (2025-10-06), agrees for Llama 3 and DeepSeek-V3 (`te` in their providers,
  models/llama/llama_provider.py:187, 206, 260, models/deepseek/deepseek_provider.py:113), not
  for Qwen3 MoE (Qwen3MoEModelProvider and recipes/qwen/qwen3_moe.py set none: Megatron-Core
  0.15's `native`, model_parallel_config.py:220), and has no GPT-OSS; the performance scripts on
  either side set `te` for Qwen3 (nemo_toolkit 2.6.0 scripts/performance/helpers.py:377 and
  llm/pretrain_qwen3_235b_a22b.py:88; Megatron-Bridge 0.6.2 perf_recipes/_common.py
  `_benchmark_common`), so 0.3.1's reading is kept.
- From NeMo 26.06, the rows read with Megatron-Bridge's performance recipes (0.6.0's through
  NeMo 26.08, 0.6.2's after: recompute_recipe.recipes_of; 0.6.0's taken to hold from 26.06:
  runs/ep_overlap.py OWN_FROM), GPT-OSS and Nemotron 3 Nano too, the two releases alike: every
  one of their recipes calls perf_recipes/_common.py `_benchmark_common(cfg)`, whose
  `cross_entropy_impl` defaults to "te" (line 30 of both) and is set as the model's
  `cross_entropy_fusion_impl` (line 68), over the library recipe's `native` (0.6.2
  gpt_oss/b200/gpt_oss.py:42, 78, gb200/gpt_oss.py:203, 239 [0.6.0 202, 238],
  h100/gpt_oss.py:42, 78; nemotronh/gb200/nemotronh.py:424, 474 [329, 380] for Nemotron 3
  Nano's BF16 and MXFP8 configs; `native` only where a recipe passes it, in both: DeepSeek-V4,
  GLM-5, Nemotron 3 Ultra). Nemotron 3.5 Lightning's GB200 configs start from Nano's (0.6.0
  nemotronh/gb200/nemotronh.py:463, 494 `nemotron_3_nano_pretrain_8gpu_gb200_*_config()`; 0.6.2
  :568, 598 the same and `_build_nemotron_3_nano_gb200_mxfp8()`), so theirs is Nano's `te`;
  Megatron-Bridge 0.3.1 has no Lightning recipe (its rows before 26.06 are not read).
The rows before NeMo 25.04 (NeMo 1.x and 2.0-2.2, whose scripts set none) and the papers'
Megatron-LM keep Seer's generic count: what they ran was not read here."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.ep_overlap import OWN_FROM as PERF_RECIPES_FROM
from astral_dsl.runs.recompute_recipe import recipes_of
from astral_dsl.runs.releases import BRIDGE_03_FROM, BRIDGE_SCRIPTS_FROM

# NeMo 2.x's performance scripts from NeMo 25.04 (nemo_toolkit 2.3.0) to 25.09 (2.5.3); from 25.11
# (BRIDGE_SCRIPTS_FROM) Megatron-Bridge 0.3.1's recipes, standing in for 25.11's 0.2.x before
# BRIDGE_03_FROM (module docstring)
SCRIPTS_FROM = (25, 4)
# row label prefixes as precision.squeezed (module docstring)
TE_03 = ("llama38b", "llama370b", "llama31405b", "deepseekv3", "qwen330ba3b", "qwen3235ba22b")
NATIVE_03 = ("gptoss", "nemotron3nano")
# models whose performance recipes start from one of NATIVE_03's (module docstring)
PERF_ONLY = ("nemotron35lightning",)


def recipe_cross_entropy(label: str, release: Optional[Tuple[int, int]]
                         ) -> Tuple[Optional[str], str]:
    """(cross_entropy, what the row is taken to have run) of an NVIDIA row: `label` its model as
    precision.squeezed, `release` (year, month) or None. (None, "") where not read."""
    if release is None or release < SCRIPTS_FROM:
        return None, ""
    bridge = "Megatron-Bridge 0.3.1's recipe" + (
        "" if release >= BRIDGE_03_FROM else
        ", read for NeMo 25.11's own 0.2.x, which no registry has")
    if release < BRIDGE_SCRIPTS_FROM:
        impl, source = "te", "NeMo 2.x's performance scripts"
    elif label.startswith(TE_03):
        impl, source = "te", bridge
    elif label.startswith(NATIVE_03 + PERF_ONLY) and release >= PERF_RECIPES_FROM:
        impl, source = "te", (f"Megatron-Bridge {recipes_of(release)}'s performance recipe, "
                              f"_benchmark_common")
    elif label.startswith(NATIVE_03):
        impl, source = "native", bridge
    else:
        return None, ""
    what = ("Transformer Engine's cross-entropy kernels" if impl == "te" else
            "Megatron-Core's fused fp32 cross-entropy")
    return impl, f"{what} (cross_entropy_fusion_impl = {impl}: {source})"
